//! `--runs auto`: whether to run another round, from the precision the runs so far reached.

use std::fmt;
use std::time::{Duration, Instant};

use fsbench_model::suite::AutoRuns;

/// What ended the rounds of `--runs auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// Every primary figure's 95% CI half-width is below the target.
    Target,
    /// `--max-runs` rounds were run.
    Cap,
    /// `--max-time` had passed, or the next run would have ended past it.
    Time,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AutoStop {
    pub(crate) reason: StopReason,
    /// Rounds completed, and runs of the round after them that were done before the stop.
    pub(crate) rounds: u32,
    pub(crate) partial_runs: usize,
    /// The widest primary figure's CI half-width, in percent of its mean.
    pub(crate) widest_ci_percent: Option<f64>,
    pub(crate) target_ci_percent: f64,
}

/// `Some` when no further round should start after `rounds` rounds.
pub(crate) fn stop_after(
    auto: &AutoRuns,
    rounds: u32,
    widest_ci_percent: Option<f64>,
    elapsed: Duration,
) -> Option<AutoStop> {
    if rounds < AutoRuns::MIN_RUNS {
        return None;
    }
    let reason = if widest_ci_percent.is_some_and(|w| w < auto.target_ci_percent) {
        StopReason::Target
    } else if rounds >= auto.max_runs {
        StopReason::Cap
    } else if auto
        .max_secs
        .is_some_and(|max| elapsed.as_secs_f64() >= max)
    {
        StopReason::Time
    } else {
        return None;
    };
    Some(AutoStop {
        reason,
        rounds,
        partial_runs: 0,
        widest_ci_percent,
        target_ci_percent: auto.target_ci_percent,
    })
}

/// The time budget of `--max-time`, enforced between runs: no run, and no round's ceiling
/// pass, starts that the ones before it say would end past the budget. So the suite ends
/// within it, whatever the machine's load makes of its runs (only the very first run has
/// nothing to go by).
pub(crate) struct Budget {
    limit: Option<Duration>,
    started: Instant,
    /// How long each (configuration, workload) ran, per run, in this process.
    runs: Vec<((usize, usize), Duration)>,
    /// How long the last ceiling pass took.
    ceiling: Duration,
}

impl Budget {
    pub(crate) fn new(auto: Option<&AutoRuns>) -> Budget {
        Budget {
            limit: auto.and_then(|a| a.max_secs).map(Duration::from_secs_f64),
            started: Instant::now(),
            runs: Vec::new(),
            ceiling: Duration::ZERO,
        }
    }

    /// The run of (configuration, workload) `which` ends, by the runs so far, after the
    /// budget (`None`: before a round, its ceiling pass and first run).
    pub(crate) fn would_overrun(&self, which: Option<(usize, usize)>) -> bool {
        let Some(limit) = self.limit else {
            return false;
        };
        let mean = |runs: &mut dyn Iterator<Item = Duration>| {
            let (sum, n) = runs.fold((Duration::ZERO, 0), |(s, n), d| (s + d, n + 1));
            (n > 0).then(|| sum / n)
        };
        let alike = which
            .and_then(|w| mean(&mut self.runs.iter().filter(|(k, _)| *k == w).map(|(_, d)| *d)));
        let any = || mean(&mut self.runs.iter().map(|(_, d)| *d));
        let run = alike.or_else(any).unwrap_or_default();
        let next = match which {
            Some(_) => run,
            None => self.ceiling + run,
        };
        self.started.elapsed() + next > limit
    }

    pub(crate) fn run_took(&mut self, which: (usize, usize), took: Duration) {
        self.runs.push((which, took));
    }

    pub(crate) fn ceiling_took(&mut self, took: Duration) {
        self.ceiling = took;
    }
}

/// The stop of a budget that would have run out: after `rounds` complete rounds and
/// `partial_runs` runs of the next.
pub(crate) fn out_of_time(
    auto: &AutoRuns,
    (rounds, partial_runs): (u32, usize),
    widest_ci_percent: Option<f64>,
) -> AutoStop {
    AutoStop {
        reason: StopReason::Time,
        rounds,
        partial_runs,
        widest_ci_percent,
        target_ci_percent: auto.target_ci_percent,
    }
}

impl fmt::Display for AutoStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let widest = self
            .widest_ci_percent
            .map_or("no interval yet".to_string(), |w| format!("{w:.1}%"));
        let why = match self.reason {
            StopReason::Target => "every primary figure's 95% CI half-width is below the target",
            StopReason::Cap => "the cap (--max-runs) was reached before the CI target",
            StopReason::Time => {
                "the time budget (--max-time) would have run out in the next run, before the CI target"
            }
        };
        let partial = match self.partial_runs {
            0 => String::new(),
            n => format!(" and {n} run(s) of the next"),
        };
        let rounds = match self.rounds {
            1 => "1 round".to_string(),
            n => format!("{n} rounds"),
        };
        write!(
            f,
            "--runs auto stopped after {rounds}{partial}: {why} (widest {widest}, target {}%)",
            self.target_ci_percent
        )?;
        if self.rounds < 2 {
            write!(
                f,
                "; with fewer than 2 runs each there is no verdict: allow more time (--max-time) or a smaller workload"
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_on_target_cap_or_time_never_before_three_runs() {
        let auto = AutoRuns {
            target_ci_percent: 5.0,
            max_runs: 10,
            max_secs: Some(60.0),
        };
        let quick = Duration::from_secs(1);
        assert_eq!(stop_after(&auto, 2, Some(1.0), quick), None);
        let reason = |rounds, widest, secs| {
            stop_after(&auto, rounds, widest, Duration::from_secs(secs)).map(|s| s.reason)
        };
        assert_eq!(reason(3, Some(4.9), 1), Some(StopReason::Target));
        assert_eq!(reason(3, Some(5.1), 1), None);
        assert_eq!(reason(3, None, 1), None);
        assert_eq!(reason(10, Some(5.1), 1), Some(StopReason::Cap));
        assert_eq!(reason(4, Some(5.1), 61), Some(StopReason::Time));
    }

    #[test]
    fn the_budget_stops_a_run_the_runs_before_it_say_would_end_past_it() {
        let auto = AutoRuns {
            max_secs: Some(10.0),
            ..AutoRuns::default()
        };
        let mut budget = Budget::new(Some(&auto));
        // Nothing to go by yet: the first run starts.
        assert!(!budget.would_overrun(Some((0, 0))));
        budget.run_took((0, 0), Duration::from_secs(4));
        budget.run_took((1, 0), Duration::from_secs(1));
        // Measured from its start, nearly nothing has passed: 4 s more fit in 10 s.
        assert!(!budget.would_overrun(Some((0, 0))));
        // Pretend 7 s have passed: configuration 0 (4 s a run) no longer fits, 1 (1 s) does.
        budget.started -= Duration::from_secs(7);
        assert!(budget.would_overrun(Some((0, 0))));
        assert!(!budget.would_overrun(Some((1, 0))));
        // A configuration not run yet is expected to take the mean of all: 2.5 s.
        assert!(!budget.would_overrun(Some((2, 0))));
        budget.ceiling_took(Duration::from_secs(2));
        assert!(budget.would_overrun(None), "ceiling 2 s + a run 2.5 s");
        assert!(!Budget::new(Some(&AutoRuns::default())).would_overrun(None));
        let stop = out_of_time(&auto, (1, 2), Some(12.0)).to_string();
        assert!(
            stop.contains("after 1 round and 2 run(s) of the next") && stop.contains("no verdict"),
            "{stop}"
        );
    }
}

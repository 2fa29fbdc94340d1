//! `--runs auto`: whether to run another round, from the precision the runs so far reached.

use std::fmt;
use std::time::Duration;

use fsbench_model::suite::AutoRuns;

/// What ended the rounds of `--runs auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// Every primary figure's 95% CI half-width is below the target.
    Target,
    /// `--max-runs` rounds were run.
    Cap,
    /// `--max-time` had passed.
    Time,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AutoStop {
    pub(crate) reason: StopReason,
    pub(crate) rounds: u32,
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
        widest_ci_percent,
        target_ci_percent: auto.target_ci_percent,
    })
}

impl fmt::Display for AutoStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let widest = self
            .widest_ci_percent
            .map_or("no interval yet".to_string(), |w| format!("{w:.1}%"));
        let why = match self.reason {
            StopReason::Target => "every primary figure's 95% CI half-width is below the target",
            StopReason::Cap => "the cap (--max-runs) was reached before the CI target",
            StopReason::Time => "the time budget (--max-time) ran out before the CI target",
        };
        write!(
            f,
            "--runs auto stopped after {} rounds: {why} (widest {widest}, target {}%)",
            self.rounds, self.target_ci_percent
        )
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
}

//! The suite's answer, as every view leads with it: per workload a headline (who is fastest
//! overall, or that it depends on the phase, or that the runs cannot tell), then a line per
//! phase that says what its verdicts say, in the user's terms. Computed in
//! [`fsbench_stats::conclusion`] from the verdicts of every pair, which `show` prints too.

use fsbench_model::results::ceiling::{HARNESS_PERCENT, harness_bound};
use fsbench_model::results::{MetricSummary, SuiteResult};
use fsbench_stats::compare::{DEFAULT_NOISE_PERCENT, pairwise};
use fsbench_stats::conclusion::{
    Conclusion, Outcome, PhaseOutcome, RESOLUTION_PERCENT, conclusions,
};
use fsbench_workloads::replay::PROGRAM_TIME;

/// The answer's lines, each with its level: 0 for a workload's headline, 1 for its phases.
pub(crate) fn lines(suite: &SuiteResult) -> Vec<(usize, String)> {
    let caveat = |config: &str, workload: &str, phase: &str| {
        let summary = |metric| Some(&suite.summary(config, workload, phase, metric)?.summary);
        if summary("time").is_some_and(|t| t.mean < suite.suite.min_phase_secs) {
            Some(format!("under {} s", suite.suite.min_phase_secs))
        } else if summary(HARNESS_PERCENT).is_some_and(harness_bound) {
            Some("harness-bound, mostly fsbench's own cost".to_string())
        } else {
            None
        }
    };
    let pairs = pairwise(suite, DEFAULT_NOISE_PERCENT);
    conclusions(&pairs, &caveat)
        .iter()
        .flat_map(|c| {
            let mut lines = workload_lines(c);
            // A replay's seconds beside its ratios: what the filesystem is of the program.
            lines.extend(program_share(suite, &c.workload).map(|share| (1, share)));
            lines
        })
        .chain(
            super::crash::answer_lines(suite)
                .into_iter()
                .map(|l| (0, l)),
        )
        .collect()
}

/// A workload's headline, then its phases.
pub(crate) fn workload_lines(c: &Conclusion) -> Vec<(usize, String)> {
    // Where no phase has a spread, the headline says so once for all of them.
    let unspread = (c.phases.iter()).all(|p| p.outcome == Outcome::NoSpread);
    let phases = (c.phases.iter())
        .filter(|_| !unspread)
        .map(|p| (1, phase_line(p, c.runs)));
    std::iter::once((0, headline(c))).chain(phases).collect()
}

/// A replay's time set against its program's own (captured with it): `the calls take
/// 0.19–0.26 s of the program's 21 s; the filesystems differ by 0.07 s (ext4 0.19, btrfs
/// 0.26), 0.3% of it` — a replay leaves the program's own computing out, so its ratios
/// alone overstate what the filesystem means to the program: the seconds go beside them.
fn program_share(suite: &SuiteResult, workload: &str) -> Option<String> {
    let ours = |s: &&MetricSummary| s.workload == workload && s.dims.is_empty();
    let program = (suite.summaries.iter().filter(ours)).find(|s| s.metric == PROGRAM_TIME)?;
    let times: Vec<(&str, f64)> = (suite.summaries.iter().filter(ours))
        .filter(|s| s.phase == program.phase && s.metric == "time")
        .map(|s| (s.config.as_str(), s.summary.mean))
        .collect();
    let by_time = |a: &&(&str, f64), b: &&(&str, f64)| a.1.total_cmp(&b.1);
    let (fastest, slowest) = (times.iter().min_by(by_time)?, times.iter().max_by(by_time)?);
    let whole = program.summary.mean;
    if times.len() < 2 || whole <= 0.0 {
        return None;
    }
    let (low, high) = (fastest.1, slowest.1);
    let range = if seconds(low) == seconds(high) {
        seconds(low)
    } else {
        format!("{}–{}", seconds(low), seconds(high))
    };
    Some(format!(
        "the calls take {range} s of the program's {} s; the filesystems differ by {} s ({} \
         {}, {} {}), {:.1}% of it",
        seconds(whole),
        seconds(high - low),
        fastest.0,
        seconds(low),
        slowest.0,
        seconds(high),
        (high - low) / whole * 100.0
    ))
}

/// Seconds with two significant digits or more: `21`, `4.3`, `0.19`, `0.0071`.
fn seconds(s: f64) -> String {
    let decimals = if s >= 10.0 || s == 0.0 {
        0
    } else {
        (1 - s.log10().floor() as i32).max(1) as usize
    };
    format!("{s:.decimals$}")
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A speed-up as read: `1.75 ×` (two decimals: a verdict needs 2% at least).
fn times(factor: f64) -> String {
    format!("{factor:.2} ×")
}

/// `xfs is fastest overall (leads in 3 of 4 phases)`, `it depends on the phase: …`, or what
/// the runs could not tell.
fn headline(c: &Conclusion) -> String {
    let n = c.phases.len();
    let configs = c
        .phases
        .first()
        .map(|p| p.configs.clone())
        .unwrap_or_default();
    let lead = |p: &PhaseOutcome| match &p.outcome {
        Outcome::Leads { configs, .. } => Some(configs.clone()),
        _ => None,
    };
    // Each group of leaders and the phases it leads, in order of first appearance.
    let mut groups: Vec<(Vec<String>, usize)> = Vec::new();
    for leaders in c.phases.iter().filter_map(lead) {
        match groups.iter_mut().find(|(g, _)| *g == leaders) {
            Some((_, count)) => *count += 1,
            None => groups.push((leaders, 1)),
        }
    }
    let ahead = (c.phases.iter()).any(|p| matches!(p.outcome, Outcome::Ahead { .. }));
    let all = |f: fn(&Outcome) -> bool| c.phases.iter().all(|p| f(&p.outcome));
    let what = match groups.as_slice() {
        _ if n == 0 => "nothing to compare".to_string(),
        [] if all(|o| matches!(o, Outcome::Same { .. })) => {
            format!("{} perform the same in every phase", and_list(&configs))
        }
        [] if all(|o| matches!(o, Outcome::NoSpread)) => NO_SPREAD.to_string(),
        [] if !ahead => format!(
            "no difference shown: {} cannot tell {} apart on this machine",
            runs_each(c.runs),
            and_list(&configs)
        ),
        [] => "some pairs differ, but no configuration leads a phase".to_string(),
        // "Overall" only where one leads alone in most phases, shares the lead wherever it
        // does not lead alone, and nothing else is ahead anywhere.
        _ if let Some((best, count)) = overall(&groups, n)
            && !ahead =>
        {
            let shared: usize = (groups.iter())
                .filter(|(leaders, _)| leaders.len() > 1)
                .map(|(_, count)| count)
                .sum();
            let shares = match shared {
                0 => String::new(),
                m => format!(", shares the lead in {m}"),
            };
            format!("{best} is fastest overall (leads in {count} of {n} phases{shares})")
        }
        _ => {
            let each: Vec<String> = (groups.iter())
                .map(|(leaders, count)| match leaders.as_slice() {
                    [one] => format!("{one} leads in {count}"),
                    several => format!("{} share the lead in {count}", and_list(several)),
                })
                .collect();
            format!(
                "no configuration is fastest overall: {} of {n} phases",
                each.join(", ")
            )
        }
    };
    format!("{} ({}): {what}", c.workload, runs_each(c.runs))
}

/// What a phase without a spread says: nothing to judge by.
const NO_SPREAD: &str = "no verdict: one run gives no spread (--runs 3 or more gives one)";

/// `1 run each`, `5 runs each`.
fn runs_each(runs: usize) -> String {
    match runs {
        1 => "1 run each".to_string(),
        n => format!("{n} runs each"),
    }
}

/// The configuration that leads alone in more than half of the `n` phases and is among the
/// leaders of every other phase that has one, with the phases it leads alone.
fn overall(groups: &[(Vec<String>, usize)], n: usize) -> Option<(&str, usize)> {
    let (best, count) =
        (groups.iter()).find(|(leaders, count)| leaders.len() == 1 && count * 2 > n)?;
    let best = best[0].as_str();
    (groups.iter())
        .all(|(leaders, _)| leaders.iter().any(|l| l == best))
        .then_some((best, *count))
}

/// One phase's verdicts in the user's terms: `dir-create: xfs leads, 1.75 × faster than
/// ext4`, `file-remove: ext4 and xfs are within 8% of each other: 5 runs each cannot tell
/// them apart on this machine`.
pub(crate) fn phase_line(p: &PhaseOutcome, runs: usize) -> String {
    let configs = and_list(&p.configs);
    let said = match &p.outcome {
        Outcome::Leads {
            configs: leaders,
            behind,
            factor,
        } => {
            let at_least = if leaders.len() * behind.len() > 1 {
                "at least "
            } else {
                ""
            };
            let who = match leaders.as_slice() {
                [one] => format!("{one} leads"),
                several => format!("{} share the lead", and_list(several)),
            };
            format!(
                "{who}, {at_least}{} faster than {}",
                times(*factor),
                and_list(behind)
            )
        }
        Outcome::Ahead { pairs } => {
            let decided: Vec<String> = (pairs.iter())
                .map(|(a, b, f)| format!("{a} is {} faster than {b}", times(*f)))
                .collect();
            let told = |a: &str, b: &str| {
                (pairs.iter()).any(|(x, y, _)| (x == a && y == b) || (x == b && y == a))
            };
            let mut apart = Vec::new();
            for (i, a) in p.configs.iter().enumerate() {
                for b in &p.configs[i + 1..] {
                    if !told(a, b) {
                        apart.push(format!("{a} and {b}"));
                    }
                }
            }
            format!(
                "{}; not told apart: {}",
                decided.join(", "),
                apart.join(", ")
            )
        }
        Outcome::Same { within } => format!("{configs} perform the same (within ±{within}%)"),
        Outcome::Open {
            largest,
            runs_needed,
        } => {
            // Beyond 100% the bound is a factor, and a percentage would read as a finding.
            let bound = if *largest > 100.0 {
                format!("may differ by up to {:.0} ×", 1.0 + largest / 100.0)
            } else {
                format!("are within {largest:.0}% of each other")
            };
            let resolve = match runs_needed {
                Some(n) => format!(" (about {n} runs each would resolve {RESOLUTION_PERCENT}%)"),
                None => format!(
                    " (resolving {RESOLUTION_PERCENT}% would take over {} runs each)",
                    fsbench_stats::difference::MAX_RUNS_ESTIMATE
                ),
            };
            format!(
                "{configs} {bound}: {} cannot tell them apart on this machine{resolve}",
                runs_each(runs)
            )
        }
        Outcome::NoSpread => NO_SPREAD.to_string(),
    };
    let rough = match &p.caveat {
        Some(why) => format!(" (rough: {why})"),
        None => String::new(),
    };
    format!("{}: {said}{rough}", p.phase)
}

#[cfg(test)]
mod tests;

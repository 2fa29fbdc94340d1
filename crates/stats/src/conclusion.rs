//! The answer to a suite's question, one per workload: which configuration leads in which
//! phases, where all are equivalent, what is still open and how many runs would close it.
//! Built from every configuration compared against every other (the verdicts of
//! [`super::compare`], corrected as they are), so it never says more than they do.

use serde::Serialize;

use crate::compare::{ALPHA, Column, Comparison, Role, Verdict, compare, suite_columns};
use fsbench_model::results::SuiteResult;

/// A phase whose pairs all differ by less than this (the 95% interval of every pair's
/// difference inside ± it) is called equivalent within its bound; above it, undecided.
pub(crate) const EQUIVALENCE_LIMIT_PERCENT: f64 = 10.0;
/// The resolution the "runs would resolve" estimate is given for.
pub const RESOLUTION_PERCENT: f64 = 3.0;

/// What the runs say about one phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum Outcome {
    /// `configs` are beaten by no configuration, and some are beaten by them (one
    /// configuration: a clear leader). `factor` is the smallest speed-up of a leader over a
    /// configuration behind it, where each leader beats every configuration behind.
    Leads {
        configs: Vec<String>,
        factor: Option<f64>,
    },
    /// No pair differs significantly and every pair's 95% interval lies within ± `within`%.
    Equivalent { within: f64 },
    /// No pair differs significantly, but the intervals are wider than
    /// [`EQUIVALENCE_LIMIT_PERCENT`]: `largest` is the widest bound, `runs_needed` about how
    /// many runs per configuration would tell the widest pair (`None`: too many).
    Open {
        largest: f64,
        runs_needed: Option<usize>,
    },
    /// Left out of the answer, with the reason (too short to time, harness-bound).
    LeftOut { reason: String },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseOutcome {
    pub phase: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// A workload's answer: its phases' outcomes, and the runs per configuration it rests on.
#[derive(Debug, Clone, Serialize)]
pub struct Conclusion {
    pub workload: String,
    pub phases: Vec<PhaseOutcome>,
    /// The fewest runs any compared configuration had.
    pub runs: usize,
    /// About how many runs per configuration would resolve [`RESOLUTION_PERCENT`] in every
    /// phase left open or equivalent (`None`: more than the estimate's limit, or nothing open).
    pub runs_to_resolve: Option<usize>,
}

/// Every configuration compared against every other: `comparisons[b]` has `b` as baseline.
fn all_pairs(suite: &SuiteResult, columns: &[Column], noise: f64) -> Vec<Comparison> {
    (0..columns.len())
        .map(|b| compare(std::slice::from_ref(suite), columns, b, noise))
        .collect()
}

/// The suite's answers, one per workload with at least two configurations measured.
/// `left_out(config, workload, phase)` says why a phase cannot be timed, if it cannot.
pub fn conclusions(
    suite: &SuiteResult,
    noise: f64,
    left_out: &dyn Fn(&str, &str, &str) -> Option<String>,
) -> Vec<Conclusion> {
    let columns = suite_columns(suite);
    if columns.len() < 2 {
        return Vec::new();
    }
    let comparisons = all_pairs(suite, &columns, noise);
    let mut workloads: Vec<&str> = Vec::new();
    for row in comparisons[0]
        .rows
        .iter()
        .filter(|r| r.role == Role::Primary)
    {
        if !workloads.contains(&row.key.workload.as_str()) {
            workloads.push(&row.key.workload);
        }
    }
    workloads
        .into_iter()
        .map(|w| conclude(w, &columns, &comparisons, left_out))
        .collect()
}

fn conclude(
    workload: &str,
    columns: &[Column],
    comparisons: &[Comparison],
    left_out: &dyn Fn(&str, &str, &str) -> Option<String>,
) -> Conclusion {
    let rows = |c: &Comparison| {
        c.rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.role == Role::Primary && r.key.workload == workload)
            .map(|(i, _)| i)
            .collect::<Vec<_>>()
    };
    let mut phases = Vec::new();
    let mut runs = usize::MAX;
    let mut runs_to_resolve: Option<Option<usize>> = None;
    for ri in rows(&comparisons[0]) {
        let phase = comparisons[0].rows[ri].key.phase.clone();
        let counted = comparisons[0].rows[ri].cells.iter().flatten();
        runs = counted.fold(runs, |fewest, c| fewest.min(c.summary.n));
        let reason = columns
            .iter()
            .find_map(|c| left_out(&c.config, workload, &phase));
        if let Some(reason) = reason {
            phases.push(PhaseOutcome {
                phase,
                outcome: Outcome::LeftOut { reason },
            });
            continue;
        }
        let Some((outcome, needed)) = judge(columns, comparisons, ri) else {
            continue;
        };
        if !matches!(outcome, Outcome::Leads { .. }) {
            let merged = runs_to_resolve.unwrap_or(Some(0));
            runs_to_resolve = Some(merged.zip(needed).map(|(x, y)| x.max(y)));
        }
        phases.push(PhaseOutcome { phase, outcome });
    }
    Conclusion {
        workload: workload.to_string(),
        phases,
        runs: if runs == usize::MAX { 0 } else { runs },
        runs_to_resolve: runs_to_resolve.flatten(),
    }
}

/// The outcome of primary row `ri` (one phase) among the configurations that measured it,
/// and the runs that would resolve its differences; `None` with fewer than two measured.
fn judge(
    columns: &[Column],
    comparisons: &[Comparison],
    ri: usize,
) -> Option<(Outcome, Option<usize>)> {
    // cell(b, j): configuration j against baseline b in this phase.
    let cell = |b: usize, j: usize| comparisons[b].rows[ri].cells[j].as_ref();
    let measured: Vec<usize> = (0..columns.len())
        .filter(|&j| cell(j, j).is_some())
        .collect();
    if measured.len() < 2 {
        return None;
    }
    let beats = |a: usize, b: usize| cell(a, b).is_some_and(|c| c.verdict == Verdict::Worse);
    // The leaders: beaten by none; they lead if each beats every other configuration.
    let top: Vec<usize> = (measured.iter().copied())
        .filter(|&a| !measured.iter().any(|&b| beats(b, a)))
        .collect();
    let behind: Vec<usize> = (measured.iter().copied())
        .filter(|j| !top.contains(j))
        .collect();
    let leads = !behind.is_empty() && top.iter().all(|&a| behind.iter().all(|&b| beats(a, b)));
    let mut largest: f64 = 0.0;
    let mut needed: Option<usize> = Some(0);
    for &a in &measured {
        for &b in measured.iter().filter(|&&b| b > a) {
            let Some(d) = cell(a, b).and_then(|c| c.difference.as_ref()) else {
                continue;
            };
            let bound = ((d.ratio_low - 1.0).abs()).max((d.ratio_high - 1.0).abs()) * 100.0;
            largest = largest.max(bound);
            let pairs = measured.len() * (measured.len() - 1) / 2;
            let n = d.runs_needed(RESOLUTION_PERCENT, ALPHA / pairs as f64);
            needed = needed.zip(n).map(|(x, y)| x.max(y));
        }
    }
    let outcome = if leads {
        // The smallest speed-up of a leader over one behind, from the leader's side.
        let factor = (top.iter())
            .flat_map(|&a| behind.iter().map(move |&b| (a, b)))
            .filter_map(|(a, b)| cell(a, b)?.difference.as_ref())
            .map(|d| speedup(d.ratio, comparisons[0].rows[ri].key.higher_is_better))
            .fold(f64::INFINITY, f64::min);
        Outcome::Leads {
            configs: top.iter().map(|&a| columns[a].config.clone()).collect(),
            factor: Some(factor),
        }
    } else if top.len() == measured.len() && largest <= EQUIVALENCE_LIMIT_PERCENT {
        Outcome::Equivalent {
            within: largest.ceil(),
        }
    } else if top.len() == measured.len() {
        Outcome::Open {
            largest,
            runs_needed: needed,
        }
    } else {
        // Significant differences that do not make a clean group of leaders (a beats b,
        // b beats c, a and c undecided): the leaders are those beaten by none.
        Outcome::Leads {
            configs: top.iter().map(|&a| columns[a].config.clone()).collect(),
            factor: None,
        }
    };
    Some((outcome, needed))
}

/// How many times faster the baseline is than the candidate, from the candidate ÷ baseline
/// ratio of a figure where higher (a rate) or lower (a time) is better.
fn speedup(ratio: f64, higher_is_better: bool) -> f64 {
    if higher_is_better { 1.0 / ratio } else { ratio }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_model::results::{ConfigInfo, MetricSummary};

    /// A suite with one rate figure per (config, phase).
    fn suite(figures: &[(&str, &str, &[f64])]) -> SuiteResult {
        let mut s = SuiteResult::for_tests();
        s.id = Some(1);
        let mut configs: Vec<&str> = Vec::new();
        for (config, phase, values) in figures {
            if !configs.contains(config) {
                configs.push(config);
            }
            s.summaries.push(MetricSummary {
                config: config.to_string(),
                workload: "tree:x".into(),
                phase: phase.to_string(),
                metric: "rate".into(),
                dims: Vec::new(),
                unit: "files/s".into(),
                higher_is_better: true,
                summary: crate::summarize(values).unwrap(),
            });
        }
        for config in configs {
            s.configurations.push(ConfigInfo {
                config: fsbench_model::config::FsConfig::for_tests(config),
                mkfs_version: None,
                fsck_version: None,
                mkfs_command: None,
                mount_options: None,
            });
        }
        s
    }

    const A: &[f64] = &[100.0, 101.0, 99.0, 100.5, 99.5];
    const A_NEAR: &[f64] = &[100.4, 101.2, 99.3, 100.1, 99.9];
    const FAST: &[f64] = &[150.0, 151.0, 149.0, 150.5, 149.5];
    const NOISY: &[f64] = &[60.0, 140.0, 90.0, 130.0, 80.0];

    fn outcomes(s: &SuiteResult) -> Vec<Outcome> {
        let c = conclusions(s, 2.0, &|_, _, _| None);
        assert_eq!(c.len(), 1);
        c[0].phases.iter().map(|p| p.outcome.clone()).collect()
    }

    #[test]
    fn a_clear_leader_leads_with_its_smallest_lead() {
        let s = suite(&[
            ("ext4", "create", A),
            ("xfs", "create", FAST),
            ("btrfs", "create", A_NEAR),
        ]);
        let Outcome::Leads { configs, factor } = &outcomes(&s)[0] else {
            panic!("{:?}", outcomes(&s));
        };
        assert_eq!(configs, &["xfs"]);
        let factor = factor.unwrap();
        assert!((factor - 1.5).abs() < 0.02, "{factor}");
    }

    #[test]
    fn close_configurations_are_equivalent_and_noisy_ones_open() {
        let s = suite(&[("ext4", "create", A), ("xfs", "create", A_NEAR)]);
        let Outcome::Equivalent { within } = outcomes(&s)[0] else {
            panic!("{:?}", outcomes(&s));
        };
        assert!((1.0..=3.0).contains(&within), "{within}");
        let s = suite(&[("ext4", "create", A), ("xfs", "create", NOISY)]);
        let Outcome::Open {
            largest,
            runs_needed,
        } = outcomes(&s)[0]
        else {
            panic!("{:?}", outcomes(&s));
        };
        assert!(largest > EQUIVALENCE_LIMIT_PERCENT);
        assert!(runs_needed.unwrap_or(usize::MAX) > 5);
    }

    #[test]
    fn two_leaders_share_the_lead_and_left_out_phases_say_why() {
        let s = suite(&[
            ("ext4", "create", A),
            ("xfs", "create", FAST),
            ("btrfs", "create", FAST),
            ("ext4", "stat", A),
            ("xfs", "stat", FAST),
            ("btrfs", "stat", A),
        ]);
        let c = conclusions(&s, 2.0, &|config, _, phase| {
            (phase == "stat" && config == "btrfs").then(|| "too short".to_string())
        });
        let Outcome::Leads { configs, .. } = &c[0].phases[0].outcome else {
            panic!("{:?}", c[0].phases);
        };
        assert_eq!(configs, &["xfs", "btrfs"]);
        assert_eq!(
            c[0].phases[1].outcome,
            Outcome::LeftOut {
                reason: "too short".into()
            }
        );
        assert_eq!(c[0].runs, 5);
        // Every phase left out: the runs are still counted.
        let c = conclusions(&s, 2.0, &|_, _, _| Some("too short".to_string()));
        assert_eq!(c[0].runs, 5);
    }
}

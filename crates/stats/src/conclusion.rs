//! The answer to a suite's question, one per workload: per phase, which configurations lead,
//! which pairs are decided, where all perform the same, and what the runs cannot tell apart.
//! Built from the verdicts of every configuration against every other, corrected together
//! ([`super::compare::pairwise`]): the very verdicts `show` prints, so it never says more.

use serde::Serialize;

use crate::compare::{ALPHA, Pairwise, Role, Verdict};

/// The resolution the "runs would resolve" estimate is given for.
pub const RESOLUTION_PERCENT: f64 = 3.0;

/// What the runs say about one phase, from its pairs' verdicts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum Outcome {
    /// Each of `configs` is faster than each of `behind`, and none of them is shown faster
    /// than another; `factor` is the smallest speed-up of a leader over one behind.
    Leads {
        configs: Vec<String>,
        behind: Vec<String>,
        factor: f64,
    },
    /// Some pairs are decided, but no group is ahead of all the rest: each decided pair as
    /// (faster, slower, speed-up); the pairs not named are undecided or the same.
    Ahead { pairs: Vec<(String, String, f64)> },
    /// Every pair is the same: the difference's 95% interval within ± `within` %.
    Same { within: f64 },
    /// No pair is decided and some are not the same: the runs cannot tell them apart.
    /// `largest` is the widest pair's bound in percent (the difference it cannot exclude),
    /// `runs_needed` about how many runs each would resolve [`RESOLUTION_PERCENT`] (`None`:
    /// more than the estimate's limit), always more than were made.
    Open {
        largest: f64,
        runs_needed: Option<usize>,
    },
    /// No pair has an interval at all (a configuration ran once): nothing can be said.
    NoSpread,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseOutcome {
    pub phase: String,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The configurations compared in the phase, in the suite's order.
    pub configs: Vec<String>,
    /// Why the verdict is rough (too short to time well, harness-bound), if it is.
    pub caveat: Option<String>,
}

/// A workload's answer: its phases' outcomes, and the runs per configuration it rests on.
#[derive(Debug, Clone, Serialize)]
pub struct Conclusion {
    pub workload: String,
    pub phases: Vec<PhaseOutcome>,
    /// The fewest runs any compared configuration had.
    pub runs: usize,
}

/// The answers of the suite `pairs` compares, one per workload with two or more
/// configurations measured. `caveat(config, workload, phase)` says why a phase's figure is
/// rough, if it is.
pub fn conclusions(
    pairs: &Pairwise,
    caveat: &dyn Fn(&str, &str, &str) -> Option<String>,
) -> Vec<Conclusion> {
    if pairs.columns.len() < 2 {
        return Vec::new();
    }
    let mut workloads: Vec<&str> = Vec::new();
    for row in (pairs.by_baseline[0].rows.iter()).filter(|r| r.role == Role::Primary) {
        if !workloads.contains(&row.key.workload.as_str()) {
            workloads.push(&row.key.workload);
        }
    }
    workloads
        .into_iter()
        .map(|w| conclude(w, pairs, caveat))
        .collect()
}

fn conclude(
    workload: &str,
    pairs: &Pairwise,
    caveat: &dyn Fn(&str, &str, &str) -> Option<String>,
) -> Conclusion {
    let (columns, comparisons) = (&pairs.columns, &pairs.by_baseline);
    let rows = (comparisons[0].rows.iter().enumerate())
        .filter(|(_, r)| r.role == Role::Primary && r.key.workload == workload)
        .map(|(i, _)| i);
    let mut phases = Vec::new();
    let mut runs = usize::MAX;
    for row in rows {
        let phase = PhaseCells { pairs, row };
        let measured: Vec<usize> = (0..columns.len())
            .filter(|&j| phase.cell(j, j).is_some())
            .collect();
        runs = (measured.iter()).fold(runs, |fewest, &j| {
            fewest.min(phase.cell(j, j).map_or(usize::MAX, |c| c.summary.n))
        });
        if measured.len() < 2 {
            continue;
        }
        let name = &comparisons[0].rows[row].key.phase;
        let caveat = (measured.iter()).find_map(|&j| caveat(&columns[j].config, workload, name));
        phases.push(PhaseOutcome {
            phase: name.clone(),
            outcome: phase.outcome(&measured),
            configs: measured
                .iter()
                .map(|&j| columns[j].config.clone())
                .collect(),
            caveat,
        });
    }
    Conclusion {
        workload: workload.to_string(),
        phases,
        runs: if runs == usize::MAX { 0 } else { runs },
    }
}

/// One phase's cells in every comparison of the pairs.
struct PhaseCells<'a> {
    pairs: &'a Pairwise,
    /// The phase's primary row.
    row: usize,
}

impl PhaseCells<'_> {
    /// Configuration `j` against baseline `b`.
    fn cell(&self, b: usize, j: usize) -> Option<&crate::compare::Cell> {
        self.pairs.by_baseline[b].rows[self.row].cells[j].as_ref()
    }

    fn verdict(&self, a: usize, b: usize) -> Verdict {
        self.cell(a, b).map_or(Verdict::Untested, |c| c.verdict)
    }

    /// `a` beats `b`: `b` is worse against `a` as baseline.
    fn beats(&self, a: usize, b: usize) -> bool {
        self.verdict(a, b) == Verdict::Worse
    }

    /// How many times faster `a` is than `b`.
    fn speedup(&self, a: usize, b: usize) -> f64 {
        let higher = self.pairs.by_baseline[0].rows[self.row]
            .key
            .higher_is_better;
        let ratio = (self.cell(a, b))
            .and_then(|c| c.difference.as_ref())
            .map(|d| d.ratio);
        ratio.map_or(f64::NAN, |r| if higher { 1.0 / r } else { r })
    }

    /// What the verdicts between the `measured` configurations say.
    fn outcome(&self, measured: &[usize]) -> Outcome {
        let name = |j: usize| self.pairs.columns[j].config.clone();
        let pairs: Vec<(usize, usize)> = (measured.iter())
            .flat_map(|&a| {
                measured
                    .iter()
                    .filter(move |&&b| b > a)
                    .map(move |&b| (a, b))
            })
            .collect();
        let decided: Vec<(usize, usize)> = (pairs.iter())
            .flat_map(|&(a, b)| [(a, b), (b, a)])
            .filter(|&(a, b)| self.beats(a, b))
            .collect();
        let top: Vec<usize> = (measured.iter().copied())
            .filter(|&a| !decided.iter().any(|&(_, loser)| loser == a))
            .collect();
        let behind: Vec<usize> = (measured.iter().copied())
            .filter(|j| !top.contains(j))
            .collect();
        let clean = top
            .iter()
            .all(|&a| behind.iter().all(|&b| self.beats(a, b)));
        if !decided.is_empty() && clean {
            let factor = (top.iter())
                .flat_map(|&a| behind.iter().map(move |&b| (a, b)))
                .map(|(a, b)| self.speedup(a, b))
                .fold(f64::INFINITY, f64::min);
            Outcome::Leads {
                configs: top.iter().map(|&a| name(a)).collect(),
                behind: behind.iter().map(|&b| name(b)).collect(),
                factor,
            }
        } else if !decided.is_empty() {
            let said = decided
                .iter()
                .map(|&(a, b)| (name(a), name(b), self.speedup(a, b)));
            Outcome::Ahead {
                pairs: said.collect(),
            }
        } else if pairs
            .iter()
            .all(|&(a, b)| self.verdict(a, b) == Verdict::Same)
        {
            Outcome::Same {
                within: self.pairs.by_baseline[0].noise_percent,
            }
        } else {
            self.open(&pairs)
        }
    }

    /// No pair decided: the widest pair's bound, and the runs that would resolve it; where no
    /// pair has an interval, no spread.
    fn open(&self, pairs: &[(usize, usize)]) -> Outcome {
        let differences: Vec<_> = (pairs.iter())
            .filter_map(|&(a, b)| self.cell(a, b).and_then(|c| c.difference.as_ref()))
            .collect();
        if differences.is_empty() {
            return Outcome::NoSpread;
        }
        let (mut largest, mut needed): (f64, Option<usize>) = (0.0, Some(0));
        let tests = self.pairs.tests.max(1) as f64;
        for d in differences {
            let bound = ((d.ratio_low - 1.0).abs()).max((d.ratio_high - 1.0).abs()) * 100.0;
            largest = largest.max(bound);
            let n = d.runs_needed(RESOLUTION_PERCENT, ALPHA / tests);
            needed = needed.zip(n).map(|(x, y)| x.max(y));
        }
        Outcome::Open {
            largest,
            runs_needed: needed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_model::results::{ConfigInfo, MetricSummary, SuiteResult};

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
                config: fsbench_testbed::define::parse_fs(config).unwrap().remove(0),
                mkfs_version: None,
                fsck_version: None,
                mkfs_command: None,
                mount_options: None,
                crash: Vec::new(),
            });
        }
        s
    }

    const A: &[f64] = &[100.0, 101.0, 99.0, 100.5, 99.5];
    const A_NEAR: &[f64] = &[100.4, 101.2, 99.3, 100.1, 99.9];
    const FAST: &[f64] = &[150.0, 151.0, 149.0, 150.5, 149.5];
    const NOISY: &[f64] = &[60.0, 140.0, 90.0, 130.0, 80.0];

    fn outcomes(s: &SuiteResult) -> Vec<Outcome> {
        let c = conclusions(&crate::compare::pairwise(s, 2.0), &|_, _, _| None);
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
        let Outcome::Leads {
            configs,
            behind,
            factor,
        } = &outcomes(&s)[0]
        else {
            panic!("{:?}", outcomes(&s));
        };
        assert_eq!(
            (configs, behind),
            (&vec!["xfs".into()], &vec!["ext4".into(), "btrfs".into()])
        );
        assert!((factor - 1.5).abs() < 0.02, "{factor}");
    }

    #[test]
    fn a_single_run_has_no_spread() {
        let s = suite(&[("ext4", "create", &A[..1]), ("xfs", "create", &FAST[..1])]);
        assert_eq!(outcomes(&s)[0], Outcome::NoSpread);
    }

    #[test]
    fn close_configurations_are_the_same_and_noisy_ones_open() {
        const SAME: &[f64] = &[100.2, 101.1, 99.2, 100.6, 99.4];
        let s = suite(&[("ext4", "create", A), ("xfs", "create", SAME)]);
        assert_eq!(outcomes(&s)[0], Outcome::Same { within: 2.0 });
        let s = suite(&[("ext4", "create", A), ("xfs", "create", NOISY)]);
        let Outcome::Open {
            largest,
            runs_needed,
        } = outcomes(&s)[0]
        else {
            panic!("{:?}", outcomes(&s));
        };
        assert!(largest > 10.0, "{largest}");
        assert!(runs_needed.unwrap_or(usize::MAX) > 5);
    }

    #[test]
    fn two_leaders_share_the_lead_and_rough_phases_say_why() {
        let s = suite(&[
            ("ext4", "create", A),
            ("xfs", "create", FAST),
            ("btrfs", "create", FAST),
            ("ext4", "stat", A),
            ("xfs", "stat", FAST),
            ("btrfs", "stat", A),
        ]);
        let c = conclusions(&crate::compare::pairwise(&s, 2.0), &|config, _, phase| {
            (phase == "stat" && config == "btrfs").then(|| "too short".to_string())
        });
        let Outcome::Leads { configs, .. } = &c[0].phases[0].outcome else {
            panic!("{:?}", c[0].phases);
        };
        assert_eq!(configs, &["xfs", "btrfs"]);
        // A rough phase keeps its verdict, with its caveat.
        assert!(matches!(c[0].phases[1].outcome, Outcome::Leads { .. }));
        assert_eq!(c[0].phases[1].caveat.as_deref(), Some("too short"));
        assert_eq!(c[0].phases[0].caveat, None);
        assert_eq!(c[0].runs, 5);
    }

    #[test]
    fn one_decided_pair_among_undecided_ones_is_no_shared_lead() {
        // btrfs beats ext4; xfs, too noisy, is told apart from neither.
        const WIDE: &[f64] = &[60.0, 190.0, 90.0, 170.0, 115.0];
        let s = suite(&[
            ("ext4", "create", A),
            ("xfs", "create", WIDE),
            ("btrfs", "create", FAST),
        ]);
        let Outcome::Ahead { pairs } = &outcomes(&s)[0] else {
            panic!("{:?}", outcomes(&s));
        };
        let named: Vec<(&str, &str)> = (pairs.iter())
            .map(|(a, b, _)| (a.as_str(), b.as_str()))
            .collect();
        assert_eq!(named, [("btrfs", "ext4")]);
    }
}

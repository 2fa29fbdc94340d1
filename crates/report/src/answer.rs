//! The suite's answer in one line per workload, as every view leads with it: who leads in
//! which phases and by how much, where the configurations are equivalent, what is open and
//! how many runs would close it (computed in [`fsbench_stats::conclusion`]).

use fsbench_model::results::SuiteResult;
use fsbench_model::results::ceiling::{HARNESS_PERCENT, harness_bound};
use fsbench_stats::compare::DEFAULT_NOISE_PERCENT;
use fsbench_stats::conclusion::{Conclusion, Outcome, RESOLUTION_PERCENT, conclusions};

/// One line per workload of `suite` with two or more configurations measured.
pub(crate) fn lines(suite: &SuiteResult) -> Vec<String> {
    let left_out = |config: &str, workload: &str, phase: &str| {
        let summary = |metric| Some(&suite.summary(config, workload, phase, metric)?.summary);
        if summary("time").is_some_and(|t| t.mean < suite.suite.min_phase_secs) {
            Some(format!("shorter than {} s", suite.suite.min_phase_secs))
        } else if summary(HARNESS_PERCENT).is_some_and(harness_bound) {
            Some("harness-bound".to_string())
        } else {
            None
        }
    };
    conclusions(suite, DEFAULT_NOISE_PERCENT, &left_out)
        .iter()
        .map(line)
        .collect()
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A factor range as read: `1.5 ×`, `1.2–2.1 ×`.
fn factors(values: &[f64]) -> String {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(0.0, f64::max);
    if values.is_empty() {
        String::new()
    } else if format!("{low:.1}") == format!("{high:.1}") {
        format!("{low:.1} ×")
    } else {
        format!("{low:.1}–{high:.1} ×")
    }
}

/// One workload's answer: `tree:quick (5 runs each) — xfs is fastest overall (ahead in 3 of
/// 4 phases, 1.2–2.1 ×); equivalent within ±4% in file-remove`.
pub(crate) fn line(c: &Conclusion) -> String {
    let sorted = Sorted::of(c);
    let decided = c.phases.len() - sorted.left_out.len();
    let mut parts: Vec<String> = sorted
        .headline(decided, c.runs_to_resolve)
        .into_iter()
        .collect();
    if !sorted.leaders.is_empty() && !sorted.equivalent.is_empty() {
        parts.push(format!("equivalent in {}", and_list(&sorted.equivalent)));
    }
    if !sorted.leaders.is_empty() && !sorted.open.is_empty() {
        parts.push(format!("{} undecided", and_list(&sorted.open)));
    }
    if !sorted.left_out.is_empty() {
        parts.push(format!("left out: {}", and_list(&sorted.left_out)));
    }
    format!(
        "{} ({} runs each) — {}",
        c.workload,
        c.runs,
        if parts.is_empty() {
            "nothing to compare".to_string()
        } else {
            parts.join("; ")
        }
    )
}

/// A workload's phases by outcome.
#[derive(Default)]
struct Sorted {
    /// Leaders, the phases they lead and their factors, in order of first appearance.
    leaders: Vec<(Vec<String>, Vec<String>, Vec<f64>)>,
    equivalent: Vec<String>,
    open: Vec<String>,
    left_out: Vec<String>,
    /// The largest difference not excluded, in percent.
    largest: f64,
}

impl Sorted {
    fn of(c: &Conclusion) -> Sorted {
        let mut s = Sorted::default();
        for p in &c.phases {
            match &p.outcome {
                Outcome::Leads { configs, factor } => {
                    let i = match s.leaders.iter().position(|(l, ..)| l == configs) {
                        Some(i) => i,
                        None => {
                            s.leaders.push((configs.clone(), Vec::new(), Vec::new()));
                            s.leaders.len() - 1
                        }
                    };
                    s.leaders[i].1.push(p.phase.clone());
                    s.leaders[i].2.extend(factor);
                }
                Outcome::Equivalent { within } => {
                    s.largest = s.largest.max(*within);
                    s.equivalent.push(format!("{} (±{within:.0}%)", p.phase));
                }
                Outcome::Open { largest, .. } => {
                    s.largest = s.largest.max(*largest);
                    s.open.push(p.phase.clone());
                }
                Outcome::LeftOut { reason } => s.left_out.push(format!("{} ({reason})", p.phase)),
            }
        }
        s
    }

    /// Who leads where, or, with no leader among `decided` phases, what the runs can and
    /// cannot tell.
    fn headline(&self, decided: usize, runs_to_resolve: Option<usize>) -> Option<String> {
        match self.leaders.as_slice() {
            [] if decided > 0 => Some(format!(
                "{}{}",
                // Beyond 100% the bound is a factor, and a percentage would read as a finding.
                if self.largest > 100.0 {
                    format!(
                        "undecided: the runs vary too much to tell (differences up to {:.0} × \
                         not excluded)",
                        1.0 + self.largest / 100.0
                    )
                } else {
                    format!("no difference larger than {:.0}% found", self.largest)
                },
                match runs_to_resolve {
                    Some(n) => format!("; about {n} runs each would resolve {RESOLUTION_PERCENT}%"),
                    None => String::new(),
                }
            )),
            [] => None,
            // "Overall" only where it leads in most phases; else the phases are named.
            [(configs, phases, f)] if configs.len() == 1 && phases.len() * 2 > decided => {
                Some(format!(
                    "{} is fastest overall (ahead in {} of {decided} phases{})",
                    configs[0],
                    phases.len(),
                    match factors(f).as_str() {
                        "" => String::new(),
                        range => format!(", {range}"),
                    }
                ))
            }
            leaders => {
                let each: Vec<String> = (leaders.iter())
                    .map(|(configs, phases, f)| {
                        let who = if configs.len() == 1 {
                            format!("{} leads", configs[0])
                        } else {
                            format!("{} share the lead", and_list(configs))
                        };
                        let by = match factors(f).as_str() {
                            "" => String::new(),
                            range => format!(" ({range})"),
                        };
                        format!("{who} in {}{by}", and_list(phases))
                    })
                    .collect();
                Some(each.join("; "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_stats::conclusion::PhaseOutcome;

    fn conclusion(phases: Vec<(&str, Outcome)>, runs_to_resolve: Option<usize>) -> Conclusion {
        Conclusion {
            workload: "tree:quick".into(),
            phases: phases
                .into_iter()
                .map(|(phase, outcome)| PhaseOutcome {
                    phase: phase.into(),
                    outcome,
                })
                .collect(),
            runs: 5,
            runs_to_resolve,
        }
    }

    fn leads(configs: &[&str], factor: f64) -> Outcome {
        Outcome::Leads {
            configs: configs.iter().map(|c| c.to_string()).collect(),
            factor: Some(factor),
        }
    }

    #[test]
    fn one_leader_is_fastest_overall_with_its_range() {
        let c = conclusion(
            vec![
                ("dir-create", leads(&["xfs"], 1.2)),
                ("file-create", leads(&["xfs"], 2.1)),
                ("file-remove", Outcome::Equivalent { within: 4.0 }),
                (
                    "stat",
                    Outcome::LeftOut {
                        reason: "shorter than 1 s".into(),
                    },
                ),
            ],
            Some(9),
        );
        assert_eq!(
            line(&c),
            "tree:quick (5 runs each) — xfs is fastest overall (ahead in 2 of 3 phases, \
             1.2–2.1 ×); equivalent in file-remove (±4%); left out: stat (shorter than 1 s)"
        );
    }

    #[test]
    fn several_leaders_are_named_per_phase() {
        let c = conclusion(
            vec![
                ("dir-create", leads(&["xfs"], 1.5)),
                ("file-create", leads(&["ext4", "btrfs"], 1.1)),
                (
                    "file-remove",
                    Outcome::Open {
                        largest: 20.0,
                        runs_needed: Some(30),
                    },
                ),
            ],
            Some(30),
        );
        assert_eq!(
            line(&c),
            "tree:quick (5 runs each) — xfs leads in dir-create (1.5 ×); ext4 and btrfs \
             share the lead in file-create (1.1 ×); file-remove undecided"
        );
    }

    #[test]
    fn a_leader_in_few_phases_is_not_fastest_overall_and_noise_is_not_a_finding() {
        let open = |largest| Outcome::Open {
            largest,
            runs_needed: Some(197),
        };
        let c = conclusion(
            vec![
                ("dir-create", leads(&["xfs"], 1.5)),
                ("file-create", open(40.0)),
                ("file-remove", open(40.0)),
            ],
            Some(197),
        );
        assert_eq!(
            line(&c),
            "tree:quick (5 runs each) — xfs leads in dir-create (1.5 ×); file-create and \
             file-remove undecided"
        );
        let c = conclusion(vec![("file-create", open(2439.0))], Some(197));
        assert_eq!(
            line(&c),
            "tree:quick (5 runs each) — undecided: the runs vary too much to tell \
             (differences up to 25 × not excluded); about 197 runs each would resolve 3%"
        );
    }

    #[test]
    fn no_difference_says_how_large_one_could_be_and_what_would_resolve_it() {
        let c = conclusion(
            vec![
                ("dir-create", Outcome::Equivalent { within: 5.0 }),
                (
                    "file-create",
                    Outcome::Open {
                        largest: 8.4,
                        runs_needed: Some(12),
                    },
                ),
            ],
            Some(12),
        );
        assert_eq!(
            line(&c),
            "tree:quick (5 runs each) — no difference larger than 8% found; about 12 runs \
             each would resolve 3%"
        );
    }
}

//! Ranking of configurations, one discipline per phase: its primary figure (the rate, or the
//! time where there is none), so no phase counts twice. By default configurations are placed
//! by significance: sorted by their geometric mean, a configuration shares the place of the
//! best one it is not significantly different from (Holm-corrected pairwise tests within the
//! discipline). The Linux Magazine filesystem tests' equal-footing points (by mean only)
//! remain available. Either way place p of k earns k − p + 1 points, ties sharing the average
//! of their places, and every place is shown so the totals can be checked by hand.

use serde::Serialize;

use crate::compare::{ALPHA, Column, FigureKey, PhaseRoles, Role, figure_keys};
use crate::correction::Correction;
use crate::difference::Difference;
use fsbench_model::results::SuiteResult;

/// How places are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placing {
    /// Configurations not significantly different share a place.
    Significance,
    /// By mean alone, as the Linux Magazine filesystem tests did: ignores noise.
    EqualFooting,
}

/// A significant difference within a discipline: `better` beats `worse`.
#[derive(Debug, Clone, Serialize)]
pub struct Significant {
    pub better: usize,
    pub worse: usize,
    pub p_adjusted: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Discipline {
    #[serde(flatten)]
    pub key: FigureKey,
    /// Per column: (mean, place, points); `None` where the configuration has no such figure.
    pub entries: Vec<Option<(f64, f64, f64)>>,
    /// Every pair whose difference is significant after Holm's correction.
    pub significant: Vec<Significant>,
    /// Pairwise tests made (the size of the correction's family).
    pub tests: usize,
    /// What its points count for in the totals (`--weight PHASE=W`; 1 unless weighted).
    pub weight: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Ranking {
    pub placing: Placing,
    pub columns: Vec<Column>,
    pub disciplines: Vec<Discipline>,
    /// Total points per column.
    pub totals: Vec<f64>,
}

/// Pairwise tests of the present columns, Holm-corrected: the significant pairs, and the
/// number of tests.
fn significant_pairs(
    values: &[Option<&[f64]>],
    higher_is_better: bool,
) -> (Vec<Significant>, usize) {
    let mut pairs = Vec::new();
    for i in 0..values.len() {
        for j in i + 1..values.len() {
            if let (Some(a), Some(b)) = (values[i], values[j])
                && let Some(d) = Difference::of(a, b)
            {
                pairs.push((i, j, d));
            }
        }
    }
    let p: Vec<f64> = pairs.iter().map(|(_, _, d)| d.p_value).collect();
    let significant = pairs
        .iter()
        .zip(Correction::Holm.adjust(&p))
        .filter(|(_, adjusted)| *adjusted < ALPHA)
        .map(|((i, j, d), p_adjusted)| {
            let i_higher = d.ratio > 1.0;
            let (better, worse) = if i_higher == higher_is_better {
                (*i, *j)
            } else {
                (*j, *i)
            };
            Significant {
                better,
                worse,
                p_adjusted,
            }
        })
        .collect();
    (significant, pairs.len())
}

/// Each present column's group: by significance, a column joins the group above it when no
/// member of that group is significantly better (so two configurations the verdicts tell
/// apart never share a place); by equal footing, only equal means share.
fn groups(
    order: &[usize],
    means: &[Option<f64>],
    significant: &[Significant],
    placing: Placing,
) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &c in order {
        let joins = groups.last().is_some_and(|g| match placing {
            Placing::Significance => !significant
                .iter()
                .any(|s| g.contains(&s.better) && s.worse == c),
            Placing::EqualFooting => means[g[0]] == means[c],
        });
        match groups.last_mut() {
            Some(g) if joins => g.push(c),
            _ => groups.push(vec![c]),
        }
    }
    groups
}

impl Ranking {
    /// The workloads ranked, in the order of their first discipline.
    pub fn workloads(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for d in &self.disciplines {
            if !out.contains(&d.key.workload.as_str()) {
                out.push(&d.key.workload);
            }
        }
        out
    }

    /// The ranking in one workload's disciplines alone (one family, as the Linux Magazine tests
    /// ranked the IOzone tests and the shell loops apart): places are per discipline, so only the
    /// totals change.
    pub fn of_workload(&self, workload: &str) -> Ranking {
        self.of_workloads(&[workload])
    }

    /// The ranking in the disciplines of a named group of workloads (`--group`).
    pub fn of_workloads(&self, workloads: &[&str]) -> Ranking {
        let disciplines: Vec<Discipline> = (self.disciplines.iter())
            .filter(|d| workloads.contains(&d.key.workload.as_str()))
            .cloned()
            .collect();
        Ranking {
            placing: self.placing,
            columns: self.columns.clone(),
            totals: totals(&disciplines, self.columns.len()),
            disciplines,
        }
    }

    /// The ranking with the disciplines of the phases named weighted (`read=3`: a read
    /// phase's points count three times; `delete=0.5` half); the others count once. A name
    /// no discipline has, or a weight below 0, is an error.
    pub fn weighted(mut self, weights: &[(String, f64)]) -> anyhow::Result<Ranking> {
        let mut phases: Vec<&str> = Vec::new();
        for d in &self.disciplines {
            if !phases.contains(&d.key.phase.as_str()) {
                phases.push(&d.key.phase);
            }
        }
        for (phase, weight) in weights {
            if !phases.contains(&phase.as_str()) {
                return Err(fsbench_measure::error::invalid(format!(
                    "--weight {phase}={weight}: no ranked phase is called `{phase}`; the phases \
                     are {}",
                    phases.join(", ")
                )));
            }
            if !(weight.is_finite() && *weight >= 0.0) {
                return Err(fsbench_measure::error::invalid(format!(
                    "--weight {phase}={weight}: a weight is a number of 0 or more"
                )));
            }
        }
        for d in &mut self.disciplines {
            if let Some((_, w)) = weights.iter().rev().find(|(p, _)| *p == d.key.phase) {
                d.weight = *w;
            }
        }
        self.totals = totals(&self.disciplines, self.columns.len());
        Ok(self)
    }

    /// The workloads a group's member names: its label (`iozone:quick`) or every label of
    /// its kind (`iozone`). A member that names none is an error naming those there are.
    pub fn members(&self, member: &str) -> anyhow::Result<Vec<&str>> {
        let all = self.workloads();
        let found: Vec<&str> = (all.iter().copied())
            .filter(|w| *w == member || w.split(':').next() == Some(member))
            .collect();
        if found.is_empty() {
            return Err(fsbench_measure::error::invalid(format!(
                "--group names `{member}`, which no ranked workload is: the workloads are {}",
                all.join(", ")
            )));
        }
        Ok(found)
    }
}

/// Each column's points over `disciplines`, each discipline's times its weight.
fn totals(disciplines: &[Discipline], columns: usize) -> Vec<f64> {
    (0..columns)
        .map(|c| {
            (disciplines.iter())
                .filter_map(|d| d.entries[c].map(|e| e.2 * d.weight))
                .sum()
        })
        .collect()
}

pub fn rank(suites: &[SuiteResult], columns: Vec<Column>, placing: Placing) -> Ranking {
    let mut totals = vec![0.0; columns.len()];
    let keys = figure_keys(suites, &columns);
    let roles = PhaseRoles::new(suites, &keys);
    let disciplines = keys
        .iter()
        .filter(|k| roles.role(k) == Role::Primary)
        .map(|key| {
            let summaries: Vec<_> = columns.iter().map(|c| c.summary(suites, key)).collect();
            let means: Vec<Option<f64>> = summaries.iter().map(|s| s.map(|s| s.mean)).collect();
            let values: Vec<Option<&[f64]>> = summaries
                .iter()
                .map(|s| s.map(|s| s.values.as_slice()))
                .collect();
            let (significant, tests) = significant_pairs(&values, key.higher_is_better);
            let mut order: Vec<usize> =
                (0..columns.len()).filter(|&i| means[i].is_some()).collect();
            order.sort_by(|&a, &b| {
                let (a, b) = (means[a].unwrap_or(0.0), means[b].unwrap_or(0.0));
                if key.higher_is_better {
                    b.total_cmp(&a)
                } else {
                    a.total_cmp(&b)
                }
            });
            let k = order.len() as f64;
            let mut entries = vec![None; columns.len()];
            let mut before = 0.0;
            for group in groups(&order, &means, &significant, placing) {
                let size = group.len() as f64;
                // A group shares the average of the places it spans.
                let place = before + (size + 1.0) / 2.0;
                for c in group {
                    let points = k - place + 1.0;
                    totals[c] += points;
                    entries[c] = Some((means[c].unwrap_or(0.0), place, points));
                }
                before += size;
            }
            Discipline {
                key: key.clone(),
                entries,
                significant,
                tests,
                weight: 1.0,
            }
        })
        .collect();
    Ranking {
        placing,
        columns,
        disciplines,
        totals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_model::results::MetricSummary;

    #[test]
    fn configurations_not_significantly_apart_share_a_place() {
        let mut s = SuiteResult::for_tests();
        s.id = Some(3);
        let fig = |config: &str, values: &[f64]| MetricSummary {
            config: config.into(),
            workload: "w".into(),
            phase: "p".into(),
            metric: "rate".into(),
            dims: Vec::new(),
            unit: "u".into(),
            higher_is_better: true,
            summary: crate::summarize(values).unwrap(),
        };
        s.summaries = vec![
            fig("a", &[100.0, 104.0, 97.0, 102.0, 99.0]),
            fig("b", &[101.0, 98.0, 103.0, 100.0, 97.5]),
            fig("c", &[60.0, 61.0, 59.5, 60.5, 62.0]),
        ];
        let cols = ["a", "b", "c"]
            .map(|c| Column {
                suite_id: 3,
                config: c.into(),
            })
            .to_vec();
        let r = rank(
            std::slice::from_ref(&s),
            cols.clone(),
            Placing::Significance,
        );
        let places: Vec<f64> = r.disciplines[0]
            .entries
            .iter()
            .map(|e| e.unwrap().1)
            .collect();
        assert_eq!(places, [1.5, 1.5, 3.0]);
        assert_eq!(r.disciplines[0].tests, 3);
        let pairs: Vec<(usize, usize)> = r.disciplines[0]
            .significant
            .iter()
            .map(|p| (p.better, p.worse))
            .collect();
        assert_eq!(pairs, [(0, 2), (1, 2)]);
        // Equal footing places a and b apart by their means alone.
        let r = rank(&[s], cols, Placing::EqualFooting);
        let places: Vec<f64> = r.disciplines[0]
            .entries
            .iter()
            .map(|e| e.unwrap().1)
            .collect();
        assert_eq!(places, [1.0, 2.0, 3.0]);
    }

    #[test]
    fn weights_multiply_a_phases_points_in_the_totals() {
        let mut s = SuiteResult::for_tests();
        s.id = Some(3);
        let fig = |config: &str, phase: &str, values: &[f64]| MetricSummary {
            config: config.into(),
            workload: "w".into(),
            phase: phase.into(),
            metric: "rate".into(),
            dims: Vec::new(),
            unit: "u".into(),
            higher_is_better: true,
            summary: crate::summarize(values).unwrap(),
        };
        // a wins read, b wins delete: equal totals unweighted.
        let (fast, slow) = (&[200.0, 201.0, 199.0][..], &[100.0, 101.0, 99.0][..]);
        s.summaries = vec![
            fig("a", "read", fast),
            fig("b", "read", slow),
            fig("a", "delete", slow),
            fig("b", "delete", fast),
        ];
        let cols = ["a", "b"].map(|c| Column {
            suite_id: 3,
            config: c.into(),
        });
        let r = rank(
            std::slice::from_ref(&s),
            cols.to_vec(),
            Placing::Significance,
        );
        assert_eq!(r.totals, [3.0, 3.0]);
        let weights = [("read".to_string(), 3.0), ("delete".to_string(), 0.5)];
        let w = r.clone().weighted(&weights).unwrap();
        // a: read 2 × 3 + delete 1 × 0.5; b: read 1 × 3 + delete 2 × 0.5.
        assert_eq!(w.totals, [6.5, 4.0]);
        assert_eq!(w.of_workload("w").totals, [6.5, 4.0]);
        let typo = r.clone().weighted(&[("reed".into(), 3.0)]).unwrap_err();
        assert!(
            typo.to_string().contains("the phases are read, delete"),
            "{typo}"
        );
        assert!(r.weighted(&[("read".into(), -1.0)]).is_err());
    }

    #[test]
    fn a_significant_pair_never_shares_a_place() {
        // a leads; b is not apart from a, nor c from a, but b is significantly ahead of c:
        // b shares a's place, c does not share it.
        let groups = groups(
            &[0, 1, 2],
            &[Some(3.0), Some(2.0), Some(1.0)],
            &[Significant {
                better: 1,
                worse: 2,
                p_adjusted: 0.01,
            }],
            Placing::Significance,
        );
        assert_eq!(groups, [vec![0, 1], vec![2]]);
    }
}

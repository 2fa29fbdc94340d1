//! Placement points per discipline, as the Linux Magazine article (seed 002) ranked seven
//! filesystems: in every discipline (a workload's phase and rate or throughput figure) each
//! configuration is placed by its mean, and place p of k earns k − p + 1 points (ties share
//! the average of their places). The per-discipline places are shown, so the totals can be
//! checked by hand.

use serde::Serialize;

use crate::results::SuiteResult;
use crate::stats::compare::{Column, FigureKey, figure_keys};

/// Figures that are disciplines: the rates and throughputs (time would count each phase twice).
const DISCIPLINE_METRICS: [&str; 2] = ["rate", "throughput"];

#[derive(Debug, Clone, Serialize)]
pub struct Discipline {
    #[serde(flatten)]
    pub key: FigureKey,
    /// Per column: (mean, place, points); `None` where the configuration has no such figure.
    pub entries: Vec<Option<(f64, f64, f64)>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Ranking {
    pub columns: Vec<Column>,
    pub disciplines: Vec<Discipline>,
    /// Total points per column.
    pub totals: Vec<f64>,
}

pub fn rank(suites: &[SuiteResult], columns: Vec<Column>) -> Ranking {
    let mut totals = vec![0.0; columns.len()];
    let disciplines = figure_keys(suites, &columns)
        .into_iter()
        .filter(|k| DISCIPLINE_METRICS.contains(&k.metric.as_str()))
        .map(|key| {
            let means: Vec<Option<f64>> = columns
                .iter()
                .map(|c| c.summary(suites, &key).map(|s| s.mean))
                .collect();
            let present: Vec<f64> = means.iter().flatten().copied().collect();
            let k = present.len() as f64;
            let entries = means
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let m = (*m)?;
                    let better = present
                        .iter()
                        .filter(|&&o| if key.higher_is_better { o > m } else { o < m })
                        .count() as f64;
                    let equal = present.iter().filter(|&&o| o == m).count() as f64;
                    // Ties share the average of the places they span.
                    let place = better + (equal + 1.0) / 2.0;
                    let points = k - place + 1.0;
                    totals[i] += points;
                    Some((m, place, points))
                })
                .collect();
            Discipline { key, entries }
        })
        .collect();
    Ranking {
        columns,
        disciplines,
        totals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::MetricSummary;
    use crate::stats::Summary;

    #[test]
    fn points_by_place_with_ties() {
        let mut s = SuiteResult::for_tests();
        s.id = Some(7);
        let fig = |config: &str, phase: &str, metric: &str, hib: bool, v: f64| MetricSummary {
            config: config.into(),
            workload: "w".into(),
            phase: phase.into(),
            metric: metric.into(),
            unit: "u".into(),
            higher_is_better: hib,
            summary: Summary::of(&[v]).unwrap(),
        };
        s.summaries = vec![
            fig("a", "p1", "rate", true, 30.0),
            fig("b", "p1", "rate", true, 20.0),
            fig("c", "p1", "rate", true, 10.0),
            fig("a", "p2", "rate", true, 5.0),
            fig("b", "p2", "rate", true, 5.0),
            fig("c", "p2", "rate", true, 9.0),
            fig("a", "p2", "time", false, 1.0),
        ];
        let cols = ["a", "b", "c"]
            .map(|c| Column {
                suite_id: 7,
                config: c.into(),
            })
            .to_vec();
        let r = rank(&[s], cols);
        assert_eq!(r.disciplines.len(), 2, "time is not a discipline");
        // p1: a 3, b 2, c 1. p2: c 3, a and b tie for places 2-3: 1.5 each.
        assert_eq!(r.totals, [4.5, 3.5, 4.0]);
        assert_eq!(r.disciplines[1].entries[0], Some((5.0, 2.5, 1.5)));
        let text = crate::report::rank::render(&r);
        assert!(text.contains("1. #7 a — 4.5 points"), "{text}");
    }
}

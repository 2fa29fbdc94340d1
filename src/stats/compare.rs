//! Comparison of configurations, from one suite or across suites: difference against a
//! baseline, Welch's t-test, and a verdict that says whether the difference is real.

use serde::Serialize;

use crate::error::invalid;
use crate::results::SuiteResult;
use crate::stats::{Summary, welch_p_value};

/// One compared configuration: a suite and one of its configurations.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub suite_id: i64,
    pub config: String,
}

impl Column {
    pub fn name(&self) -> String {
        format!("#{} {}", self.suite_id, self.config)
    }

    fn suite<'a>(&self, suites: &'a [SuiteResult]) -> Option<&'a SuiteResult> {
        suites.iter().find(|s| s.id.unwrap_or(0) == self.suite_id)
    }

    /// This column's summary of one figure.
    pub fn summary<'a>(&self, suites: &'a [SuiteResult], key: &FigureKey) -> Option<&'a Summary> {
        self.suite(suites)?
            .summary(&self.config, &key.workload, &key.phase, &key.metric)
            .map(|s| &s.summary)
    }
}

/// Identifies one figure across configurations: workload, phase, metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureKey {
    pub workload: String,
    pub phase: String,
    pub metric: String,
    pub unit: String,
    pub higher_is_better: bool,
}

/// Every figure any column has, in the order they first appear.
pub fn figure_keys(suites: &[SuiteResult], columns: &[Column]) -> Vec<FigureKey> {
    let mut keys: Vec<FigureKey> = Vec::new();
    for col in columns {
        for s in col
            .suite(suites)
            .iter()
            .flat_map(|s| &s.summaries)
            .filter(|s| s.config == col.config)
        {
            let key = FigureKey {
                workload: s.workload.clone(),
                phase: s.phase.clone(),
                metric: s.metric.clone(),
                unit: s.unit.clone(),
                higher_is_better: s.higher_is_better,
            };
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    keys
}

/// Parses `ID` (every configuration of that suite) or `ID:CONFIG` against the loaded suites.
pub fn columns(spec: &str, suite: &SuiteResult) -> anyhow::Result<Vec<Column>> {
    let id = suite.id.unwrap_or(0);
    match spec.split_once(':') {
        None => Ok(suite
            .configurations
            .iter()
            .map(|c| Column {
                suite_id: id,
                config: c.config.label.clone(),
            })
            .collect()),
        Some((_, label)) => {
            if suite.configurations.iter().any(|c| c.config.label == label) {
                Ok(vec![Column {
                    suite_id: id,
                    config: label.to_string(),
                }])
            } else {
                let known: Vec<_> = suite
                    .configurations
                    .iter()
                    .map(|c| c.config.label.as_str())
                    .collect();
                Err(invalid(format!(
                    "suite {id} has no configuration `{label}`; it has: {}",
                    known.join(", ")
                )))
            }
        }
    }
}

/// What a comparison says about one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Baseline,
    /// Significantly better than the baseline (p < alpha and beyond the noise threshold).
    Better,
    Worse,
    /// Not significant, or a difference smaller than the noise threshold.
    WithinNoise,
    /// Too few runs on one side for a test.
    Untested,
}

impl Verdict {
    pub fn marker(self) -> &'static str {
        match self {
            Verdict::Baseline => "baseline",
            Verdict::Better => "▲ better",
            Verdict::Worse => "▼ worse",
            Verdict::WithinNoise => "≈ within noise",
            Verdict::Untested => "? too few runs",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub summary: Summary,
    pub diff_percent: Option<f64>,
    pub p_value: Option<f64>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    #[serde(flatten)]
    pub key: FigureKey,
    /// One per column; `None` where that configuration has no such figure.
    pub cells: Vec<Option<Cell>>,
}

/// Significance level of the t-test.
pub const ALPHA: f64 = 0.05;

/// Compares `columns` (resolved in `suites`) against column `baseline`.
pub fn compare(
    suites: &[SuiteResult],
    columns: &[Column],
    baseline: usize,
    noise_percent: f64,
) -> Vec<Row> {
    figure_keys(suites, columns)
        .into_iter()
        .map(|key| {
            let base = columns[baseline].summary(suites, &key);
            let cells = columns
                .iter()
                .enumerate()
                .map(|(i, col)| {
                    let s = col.summary(suites, &key)?.clone();
                    if i == baseline {
                        return Some(Cell {
                            summary: s,
                            diff_percent: None,
                            p_value: None,
                            verdict: Verdict::Baseline,
                        });
                    }
                    let Some(base) = base else {
                        return Some(Cell {
                            summary: s,
                            diff_percent: None,
                            p_value: None,
                            verdict: Verdict::Untested,
                        });
                    };
                    let diff =
                        (base.mean != 0.0).then(|| (s.mean - base.mean) / base.mean.abs() * 100.0);
                    let p = welch_p_value(&s, base);
                    let verdict = match (p, diff) {
                        (None, _) | (_, None) => Verdict::Untested,
                        (Some(p), Some(d)) if p < ALPHA && d.abs() >= noise_percent => {
                            if (d > 0.0) == key.higher_is_better {
                                Verdict::Better
                            } else {
                                Verdict::Worse
                            }
                        }
                        _ => Verdict::WithinNoise,
                    };
                    Some(Cell {
                        summary: s,
                        diff_percent: diff,
                        p_value: p,
                        verdict,
                    })
                })
                .collect();
            Row { key, cells }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::MetricSummary;

    fn suite(id: i64, config: &str, values: &[f64]) -> SuiteResult {
        let mut s = SuiteResult::for_tests();
        s.id = Some(id);
        s.summaries = vec![MetricSummary {
            config: config.into(),
            workload: "tree:x".into(),
            phase: "file-create".into(),
            metric: "rate".into(),
            unit: "files/s".into(),
            higher_is_better: true,
            summary: Summary::of(values).unwrap(),
        }];
        s
    }

    #[test]
    fn verdicts_follow_significance_noise_and_direction() {
        let suites = [
            suite(1, "a", &[100.0, 101.0, 99.0, 100.5]),
            suite(2, "b", &[110.0, 111.0, 109.0, 110.5]),
            suite(3, "c", &[100.5, 101.5, 99.5, 100.0]),
            suite(4, "d", &[90.0, 91.0, 89.0, 90.5]),
        ];
        let cols: Vec<Column> = [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
            .iter()
            .map(|(id, c)| Column {
                suite_id: *id,
                config: c.to_string(),
            })
            .collect();
        let rows = compare(&suites, &cols, 0, 2.0);
        assert_eq!(rows.len(), 1);
        let v: Vec<Verdict> = rows[0]
            .cells
            .iter()
            .map(|c| c.as_ref().unwrap().verdict)
            .collect();
        assert_eq!(
            v,
            [
                Verdict::Baseline,
                Verdict::Better,
                Verdict::WithinNoise,
                Verdict::Worse
            ]
        );
        let b = rows[0].cells[1].as_ref().unwrap();
        assert!((b.diff_percent.unwrap() - 10.0 / 100.125 * 100.0).abs() < 1e-9);
        assert!(b.p_value.unwrap() < 0.001);
        // A 10% difference under a 15% noise threshold is within noise.
        let rows = compare(&suites, &cols, 0, 15.0);
        assert_eq!(
            rows[0].cells[1].as_ref().unwrap().verdict,
            Verdict::WithinNoise
        );
    }
}

//! Side-by-side comparison of configurations, from one suite or across suites: mean ± 95% CI,
//! difference against a baseline, Welch's t-test, and a verdict that says whether the
//! difference is real.

use serde::Serialize;

use super::figure;
use crate::error::invalid;
use crate::measure::{Dim, figure_name};
use crate::results::{MetricSummary, SuiteResult};
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

    /// This column's summaries.
    pub fn summaries<'a>(
        &self,
        suites: &'a [SuiteResult],
    ) -> impl Iterator<Item = &'a MetricSummary> {
        let config = self.config.clone();
        self.suite(suites)
            .into_iter()
            .flat_map(|s| &s.summaries)
            .filter(move |s| s.config == config)
    }

    /// This column's summary of one figure.
    pub fn summary<'a>(&self, suites: &'a [SuiteResult], key: &FigureKey) -> Option<&'a Summary> {
        self.summaries(suites)
            .find(|s| {
                s.workload == key.workload
                    && s.phase == key.phase
                    && s.metric == key.metric
                    && s.dims == key.dims
            })
            .map(|s| &s.summary)
    }
}

/// Identifies one figure across configurations: workload, phase, metric and dimensions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct FigureKey {
    pub workload: String,
    pub phase: String,
    pub metric: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dims: Vec<Dim>,
    pub unit: String,
    pub higher_is_better: bool,
}

impl FigureKey {
    pub fn of(s: &MetricSummary) -> FigureKey {
        FigureKey {
            workload: s.workload.clone(),
            phase: s.phase.clone(),
            metric: s.metric.clone(),
            dims: s.dims.clone(),
            unit: s.unit.clone(),
            higher_is_better: s.higher_is_better,
        }
    }

    /// The figure's name for people: `throughput write 64K 4K (KiB/s) ↑`.
    pub fn label(&self) -> String {
        let arrow = if self.higher_is_better { "↑" } else { "↓" };
        let name = figure_name(&self.metric, &self.dims);
        format!("{name} ({}) {arrow}", self.unit)
    }
}

/// Every figure any column has, in the order they first appear.
pub fn figure_keys(suites: &[SuiteResult], columns: &[Column]) -> Vec<FigureKey> {
    let mut keys: Vec<FigureKey> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for col in columns {
        for s in col.summaries(suites) {
            let key = FigureKey::of(s);
            if seen.insert(key.clone()) {
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
    // Each column's summaries by key: a matrix has thousands of figures.
    let by_key: Vec<std::collections::HashMap<FigureKey, &Summary>> = columns
        .iter()
        .map(|col| {
            col.summaries(suites)
                .map(|s| (FigureKey::of(s), &s.summary))
                .collect()
        })
        .collect();
    figure_keys(suites, columns)
        .into_iter()
        .map(|key| {
            let base = by_key[baseline].get(&key).copied();
            let cells = columns
                .iter()
                .enumerate()
                .map(|(i, _)| {
                    let s = (*by_key[i].get(&key)?).clone();
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

/// The comparison as a terminal table.
pub fn render(columns: &[Column], rows: &[Row], baseline: usize, noise_percent: f64) -> String {
    use comfy_table::{CellAlignment, Table, presets};
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    let mut header = vec!["Workload".to_string(), "Phase".into(), "Figure".into()];
    header.extend(columns.iter().map(Column::name));
    t.set_header(header);
    for r in rows {
        let k = &r.key;
        let mut row = vec![k.workload.clone(), k.phase.clone(), k.label()];
        for cell in &r.cells {
            row.push(match cell {
                None => "-".into(),
                Some(c) => cell_text(c),
            });
        }
        t.add_row(row);
    }
    for i in 3..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!(
        "Baseline: {}. Cells: mean ± 95% CI half-width; difference to the baseline; Welch's t-test p-value.\n\
         ▲/▼ = significantly better/worse (p < {ALPHA} and |difference| ≥ {noise_percent}%); ≈ = within noise. ↑/↓ = higher/lower is better.\n{t}\n",
        columns[baseline].name()
    )
}

/// A cell as text: mean ± CI half-width, then difference, p-value and verdict.
pub fn cell_text(c: &Cell) -> String {
    let s = &c.summary;
    let mut text = match s.ci95_half_width() {
        Some(h) => format!("{} ± {}", figure(s.mean), figure(h)),
        None => figure(s.mean),
    };
    if c.verdict != Verdict::Baseline {
        let diff = c.diff_percent.map_or("-".into(), |d| format!("{d:+.1}%"));
        let p = c.p_value.map_or("-".into(), |p| {
            if p < 0.001 {
                "p<0.001".into()
            } else {
                format!("p={p:.3}")
            }
        });
        text.push_str(&format!("\n{diff} {p} {}", c.verdict.marker()));
    }
    text
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
            dims: Vec::new(),
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

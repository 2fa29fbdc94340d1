//! Comparison of configurations, from one suite or across suites: each figure's difference
//! to a baseline with its interval, p-values corrected for the number of tests, and a
//! verdict that says what is known. A phase gets one verdict, from its primary figure.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::correction::Correction;
use crate::difference::Difference;
use fsbench_measure::error::invalid;
use fsbench_model::measurement::{Dim, figure_name};
use fsbench_model::results::Summary;
use fsbench_model::results::{MetricSummary, SuiteResult};

/// One compared configuration: a suite and one of its configurations.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub suite_id: i64,
    pub config: String,
}

impl Column {
    /// The column's name among `all` compared: its configuration's label, after its suite's
    /// `#ID` only where several suites are compared.
    pub fn name(&self, all: &[Column]) -> String {
        if all.iter().all(|c| c.suite_id == self.suite_id) {
            self.config.clone()
        } else {
            format!("#{} {}", self.suite_id, self.config)
        }
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

    /// The successful runs of this column's `workload`.
    pub fn runs<'a>(
        &self,
        suites: &'a [SuiteResult],
        workload: &str,
    ) -> Vec<&'a fsbench_model::results::RunRecord> {
        (self.suite(suites).into_iter())
            .flat_map(|s| &s.runs)
            .filter(|r| {
                r.status == fsbench_model::results::RunStatus::Ok
                    && r.config == self.config
                    && r.workload == workload
            })
            .collect()
    }

    /// This column's summary of one figure (a search: [`SummaryIndex`] for many).
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

/// Every column's summaries by figure: a matrix has thousands of figures, and a search per
/// figure and column would be quadratic.
pub(crate) struct SummaryIndex<'a>(Vec<HashMap<FigureKey, &'a Summary>>);

impl<'a> SummaryIndex<'a> {
    pub(crate) fn new(suites: &'a [SuiteResult], columns: &[Column]) -> SummaryIndex<'a> {
        SummaryIndex(
            columns
                .iter()
                .map(|col| {
                    col.summaries(suites)
                        .map(|s| (FigureKey::of(s), &s.summary))
                        .collect()
                })
                .collect(),
        )
    }

    /// Column `column`'s summary of `key`.
    pub(crate) fn get(&self, column: usize, key: &FigureKey) -> Option<&'a Summary> {
        self.0[column].get(key).copied()
    }
}

/// Identifies one figure across configurations: workload, phase, metric and dimensions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct FigureKey {
    pub workload: String,
    pub phase: String,
    pub metric: String,
    /// Its place in a breakdown (an IOzone cell's test, file and record size).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dims: Vec<Dim>,
    pub unit: String,
    pub higher_is_better: bool,
}

impl FigureKey {
    /// The figure a summary is of.
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
    let mut seen = HashSet::new();
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

/// Every configuration of `suite`, in its order.
pub fn suite_columns(suite: &SuiteResult) -> Vec<Column> {
    suite
        .configurations
        .iter()
        .map(|c| Column {
            suite_id: suite.id.unwrap_or(0),
            config: c.config.label.clone(),
        })
        .collect()
}

/// Parses `ID` (every configuration of that suite) or `ID:CONFIG` against the loaded suites.
pub fn columns(spec: &str, suite: &SuiteResult) -> anyhow::Result<Vec<Column>> {
    let id = suite.id.unwrap_or(0);
    match spec.split_once(':') {
        None => Ok(suite_columns(suite)),
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

/// What a figure is to the verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The phase's verdict: its rate (work done ÷ time), or its time where it has no rate.
    Primary,
    /// Another view of the primary figure (a time beside a rate, KiB/s): the primary's verdict.
    Derived,
    /// One cell of a throughput matrix (IOzone): thousands of tests.
    MatrixCell,
    /// Any other figure: CPU, sync-after, mkfs/unmount/fsck, a workload's own figures.
    Secondary,
    /// A figure of an untimed phase (io's file layout): shown, never tested.
    Untimed,
}

impl Role {
    /// How each family of tests is corrected: Holm where one false verdict matters,
    /// Benjamini–Hochberg for matrices, where a few false cells among thousands are tolerable.
    pub fn correction(self) -> Correction {
        match self {
            Role::MatrixCell => Correction::BenjaminiHochberg,
            _ => Correction::Holm,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Role::Primary => "phase verdicts",
            Role::Derived => "derived figures",
            Role::MatrixCell => "matrix cells",
            Role::Secondary => "other figures",
            Role::Untimed => "untimed phases",
        }
    }
}

/// The role of `key` in a phase that has a rate figure or not (the phase's figures decide
/// what is primary: its rate, or its time where it has none, as a matrix phase).
fn role_of(key: &FigureKey, phase_has_rate: bool) -> Role {
    match key.metric.as_str() {
        _ if key.phase == "lifecycle" => Role::Secondary,
        // A figure with dimensions is one cell of a breakdown (IOzone's test × file × record).
        _ if !key.dims.is_empty() => Role::MatrixCell,
        "rate" => Role::Primary,
        "time" | "throughput" if phase_has_rate => Role::Derived,
        "time" => Role::Primary,
        _ => Role::Secondary,
    }
}

/// What each phase of the suites is: whether it has a rate figure (among the figures
/// compared) and whether its workload marks it untimed ([`fsbench_model::workload::PhaseInfo`]).
pub(crate) struct PhaseRoles<'a> {
    with_rate: HashSet<(&'a str, &'a str)>,
    /// (workload, phase): few, so a list.
    untimed: Vec<(String, String)>,
}

impl<'a> PhaseRoles<'a> {
    pub(crate) fn new(suites: &[SuiteResult], keys: &'a [FigureKey]) -> PhaseRoles<'a> {
        let with_rate = keys
            .iter()
            .filter(|k| k.metric == "rate" && k.dims.is_empty())
            .map(|k| (k.workload.as_str(), k.phase.as_str()))
            .collect();
        let untimed = suites.iter().flat_map(|s| s.untimed_phases()).collect();
        PhaseRoles { with_rate, untimed }
    }

    /// The role of `key`: an untimed phase's figures are never tested.
    pub(crate) fn role(&self, key: &FigureKey) -> Role {
        let untimed = (self.untimed.iter()).any(|(w, p)| *w == key.workload && *p == key.phase);
        if untimed {
            return Role::Untimed;
        }
        let has_rate = (self.with_rate).contains(&(key.workload.as_str(), key.phase.as_str()));
        role_of(key, has_rate)
    }
}

/// What a comparison says about one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Baseline,
    /// Significantly better than the baseline after correction, by at least the noise threshold.
    Better,
    Worse,
    /// The difference's 95% interval lies within ± the noise threshold.
    Same,
    /// Neither: the data can exclude neither a difference nor its absence.
    Undecided,
    /// Fewer than two runs on a side, or no baseline figure: no test.
    Untested,
    /// A figure of an untimed phase (set-up): never compared.
    Untimed,
}

impl Verdict {
    /// The verdict's sign alone: ▲ ▼ ≈ ?.
    pub fn symbol(self) -> &'static str {
        self.marker().split(' ').next().unwrap_or_default()
    }

    pub fn marker(self) -> &'static str {
        match self {
            Verdict::Baseline => "baseline",
            Verdict::Better => "▲ better",
            Verdict::Worse => "▼ worse",
            Verdict::Same => "≈ same",
            Verdict::Undecided => "? undecided",
            Verdict::Untested => "? untested (fewer than 2 runs)",
            Verdict::Untimed => "– untimed (not compared)",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub summary: Summary,
    /// Against the baseline; `None` for the baseline itself and where no test can be made.
    pub difference: Option<Difference>,
    /// The p-value corrected within its family (a derived figure: its primary's).
    pub p_adjusted: Option<f64>,
    pub verdict: Verdict,
    /// For an undecided verdict: about how many runs per side would settle it (`None`:
    /// more than [`crate::difference::MAX_RUNS_ESTIMATE`]).
    pub runs_needed: Option<usize>,
}

impl Cell {
    /// The difference to the baseline in percent, (ratio - 1) × 100, with its interval.
    pub fn diff_percent(&self) -> Option<(f64, f64, f64)> {
        let d = self.difference.as_ref()?;
        let pct = |r: f64| (r - 1.0) * 100.0;
        Some((pct(d.ratio), pct(d.ratio_low), pct(d.ratio_high)))
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    #[serde(flatten)]
    pub key: FigureKey,
    pub role: Role,
    /// One per column; `None` where that configuration has no such figure.
    pub cells: Vec<Option<Cell>>,
}

/// One family of tests and how its p-values were corrected.
#[derive(Debug, Clone, Serialize)]
pub struct Family {
    pub role: Role,
    pub correction: Correction,
    pub tests: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub baseline: usize,
    pub noise_percent: f64,
    pub alpha: f64,
    pub families: Vec<Family>,
    pub rows: Vec<Row>,
}

/// Significance level of the tests, after correction.
pub const ALPHA: f64 = 0.05;
/// Differences smaller than this percentage are not worth a verdict (`--noise`).
pub const DEFAULT_NOISE_PERCENT: f64 = 2.0;

/// The verdict on one difference, its adjusted p-value given.
fn verdict(d: &Difference, p_adjusted: f64, higher_is_better: bool, noise_percent: f64) -> Verdict {
    let diff = (d.ratio - 1.0) * 100.0;
    if p_adjusted < ALPHA && diff.abs() >= noise_percent {
        if (diff > 0.0) == higher_is_better {
            Verdict::Better
        } else {
            Verdict::Worse
        }
    } else if d.within(noise_percent) {
        Verdict::Same
    } else {
        Verdict::Undecided
    }
}

/// Compares `columns` (resolved in `suites`) against column `baseline`.
pub fn compare(
    suites: &[SuiteResult],
    columns: &[Column],
    baseline: usize,
    noise_percent: f64,
) -> Comparison {
    let keys = figure_keys(suites, columns);
    let index = SummaryIndex::new(suites, columns);
    let roles = PhaseRoles::new(suites, &keys);
    let mut rows: Vec<Row> = keys
        .iter()
        .map(|key| {
            let role = roles.role(key);
            // An untimed phase's figures are shown with no difference to judge.
            let base = index.get(baseline, key).filter(|_| role != Role::Untimed);
            let cells = (0..columns.len())
                .map(|i| {
                    let summary = index.get(i, key)?.clone();
                    let difference = base
                        .filter(|_| i != baseline)
                        .and_then(|b| Difference::of(&summary.values, &b.values));
                    let verdict = match (i == baseline, role) {
                        (true, _) => Verdict::Baseline,
                        (false, Role::Untimed) => Verdict::Untimed,
                        (false, _) => Verdict::Untested,
                    };
                    Some(Cell {
                        summary,
                        difference,
                        p_adjusted: None,
                        verdict,
                        runs_needed: None,
                    })
                })
                .collect();
            Row {
                key: key.clone(),
                role,
                cells,
            }
        })
        .collect();
    let families = [Role::Primary, Role::MatrixCell, Role::Secondary]
        .into_iter()
        .filter_map(|role| judge_family(&mut rows, role, noise_percent))
        .collect();
    copy_primary_verdicts(&mut rows);
    Comparison {
        baseline,
        noise_percent,
        alpha: ALPHA,
        families,
        rows,
    }
}

/// The verdicts of one family of tests (the rows of `role`), their p-values corrected
/// together; `None` where the family has no test.
fn judge_family(rows: &mut [Row], role: Role, noise_percent: f64) -> Option<Family> {
    // Every tested cell of the family: (row, column) and its p-value.
    let tested: Vec<(usize, usize, f64)> = (rows.iter().enumerate())
        .filter(|(_, r)| r.role == role)
        .flat_map(|(ri, r)| {
            r.cells
                .iter()
                .enumerate()
                .filter_map(move |(ci, c)| Some((ri, ci, c.as_ref()?.difference.as_ref()?.p_value)))
        })
        .collect();
    if tested.is_empty() {
        return None;
    }
    let correction = role.correction();
    let p: Vec<f64> = tested.iter().map(|t| t.2).collect();
    // Runs estimates aim at the family's per-test level (Bonferroni: about Holm's).
    let per_test_alpha = ALPHA / tested.len() as f64;
    for (&(ri, ci, _), adjusted) in tested.iter().zip(correction.adjust(&p)) {
        let higher = rows[ri].key.higher_is_better;
        let cell = rows[ri].cells[ci].as_mut().expect("tested cells exist");
        let d = cell.difference.as_ref().expect("tested cells have one");
        cell.verdict = verdict(d, adjusted, higher, noise_percent);
        if cell.verdict == Verdict::Undecided {
            cell.runs_needed = d.runs_needed(noise_percent, per_test_alpha);
        }
        cell.p_adjusted = Some(adjusted);
    }
    Some(Family {
        role,
        correction,
        tests: tested.len(),
    })
}

/// A derived figure takes its phase's verdict, so the two views never disagree.
fn copy_primary_verdicts(rows: &mut [Row]) {
    for i in 0..rows.len() {
        if rows[i].role != Role::Derived {
            continue;
        }
        let primary = rows.iter().position(|p| {
            p.role == Role::Primary
                && p.key.workload == rows[i].key.workload
                && p.key.phase == rows[i].key.phase
        });
        let Some(primary) = primary else { continue };
        for c in 0..rows[i].cells.len() {
            let from = rows[primary].cells[c]
                .as_ref()
                .map(|p| (p.verdict, p.p_adjusted, p.runs_needed));
            if let (Some(cell), Some((verdict, p_adjusted, runs_needed))) =
                (rows[i].cells[c].as_mut(), from)
            {
                cell.verdict = verdict;
                cell.p_adjusted = p_adjusted;
                cell.runs_needed = runs_needed;
            }
        }
    }
}

/// A phase's answer for one configuration against the baseline, in speed: how many times
/// faster (above 1) or slower, with the interval of that factor.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    pub workload: String,
    pub phase: String,
    pub column: usize,
    pub speedup: f64,
    pub speedup_low: f64,
    pub speedup_high: f64,
    pub p_adjusted: f64,
    pub runs: [usize; 2],
    pub verdict: Verdict,
    pub runs_needed: Option<usize>,
}

impl Comparison {
    /// The one-line answers: every phase's primary figure, every tested configuration.
    pub fn answers(&self) -> Vec<Answer> {
        let mut out = Vec::new();
        for row in self.rows.iter().filter(|r| r.role == Role::Primary) {
            for (column, cell) in row.cells.iter().enumerate() {
                let Some(cell) = cell else { continue };
                let (Some(d), Some(p_adjusted)) = (&cell.difference, cell.p_adjusted) else {
                    continue;
                };
                // A rate's ratio is the speed-up; a time's is its inverse.
                let (speedup, speedup_low, speedup_high) = if row.key.higher_is_better {
                    (d.ratio, d.ratio_low, d.ratio_high)
                } else {
                    (1.0 / d.ratio, 1.0 / d.ratio_high, 1.0 / d.ratio_low)
                };
                out.push(Answer {
                    workload: row.key.workload.clone(),
                    phase: row.key.phase.clone(),
                    column,
                    speedup,
                    speedup_low,
                    speedup_high,
                    p_adjusted,
                    runs: d.runs,
                    verdict: cell.verdict,
                    runs_needed: cell.runs_needed,
                });
            }
        }
        out
    }
}

mod pairs;
pub use pairs::{Pairwise, pairwise};

#[cfg(test)]
mod tests;

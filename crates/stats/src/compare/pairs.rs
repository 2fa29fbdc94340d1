//! Every configuration against every other, with one correction over all the pairs' phase
//! verdicts: what an answer about three or more configurations rests on, and what `show`
//! prints beside it, so that the two never disagree.

use super::{ALPHA, Column, Comparison, Role, compare, copy_primary_verdicts, verdict};
use fsbench_model::results::SuiteResult;

/// The comparisons of every baseline (`by_baseline[b]` has column `b` as its baseline), their
/// phase verdicts corrected together: the verdict on `b` against `a` and on `a` against `b`
/// are one test, said from either side.
#[derive(Debug, Clone)]
pub struct Pairwise {
    pub columns: Vec<Column>,
    pub by_baseline: Vec<Comparison>,
    /// The phase verdicts the correction was over (each pair and phase once).
    pub tests: usize,
}

impl Pairwise {
    /// The answers of every pair once, each with its baseline `a` (before `b` in the
    /// columns' order): `b` against `a`, phase by phase.
    pub fn answers(&self) -> Vec<(usize, super::Answer)> {
        let mut out = Vec::new();
        for (a, comparison) in self.by_baseline.iter().enumerate() {
            let later = comparison.answers().into_iter().filter(|x| x.column > a);
            out.extend(later.map(|x| (a, x)));
        }
        // As the rows come, each phase's pairs together (a stable sort keeps their order).
        let phase_order = |(_, x): &(usize, super::Answer)| {
            (self.by_baseline[0].rows.iter())
                .position(|r| r.key.workload == x.workload && r.key.phase == x.phase)
        };
        out.sort_by_key(phase_order);
        out
    }
}

/// Every column of `suite` against every other, Holm over all the pairs' phase verdicts.
pub fn pairwise(suite: &SuiteResult, noise_percent: f64) -> Pairwise {
    let columns = super::suite_columns(suite);
    let mut by_baseline: Vec<Comparison> = (0..columns.len())
        .map(|b| compare(std::slice::from_ref(suite), &columns, b, noise_percent))
        .collect();
    // Each pair's primary test once: (baseline, row, column) with b < column.
    let mut tested: Vec<(usize, usize, usize, f64)> = Vec::new();
    for (b, comparison) in by_baseline.iter().enumerate() {
        for (ri, row) in comparison.rows.iter().enumerate() {
            if row.role != Role::Primary {
                continue;
            }
            for (ci, cell) in row.cells.iter().enumerate().skip(b + 1) {
                if let Some(d) = cell.as_ref().and_then(|c| c.difference.as_ref()) {
                    tested.push((b, ri, ci, d.p_value));
                }
            }
        }
    }
    let p: Vec<f64> = tested.iter().map(|t| t.3).collect();
    let correction = Role::Primary.correction();
    let per_test_alpha = ALPHA / tested.len().max(1) as f64;
    for (&(b, ri, ci, _), adjusted) in tested.iter().zip(correction.adjust(&p)) {
        // The pair from both sides: `ci` against `b`, and `b` against `ci`.
        for (base, column) in [(b, ci), (ci, b)] {
            let higher = by_baseline[base].rows[ri].key.higher_is_better;
            let Some(cell) = by_baseline[base].rows[ri].cells[column].as_mut() else {
                continue;
            };
            let Some(d) = cell.difference.as_ref() else {
                continue;
            };
            cell.verdict = verdict(d, adjusted, higher, noise_percent);
            cell.runs_needed = (cell.verdict == super::Verdict::Undecided)
                .then(|| d.runs_needed(noise_percent, per_test_alpha))
                .flatten();
            cell.p_adjusted = Some(adjusted);
        }
    }
    for comparison in &mut by_baseline {
        copy_primary_verdicts(&mut comparison.rows);
        if let Some(family) = (comparison.families.iter_mut()).find(|f| f.role == Role::Primary) {
            family.tests = tested.len();
        }
    }
    Pairwise {
        columns,
        by_baseline,
        tests: tested.len(),
    }
}

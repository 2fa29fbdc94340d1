//! Corrections of p-values for multiple comparisons: one `compare` tests many figures, and an
//! IOzone matrix thousands, so an uncorrected p < 0.05 would find "differences" in noise.

use serde::Serialize;

/// How a family of p-values was corrected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Correction {
    /// Holm's step-down method: controls the chance of any false verdict (family-wise error).
    Holm,
    /// Benjamini–Hochberg: controls the expected share of false discoveries among the
    /// significant ones; for matrices, where some false cells among thousands are tolerable.
    BenjaminiHochberg,
}

impl Correction {
    pub fn name(self) -> &'static str {
        match self {
            Correction::Holm => "Holm",
            Correction::BenjaminiHochberg => "Benjamini–Hochberg",
        }
    }

    /// The adjusted p-values, in the order of `p`.
    pub fn adjust(self, p: &[f64]) -> Vec<f64> {
        match self {
            Correction::Holm => holm(p),
            Correction::BenjaminiHochberg => benjamini_hochberg(p),
        }
    }
}

/// Indices of `p` from the smallest p-value to the largest.
fn ascending(p: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    order
}

/// Holm's adjusted p-values: the i-th smallest (from 0) times m - i, made non-decreasing.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in ascending(p).iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// Benjamini–Hochberg adjusted p-values (q-values): the i-th smallest (from 1) times m / i,
/// made non-increasing from the largest down.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut adjusted = vec![0.0; m];
    let mut running = 1.0f64;
    for (rank, &i) in ascending(p).iter().enumerate().rev() {
        running = running.min(p[i] * m as f64 / (rank + 1) as f64);
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_by_hand() {
        // Sorted 0.01, 0.02, 0.03, 0.04 times 4, 3, 2, 1: 0.04, 0.06, 0.06, 0.06 (monotone).
        let adjusted = holm(&[0.03, 0.01, 0.04, 0.02]);
        let expected = [0.06, 0.04, 0.06, 0.06];
        for (a, e) in adjusted.iter().zip(expected) {
            assert!((a - e).abs() < 1e-12, "{adjusted:?}");
        }
        assert_eq!(holm(&[0.9, 0.8]), [1.0, 1.0]);
    }

    #[test]
    fn benjamini_hochberg_by_hand() {
        // Sorted 0.01, 0.02, 0.03, 0.5 times 4/1, 4/2, 4/3, 4/4: 0.04, 0.04, 0.04, 0.5.
        let adjusted = benjamini_hochberg(&[0.5, 0.03, 0.01, 0.02]);
        let expected = [0.5, 0.04, 0.04, 0.04];
        for (a, e) in adjusted.iter().zip(expected) {
            assert!((a - e).abs() < 1e-12, "{adjusted:?}");
        }
    }
}

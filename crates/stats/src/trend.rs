//! Drift across runs: a rank correlation of a figure's values with their run order. A
//! benchmark whose runs get steadily slower (a filling disk, a warming device, a neighbour
//! starting work) has a spread that is not noise, and its mean depends on when it stopped.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Runs below which no trend is judged: with few runs the t approximation is far off (3 runs
/// in perfect order have ρ = 1 and an approximate p of 0, but happen by chance 1 time in 3).
pub const TREND_MIN_RUNS: usize = 7;
/// Significance level of the trend note: a hint per figure, not a verdict, so uncorrected.
pub const ALPHA_TREND: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Trend {
    /// Spearman's rank correlation of the values with their order.
    pub rho: f64,
    /// Two-sided p-value of no correlation (t approximation, n − 2 degrees of freedom, as
    /// `scipy.stats.spearmanr` computes it).
    pub p_value: f64,
}

impl Trend {
    pub fn significant(&self) -> bool {
        self.p_value < ALPHA_TREND
    }
}

/// Ranks from 1, ties sharing the average of their ranks.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let tied = order[start..]
            .iter()
            .take_while(|&&i| values[i] == values[order[start]])
            .count();
        let average = (2 * start + tied + 1) as f64 / 2.0;
        for &i in &order[start..start + tied] {
            ranks[i] = average;
        }
        start += tied;
    }
    ranks
}

/// The trend of `values` (in run order); `None` with fewer than [`TREND_MIN_RUNS`] runs or
/// no spread.
pub fn run_order_trend(values: &[f64]) -> Option<Trend> {
    let n = values.len();
    if n < TREND_MIN_RUNS {
        return None;
    }
    let (x, y) = (
        ranks(&(0..n).map(|i| i as f64).collect::<Vec<_>>()),
        ranks(values),
    );
    let mean = (n as f64 + 1.0) / 2.0;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(&y) {
        sxy += (a - mean) * (b - mean);
        sxx += (a - mean).powi(2);
        syy += (b - mean).powi(2);
    }
    if syy == 0.0 {
        return None;
    }
    let rho = sxy / (sxx * syy).sqrt();
    let df = (n - 2) as f64;
    let p_value = if rho.abs() >= 1.0 {
        0.0
    } else {
        let t = rho * (df / ((1.0 - rho) * (1.0 + rho))).sqrt();
        2.0 * StudentsT::new(0.0, 1.0, df).ok()?.sf(t.abs())
    };
    Some(Trend { rho, p_value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_drift_is_found_and_noise_is_not() {
        let drifting: Vec<f64> = (0..10).map(|i| 100.0 + i as f64 * 3.0).collect();
        let t = run_order_trend(&drifting).unwrap();
        assert_eq!(t.rho, 1.0);
        assert!(t.significant());
        let noise = [100.0, 97.0, 102.0, 99.0, 101.0, 98.0, 100.5, 99.5];
        assert!(!run_order_trend(&noise).unwrap().significant());
        assert_eq!(run_order_trend(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), None);
        assert_eq!(ranks(&[3.0, 1.0, 3.0]), [2.5, 1.0, 2.5]);
    }
}

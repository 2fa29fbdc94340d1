//! A figure's spread across runs, as stored: computed by `stats::summarize`.

use serde::{Deserialize, Serialize};

/// How a figure's confidence interval was computed. Every figure fsbench measures is a
/// non-negative quantity (times, rates, throughputs, CPU %, counts), and most are skewed:
/// the interval must not leave the possible range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CiMethod {
    /// All values positive: Cox's interval of the mean of a log-normal sample, computed on
    /// the log scale (with Student's t), so it is always positive and as skewed as the data.
    LogNormalCox,
    /// Some value is zero: Student's t interval of the mean, cut at zero.
    StudentTAtZero,
    /// Some value is negative (no bound is known): Student's t interval of the mean.
    StudentT,
}

/// The spread of one figure across runs. Fields that need two or more runs are `None` with one.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator).
    pub stddev: Option<f64>,
    pub min: f64,
    pub max: f64,
    pub median: f64,
    /// Coefficient of variation: stddev / mean, in percent.
    pub cv_percent: Option<f64>,
    /// Two-sided 95% confidence interval of the mean, by `ci_method`.
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
    pub ci_method: CiMethod,
    /// The runs' values in run order: for tests of differences, strip plots and trends
    /// (not in the JSON document, which has the runs themselves).
    #[serde(skip)]
    pub values: Vec<f64>,
}

impl Summary {
    /// Cuts the interval at a known upper bound (a CPU percentage: 100 × CPUs).
    pub fn bounded_above(mut self, max: f64) -> Summary {
        self.ci95_high = self.ci95_high.map(|h| h.min(max));
        self
    }

    /// The interval's half-width relative to the mean, in percent: half of (high - low) / mean.
    pub fn ci95_relative_half_width(&self) -> Option<f64> {
        let (lo, hi) = (self.ci95_low?, self.ci95_high?);
        (self.mean != 0.0).then(|| (hi - lo) / 2.0 / self.mean.abs() * 100.0)
    }
}

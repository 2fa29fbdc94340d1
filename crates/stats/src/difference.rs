//! The difference between two configurations' runs of one figure: its ratio with a 95%
//! interval, a p-value, and how many runs would settle it.
//!
//! Positive figures (times, rates, throughputs) are compared on the log scale: the ratio of
//! geometric means with the interval of Welch's t on the logs. A phase's time and rate are
//! reciprocals for a fixed amount of work, so on the log scale they give the same p-value and
//! reciprocal ratios: the two views of one measurement cannot disagree. Figures with zeros
//! are compared on their own scale, relative to the baseline's mean.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::{CONFIDENCE, mean, sample_variance, t_quantile};

/// Runs each side needs before a skewed sample is tested by ranks rather than by t.
pub(crate) const RANK_TEST_MIN_RUNS: usize = 8;
/// Sample skewness (of the logs) beyond which the rank test is used.
pub(crate) const RANK_TEST_SKEWNESS: f64 = 1.0;
/// The most runs a "need about N" estimate names.
pub const MAX_RUNS_ESTIMATE: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestMethod {
    /// Welch's t-test on the logarithms (ratio of geometric means).
    WelchLog,
    /// Welch's t-test on the values (figures with zeros).
    Welch,
    /// Mann–Whitney U (normal approximation, tie and continuity corrected): skewed samples
    /// of at least [`RANK_TEST_MIN_RUNS`] runs each.
    MannWhitney,
}

impl TestMethod {
    pub fn name(self) -> &'static str {
        match self {
            TestMethod::WelchLog => "Welch's t on logs",
            TestMethod::Welch => "Welch's t",
            TestMethod::MannWhitney => "Mann–Whitney U",
        }
    }
}

/// Welch's two-sample t statistics.
#[derive(Debug, Clone, Copy)]
pub struct Welch {
    /// mean(a) - mean(b)
    pub estimate: f64,
    pub standard_error: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value of equal means.
    pub p_value: f64,
}

impl Welch {
    /// `None` when a side has fewer than two values, or neither has any spread while the
    /// means differ (no test can be made).
    pub fn of(a: &[f64], b: &[f64]) -> Option<Welch> {
        if a.len() < 2 || b.len() < 2 {
            return None;
        }
        let (na, nb) = (a.len() as f64, b.len() as f64);
        let (va, vb) = (sample_variance(a) / na, sample_variance(b) / nb);
        let estimate = mean(a) - mean(b);
        if va + vb == 0.0 {
            return (estimate == 0.0).then_some(Welch {
                estimate,
                standard_error: 0.0,
                df: na + nb - 2.0,
                p_value: 1.0,
            });
        }
        let standard_error = (va + vb).sqrt();
        let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
        let dist = StudentsT::new(0.0, 1.0, df).ok()?;
        let t = estimate / standard_error;
        Some(Welch {
            estimate,
            standard_error,
            df,
            p_value: (2.0 * dist.sf(t.abs())).clamp(0.0, 1.0),
        })
    }

    /// The two-sided 95% interval of the difference of means.
    pub fn interval(&self) -> (f64, f64) {
        let t = StudentsT::new(0.0, 1.0, self.df)
            .map_or(f64::INFINITY, |d| d.inverse_cdf(0.5 + CONFIDENCE / 2.0));
        let half = t * self.standard_error;
        (self.estimate - half, self.estimate + half)
    }
}

/// Mann–Whitney U's two-sided p-value, as `scipy.stats.mannwhitneyu(a, b,
/// method="asymptotic")` computes it: normal approximation with tie and continuity
/// correction.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    // Midranks of tied groups, and the tie term sum(t^3 - t).
    let (mut rank_sum_a, mut ties) = (0.0, 0.0);
    let mut start = 0;
    while start < all.len() {
        let end = start
            + all[start..]
                .iter()
                .take_while(|x| x.0 == all[start].0)
                .count();
        let midrank = (start + end + 1) as f64 / 2.0;
        rank_sum_a += midrank * all[start..end].iter().filter(|x| x.1).count() as f64;
        let t = (end - start) as f64;
        ties += t * t * t - t;
        start = end;
    }
    let u1 = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let u = u1.max(n1 * n2 - u1);
    let n = n1 + n2;
    let sigma = (n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)))).sqrt();
    if sigma == 0.0 {
        return 1.0;
    }
    let z = (u - n1 * n2 / 2.0 - 0.5) / sigma;
    let normal = Normal::standard();
    (2.0 * normal.sf(z)).clamp(0.0, 1.0)
}

/// Sample skewness (the biased g1 = m3 / m2^1.5); 0 without spread.
pub(crate) fn skewness(values: &[f64]) -> f64 {
    let m = mean(values);
    let n = values.len() as f64;
    let m2 = values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n;
    let m3 = values.iter().map(|v| (v - m).powi(3)).sum::<f64>() / n;
    if m2 == 0.0 { 0.0 } else { m3 / m2.powf(1.5) }
}

/// Candidate against baseline, on one figure.
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    pub test: TestMethod,
    /// candidate ÷ baseline: of geometric means on the log scale, else of means.
    pub ratio: f64,
    /// The ratio's 95% interval (Welch's on the logs; on the values divided by the
    /// baseline's mean for figures with zeros).
    pub ratio_low: f64,
    pub ratio_high: f64,
    pub p_value: f64,
    pub runs: [usize; 2],
    /// Sum of both sides' per-run variances on the comparison's scale (for run estimates).
    #[serde(skip)]
    variance_sum: f64,
    #[serde(skip)]
    log_scale: bool,
}

impl Difference {
    /// `None` when either side has fewer than two runs, or no test can be made.
    pub fn of(candidate: &[f64], baseline: &[f64]) -> Option<Difference> {
        let positive = candidate.iter().chain(baseline).all(|&v| v > 0.0);
        let scaled = |values: &[f64], base_mean: f64| -> Vec<f64> {
            if positive {
                values.iter().map(|v| v.ln()).collect()
            } else {
                values.iter().map(|v| v / base_mean).collect()
            }
        };
        let base_mean = mean(baseline);
        if !positive && base_mean == 0.0 {
            return None;
        }
        let (c, b) = (scaled(candidate, base_mean), scaled(baseline, base_mean));
        let welch = Welch::of(&c, &b)?;
        let (low, high) = welch.interval();
        let back = |x: f64| if positive { x.exp() } else { 1.0 + x };
        let rank_test = positive
            && c.len().min(b.len()) >= RANK_TEST_MIN_RUNS
            && skewness(&c).abs().max(skewness(&b).abs()) > RANK_TEST_SKEWNESS;
        let (test, p_value) = if rank_test {
            (TestMethod::MannWhitney, mann_whitney_p(&c, &b))
        } else if positive {
            (TestMethod::WelchLog, welch.p_value)
        } else {
            (TestMethod::Welch, welch.p_value)
        };
        Some(Difference {
            test,
            ratio: back(welch.estimate),
            ratio_low: back(low),
            ratio_high: back(high),
            p_value,
            runs: [candidate.len(), baseline.len()],
            variance_sum: sample_variance(&c) + sample_variance(&b),
            log_scale: positive,
        })
    }

    /// Whether the ratio's interval lies within 1 ± `noise_percent` %.
    pub fn within(&self, noise_percent: f64) -> bool {
        let band = noise_percent / 100.0;
        self.ratio_low >= 1.0 - band && self.ratio_high <= 1.0 + band
    }

    /// About how many runs per side would settle the question, from the observed spread:
    /// enough for the interval to exclude no difference at `alpha` when the difference is
    /// at least the noise threshold, or else to fit within it. `None`: more than
    /// [`MAX_RUNS_ESTIMATE`].
    pub fn runs_needed(&self, noise_percent: f64, alpha: f64) -> Option<usize> {
        let to_scale = |r: f64| if self.log_scale { r.ln() } else { r - 1.0 };
        let distance = to_scale(self.ratio).abs();
        let band = to_scale(1.0 + noise_percent / 100.0);
        let (target, alpha) = if distance >= band {
            (distance, alpha)
        } else {
            (band - distance, 1.0 - CONFIDENCE)
        };
        // Asked because the runs there are did not settle it: the answer is more than them
        // (the estimate's pooled t is kinder than Welch's, and could name the runs done).
        let now = self.runs[0].max(self.runs[1]);
        ((now + 1).max(2)..=MAX_RUNS_ESTIMATE).find(|&n| {
            let half =
                t_quantile(2 * n - 2, 1.0 - alpha / 2.0) * (self.variance_sum / n as f64).sqrt();
            half < target
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_and_rate_of_one_phase_agree() {
        let times = [10.0, 11.0, 10.5, 10.2];
        let other = [12.0, 12.5, 11.8, 13.0];
        let rate = |t: &[f64]| t.iter().map(|t| 1000.0 / t).collect::<Vec<_>>();
        let by_time = Difference::of(&other, &times).unwrap();
        let by_rate = Difference::of(&rate(&other), &rate(&times)).unwrap();
        assert!((by_time.p_value - by_rate.p_value).abs() < 1e-12);
        assert!((by_time.ratio * by_rate.ratio - 1.0).abs() < 1e-12);
        assert!((by_time.ratio_low * by_rate.ratio_high - 1.0).abs() < 1e-9);
    }

    #[test]
    fn skewed_large_samples_are_ranked() {
        let steady: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
        let mut skewed = steady.clone();
        skewed[9] = 10_000.0;
        assert_eq!(
            Difference::of(&skewed, &steady).unwrap().test,
            TestMethod::MannWhitney
        );
        assert_eq!(
            Difference::of(&steady[..5], &steady[5..]).unwrap().test,
            TestMethod::WelchLog
        );
        let with_zero = [0.0, 1.0, 2.0];
        assert_eq!(
            Difference::of(&with_zero, &[1.0, 2.0, 3.0]).unwrap().test,
            TestMethod::Welch
        );
    }

    #[test]
    fn more_runs_are_needed_for_smaller_differences() {
        let base = [100.0, 104.0, 96.0];
        let near = Difference::of(&[103.0, 107.0, 99.0], &base).unwrap();
        let far = Difference::of(&[150.0, 156.0, 144.0], &base).unwrap();
        let (n_near, n_far) = (near.runs_needed(2.0, 0.05), far.runs_needed(2.0, 0.05));
        // Never the runs already made: they did not settle it.
        assert_eq!(n_far, Some(4));
        assert!(n_near.unwrap() > n_far.unwrap(), "{n_near:?} {n_far:?}");
    }
}

//! Statistics in one place: the spread every figure is reported with (here), the summaries
//! of a suite's runs ([`summary`]), comparisons of configurations ([`compare`]) and their
//! ranking ([`rank`]). Rendering is in [`crate::report`].

pub mod compare;
pub mod rank;
pub mod summary;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Confidence level of every interval fsbench prints.
pub const CONFIDENCE: f64 = 0.95;

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
    /// Two-sided 95% confidence interval of the mean, from Student's t with n - 1 degrees of freedom.
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
}

impl Summary {
    /// Summarizes `values`; `None` when there are none or any is not finite.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let (stddev, cv_percent, ci95_low, ci95_high) = if n >= 2 {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let sd = var.sqrt();
            let half = t_quantile(n - 1, 0.5 + CONFIDENCE / 2.0) * sd / (n as f64).sqrt();
            let cv = (mean != 0.0).then(|| sd / mean.abs() * 100.0);
            (Some(sd), cv, Some(mean - half), Some(mean + half))
        } else {
            (None, None, None, None)
        };
        Some(Summary {
            n,
            mean,
            stddev,
            min: sorted[0],
            max: sorted[n - 1],
            median,
            cv_percent,
            ci95_low,
            ci95_high,
        })
    }

    /// Half the width of the 95% confidence interval.
    pub fn ci95_half_width(&self) -> Option<f64> {
        Some((self.ci95_high? - self.ci95_low?) / 2.0)
    }
}

/// Welch's two-sample t-test on two summaries (unequal variances): the two-sided p-value of
/// the hypothesis that both means are equal. `None` when either side has fewer than two runs,
/// or both have no spread at all.
pub fn welch_p_value(a: &Summary, b: &Summary) -> Option<f64> {
    let (sa, sb) = (a.stddev?, b.stddev?);
    let (na, nb) = (a.n as f64, b.n as f64);
    let (va, vb) = (sa * sa / na, sb * sb / nb);
    if va + vb == 0.0 {
        return if a.mean == b.mean { Some(1.0) } else { None };
    }
    let t = (a.mean - b.mean) / (va + vb).sqrt();
    // Welch–Satterthwaite degrees of freedom.
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some((2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0))
}

/// The `p` quantile of Student's t distribution with `df` degrees of freedom.
pub fn t_quantile(df: usize, p: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df as f64)
        .expect("degrees of freedom are positive")
        .inverse_cdf(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_printed_tables() {
        // Two-sided 95% critical values from any statistics textbook's t table.
        for (df, expected) in [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (29, 2.045)] {
            let t = t_quantile(df, 0.975);
            assert!(close(t, expected, 0.001), "df={df}: {t} vs {expected}");
        }
    }

    #[test]
    fn summary_of_textbook_sample() {
        // Sample 2,4,4,4,5,5,7,9: mean 5, sample variance 32/7.
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0, 1e-12));
        let sd = (32.0f64 / 7.0).sqrt();
        assert!(close(s.stddev.unwrap(), sd, 1e-12));
        assert_eq!((s.min, s.max, s.median), (2.0, 9.0, 4.5));
        assert!(close(s.cv_percent.unwrap(), sd / 5.0 * 100.0, 1e-9));
        // t(0.975, 7) = 2.364624252 (scipy.stats.t.ppf).
        let half = 2.364_624_252 * sd / 8f64.sqrt();
        assert!(close(s.ci95_low.unwrap(), 5.0 - half, 1e-6));
        assert!(close(s.ci95_high.unwrap(), 5.0 + half, 1e-6));
    }

    #[test]
    fn seed_table_row_reproduces() {
        // fdtree article, ext4 small-shallow file create: 10 runs around 327.2 s with sd 4.89.
        // A sample with that mean and sd gives the CI half-width t(9)*sd/sqrt(10) = 3.498.
        let base = [
            322.0, 323.0, 324.0, 325.0, 327.0, 327.0, 329.0, 330.0, 332.0, 333.0,
        ];
        let s = Summary::of(&base).unwrap();
        let half = s.ci95_half_width().unwrap();
        assert!(close(
            half,
            2.262_157 * s.stddev.unwrap() / 10f64.sqrt(),
            1e-5
        ));
    }

    #[test]
    fn welch_matches_scipy() {
        // scipy.stats.ttest_ind(a, b, equal_var=False).pvalue for these samples.
        let cases: [(&[f64], &[f64], f64); 3] = [
            (
                &[
                    27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0,
                    21.7, 21.4,
                ],
                &[
                    27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9,
                    20.5, 24.4,
                ],
                0.021_378_001_5,
            ),
            (&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.021_311_641_1),
            (
                &[10.0, 10.5, 9.8, 10.1],
                &[10.2, 10.4, 9.9, 10.6, 10.3],
                0.372_939_847_2,
            ),
        ];
        for (a, b, expected) in cases {
            let p = welch_p_value(&Summary::of(a).unwrap(), &Summary::of(b).unwrap()).unwrap();
            assert!(close(p, expected, 1e-6), "{p} vs {expected}");
        }
        let one = Summary::of(&[1.0]).unwrap();
        assert_eq!(welch_p_value(&one, &one), None);
        let flat = Summary::of(&[2.0, 2.0]).unwrap();
        assert_eq!(welch_p_value(&flat, &flat), Some(1.0));
    }

    #[test]
    fn single_run_has_no_spread() {
        let s = Summary::of(&[3.0]).unwrap();
        assert_eq!(s.stddev, None);
        assert_eq!(s.ci95_low, None);
        assert_eq!(s.median, 3.0);
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
    }
}

//! Statistics in one place: the spread every figure is reported with (here), the summaries
//! of a suite's runs ([`summary`]), comparisons of configurations ([`compare`]) and their
//! ranking ([`rank`]), and the warnings a suite's results call for ([`warnings`]).
//! Rendering is in the reports.

pub mod compare;
pub mod conclusion;
pub mod correction;
pub mod difference;
pub mod rank;
pub mod summary;
pub mod trend;
pub mod warnings;

use fsbench_model::results::{CiMethod, Summary};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Confidence level of every interval fsbench prints.
pub const CONFIDENCE: f64 = 0.95;

/// Summarizes `values` (in run order); `None` when there are none or any is not finite.
pub fn summarize(values: &[f64]) -> Option<Summary> {
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
    let ci_method = if sorted[0] > 0.0 {
        CiMethod::LogNormalCox
    } else if sorted[0] == 0.0 {
        CiMethod::StudentTAtZero
    } else {
        CiMethod::StudentT
    };
    let stddev = (n >= 2).then(|| sample_variance(values).sqrt());
    let (ci95_low, ci95_high) = match confidence_interval(values, ci_method) {
        Some((lo, hi)) => (Some(lo), Some(hi)),
        None => (None, None),
    };
    Some(Summary {
        n,
        mean,
        stddev,
        min: sorted[0],
        max: sorted[n - 1],
        median,
        cv_percent: stddev.and_then(|sd| (mean != 0.0).then(|| sd / mean.abs() * 100.0)),
        ci95_low,
        ci95_high,
        ci_method,
        values: values.to_vec(),
    })
}

/// Arithmetic mean.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample variance (n - 1 in the denominator); needs two or more values.
pub fn sample_variance(values: &[f64]) -> f64 {
    let m = mean(values);
    values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64
}

/// The two-sided 95% confidence interval of the mean of `values` by `method`; `None` with
/// fewer than two values.
pub fn confidence_interval(values: &[f64], method: CiMethod) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let t = t_quantile(n - 1, 0.5 + CONFIDENCE / 2.0);
    if method == CiMethod::LogNormalCox {
        // Cox's method: the log-normal mean is exp(mu + sigma^2 / 2); its log has the
        // standard error sqrt(s^2 / n + s^4 / (2 (n - 1))).
        let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
        let s2 = sample_variance(&logs);
        let centre = mean(&logs) + s2 / 2.0;
        let se = (s2 / n as f64 + s2 * s2 / (2.0 * (n - 1) as f64)).sqrt();
        return Some(((centre - t * se).exp(), (centre + t * se).exp()));
    }
    let m = mean(values);
    let half = t * (sample_variance(values) / n as f64).sqrt();
    let low = if method == CiMethod::StudentTAtZero {
        (m - half).max(0.0)
    } else {
        m - half
    };
    Some((low, m + half))
}

/// The `p` quantile of Student's t distribution with `df` degrees of freedom.
pub fn t_quantile(df: usize, p: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df as f64)
        .expect("degrees of freedom are positive")
        .inverse_cdf(p)
}

#[cfg(test)]
mod tests {
    use super::difference::Welch;
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
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0, 1e-12));
        let sd = (32.0f64 / 7.0).sqrt();
        assert!(close(s.stddev.unwrap(), sd, 1e-12));
        assert_eq!((s.min, s.max, s.median), (2.0, 9.0, 4.5));
        assert!(close(s.cv_percent.unwrap(), sd / 5.0 * 100.0, 1e-9));
        // t(0.975, 7) = 2.364624252 (scipy.stats.t.ppf).
        let half = 2.364_624_252 * sd / 8f64.sqrt();
        let (lo, hi) = confidence_interval(&s.values, CiMethod::StudentT).unwrap();
        assert!(close(lo, 5.0 - half, 1e-6));
        assert!(close(hi, 5.0 + half, 1e-6));
        // Positive values: the log-normal interval, which stays above zero.
        assert_eq!(s.ci_method, CiMethod::LogNormalCox);
        assert!(s.ci95_low.unwrap() > 0.0 && s.ci95_low.unwrap() < s.mean);
    }

    #[test]
    fn seed_table_row_reproduces() {
        // fdtree article, ext4 small-shallow file create: 10 runs around 327.2 s with sd 4.89.
        // A sample with that mean and sd gives the CI half-width t(9)*sd/sqrt(10) = 3.498.
        let base = [
            322.0, 323.0, 324.0, 325.0, 327.0, 327.0, 329.0, 330.0, 332.0, 333.0,
        ];
        let s = summarize(&base).unwrap();
        let (lo, hi) = confidence_interval(&base, CiMethod::StudentT).unwrap();
        assert!(close(
            (hi - lo) / 2.0,
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
            let p = Welch::of(a, b).unwrap().p_value;
            assert!(close(p, expected, 1e-6), "{p} vs {expected}");
        }
        assert!(Welch::of(&[1.0], &[1.0]).is_none());
        assert_eq!(Welch::of(&[2.0, 2.0], &[2.0, 2.0]).unwrap().p_value, 1.0);
        assert!(Welch::of(&[2.0, 2.0], &[3.0, 3.0]).is_none());
    }

    #[test]
    fn single_run_has_no_spread() {
        let s = summarize(&[3.0]).unwrap();
        assert_eq!(s.stddev, None);
        assert_eq!(s.ci95_low, None);
        assert_eq!(s.median, 3.0);
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn intervals_stay_in_the_possible_range() {
        // Two runs far apart: Student's t would reach far below zero (mean 5, half-width 57).
        let skewed = summarize(&[1.0, 9.0]).unwrap();
        assert_eq!(skewed.ci_method, CiMethod::LogNormalCox);
        assert!(skewed.ci95_low.unwrap() > 0.0);
        let (t_low, _) = confidence_interval(&[1.0, 9.0], CiMethod::StudentT).unwrap();
        assert!(t_low < 0.0);
        let with_zero = summarize(&[0.0, 1.0, 8.0]).unwrap();
        assert_eq!(with_zero.ci_method, CiMethod::StudentTAtZero);
        assert_eq!(with_zero.ci95_low, Some(0.0));
        let cpu = summarize(&[150.0, 199.0]).unwrap().bounded_above(200.0);
        assert_eq!(cpu.ci95_high, Some(200.0));
    }
}

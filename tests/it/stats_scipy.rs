//! fsbench's statistics against SciPy's, computed independently on the same samples: one
//! Python process per test prints SciPy's values, one line per case.

use std::process::Command;

use crate::common::{run, skip, status};
use fsbench_model::results::CiMethod;
use fsbench_stats::correction::{benjamini_hochberg, holm};
use fsbench_stats::difference::Welch;
use fsbench_stats::difference::{Difference, mann_whitney_p};
use fsbench_stats::{confidence_interval, summarize};

/// Deterministic pseudo-random samples (a 64-bit LCG), so failures can be reproduced.
fn samples(seed: u64, n: usize, mean: f64, spread: f64) -> Vec<f64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            mean + spread * ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
        })
        .collect()
}

/// A python3 with SciPy: the one on PATH, else Debian's (a pyenv's python3 may lack it).
fn scipy_python() -> Option<&'static str> {
    let found = ["python3", "/usr/bin/python3"].into_iter().find(|p| {
        crate::common::has_tool("python3")
            && status(Command::new(p).args(["-c", "import scipy"])).success()
    });
    if found.is_none() {
        skip("SciPy comparison: no python3 with scipy (scripts/test.sh installs python3-scipy)");
    }
    found
}

fn list(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{x:.17e}")).collect();
    format!("np.array([{}])", items.join(","))
}

/// Runs `script` after SciPy's imports; one line of numbers per printed case.
fn scipy_lines(python: &str, script: &str) -> Vec<Vec<f64>> {
    let script = format!("from scipy import stats\nimport numpy as np\n{script}");
    let out = run(Command::new(python).args(["-c", &script]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

/// Pairs of samples of 2 to 10 runs, spreads from tight to skewed, all positive.
fn cases() -> Vec<(Vec<f64>, Vec<f64>)> {
    (0..20u64)
        .map(|case| {
            let (na, nb) = (2 + (case % 9) as usize, 3 + (case % 7) as usize);
            (
                samples(case * 2 + 1, na, 100.0, 10.0 + case as f64 * 9.0),
                samples(
                    case * 2 + 2,
                    nb,
                    100.0 + case as f64 / 2.0,
                    5.0 + case as f64 * 9.0,
                ),
            )
        })
        .collect()
}

#[test]
fn welch_and_confidence_intervals_match_scipy() {
    let Some(python) = scipy_python() else { return };
    let cases = cases();
    // Welch's p; Student's t interval; Cox's log-normal interval (t quantile from SciPy).
    let mut script = String::new();
    for (a, b) in &cases {
        script.push_str(&format!(
            "a = {}; b = {}\n\
             lo, hi = stats.t.interval(0.95, len(a) - 1, loc=a.mean(), scale=stats.sem(a))\n\
             y = np.log(a); s2 = y.var(ddof=1); n = len(a)\n\
             half = stats.t.ppf(0.975, n - 1) * np.sqrt(s2 / n + s2**2 / (2 * (n - 1)))\n\
             c = y.mean() + s2 / 2\n\
             print(stats.ttest_ind(a, b, equal_var=False).pvalue, lo, hi, np.exp(c - half), np.exp(c + half))\n",
            list(a),
            list(b)
        ));
    }
    let lines = scipy_lines(python, &script);
    assert_eq!(lines.len(), cases.len());
    for (case, ((a, b), v)) in cases.iter().zip(lines).enumerate() {
        let sa = summarize(a).unwrap();
        let p = Welch::of(a, b).unwrap().p_value;
        assert!(
            (p - v[0]).abs() < 1e-9,
            "case {case}: p {p} vs scipy {}",
            v[0]
        );
        let (lo, hi) = confidence_interval(a, CiMethod::StudentT).unwrap();
        assert!(
            (lo - v[1]).abs() < 1e-9 * hi.abs() && (hi - v[2]).abs() < 1e-9 * hi.abs(),
            "case {case}: t CI {lo} {hi} vs {v:?}"
        );
        assert_eq!(sa.ci_method, CiMethod::LogNormalCox);
        let (lo, hi) = (sa.ci95_low.unwrap(), sa.ci95_high.unwrap());
        assert!(
            close(lo, v[3], 1e-9) && close(hi, v[4], 1e-9),
            "case {case}: Cox CI {lo} {hi} vs {v:?}"
        );
        assert!(lo > 0.0);
    }
}

#[test]
fn ratio_intervals_and_rank_tests_match_scipy() {
    let Some(python) = scipy_python() else { return };
    let mut cases = cases();
    // Ties and a textbook pair (Mann–Whitney's example of two skewed samples).
    cases.push((
        vec![1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0],
        vec![2.0, 3.0, 3.0, 4.0, 5.0, 5.0, 6.0, 9.0],
    ));
    cases.push((
        vec![19.0, 22.0, 16.0, 29.0, 24.0],
        vec![20.0, 11.0, 17.0, 12.0],
    ));
    let mut script = String::new();
    for (a, b) in &cases {
        // Welch's t on the logs: p-value and the interval of the difference of log means,
        // with the Welch–Satterthwaite degrees of freedom, back on the ratio scale.
        script.push_str(&format!(
            "a = np.log({}); b = np.log({})\n\
             va = a.var(ddof=1) / len(a); vb = b.var(ddof=1) / len(b)\n\
             df = (va + vb)**2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))\n\
             d = a.mean() - b.mean(); half = stats.t.ppf(0.975, df) * np.sqrt(va + vb)\n\
             u = stats.mannwhitneyu(a, b, alternative='two-sided', method='asymptotic').pvalue\n\
             print(stats.ttest_ind(a, b, equal_var=False).pvalue, np.exp(d), np.exp(d - half), np.exp(d + half), u)\n",
            list(a),
            list(b)
        ));
    }
    let lines = scipy_lines(python, &script);
    assert_eq!(lines.len(), cases.len());
    for (case, ((a, b), v)) in cases.iter().zip(lines).enumerate() {
        let d = Difference::of(a, b).unwrap();
        assert!(d.ratio_low < d.ratio && d.ratio < d.ratio_high);
        assert!(
            close(d.ratio, v[1], 1e-9),
            "case {case}: ratio {} vs {}",
            d.ratio,
            v[1]
        );
        // statrs's t quantile at fractional degrees of freedom agrees with SciPy's to ~1e-8.
        assert!(
            close(d.ratio_low, v[2], 1e-7),
            "case {case}: low {} vs {}",
            d.ratio_low,
            v[2]
        );
        assert!(close(d.ratio_high, v[3], 1e-7), "case {case}: high");
        let welch = Welch::of(
            &a.iter().map(|x| x.ln()).collect::<Vec<_>>(),
            &b.iter().map(|x| x.ln()).collect::<Vec<_>>(),
        )
        .unwrap();
        assert!((welch.p_value - v[0]).abs() < 1e-9, "case {case}: log p");
        let logs = |s: &[f64]| s.iter().map(|x| x.ln()).collect::<Vec<_>>();
        let u = mann_whitney_p(&logs(a), &logs(b));
        assert!(
            (u - v[4]).abs() < 1e-9,
            "case {case}: U p {u} vs scipy {}",
            v[4]
        );
    }
}

#[test]
fn corrections_match_the_reference_formulas() {
    let Some(python) = scipy_python() else { return };
    // Uniform p-values with a few small ones, and ties. SciPy 1.10 has no p-value
    // adjustment, so the references are R's p.adjust formulas in NumPy (as statsmodels'
    // multipletests computes them); SciPy >= 1.11's false_discovery_control is used too
    // where present.
    let families: Vec<Vec<f64>> = (0..6u64)
        .map(|f| {
            let mut p = samples(f + 11, 5 + 40 * f as usize, 0.5, 1.0);
            p[0] = 0.0004;
            p[1] = 0.01;
            if p.len() > 3 {
                p[3] = p[2];
            }
            p
        })
        .collect();
    let mut script = String::from(
        "def holm(p):\n    m = len(p); o = np.argsort(p); r = np.empty(m)\n    \
         r[o] = np.minimum(1, np.maximum.accumulate((m - np.arange(m)) * p[o]))\n    return r\n\
         def bh(p):\n    m = len(p); o = np.argsort(p)[::-1]; r = np.empty(m)\n    \
         r[o] = np.minimum(1, np.minimum.accumulate(p[o] * m / np.arange(m, 0, -1)))\n    return r\n",
    );
    for p in &families {
        script.push_str(&format!(
            "p = {}\nq = bh(p)\n\
             if hasattr(stats, 'false_discovery_control'): assert np.allclose(q, stats.false_discovery_control(p))\n\
             print(*holm(p)); print(*q)\n",
            list(p)
        ));
    }
    let lines = scipy_lines(python, &script);
    assert_eq!(lines.len(), 2 * families.len());
    for (f, p) in families.iter().enumerate() {
        for (ours, reference) in [
            (holm(p), &lines[2 * f]),
            (benjamini_hochberg(p), &lines[2 * f + 1]),
        ] {
            assert_eq!(ours.len(), reference.len());
            for (o, r) in ours.iter().zip(reference) {
                assert!((o - r).abs() < 1e-12, "family {f}: {o} vs {r}");
            }
        }
    }
}

#[test]
fn run_order_trends_match_scipy() {
    let Some(python) = scipy_python() else { return };
    let mut cases: Vec<Vec<f64>> = (0..12u64)
        .map(|c| {
            let n = fsbench_stats::trend::TREND_MIN_RUNS + c as usize;
            let noise = samples(c + 40, n, 0.0, 10.0);
            // Some drift upwards, some down, some none; values rounded to make ties.
            let slope = (c as f64 - 6.0) / 2.0;
            noise
                .iter()
                .enumerate()
                .map(|(i, e)| (100.0 + slope * i as f64 + e).round())
                .collect()
        })
        .collect();
    cases.push(vec![5.0, 4.0, 3.0, 2.0, 1.0, 0.5, 0.25]);
    let mut script = String::new();
    for v in &cases {
        script.push_str(&format!(
            "r = stats.spearmanr(np.arange({}), {})\nprint(r.correlation, r.pvalue)\n",
            v.len(),
            list(v)
        ));
    }
    let lines = scipy_lines(python, &script);
    assert_eq!(lines.len(), cases.len());
    for (case, (v, reference)) in cases.iter().zip(lines).enumerate() {
        let t = fsbench_stats::trend::run_order_trend(v).unwrap();
        assert!(
            (t.rho - reference[0]).abs() < 1e-12,
            "case {case}: rho {} vs {reference:?}",
            t.rho
        );
        assert!(
            (t.p_value - reference[1]).abs() < 1e-9,
            "case {case}: p {} vs {reference:?}",
            t.p_value
        );
    }
}

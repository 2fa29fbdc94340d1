//! fsbench's statistics against SciPy's, computed independently on the same samples.

mod common;

use std::process::Command;

use common::{has_tool, run, status};
use fsbench::stats::{Summary, welch_p_value};

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

#[test]
fn welch_and_confidence_intervals_match_scipy() {
    if !has_tool("python3")
        || !status(Command::new("python3").args(["-c", "import scipy"])).success()
    {
        println!(
            "SKIPPED SciPy comparison: python3 with scipy is not installed (scripts/test.sh installs python3-scipy)"
        );
        return;
    }
    let cases: Vec<(Vec<f64>, Vec<f64>)> = (0..20u64)
        .map(|case| {
            let (na, nb) = (2 + (case % 9) as usize, 3 + (case % 7) as usize);
            (
                samples(case * 2 + 1, na, 100.0, 10.0 + case as f64),
                samples(
                    case * 2 + 2,
                    nb,
                    100.0 + case as f64 / 2.0,
                    5.0 + case as f64,
                ),
            )
        })
        .collect();
    let list = |v: &[f64]| {
        format!(
            "[{}]",
            v.iter()
                .map(|x| format!("{x:.17e}"))
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    // One SciPy process for every case: p-value, then the 95% CI of the first sample.
    let mut script = String::from("from scipy import stats\nimport numpy as np\n");
    for (a, b) in &cases {
        script.push_str(&format!(
            "a = np.array({}); b = np.array({})\n\
             lo, hi = stats.t.interval(0.95, len(a) - 1, loc=a.mean(), scale=stats.sem(a))\n\
             print(stats.ttest_ind(a, b, equal_var=False).pvalue, lo, hi)\n",
            list(a),
            list(b)
        ));
    }
    let out = run(Command::new("python3").args(["-c", &script]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), cases.len());
    for (case, ((a, b), line)) in cases.iter().zip(lines).enumerate() {
        let v: Vec<f64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        let (sa, sb) = (Summary::of(a).unwrap(), Summary::of(b).unwrap());
        let p = welch_p_value(&sa, &sb).unwrap();
        assert!(
            (p - v[0]).abs() < 1e-9,
            "case {case}: p {p} vs scipy {}",
            v[0]
        );
        assert!(
            (sa.ci95_low.unwrap() - v[1]).abs() < 1e-9 * v[1].abs(),
            "case {case}: CI low"
        );
        assert!(
            (sa.ci95_high.unwrap() - v[2]).abs() < 1e-9 * v[2].abs(),
            "case {case}: CI high"
        );
    }
}

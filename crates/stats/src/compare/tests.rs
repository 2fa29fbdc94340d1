use super::*;

fn suite(id: i64, config: &str, values: &[f64]) -> SuiteResult {
    let mut s = SuiteResult::for_tests();
    s.id = Some(id);
    s.summaries = vec![MetricSummary {
        config: config.into(),
        workload: "tree:x".into(),
        phase: "file-create".into(),
        metric: "rate".into(),
        dims: Vec::new(),
        unit: "files/s".into(),
        higher_is_better: true,
        summary: crate::summarize(values).unwrap(),
    }];
    s
}

#[test]
fn verdicts_follow_significance_noise_and_direction() {
    let suites = [
        suite(1, "a", &[100.0, 101.0, 99.0, 100.5]),
        suite(2, "b", &[110.0, 111.0, 109.0, 110.5]),
        suite(3, "c", &[100.5, 101.5, 99.5, 100.0]),
        suite(4, "d", &[90.0, 91.0, 89.0, 90.5]),
    ];
    let cols: Vec<Column> = [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
        .iter()
        .map(|(id, c)| Column {
            suite_id: *id,
            config: c.to_string(),
        })
        .collect();
    let rows = compare(&suites, &cols, 0, 2.0).rows;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].role, Role::Primary);
    let v: Vec<Verdict> = rows[0]
        .cells
        .iter()
        .map(|c| c.as_ref().unwrap().verdict)
        .collect();
    // c is 0.25% off with a spread that bounds the difference within ±2%: the same.
    assert_eq!(
        v,
        [
            Verdict::Baseline,
            Verdict::Better,
            Verdict::Same,
            Verdict::Worse
        ]
    );
    let b = rows[0].cells[1].as_ref().unwrap();
    let log_mean = |s: &SuiteResult| {
        let v = &s.summaries[0].summary.values;
        v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64
    };
    let geometric_ratio = (log_mean(&suites[1]) - log_mean(&suites[0])).exp();
    let (diff, low, high) = b.diff_percent().unwrap();
    assert!((diff - (geometric_ratio - 1.0) * 100.0).abs() < 1e-9);
    assert!(low < diff && diff < high);
    assert!(b.p_adjusted.unwrap() < 0.001);
    // A 10% difference whose interval lies within a 15% noise threshold is the same.
    let rows = compare(&suites, &cols, 0, 15.0).rows;
    assert_eq!(rows[0].cells[1].as_ref().unwrap().verdict, Verdict::Same);
}

//! Suites stored by earlier versions (JSON in the results database) still read as the same
//! workloads: same labels, descriptions, phases and parameters.

use fsbench_model::suite::Suite;
use fsbench_workloads::Params;

#[test]
fn stored_suites_of_the_previous_version_read_the_same() {
    let text = include_str!("fixtures/workload_specs_v1.json");
    let doc: serde_json::Value = serde_json::from_str(text).unwrap();
    let suite: Suite = serde_json::from_value(doc["suite"].clone()).unwrap();
    let expected = doc["expected"].as_array().unwrap();
    let stored = doc["suite"]["workload"].as_array().unwrap();
    assert_eq!(suite.workloads.len(), expected.len());
    for ((kept, want), stored) in suite.workloads.iter().zip(expected).zip(stored) {
        let cli = want["cli"].as_str().unwrap();
        let spec = Params::of(kept).unwrap();
        assert_eq!(spec.label(), want["label"], "{cli}");
        assert_eq!(spec.describe(), want["describe"], "{cli}");
        let phases: Vec<String> = spec.phases().iter().map(|p| p.name.to_string()).collect();
        assert_eq!(serde_json::json!(phases), want["phases"], "{cli}");
        // The parameters: kept as they were, and written again from the typed ones, the
        // same JSON.
        assert_eq!(&serde_json::to_value(kept).unwrap(), stored, "{cli}");
        assert_eq!(&serde_json::to_value(spec.spec()).unwrap(), stored, "{cli}");
    }
    // And the current serialization round-trips.
    let again: Suite = serde_json::from_str(&serde_json::to_string(&suite).unwrap()).unwrap();
    assert_eq!(again, suite);
}

#[test]
fn today_s_spellings_give_the_same_labels() {
    let text = include_str!("fixtures/workload_specs_v1.json");
    let doc: serde_json::Value = serde_json::from_str(text).unwrap();
    for want in doc["expected"].as_array().unwrap() {
        let cli = want["cli"].as_str().unwrap();
        // The ffsb profile file is not kept; its stored form is checked above.
        if cli.contains("profile=") {
            continue;
        }
        let spec = Params::parse(cli).unwrap();
        assert_eq!(spec.label(), want["label"], "{cli}");
        assert_eq!(spec.describe(), want["describe"], "{cli}");
    }
}

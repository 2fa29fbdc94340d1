//! The shape of real phases: first-done / last-done of a multi-threaded FFSB phase, and the
//! steady-state analysis of a phase long enough for it. Runs in a directory (no root).

use crate::common::*;

/// One thread with little to do and three with much more: the first finishes long before
/// the last.
const UNEVEN: &str = "time=0
[filesystem0]
    num_files=20
    num_dirs=2
    min_filesize=4k
    max_filesize=4k
[end0]
[threadgroup0]
    num_threads=1
    num_ops=200
    stat_weight=1
[end0]
[threadgroup1]
    num_threads=3
    num_ops=60000
    stat_weight=1
[end1]
";

/// Five seconds of stats on two threads: long enough for MSER-5 (about 10 batches of 5
/// 100 ms samples; it needs 8).
const TIMED: &str = "time=5
[filesystem0]
    num_files=20
    num_dirs=2
    min_filesize=4k
    max_filesize=4k
[end0]
[threadgroup0]
    num_threads=2
    stat_weight=1
[end0]
";

fn ffsb(profile: &str) -> serde_json::Value {
    let dir = tempdir();
    let state = tempdir();
    let file = state.path().join("profile.ffsb");
    std::fs::write(&file, profile).unwrap();
    let out = run(fsbench(state.path())
        .args(["ffsb", file.to_str().unwrap(), "--runs", "1", "--dir"])
        .arg(dir.path())
        .args(["--output-format", "json", "-q"]));
    assert!(out.status.success(), "exit {:?}", out.status);
    json(&out)
}

fn phase<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["runs"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap()
}

#[test]
fn first_done_and_last_done_of_uneven_threads() {
    let doc = ffsb(UNEVEN);
    let run = phase(&doc, "run");
    let threads = &run["shape"]["threads"];
    assert_eq!(threads["threads"], 4, "{run}");
    let elapsed = run["elapsed_ns"].as_f64().unwrap() / 1e9;
    let first = threads["first_done_secs"].as_f64().unwrap();
    assert!(first > 0.0 && first < elapsed, "{first} of {elapsed}");
    // When the small thread finished, it had done its 200 and the others some of theirs.
    let first_units = threads["first_done_rate"].as_f64().unwrap() * first;
    assert!(
        (200.0..=60_000.0 * 3.0).contains(&first_units.round()),
        "{first_units}"
    );
    let last = threads["last_done_rate"].as_f64().unwrap();
    let ops = run["ops"].as_f64().unwrap();
    assert!(
        (last - ops / elapsed).abs() / last < 1e-6,
        "{last} vs {ops}/{elapsed}"
    );
    assert!(
        doc["summaries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["phase"] == "run" && s["metric"] == "first-done rate")
    );
    // The file set is made by one thread: no first-done there.
    assert!(phase(&doc, "setup")["shape"]["threads"].is_null());
}

#[test]
fn a_long_phase_gets_a_steady_state_next_to_its_rate() {
    let doc = ffsb(TIMED);
    let run = phase(&doc, "run");
    let steady = &run["shape"]["steady"];
    let batches = steady["batches"].as_u64().expect("a steady-state analysis");
    assert!(batches >= 8, "{steady}");
    let warmup = steady["warmup_secs"].as_f64().unwrap();
    assert!((0.0..5.0).contains(&warmup), "{steady}");
    let has_steady_rate = doc["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["phase"] == "run" && s["metric"] == "steady rate");
    // Reached or not (a shared machine), the figure is there exactly when it was reached,
    // and the warning exactly when it was not.
    let reached = steady["reached"].as_bool().unwrap();
    assert_eq!(has_steady_rate, reached, "{steady}");
    let warned = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["kind"] == "no-steady-state" && w["phase"] == "run");
    assert_eq!(warned, !reached);
}

//! The harness ceiling: each phase once on tmpfs, cached per machine in the state directory,
//! and every measured phase's share of it; a phase on tmpfs is harness-bound.

mod common;

use std::path::Path;

use common::*;

const TREE: &str = "tree:dirs=12,files=6,size=1,levels=3";

/// `workload` on a fresh tmpfs per run, `runs` times, recorded in `db`; JSON on stdout.
fn tmpfs_suite(
    state: &Path,
    db: &Path,
    images: &Path,
    workload: &str,
    runs: &str,
) -> std::process::Output {
    run(fsbench(state)
        .arg("--db")
        .arg(db)
        .args(["run", "--fs", "tmpfs", "-w", workload, "--runs", runs, "-q"])
        .args(["--output-format", "json", "--image-dir"])
        .arg(images))
}

#[test]
fn a_tmpfs_phase_is_harness_bound_and_the_ceiling_is_cached() {
    if !can_run("harness ceiling", &[]) {
        return;
    }
    let state = tempdir();
    let images = tempdir();
    let data = tempdir();
    let db = data.path().join("results.db");
    let suite = || tmpfs_suite(state.path(), &db, images.path(), TREE, "2");
    let out = suite();
    assert!(out.status.success(), "exit {:?}", out.status);
    assert!(text(&out.stderr).contains("measuring the harness ceiling"));
    let doc = json(&out);
    // The target is described as what it is: no image, loop device or disk.
    let target = doc["target"]["description"].as_str().unwrap();
    assert!(target.contains("fresh tmpfs mount per run"), "{target}");
    assert!(!target.contains("loop image"), "{target}");
    assert!(doc["target"]["device"].is_null());
    let ceiling = &doc["ceilings"][0];
    assert_eq!(ceiling["workload"], "tree:d12-f6-s1-l3");
    let phases: Vec<&str> = ceiling["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(
        phases,
        ["dir-create", "file-create", "file-remove", "dir-remove"]
    );
    assert!(
        ceiling["phases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["rate"].as_f64().unwrap() > 0.0)
    );
    // Every phase of every run has its share of the ceiling: its rate ÷ the ceiling's.
    for r in doc["runs"].as_array().unwrap() {
        for p in r["phases"].as_array().unwrap() {
            let percent = p["shape"]["harness_percent"].as_f64().expect("harness %");
            let c = ceiling["phases"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["phase"] == p["name"])
                .unwrap();
            let rate = p["ops"].as_f64().unwrap() / (p["elapsed_ns"].as_f64().unwrap() / 1e9);
            let expected = 100.0 * rate / c["rate"].as_f64().unwrap();
            assert!(
                (percent - expected).abs() < 1e-6 * expected,
                "{percent} vs {expected}"
            );
        }
    }
    // tmpfs against tmpfs: the same work at about the same speed, far over 80% somewhere.
    let bound: Vec<&serde_json::Value> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "harness-bound")
        .collect();
    assert!(!bound.is_empty(), "no phase flagged: {}", doc["warnings"]);
    assert!(
        bound[0]["message"]
            .as_str()
            .unwrap()
            .contains("mostly fsbench's and the kernel's VFS cost")
    );
    // The database keeps it: `show` marks the rates and lists the ceiling.
    let id = doc["id"].as_i64().unwrap().to_string();
    let show = run(fsbench(state.path()).args(["--db", db.to_str().unwrap(), "show", &id]));
    let shown = text(&show.stdout);
    assert!(shown.contains("‼ harness-bound"), "{shown}");
    assert!(shown.contains("Harness ceiling"), "{shown}");
    // The second suite finds the ceiling in the cache: not measured again, the same figures.
    let again = suite();
    assert!(again.status.success());
    assert!(!text(&again.stderr).contains("measuring the harness ceiling"));
    assert_eq!(json(&again)["ceilings"][0], *ceiling);
    assert_nothing_left(images.path());
    assert_no_state_left(state.path());
}

#[test]
fn a_threaded_workloads_ceiling_is_measured_at_its_thread_count() {
    if !can_run("harness ceiling at N threads", &[]) {
        return;
    }
    let (state, images, data) = (tempdir(), tempdir(), tempdir());
    let db = data.path().join("results.db");
    let workload = format!("{TREE},threads=3");
    let out = tmpfs_suite(state.path(), &db, images.path(), &workload, "1");
    assert!(out.status.success(), "exit {:?}", out.status);
    let doc = json(&out);
    let ceiling = &doc["ceilings"][0];
    assert_eq!(ceiling["workload"], "tree:d12-f6-s1-l3,threads=3");
    assert_eq!(ceiling["threads"], 3);
    // Shown where the ceiling is shown, with its thread count.
    let id = doc["id"].as_i64().unwrap().to_string();
    let show = run(fsbench(state.path()).args(["--db", db.to_str().unwrap(), "show", &id]));
    let shown = text(&show.stdout);
    assert!(
        shown.contains("tree:d12-f6-s1-l3,threads=3 at 3 threads: dir-create"),
        "{shown}"
    );
    assert_nothing_left(images.path());
    assert_no_state_left(state.path());
}

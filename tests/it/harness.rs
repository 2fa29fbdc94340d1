//! The harness ceiling: each phase once on tmpfs before each round, and every measured
//! phase's share of its round's; a phase on tmpfs is harness-bound or outran it.

use std::path::Path;

use crate::common::*;

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
fn each_round_measures_its_own_ceiling_and_a_tmpfs_phase_is_harness_bound_or_outruns_it() {
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
    let stderr = text(&out.stderr);
    // Said once, though measured before each of the two rounds.
    assert_eq!(
        stderr.matches("measuring the harness ceiling").count(),
        1,
        "{stderr}"
    );
    let doc = json(&out);
    // The target is described as what it is: no image, loop device or disk.
    let target = doc["target"]["description"].as_str().unwrap();
    assert!(target.contains("fresh tmpfs mount per run"), "{target}");
    assert!(!target.contains("loop image"), "{target}");
    assert!(doc["target"]["device"].is_null());
    let ceilings = doc["ceilings"].as_array().unwrap();
    let rounds: Vec<i64> = ceilings
        .iter()
        .map(|c| c["round"].as_i64().unwrap())
        .collect();
    assert_eq!(rounds, [1, 2]);
    for ceiling in ceilings {
        assert_eq!(ceiling["workload"], "tree:d12-f6-s1-l3");
        let phases: Vec<&str> = (ceiling["phases"].as_array().unwrap().iter())
            .map(|p| p["phase"].as_str().unwrap())
            .collect();
        assert_eq!(
            phases,
            ["dir-create", "file-create", "file-remove", "dir-remove"]
        );
        let rates = ceiling["phases"].as_array().unwrap().iter();
        assert!(rates.map(|p| p["rate"].as_f64().unwrap()).all(|r| r > 0.0));
    }
    // Every phase of every run has its share of its own round's ceiling.
    for r in doc["runs"].as_array().unwrap() {
        let ceiling = &ceilings[r["run"].as_u64().unwrap() as usize - 1];
        for p in r["phases"].as_array().unwrap() {
            let percent = p["shape"]["harness_percent"].as_f64().expect("harness %");
            let c = (ceiling["phases"].as_array().unwrap().iter())
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
    // tmpfs against tmpfs: the same work at about the same speed, so over 80% somewhere;
    // a phase that outran its round's ceiling is said not comparable, never harness-bound.
    let warnings = doc["warnings"].as_array().unwrap();
    let of = |kind: &str| -> Vec<&serde_json::Value> {
        warnings.iter().filter(|w| w["kind"] == kind).collect()
    };
    let (bound, outrun) = (of("harness-bound"), of("ceiling-outrun"));
    assert!(!(bound.is_empty() && outrun.is_empty()), "{warnings:?}");
    assert!(outrun.len() <= 1, "said once: {outrun:?}");
    for w in &bound {
        let message = w["message"].as_str().unwrap();
        assert!(message.contains("mostly fsbench's and the kernel's VFS cost"));
        let named = format!("tmpfs {} {}", w["workload"].as_str().unwrap(), w["phase"]);
        assert!(
            !outrun
                .iter()
                .any(|o| o["message"].as_str().unwrap().contains(&named))
        );
    }
    // The database keeps it: `show` lists the ceiling, the median of the rounds'.
    let id = doc["id"].as_i64().unwrap().to_string();
    let show = run(fsbench(state.path()).args(["--db", db.to_str().unwrap(), "show", &id]));
    let shown = text(&show.stdout);
    assert!(shown.contains("Harness ceiling"), "{shown}");
    assert!(shown.contains("median of 2 rounds"), "{shown}");
    if !bound.is_empty() {
        assert!(shown.contains("‼ harness-bound"), "{shown}");
    }
    // Nothing is cached: the next suite measures its own.
    let again = suite();
    assert!(again.status.success());
    assert!(text(&again.stderr).contains("measuring the harness ceiling"));
    assert_all_undone(images.path(), state.path());
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
    assert_all_undone(images.path(), state.path());
}

#[test]
fn a_workload_with_a_setup_gets_its_ceiling() {
    if !can_run("harness ceiling of replay", &[]) {
        return;
    }
    let state = tempdir();
    let images = tempdir();
    let data = tempdir();
    let db = data.path().join("results.db");
    // The replay's trace is loaded in its setup: the ceiling pass must run it too.
    let out = tmpfs_suite(state.path(), &db, images.path(), "replay", "1");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("no harness ceiling"), "{stderr}");
    let doc = json(&out);
    let ceilings = doc["ceilings"].as_array().unwrap();
    assert_eq!(ceilings.len(), 1, "{ceilings:?}");
    assert_eq!(ceilings[0]["workload"], "replay:demo");
    let phases = ceilings[0]["phases"].as_array().unwrap();
    assert!(
        !phases.is_empty() && phases.iter().all(|p| p["rate"].as_f64().unwrap() > 0.0),
        "{phases:?}"
    );
}

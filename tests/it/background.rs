//! Background load as a configuration dimension: stress-ng for real, beside loop images;
//! its cost recorded, nothing of it left, and a load that dies failing its run alone.

use crate::common::*;

/// The runs of `doc` as (configuration label, status, background record).
fn runs(doc: &serde_json::Value) -> Vec<(String, String, serde_json::Value)> {
    (doc["runs"].as_array().expect("runs").iter())
        .map(|r| {
            (
                r["config"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
                r["testbed"]["background"].clone(),
            )
        })
        .collect()
}

/// No stress-ng process is left.
fn assert_no_load_left() {
    let left = std::process::Command::new("pgrep")
        .args(["-x", "stress-ng"])
        .output()
        .expect("pgrep");
    assert!(
        left.stdout.is_empty(),
        "left running: {}",
        text(&left.stdout)
    );
}

#[test]
fn each_configuration_runs_without_and_with_a_load_that_is_recorded_and_stopped() {
    if !can_run("background load", &["mkfs.ext4", "stress-ng", "pgrep"]) {
        return;
    }
    let _one = machine_wide();
    let (images, state) = (tempdir(), tempdir());
    let (out, doc) = image_run_json(
        images.path(),
        state.path(),
        &[
            "--fs",
            "ext4",
            "-w",
            "tree:dirs=10,files=4,size=1,levels=3",
            "--runs",
            "1",
            "--background",
            "none,cpu:1+io:1",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let runs = runs(&doc);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let (quiet, loaded) = (&runs[0], &runs[1]);
    assert_eq!(quiet.0, "ext4 bg=none");
    assert!(quiet.2.is_null(), "{quiet:?}");
    assert_eq!(loaded.0, "ext4 bg=cpu:1+io:1");
    let load = &loaded.2;
    assert!(
        load["command"]
            .as_str()
            .unwrap()
            .contains("--cpu 1 --hdd 1"),
        "{load}"
    );
    // The CPU worker spun for as long as the phases ran.
    let (cpu, secs) = (
        load["cpu_user_secs"].as_f64().unwrap(),
        load["secs"].as_f64().unwrap(),
    );
    assert!(cpu > 0.2 * secs && secs > 0.0, "{load}");
    assert_no_load_left();
    assert_nothing_left(images.path());
}

#[test]
fn a_load_that_dies_fails_its_run_and_not_the_suite() {
    if !can_run(
        "background load",
        &["mkfs.ext4", "stress-ng", "pkill", "pgrep"],
    ) {
        return;
    }
    let _one = machine_wide();
    let (images, state) = (tempdir(), tempdir());
    // The phase kills this fsbench's own load ($PPID is fsbench, the load its child).
    let (out, doc) = image_run_json(
        images.path(),
        state.path(),
        &[
            "--fs",
            "ext4:bg=cpu:1",
            "--fs",
            "ext4:label=quiet",
            "--command-phase",
            "kill=pkill -KILL -P $PPID -x stress-ng; sleep 0.3",
            "--runs",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("the background load stopped during the run (killed by signal 9)"),
        "{stderr}"
    );
    let runs = runs(&doc);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(
        (runs[0].0.as_str(), runs[0].1.as_str()),
        ("ext4 bg=cpu:1", "failed")
    );
    assert_eq!((runs[1].0.as_str(), runs[1].1.as_str()), ("quiet", "ok"));
    assert_no_load_left();
    assert_nothing_left(images.path());
}

#[test]
fn bad_loads_are_refused_before_anything_is_made() {
    fails_with(
        &["run", "--background", "gpu:1"],
        2,
        "the loads are cpu and io",
    );
    fails_with(&["run", "--fs", "ext4:bg=cpu:0"], 2, "1 to 1024 workers");
    let dir = tempdir();
    let dir = dir.path().to_str().unwrap();
    fails_with(
        &["run", "--dir", dir, "--background", "io:1"],
        2,
        "io load needs a filesystem",
    );
}

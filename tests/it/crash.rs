//! Crash states for real: ext4 on loop images behind the recorder, a tree that fsyncs, the
//! states rebuilt from the log and checked with e2fsck and a recovery mount.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::*;

/// The configurations' crash checks from a suite's JSON document, by label.
fn checks(doc: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    doc["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["label"].as_str().unwrap().to_string(),
                c["crash"][0].clone(),
            )
        })
        .collect()
}

/// With barriers ext4 keeps every fsync'ed file in every state; without, states lose some.
/// The kept recording's whole log replayed is the run's final image, byte for byte, and a
/// state's image can be written for a person.
#[test]
fn barriers_keep_promises_and_nobarrier_loses_them() {
    if !can_run("crash states on ext4", &["mkfs.ext4", "e2fsck"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let keep = dir.path().join("kept");
    let (out, doc) = image_run_json(
        dir.path(),
        state.path(),
        &[
            "--runs",
            "1",
            "--fs",
            "ext4:crash=40",
            "--fs",
            "ext4:mount=nobarrier:crash=40",
            "-w",
            "tree:dirs=2,files=5,levels=2,fsync",
            "--crash-keep",
            keep.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let checks = checks(&doc);
    let (label, barrier) = &checks[0];
    assert_eq!(label, "ext4");
    assert_eq!(barrier["states"], 40, "{barrier}");
    assert!(barrier["promises"].as_u64().unwrap() >= 35, "{barrier}");
    assert_eq!(
        barrier["lost"], 0,
        "ext4 with barriers lost data: {barrier}"
    );
    assert_eq!(barrier["unmountable"], 0, "{barrier}");
    assert_eq!(barrier["inconsistent"], 0, "{barrier}");
    let (_, nobarrier) = &checks[1];
    assert_eq!(nobarrier["states"], 40, "{nobarrier}");
    assert!(
        nobarrier["lost"].as_u64().unwrap() > 0,
        "nobarrier lost nothing in 40 reordered states: {nobarrier}"
    );
    assert!(!nobarrier["lost_files"].as_array().unwrap().is_empty());
    assert!(text(&out.stderr).contains("lost promised data"));

    let kept = Path::new(barrier["kept"].as_str().unwrap());
    let replayed = dir.path().join("replayed.img");
    let shown = run(fsbench(state.path())
        .args(["crash", "show"])
        .arg(kept)
        .args(["end", "-o"])
        .arg(&replayed));
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let final_image = std::fs::read(kept.join("final.img")).unwrap();
    assert!(
        std::fs::read(&replayed).unwrap() == final_image,
        "the whole log replayed is not the final image"
    );
    let one = dir.path().join("state7.img");
    let shown = run(fsbench(state.path())
        .args(["crash", "show"])
        .arg(kept)
        .args(["7", "-o"])
        .arg(&one));
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    assert!(text(&shown.stdout).contains("crash at log position"));
    let fsck = run(std::process::Command::new("e2fsck").args(["-n"]).arg(&one));
    assert!(
        fsck.status.code().is_some(),
        "e2fsck did not run on the state's image"
    );
    std::fs::remove_dir_all(&keep).unwrap();
    std::fs::remove_file(&one).unwrap();
    std::fs::remove_file(&replayed).unwrap();
    assert_all_undone(dir.path(), state.path());
}

#[test]
fn crash_states_need_loop_images() {
    let dir = tempdir();
    let path = dir.path().to_str().unwrap();
    let args = [
        "run",
        "--dir",
        path,
        "--crash-states",
        "5",
        "-w",
        "tree:quick",
    ];
    fails_with(&args, 2, "needs loop images");
    fails_with(
        &["run", "--fs", "ext4:crash=0"],
        2,
        "crash=0 checks nothing",
    );
    fails_with(&["run", "--fs", "tmpfs:crash=3"], 2, "not tmpfs");
}

/// The recorder's pid, once a run below `dir` has started one.
fn recorder_below(dir: &Path) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline);
        (cmdline.contains("crash-recorder") && cmdline.contains(dir.to_str()?)).then_some(pid)
    })
}

/// SIGKILL while the recorded run runs: the recorder, its FUSE mount, the filesystem and
/// the loop device stay; `clean` undoes them all.
#[test]
fn clean_undoes_a_killed_recording() {
    if !can_run("clean after a killed recording", &["mkfs.ext4", "e2fsck"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let mut child = fsbench(state.path())
        .args(["run", "-q", "--runs", "1", "--fs", "ext4:crash=5"])
        .args(["-w", "tree:dirs=3,files=40,levels=3,fsync", "--image-dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    let daemon = loop {
        if let Some(pid) = recorder_below(dir.path()) {
            break pid;
        }
        assert!(
            Instant::now() < deadline,
            "the run never started its recorder"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Into the recorded run's workload.
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    wait_drained_within(child, Duration::from_secs(60));
    assert!(
        Path::new(&format!("/proc/{daemon}")).exists(),
        "the recorder should outlive a SIGKILLed suite"
    );
    assert!(!mounts_below(dir.path()).is_empty());
    let out = run(fsbench(state.path()).arg("clean"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("stopped crash recorder"), "{said}");
    assert!(
        recorder_below(dir.path()).is_none(),
        "recorder left running"
    );
    assert_all_undone(dir.path(), state.path());
}

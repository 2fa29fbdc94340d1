//! `fsbench clean` finishes what a SIGKILLed fsbench started: what its commands left running
//! (killed through their cgroup), the FUSE daemon serving its filesystem, then its mounts,
//! loop devices and files; for a run and for `fsbench capture` alike.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::*;

/// Starts `fsbench run` on a loop image of `fs` whose one command phase leaves a process
/// running in the mount point (keeping it busy), and waits until it has: returns the run and
/// that process's pid.
fn start_busy_phase(
    images: &Path,
    state: &Path,
    pids: &Path,
    fs: &str,
    cgroup: &Isolated,
) -> (Child, i32) {
    let phase = format!(
        "busy=sleep 1000 & echo $! > {}; wait",
        pids.join("grandchild").display()
    );
    let mut command = fsbench(state);
    command
        .args(["run", "-q", "--fs", fs, "--runs", "1", "--image-dir"])
        .arg(images)
        .args(["--command-space", "16M", "--command-phase", &phase])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cgroup.enter(&mut command);
    let child = command.spawn().unwrap();
    let grandchild = pid_written(&pids.join("grandchild"));
    (child, grandchild)
}

fn clean_after_a_killed_command_phase(fs: &str) {
    let Some(cgroup) = Isolated::new() else {
        assert!(std::env::var_os("CI").is_none(), "no cgroup v2 to run in");
        return skip("clean after a killed command phase: no cgroup v2 to run fsbench in");
    };
    let (images, state, pids) = (tempdir(), tempdir(), tempdir());
    let (mut child, grandchild) =
        start_busy_phase(images.path(), state.path(), pids.path(), fs, &cgroup);
    child.kill().unwrap();
    wait_drained_within(child, Duration::from_secs(60));
    assert!(grandchild > 0, "the phase never started");
    assert!(
        !gone(grandchild),
        "the phase's grandchild should outlive fsbench"
    );
    assert!(!mounts_below(images.path()).is_empty());
    let out = run(fsbench(state.path()).arg("clean"));
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(
        gone(grandchild),
        "clean left the grandchild running: {said}"
    );
    // ntfs-3g unmounts its filesystem itself when it is stopped.
    let unmounted = match fs {
        "ntfs" => "stopped FUSE daemon",
        _ => "unmounted",
    };
    for want in [
        "killed 1 process(es) left in cgroup",
        unmounted,
        "detached",
        "removed",
    ] {
        assert!(said.contains(want), "{want} missing from: {said}");
    }
    assert_all_undone(images.path(), state.path());
}

#[test]
fn clean_finishes_a_killed_command_phase_whose_grandchild_keeps_ext4_busy() {
    if !can_run("clean after a killed command phase (ext4)", &["mkfs.ext4"]) {
        return;
    }
    clean_after_a_killed_command_phase("ext4");
}

#[test]
fn clean_finishes_a_killed_command_phase_whose_grandchild_keeps_ntfs_busy() {
    if !can_run(
        "clean after a killed command phase (ntfs)",
        &["mkntfs", "ntfs-3g"],
    ) {
        return;
    }
    clean_after_a_killed_command_phase("ntfs");
}

/// A SIGKILLed capture leaves strace's raw text (the trace is made from it once the command
/// ends) and the command's cgroup: `clean` removes both (killing what still runs in the
/// cgroup), saying what the scratch directory held; the trace itself was never written.
#[test]
fn clean_removes_what_a_killed_capture_left() {
    if !can_run("clean after a killed capture", &["strace"]) {
        return;
    }
    let (root, out, state, pids) = (tempdir(), tempdir(), tempdir(), tempdir());
    let trace = out.path().join("trace.zst");
    let pid_file = pids.path().join("command");
    let script = format!(
        "echo $$ > {}; touch made; exec sleep 1000",
        pid_file.display()
    );
    let isolated = Isolated::new();
    let mut capture = fsbench(state.path());
    capture
        .current_dir(root.path())
        .args(["capture", "-o"])
        .arg(&trace)
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cgroup) = &isolated {
        cgroup.enter(&mut capture);
    }
    let child = capture.spawn().unwrap();
    let command = pid_written(&pid_file);
    let cgroup = (command > 0).then(|| cgroup_of(command)).flatten();
    let left: Vec<_> = std::fs::read_dir(out.path()).unwrap().flatten().collect();
    let mut child = child;
    child.kill().unwrap();
    wait_drained_within(child, Duration::from_secs(60));
    assert!(command > 0, "the command never started");
    assert_eq!(
        left.len(),
        1,
        "one scratch directory beside the trace: {left:?}"
    );
    let scratch = left[0].path();
    // What the tracer recorded: strace's text, or the bpf tracer's records.
    assert!(
        scratch.join("strace.txt").exists() || scratch.join("bpf.records").exists(),
        "{scratch:?} holds nothing the tracer recorded"
    );
    assert!(!trace.exists(), "a killed capture wrote its trace");
    let cgroup = cgroup.filter(|c| {
        c.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("fsbench-"))
    });
    let cleaned = run(fsbench(state.path()).arg("clean"));
    let said = text(&cleaned.stdout);
    assert!(cleaned.status.success(), "{said}{}", text(&cleaned.stderr));
    assert!(
        gone(command),
        "clean left the captured command running: {said}"
    );
    assert!(
        said.contains(&format!("removed {}", scratch.display())) && said.contains("partial trace"),
        "{said}"
    );
    match cgroup {
        Some(cgroup) => {
            // strace's tracees die with it (it kills them on exit); the cgroup is left.
            assert!(!cgroup.exists(), "{} is left: {said}", cgroup.display());
            assert!(
                said.contains(&format!("cgroup {}", cgroup.display())),
                "{said}"
            );
        }
        None => skip("clean after a killed capture: no cgroup v2 here to put commands in"),
    }
    assert_empty(out.path());
    assert_no_state_left(state.path());
}

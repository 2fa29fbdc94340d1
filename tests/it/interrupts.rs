//! Cleanup on interruption, on real loop devices: a killed run (`fsbench clean`), Ctrl-C,
//! SIGHUP, a panic, a full disk, Ctrl-C while mount runs, and `clean` beside a run in another
//! PID namespace.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

const TINY: &str = "tree:dirs=3,files=2,size=1,levels=3";

/// Starts a long run and waits until its filesystem is mounted below `dir` (its loop device's:
/// the harness ceiling's tmpfs comes first, with no loop device). Its output is piped: wait
/// for it with `wait_drained_within`.
fn start_long_run(dir: &Path, state: &Path, fs: &str) -> std::process::Child {
    let mut child = fsbench(state)
        .args([
            "run",
            "-q",
            "--fs",
            fs,
            "-w",
            "tree:small-deep",
            "--runs",
            "1",
            "--image-dir",
        ])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The suite measures its harness ceiling on tmpfs before its round (tree:small-deep
    // takes a while on a loaded machine): the test's own time limit.
    wait_running_until(&mut child, "mounting its filesystem", || {
        !mounts_below(dir).is_empty() && !loops_below(dir).is_empty()
    });
    // Let the workload get going.
    std::thread::sleep(Duration::from_millis(300));
    child
}

#[test]
fn clean_undoes_a_killed_run() {
    if !can_run("clean after SIGKILL", &["mkfs.ext4"]) {
        return;
    }
    killed_run_is_cleaned("ext4");
}

/// btrfs's mounts show an anonymous device number in mountinfo: `clean` knows its own mount
/// by the mount's source.
#[test]
fn clean_undoes_a_killed_btrfs_run() {
    if !can_run("clean_undoes_a_killed_btrfs_run", &["mkfs.btrfs"]) {
        return;
    }
    killed_run_is_cleaned("btrfs");
}

/// A killed run's FUSE mount: `clean` stops its daemon (which unmounts it and lets go of the
/// loop device) and detaches the device.
#[test]
fn clean_undoes_a_killed_ntfs_run() {
    if !can_run("clean after SIGKILL on ntfs", &["mkntfs", "ntfs-3g"]) {
        return;
    }
    killed_run_is_cleaned("ntfs");
}

fn killed_run_is_cleaned(fs: &str) {
    let dir = tempdir();
    let state = tempdir();
    let mut child = start_long_run(dir.path(), state.path(), fs);
    child.kill().unwrap();
    wait_drained_within(child, Duration::from_secs(60));
    assert!(
        !mounts_below(dir.path()).is_empty(),
        "SIGKILL cannot clean up; the mount must still be there"
    );
    assert!(!loops_below(dir.path()).is_empty());
    let out = run(fsbench(state.path()).arg("clean"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    // ntfs-3g unmounts its filesystem itself when `clean` stops it.
    let unmounted = match fs {
        "ntfs" => "stopped FUSE daemon",
        _ => "unmounted",
    };
    assert!(
        said.contains(unmounted) && said.contains("detached") && said.contains("removed"),
        "{said}"
    );
    assert_all_undone(dir.path(), state.path());
    // Nothing left to do the second time.
    let again = run(fsbench(state.path()).arg("clean"));
    assert!(again.status.success());
    assert!(text(&again.stdout).is_empty());
}

#[test]
fn ctrl_c_unmounts_and_detaches() {
    if !can_run("Ctrl-C cleanup", &["mkfs.ext4"]) {
        return;
    }
    signal_cleans_up("ext4", rustix::process::Signal::INT);
}

#[test]
fn ctrl_c_unmounts_ntfs_and_waits_for_its_daemon() {
    if !can_run("Ctrl-C cleanup on ntfs", &["mkntfs", "ntfs-3g"]) {
        return;
    }
    signal_cleans_up("ntfs", rustix::process::Signal::INT);
}

/// zfs's daemon runs in a process group of its own, so Ctrl-C reaches fsbench, which destroys
/// the pool and stops the daemon; a SIGKILLed run's daemon and pool are `clean`'s; a daemon
/// that dies mid-run fails that run (the suite goes on) and leaves no mount. One test, one case after the other:
/// zfs-fuse has one control socket per machine.
#[test]
fn ctrl_c_sigkill_and_a_dying_daemon_on_zfs() {
    let Some(_machine) = can_run_zfs("Ctrl-C, SIGKILL and a dying daemon on zfs") else {
        return;
    };
    let (dir, state) = (tempdir(), tempdir());
    let child = start_long_run(dir.path(), state.path(), "zfs");
    let daemon = zfs_daemons();
    assert_eq!(daemon.len(), 1, "{daemon:?}");
    let pid = rustix::process::Pid::from_raw(daemon[0] as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let out = wait_drained_within(child, Duration::from_secs(120));
    // The run failed, saying why; the suite went on to its end.
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the zfs-fuse daemon of pool") && err.contains("died during the run"),
        "{err}"
    );
    assert!(
        text(&out.stdout).contains("suite completed"),
        "{}",
        text(&out.stdout)
    );
    assert_all_undone(dir.path(), state.path());

    signal_cleans_up("zfs", rustix::process::Signal::INT);
    assert_no_zfs_daemon();
    let (dir, state) = (tempdir(), tempdir());
    let mut child = start_long_run(dir.path(), state.path(), "zfs");
    child.kill().unwrap();
    wait_drained_within(child, Duration::from_secs(60));
    assert_eq!(zfs_daemons().len(), 1, "the killed run's daemon goes on");
    let out = run(fsbench(state.path()).arg("clean"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    for want in [
        "destroyed zfs pool",
        "stopped zfs-fuse",
        "detached",
        "removed",
    ] {
        assert!(said.contains(want), "{want} missing from: {said}");
    }
    assert_all_undone(dir.path(), state.path());
    assert_no_zfs_daemon();
}

#[test]
fn a_second_signal_says_what_it_leaves_for_clean() {
    if !can_run(
        "a_second_signal_says_what_it_leaves_for_clean",
        &["mkfs.ext4"],
    ) {
        return;
    }
    let (dir, state) = (tempdir(), tempdir());
    let child = start_long_run(dir.path(), state.path(), "ext4");
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    // The second only once the first is taken (two pending SIGINTs would be one), while the
    // first's cleanup runs.
    let pending = format!("/proc/{}/status", child.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&pending)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("ShdPnd:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGINT - 1)) != 0)
    {
        assert!(
            Instant::now() < deadline,
            "the first SIGINT was never taken"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = wait_drained_within(child, Duration::from_secs(120));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let scratch = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("fsbench."))
        })
        .expect("a second signal exits before the scratch directory is removed");
    assert!(
        err.contains("second signal")
            && err.contains(&format!("leaving {}", scratch.display()))
            && err.contains(&state.path().display().to_string())
            && err.contains("`fsbench clean` removes them"),
        "{err}"
    );
    let cleaned = run(fsbench(state.path()).arg("clean"));
    assert!(cleaned.status.success(), "{}", text(&cleaned.stderr));
    assert_all_undone(dir.path(), state.path());
}

#[test]
fn disk_full_is_a_clear_error_and_keeps_completed_runs() {
    if !can_run("disk full", &["mkfs.ext4"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    // 64 inodes (mke2fs rounds up a little) cannot hold this tree's 1,110 files.
    let (out, doc) = image_run_json(
        dir.path(),
        state.path(),
        &[
            "--fs",
            "ext4",
            "--fs",
            "ext4:mkfs=-N 64:label=few-inodes",
            "-w",
            "tree:dirs=10,files=10,size=1,levels=2",
            "--runs",
            "2",
        ],
    );
    assert_eq!(out.status.code(), Some(5));
    assert!(text(&out.stderr).contains("filesystem full (ENOSPC)"));
    assert!(text(&out.stderr).contains("--image-size"));
    assert_eq!(doc["status"], "failed");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["status"], "ok");
    assert_eq!(runs[1]["status"], "failed");
    assert!(runs[1]["error"].as_str().unwrap().contains("ENOSPC"));
    assert_nothing_left(dir.path());
}

#[test]
fn a_panic_unmounts_and_detaches() {
    if !can_run("panic cleanup", &["mkfs.ext4"]) {
        return;
    }
    use fsbench_model::config::FsConfig;
    use fsbench_model::filesystem::FsType;
    use fsbench_model::testbed::TargetSpec;
    use fsbench_testbed::drivers::FsTypeExt;
    use fsbench_testbed::testbed::Target;
    use fsbench_workloads::SpaceNeed;
    let dir = tempdir();
    let path = dir.path().to_path_buf();
    let result = std::panic::catch_unwind(move || {
        let spec = TargetSpec::Image {
            dir: path.clone(),
            size: Some(256 << 20),
            loop_cache: false,
        };
        let mut target = Target::open(&spec, SpaceNeed::default(), &[FsType::Ext4]).unwrap();
        let config = FsConfig::new(FsType::Ext4, Vec::new(), String::new(), None);
        let tools = FsType::Ext4.driver().toolset().unwrap();
        let fresh = target.fresh(&config, &tools).unwrap();
        assert_eq!(mounts_below(&path).len(), 1);
        std::fs::write(fresh.path().join("file"), b"data").unwrap();
        panic!("injected panic while mounted");
    });
    assert!(result.is_err());
    assert_nothing_left(dir.path());
}

#[test]
fn sighup_unmounts_and_detaches() {
    if !can_run("sighup_unmounts_and_detaches", &["mkfs.ext4"]) {
        return;
    }
    signal_cleans_up("ext4", rustix::process::Signal::HUP);
}

/// A long run on a loop mount gets `signal`: it exits 130 with nothing mounted, attached or
/// left in its state directory.
fn signal_cleans_up(fs: &str, signal: rustix::process::Signal) {
    let (dir, state) = (tempdir(), tempdir());
    let child = start_long_run(dir.path(), state.path(), fs);
    rustix::process::kill_process(rustix::process::Pid::from_child(&child), signal).unwrap();
    let out = wait_drained_within(child, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(130));
    assert_all_undone(dir.path(), state.path());
}

#[test]
fn ctrl_c_while_mount_runs_is_an_interruption() {
    if !can_run(
        "ctrl_c_while_mount_runs_is_an_interruption",
        &["mkfs.ext4", "mount"],
    ) {
        return;
    }
    let (dir, state, bin) = (tempdir(), tempdir(), tempdir());
    // A `mount` that is slow to start, so Ctrl-C reaches the process group while it runs.
    let marker = bin.path().join("mount-started");
    let real = fsbench_measure::tools::find("mount").unwrap();
    let wrapper = bin.path().join("mount");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ntouch '{}'\nsleep 5\nexec '{}' \"$@\"\n",
            marker.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = fsbench(state.path())
        .env("PATH", path)
        .args([
            "run",
            "-q",
            "--fs",
            "ext4",
            "-w",
            TINY,
            "--runs",
            "1",
            "--image-dir",
        ])
        .arg(dir.path())
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_running_until(&mut child, "starting mount", || marker.exists());
    let group = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process_group(group, rustix::process::Signal::INT).unwrap();
    let out = wait_drained_within(child, Duration::from_secs(120));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(!err.contains("killed by a signal"), "{err}");
    assert_all_undone(dir.path(), state.path());
}

#[test]
fn clean_leaves_a_run_in_another_pid_namespace_alone() {
    if !can_run(
        "clean_leaves_a_run_in_another_pid_namespace_alone",
        &["mkfs.ext4", "unshare"],
    ) {
        return;
    }
    let (dir, state) = (tempdir(), tempdir());
    // fsbench is pid 1 in its namespace; from here, pid 1 is init, with another start time.
    let mut child = Command::new("unshare")
        .args(["--pid", "--fork", env!("CARGO_BIN_EXE_fsbench")])
        .args([
            "run",
            "-q",
            "--fs",
            "ext4",
            "-w",
            "tree:small-deep",
            "--runs",
            "1",
            "--image-dir",
        ])
        .arg(dir.path())
        .env("FSBENCH_STATE_DIR", state.path())
        .env("XDG_DATA_HOME", test_data_home())
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // After the harness ceiling's run on tmpfs (see start_long_run).
    wait_running_until(&mut child, "mounting its filesystem", || {
        !mounts_below(dir.path()).is_empty() && !loops_below(dir.path()).is_empty()
    });
    let cleaned = run(fsbench(state.path()).arg("clean"));
    let said = text(&cleaned.stdout);
    let still_mounted = !mounts_below(dir.path()).is_empty();
    let group = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process_group(group, rustix::process::Signal::INT).unwrap();
    let out = wait_drained_within(child, Duration::from_secs(120));
    assert!(
        said.contains("alone") && !said.contains("detached"),
        "{said}"
    );
    assert!(still_mounted, "clean undid a live run");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert_nothing_left(dir.path());
}

/// A `--dir` target has no image to enlarge: the advice on a full filesystem says so.
#[test]
fn disk_full_on_a_dir_target_does_not_suggest_image_size() {
    if !can_run("disk full on --dir", &["mount"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let mount = |args: &[&str]| {
        status(
            std::process::Command::new("mount")
                .args(args)
                .arg(dir.path()),
        )
        .success()
    };
    // 8 MiB of zeros gzipped into a few KiB: fsbench's space estimate (from the archive's
    // size) lets it start, and the extraction fills the 4 MiB tmpfs for real.
    let work = tempdir();
    std::fs::write(work.path().join("zeros"), vec![0u8; 8 << 20]).unwrap();
    let archive = work.path().join("zeros.tar.gz");
    assert!(
        status(
            std::process::Command::new("tar")
                .arg("-czf")
                .arg(&archive)
                .arg("-C")
                .arg(work.path())
                .arg("zeros")
        )
        .success()
    );
    assert!(mount(&["-t", "tmpfs", "-o", "size=4m", "tmpfs"]));
    let out = run(json_run(state.path())
        .arg("--dir")
        .arg(dir.path())
        .arg("--archive")
        .arg(&archive)
        .args(["--runs", "1"]));
    assert!(status(std::process::Command::new("umount").arg(dir.path())).success());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("filesystem full") && err.contains("--dir"),
        "{err}"
    );
    assert!(!err.contains("--image-size"), "{err}");
    assert!(
        !err.contains("use a larger target"),
        "every line gives the --dir advice: {err}"
    );
}

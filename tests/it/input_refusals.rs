//! Smaller refusals that say the right thing: a job file including a file that is no job file
//! quotes nothing of it, a results database path that is no regular file is refused (nothing
//! made beside it), and a second concurrent zfs run is told which run holds the daemon.

use std::process::Stdio;
use std::time::Duration;

use crate::common::*;

#[test]
fn a_job_file_including_a_secret_quotes_nothing_of_it() {
    let files = tempdir();
    let secret = files.path().join("shadow");
    std::fs::write(
        &secret,
        "root:$6$s3cr3tSalt$s3cr3tHash:19000:0:99999:7:::\n",
    )
    .unwrap();
    let mut included = vec![secret.clone()];
    // The real one too, where the tests may read it.
    let shadow = std::path::PathBuf::from("/etc/shadow");
    let first_line = std::fs::read_to_string(&shadow)
        .ok()
        .and_then(|t| t.lines().next().map(str::to_string))
        .filter(|l| !l.trim().is_empty());
    if first_line.is_some() {
        included.push(shadow);
    }
    for file in included {
        let jobfile = files.path().join("jobs.fio");
        std::fs::write(
            &jobfile,
            format!("[a]\nsize=1m\ninclude {}\n", file.display()),
        )
        .unwrap();
        let state = tempdir();
        let out = run(fsbench(state.path())
            .args(["fio"])
            .arg(&jobfile)
            .args(["--dir", "/nonexistent"]));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("{}:1: not a job file's line", file.display())),
            "{err}"
        );
        assert!(!err.contains("s3cr3t"), "{err}");
        if let Some(line) = first_line.as_deref().filter(|_| file.starts_with("/etc")) {
            assert!(!err.contains(line), "{err}");
        }
    }
}

#[test]
fn a_results_database_that_is_no_regular_file_is_refused() {
    let (state, dir) = (tempdir(), tempdir());
    for db in ["/dev/null", dir.path().to_str().unwrap()] {
        let out = run(fsbench(state.path()).args(["--db", db, "list"]));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{db}: {err}");
        assert!(err.contains("not a regular file"), "{db}: {err}");
    }
    assert!(!std::path::Path::new("/dev/null-journal").exists());
    assert_empty(dir.path());
}

#[test]
fn a_second_zfs_run_is_told_which_run_holds_the_daemon() {
    let Some(_machine) = can_run_zfs("a second concurrent zfs run") else {
        return;
    };
    let (images, state) = (tempdir(), tempdir());
    let mut first = fsbench(state.path())
        .args([
            "run",
            "-q",
            "--fs",
            "zfs",
            "-w",
            "tree:small-deep",
            "--runs",
            "1",
        ])
        .arg("--image-dir")
        .arg(images.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_running_until(
        &mut first,
        "starting its zfs-fuse daemon and mounting",
        || !zfs_daemons().is_empty() && !mounts_below(images.path()).is_empty(),
    );
    let (other_images, other_state) = (tempdir(), tempdir());
    let second = run(fsbench(other_state.path())
        .args([
            "run",
            "-q",
            "--fs",
            "zfs",
            "-w",
            "tree:quick",
            "--runs",
            "1",
        ])
        .arg("--image-dir")
        .arg(other_images.path()));
    let first_pid = first.id();
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&first),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let out = wait_drained_within(first, Duration::from_secs(120));
    let err = text(&second.stderr);
    assert_eq!(second.status.code(), Some(3), "{err}");
    assert!(
        err.contains("another fsbench run (pid")
            && err.contains(&first_pid.to_string())
            && !err.contains("did not start"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert_nothing_left(images.path());
    assert_nothing_left(other_images.path());
    assert_no_zfs_daemon();
}

//! fio's exec engine through `fsbench fio`: a job that runs a program for its time beside
//! the jobs doing I/O, stopped as fio stops it (SIGTERM, then SIGKILL after `grace_time`),
//! its output in the run's directory, and never outliving fsbench.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

/// A shell script `name` in `dir` that writes its pid (and its background child's, if
/// `body` makes one) into `dir` and runs `body`.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    let text = format!(
        "#!/bin/sh\necho $$ > {}/{name}.pid\n{body}\n",
        dir.display()
    );
    std::fs::write(&path, text).unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&path, mode).unwrap();
    path.display().to_string()
}

/// The notes of a one-run export's timed phase, as one text.
fn notes(out: &std::process::Output) -> String {
    json(out)["runs"][0]["phases"][1]["notes"].to_string()
}

/// Waits up to `within` for process `pid` to be gone.
fn gone_within(pid: i32, within: Duration) -> bool {
    let until = Instant::now() + within;
    while !gone(pid) {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The program runs with `%n` and `%r` expanded, in the run's directory, its output in
/// `NAME.stdout` and `NAME.stderr` there, beside a job doing I/O, and is stopped by SIGTERM
/// once the job's second is up; the note says what ran and how it ended.
#[test]
fn the_program_runs_for_the_job_s_time_and_is_stopped() {
    let (dir, state, proof) = (tmpfs_tempdir(), tempdir(), tempdir());
    let p = proof.path().display();
    let program = script(
        proof.path(),
        "mon",
        &format!(
            "echo \"args: $*\"\necho oops >&2\npwd > {p}/cwd\nsleep 0.2\n\
             cp \"$1.stdout\" \"$1.stderr\" {p}/\nexec sleep 100"
        ),
    );
    let job = format!(
        "[mon]\nioengine=exec\nprogram={program}\nruntime=1\n\
         arguments=%n  %r\n[io]\nrw=read\nsize=1m\n"
    );
    let started = Instant::now();
    let out = fio_job_json(state.path(), dir.path(), &job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(60));
    let read = |f: &str| std::fs::read_to_string(proof.path().join(f)).unwrap_or_default();
    assert_eq!(read("mon.stdout"), "args: mon 1\n");
    assert_eq!(read("mon.stderr"), "oops\n");
    let cwd = read("cwd");
    assert!(cwd.starts_with(&dir.path().display().to_string()), "{cwd}");
    assert!(gone(pid_written(&proof.path().join("mon.pid"))));
    let notes = notes(&out);
    assert!(
        notes.contains(&format!("ran `{program} mon 1`"))
            && notes.contains("was stopped by SIGTERM at the end of the job's time"),
        "{notes}"
    );
    let doc = json(&out);
    assert_eq!(
        doc["runs"][0]["phases"][1]["ops"], 256,
        "the I/O job's reads alone"
    );
    assert_nothing_left(dir.path());
}

/// A program that ignores SIGTERM (and the child it started) is killed `grace_time` after
/// it, the whole process group.
#[test]
fn a_program_ignoring_sigterm_is_killed_after_its_grace_time() {
    let (dir, state, proof) = (tmpfs_tempdir(), tempdir(), tempdir());
    let p = proof.path().display();
    let program = script(
        proof.path(),
        "stubborn",
        &format!("trap '' TERM\nsleep 100 &\necho $! > {p}/child.pid\nwait"),
    );
    let job =
        format!("[stubborn]\nioengine=exec\nprogram={program}\nruntime=500ms\ngrace_time=2\n");
    let started = Instant::now();
    let out = fio_job_json(state.path(), dir.path(), &job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        started.elapsed() >= Duration::from_millis(2500),
        "the grace time passed"
    );
    let notes = notes(&out);
    assert!(
        notes.contains("was killed by SIGKILL 2 s after SIGTERM at the end of the job's time"),
        "{notes}"
    );
    for pid in ["stubborn.pid", "child.pid"] {
        assert!(gone(pid_written(&proof.path().join(pid))), "{pid}");
    }
    assert_nothing_left(dir.path());
}

/// A program that cannot be run is refused before anything runs, naming it and its line;
/// one that fails does not fail the run (fio's err=0), and its status is told; with
/// `std_redirect=0` its output goes to fsbench's stderr, never into its data.
#[test]
fn a_program_that_cannot_run_is_refused_and_one_that_fails_is_told() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let plain = state.path().join("plain");
    std::fs::write(&plain, "not a program").unwrap();
    for (program, needle) in [
        (
            "/nonexistent/prog".to_string(),
            "`/nonexistent/prog` cannot be run: No such file",
        ),
        (
            "no-such-program-anywhere".into(),
            "cannot be run: not found on PATH",
        ),
        (
            plain.display().to_string(),
            "cannot be run: not an executable file",
        ),
    ] {
        let job = format!("[x]\nioengine=exec\nprogram={program}\nruntime=1\n");
        let out = fio_job_json(state.path(), dir.path(), &job);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{program}: {err}");
        assert!(
            err.contains("job.fio:3: ") && err.contains(needle),
            "{program}: {err}"
        );
    }
    assert_empty(dir.path());
    let job = "[f]\nioengine=exec\nprogram=false\nruntime=300ms\n\
               [e]\nioengine=exec\nprogram=echo\narguments=said by %n\nstd_redirect=0\nruntime=300ms\n";
    let out = fio_job_json(state.path(), dir.path(), job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let notes = notes(&out);
    assert!(
        notes.contains("exited with status 1 before the job's time was up"),
        "{notes}"
    );
    assert!(text(&out.stderr).contains("said by e\n"));
    assert_nothing_left(dir.path());
}

/// fsbench stopped by SIGTERM while the program runs: the program and what it started do
/// not outlive it. Killed by SIGKILL: the program dies with it (its parent-death signal),
/// and what the program started, left in its cgroup, `fsbench clean` kills.
#[test]
fn killing_fsbench_leaves_no_program_running() {
    for signal in [rustix::process::Signal::TERM, rustix::process::Signal::KILL] {
        let (dir, state, proof) = (tmpfs_tempdir(), tempdir(), tempdir());
        let p = proof.path().display();
        let program = script(
            proof.path(),
            "long",
            &format!("sleep 300 &\necho $! > {p}/child.pid\nwait"),
        );
        let jobfile = proof.path().join("job.fio");
        let job = format!("[long]\nioengine=exec\nprogram={program}\nruntime=300\n");
        std::fs::write(&jobfile, job).unwrap();
        let child = fsbench(state.path())
            .args(["fio", "-q", "--runs", "1", "--dir"])
            .arg(dir.path())
            .arg(&jobfile)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pids = [
            pid_written(&proof.path().join("long.pid")),
            pid_written(&proof.path().join("child.pid")),
        ];
        assert!(pids.iter().all(|p| *p > 0), "the program started");
        let pid = rustix::process::Pid::from_child(&child);
        rustix::process::kill_process(pid, signal).unwrap();
        let out = wait_drained_within(child, Duration::from_secs(60));
        assert!(!out.status.success(), "{signal:?}");
        assert!(
            gone_within(pids[0], Duration::from_secs(10)),
            "{signal:?}: the program runs on"
        );
        if signal == rustix::process::Signal::KILL {
            let cleaned = run(fsbench(state.path()).arg("clean"));
            assert!(cleaned.status.success(), "{}", text(&cleaned.stderr));
            let said = text(&cleaned.stdout) + &text(&cleaned.stderr);
            assert!(said.contains("left in cgroup"), "{said}");
        }
        assert!(
            gone_within(pids[1], Duration::from_secs(10)),
            "{signal:?}: its child runs on"
        );
        assert_no_state_left(state.path());
    }
}

//! Parallel workers as processes (the default) and as threads: every worker's figures arrive,
//! the mode is recorded, a worker that dies fails the run naming it, and no worker outlives a
//! failed, interrupted or killed fsbench.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

/// The worker processes of fsbench pid `pid` (they name themselves `fsbw.<pid>`).
fn workers_of(pid: u32) -> Vec<i32> {
    let name = format!("fsbw.{pid}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim_end() == name)
                && !gone(*p)
        })
        .collect()
}

/// Waits until fsbench `child` has `n` workers running; their pids. Fails at once, with what
/// it wrote, if it ended first.
pub(crate) fn wait_for_workers(child: &mut std::process::Child, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + limit();
    loop {
        let found = workers_of(child.id());
        if found.len() == n {
            return found;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
            panic!("fsbench ended ({status}) before it had {n} workers: {err}");
        }
        assert!(Instant::now() < deadline, "fsbench never had {n} workers");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A run whose timed phase lasts a minute on three worker processes.
fn start_long_io(dir: &Path, state: &Path) -> std::process::Child {
    start_run(
        state,
        "io:rw=randread,bs=4k,size=4m,numjobs=3,time-based,runtime=60s",
        dir,
    )
}

/// fsbench running workload `spec` once in `dir`, its output piped.
pub(crate) fn start_run(state: &Path, spec: &str, dir: &Path) -> std::process::Child {
    fsbench(state)
        .args(["run", "-q", "--runs", "1", "--purpose", "workers test"])
        .args(["-w", spec, "--dir"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Each phase's units, from a JSON run, and the run's `workers`.
fn units_and_workers(out: &std::process::Output) -> (Vec<(String, u64)>, serde_json::Value) {
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &doc["runs"][0];
    let phases = (run["phases"].as_array().unwrap().iter())
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["ops"].as_u64().unwrap(),
            )
        })
        .collect();
    (phases, run["workers"].clone())
}

#[test]
fn every_workers_figures_arrive_in_both_modes() {
    let state = tempdir();
    for mode in ["processes", "threads"] {
        let dir = tmpfs_tempdir();
        // 4 trees of 1 + 3 + 9 directories with 5 files each.
        let tree = format!("tree:dirs=3,files=5,levels=2,stat,threads=4,workers={mode}");
        let out = run(json_run(state.path())
            .args(["--runs", "1", "-w", &tree, "--dir"])
            .arg(dir.path()));
        let (phases, workers) = units_and_workers(&out);
        let expected = [
            ("dir-create", 4 * 13),
            ("file-create", 4 * 13 * 5),
            ("file-stat", 4 * 13 * 5),
            ("file-remove", 4 * 13 * 5),
            ("dir-remove", 4 * 13),
        ];
        let expected: Vec<(String, u64)> = (expected.iter())
            .map(|(p, n)| (p.to_string(), *n))
            .collect();
        assert_eq!(phases, expected, "{mode}");
        assert_eq!(workers["mode"], mode);
        assert_eq!(workers["count"], 4);
        // 3 jobs of 256 reads of 4 KiB each.
        let out = run(json_run(state.path())
            .args(["--runs", "1", "--dir"])
            .arg(dir.path())
            .arg("-w")
            .arg(format!("io:rw=read,bs=4k,size=1m,numjobs=3,workers={mode}")));
        let (phases, workers) = units_and_workers(&out);
        assert_eq!(phases[1], ("io".to_string(), 3 * 256), "{mode}");
        assert_eq!(
            (workers["mode"].as_str(), workers["count"].as_u64()),
            (Some(mode), Some(3))
        );
        assert_empty(dir.path());
    }
}

#[test]
fn a_killed_worker_fails_the_run_naming_it_and_leaves_no_worker() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let child = start_long_io(dir.path(), state.path());
    killing_a_worker_fails_the_run(child, 3, dir.path());
}

/// Kills the second of the `n` workers of fsbench `child`, a run in `dir`: the run fails at
/// once, naming the worker and its signal, and leaves no worker and nothing in `dir`.
pub(crate) fn killing_a_worker_fails_the_run(mut child: std::process::Child, n: usize, dir: &Path) {
    let workers = wait_for_workers(&mut child, n);
    // SAFETY: a worker process of the fsbench the test started.
    unsafe { libc::kill(workers[1], libc::SIGKILL) };
    let killed_at = Instant::now();
    let out = wait_drained_within(child, limit());
    assert!(killed_at.elapsed() < Duration::from_secs(30));
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("(pid {})", workers[1])) && err.contains("SIGKILL"),
        "{err}"
    );
    assert!(
        workers.iter().all(|w| gone(*w)),
        "a worker outlived the run"
    );
    assert_empty(dir);
}

#[test]
fn no_worker_outlives_a_killed_fsbench() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let child = start_long_io(dir.path(), state.path());
    killing_fsbench_leaves_no_worker(child, 3);
    // `clean` removes what the killed run left, and finds no worker to stop.
    let out = run(fsbench(state.path()).arg("clean"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("worker"),
        "{}",
        text(&out.stdout)
    );
}

/// Kills fsbench `child` while its `n` workers run: none of them runs 2 s later.
pub(crate) fn killing_fsbench_leaves_no_worker(mut child: std::process::Child, n: usize) {
    let pid = child.id();
    let workers = wait_for_workers(&mut child, n);
    // SAFETY: the fsbench the test started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let _ = wait_drained_within(child, limit());
    let deadline = Instant::now() + Duration::from_secs(2);
    while !workers.iter().all(|w| gone(*w)) {
        assert!(
            Instant::now() < deadline,
            "workers {workers:?} still run 2 s after their fsbench was killed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// SIGTERM to an fsbench running `n` workers in `dir`: it ends as interrupted, no worker
/// outlives it, and `dir` is left empty.
pub(crate) fn interrupting_fsbench_leaves_no_worker(
    mut child: std::process::Child,
    n: usize,
    dir: &Path,
) {
    let workers = wait_for_workers(&mut child, n);
    // SAFETY: the fsbench the test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = wait_drained_within(child, limit());
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        workers.iter().all(|w| gone(*w)),
        "a worker outlived the run"
    );
    assert_empty(dir);
}

#[test]
fn an_interrupted_run_leaves_no_worker() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let child = start_long_io(dir.path(), state.path());
    interrupting_fsbench_leaves_no_worker(child, 3, dir.path());
}

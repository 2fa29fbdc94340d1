//! Replay's traced processes as processes (the default) and all as threads: capture records
//! each traced thread's process; a forking program's replay makes every call the capture
//! recorded and leaves the program's tree in both modes, with every worker's figures; a
//! worker process that dies fails the run naming it, and none outlives an interrupted or a
//! killed fsbench; and calls on names whose directories another process moved reach the
//! new ones.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::capture::{assert_faithful, can_capture, captured, replay_as, trace_text};
use crate::common::*;
use crate::traces::TraceText;
use crate::workers::{
    interrupting_fsbench_leaves_no_worker, killing_a_worker_fails_the_run,
    killing_fsbench_leaves_no_worker, start_run,
};
use fsbench_model::workload::WorkerMode;

/// A program of two processes of two threads each: the parent makes `p` and a file in it,
/// its thread `p/t1`; the child (a fork) makes `c`, reads the parent's file, its thread
/// writes it to `c/ct`, and it moves the parent's thread's file; the parent, after the
/// child, copies that file and removes one of the child's.
const FORKING: &str = r#"
import os, threading
def write(name, data):
    with open(name, "w") as f:
        f.write(data)
def thread(name, data):
    t = threading.Thread(target=write, args=(name, data))
    t.start()
    t.join()
os.mkdir("p")
write("p/shared", "x" * 5000)
thread("p/t1", "t" * 100)
pid = os.fork()
if pid == 0:
    os.mkdir("c")
    with open("p/shared") as f:
        data = f.read()
    thread("c/ct", data)
    os.rename("p/t1", "c/moved")
    os._exit(0)
os.waitpid(pid, 0)
with open("c/moved") as f:
    write("after", f.read())
os.unlink("c/ct")
"#;

/// A program whose child process moves and removes the directories its parent works in,
/// and makes new ones of the same names: the parent's later calls on those names reach the
/// new directories (a replay worker that kept the old ones open must see them change).
const MOVING: &str = r#"
import os
os.makedirs("a/x")
os.makedirs("r/old/k")
os.stat("a/x")
pid = os.fork()
if pid == 0:
    os.rename("a", "b")
    os.mkdir("a")
    os.rmdir("r/old/k")
    os.rmdir("r/old")
    os.mkdir("r/old")
    os._exit(0)
os.waitpid(pid, 0)
os.mkdir("a/z")
os.stat("b/x")
os.mkdir("r/old/in")
os.rename("b/x", "a/x")
os.rmdir("a/z")
"#;

/// The Python interpreter itself: `python3` may be a wrapper (pyenv's shims are shell
/// scripts whose processes look at the working directory).
fn interpreter() -> String {
    let out = run(std::process::Command::new("python3").args([
        "-I",
        "-c",
        "import sys; print(sys.executable)",
    ]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

/// Each mkdir's and open-for-writing's path with the thread that made it, and each thread's
/// process from the `task` lines.
fn makers_and_processes(text: &str) -> (BTreeMap<String, u32>, BTreeMap<u32, u32>) {
    let (mut makers, mut processes) = (BTreeMap::new(), BTreeMap::new());
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f[..] {
            ["task", tid, pid] => {
                processes.insert(tid.parse().unwrap(), pid.parse().unwrap());
            }
            [tid, _, _, kind, _, _, _, _, a, _, path, ..]
                if kind == "mkdir"
                    || (kind == "open" && a.parse::<u64>().unwrap() & 0o100 != 0) =>
            {
                makers.insert(path.to_string(), tid.parse().unwrap());
            }
            _ => {}
        }
    }
    (makers, processes)
}

#[test]
fn capture_records_each_threads_process_and_both_modes_replay_a_forking_program() {
    if !can_capture("forking program capture", &["python3"]) {
        return;
    }
    let work = tmpfs_tempdir();
    let python = interpreter();
    let (orig, trace) = captured(work.path(), "orig", &[&python, "-I", "-c", FORKING]);
    let written = trace_text(&trace);
    assert_eq!(written.lines().next(), Some("fsbench-trace 5"));
    let (makers, processes) = makers_and_processes(&written);
    let process = |path: &str| {
        let tid = makers[path];
        (tid, processes[&tid])
    };
    let (parent, child) = (process("p"), process("c"));
    // Each process's own thread is its process; its other thread is of it, not its own.
    assert_eq!(parent.0, parent.1, "{makers:?} {processes:?}");
    assert_eq!(child.0, child.1, "{makers:?} {processes:?}");
    assert_ne!(parent.1, child.1);
    let (t1, ct) = (process("p/t1"), process("c/ct"));
    assert_eq!(t1.1, parent.1, "{makers:?} {processes:?}");
    assert_ne!(t1.0, parent.0);
    assert_eq!(ct.1, child.1, "{makers:?} {processes:?}");
    assert_ne!(ct.0, child.0);

    for (mode, says) in [
        (
            WorkerMode::Processes,
            "as 2 worker processes running 4 threads in all",
        ),
        (WorkerMode::Threads, "as 4 threads of fsbench's process"),
    ] {
        let replayed = work.path().join(format!("{mode:?}"));
        let report = replay_as(&trace, &replayed, mode);
        assert_faithful(&report, &orig, &replayed);
        assert!(
            report.notes.iter().any(|n| n.contains(says)),
            "{mode:?}: {:?}",
            report.notes
        );
    }

    // Through a run: every worker's calls, bytes and latencies arrive, the mode recorded.
    let state = tempdir();
    let captured = replay_as(&trace, &work.path().join("count"), WorkerMode::Threads).captured;
    let captured_calls: u64 = captured.values().sum();
    for mode in ["processes", "threads"] {
        let dir = tmpfs_tempdir();
        let spec = format!("replay:trace={},workers={mode}", trace.display());
        let out = run(json_run(state.path())
            .args(["--runs", "1", "-w", &spec, "--dir"])
            .arg(dir.path()));
        assert!(out.status.success(), "{mode}: {}", text(&out.stderr));
        let doc = json(&out);
        let run = &doc["runs"][0];
        let workers = if mode == "processes" { 2 } else { 4 };
        assert_eq!(run["workers"]["mode"], mode);
        assert_eq!(run["workers"]["count"], workers);
        // The label names the mode that is not the default.
        let label = match mode {
            "processes" => "replay:orig.trace".to_string(),
            _ => format!("replay:orig.trace,workers={mode}"),
        };
        assert_eq!(run["workload"], label.as_str());
        let phase = &run["phases"][0];
        assert_eq!(phase["ops"].as_u64(), Some(captured_calls), "{mode}");
        // One histogram per kind, with every call of every worker.
        for (kind, n) in &captured {
            assert_eq!(phase["latency"][kind]["count"], *n, "{mode} {kind}");
        }
        // 5,000 bytes written by the parent, read by the child and written again; 100
        // written by the parent's thread, read and written again by the parent.
        assert!(
            phase["bytes"].as_u64().unwrap() >= 3 * 5000 + 3 * 100,
            "{mode}"
        );
        let notes = phase["notes"].to_string();
        for wrong in ["differ", "came out otherwise"] {
            assert!(!notes.contains(wrong), "{mode}: {notes}");
        }
        assert_empty(dir.path());
    }
}

/// A trace of three processes (the second of two threads), each making its directory at
/// once and a call a minute later: a think replay's workers wait that minute.
fn waiting_trace(dir: &Path) -> std::path::PathBuf {
    let trace = dir.join("waiting.trace");
    let mut t = TraceText::of_version(3, &[]);
    for tid in [1, 2, 3, 4] {
        t.call(tid, 0, &format!("mkdir\t0\t0\t-1\t-1\t493\t-1\td{tid}\t-"));
        t.call(
            tid,
            60_000_000,
            &format!("stat\t0\t0\t-1\t-1\t1\t-1\td{tid}\t-"),
        );
    }
    t.task(1, 1).task(2, 2).task(3, 2).task(4, 4);
    t.write(&trace);
    trace
}

fn start_waiting(dir: &Path, state: &Path, traces: &Path) -> std::process::Child {
    let spec = format!(
        "replay:trace={},mode=think",
        waiting_trace(traces).display()
    );
    start_run(state, &spec, dir)
}

#[test]
fn a_killed_replay_worker_fails_the_run_naming_it_and_leaves_no_worker() {
    let (dir, state, traces) = (tmpfs_tempdir(), tempdir(), tempdir());
    let child = start_waiting(dir.path(), state.path(), traces.path());
    killing_a_worker_fails_the_run(child, 3, dir.path());
}

#[test]
fn no_replay_worker_outlives_a_killed_fsbench() {
    let (dir, state, traces) = (tmpfs_tempdir(), tempdir(), tempdir());
    let child = start_waiting(dir.path(), state.path(), traces.path());
    killing_fsbench_leaves_no_worker(child, 3);
}

#[test]
fn an_interrupted_replay_leaves_no_worker() {
    let (dir, state, traces) = (tmpfs_tempdir(), tempdir(), tempdir());
    let child = start_waiting(dir.path(), state.path(), traces.path());
    interrupting_fsbench_leaves_no_worker(child, 3, dir.path());
}

#[test]
fn calls_reach_the_directories_a_path_names_after_another_process_moved_them() {
    if !can_capture("moving program capture", &["python3"]) {
        return;
    }
    let work = tmpfs_tempdir();
    let python = interpreter();
    let (orig, trace) = captured(work.path(), "orig", &[&python, "-I", "-c", MOVING]);
    for mode in [WorkerMode::Processes, WorkerMode::Threads] {
        let replayed = work.path().join(format!("{mode:?}"));
        let report = replay_as(&trace, &replayed, mode);
        assert_faithful(&report, &orig, &replayed);
        for made in ["a/x", "b", "r/old/in"] {
            assert!(replayed.join(made).is_dir(), "{mode:?}: {made}");
        }
    }
}

//! Capture and replay helpers shared by the capture, replay and replay-workers tests: which
//! tracers can run here, a program captured by one, a trace replayed, a replay checked.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use fsbench_measure::measure::{PhaseRecorder, Progress};
use fsbench_model::workload::WorkerMode;
use fsbench_workloads::replay::{ReplayReport, replay_into};

pub fn can_capture(test: &str, tools: &[&str]) -> bool {
    for t in ["strace"].iter().chain(tools) {
        if !has_tool(t) {
            skip(&format!(
                "{test}: {t} is not installed (scripts/test.sh installs it)"
            ));
            return false;
        }
    }
    true
}

/// The C program `source` compiled in `dir` as `name` (with `-pthread`).
pub fn compiled(dir: &Path, name: &str, source: &str) -> std::path::PathBuf {
    let file = dir.join(format!("{name}.c"));
    std::fs::write(&file, source).unwrap();
    let program = dir.join(name);
    let built = run(Command::new("cc")
        .args(["-O", "-pthread", "-o"])
        .arg(&program)
        .arg(&file));
    assert!(built.status.success(), "cc: {}", text(&built.stderr));
    program
}

/// The tracers capture can record with here, each named as `--tracer` takes it: strace,
/// and bpf where it can run (its absence said, as a skip is).
pub fn tracers(test: &str) -> Vec<&'static str> {
    match fsbench_capture_bpf::load(1) {
        Ok(_) => vec!["strace", "bpf"],
        Err(why) => {
            skip(&format!("{test} with the bpf tracer: {why}"));
            vec!["strace"]
        }
    }
}

/// `fsbench capture` of `cmd` run in `root`, with `tracer` (`None`: the default); what it
/// printed.
pub fn capture_by(
    root: &Path,
    trace: &Path,
    cmd: &[&str],
    tracer: Option<&str>,
) -> std::process::Output {
    let state = tempdir();
    let mut command = fsbench(state.path());
    command
        .current_dir(root)
        .args(["capture", "--timeout", "120", "-o"])
        .arg(trace);
    if let Some(tracer) = tracer {
        command.args(["--tracer", tracer]);
    }
    let out = output_within(command.arg("--").args(cmd), limit());
    assert!(out.status.success(), "capture: {}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("captured"),
        "{}",
        text(&out.stdout)
    );
    out
}

/// `cmd` captured in a fresh root `work/NAME`: the root and the trace `work/NAME.trace`.
pub fn captured(work: &Path, name: &str, cmd: &[&str]) -> (PathBuf, PathBuf) {
    captured_by(work, name, cmd, None)
}

/// `cmd` captured by `tracer` in a fresh root `work/NAME`: the root and the trace
/// `work/NAME.trace`.
pub fn captured_by(
    work: &Path,
    name: &str,
    cmd: &[&str],
    tracer: Option<&str>,
) -> (PathBuf, PathBuf) {
    let root = work.join(name);
    std::fs::create_dir(&root).unwrap();
    let trace = work.join(format!("{name}.trace"));
    capture_by(&root, &trace, cmd, tracer);
    (root, trace)
}

/// Replays `trace` into the empty directory `target`, as processes (the default).
pub fn replay(trace: &Path, target: &Path) -> ReplayReport {
    replay_as(trace, target, WorkerMode::Processes)
}

/// Replays `trace` into the empty directory `target` with workers `mode`.
pub fn replay_as(trace: &Path, target: &Path, mode: WorkerMode) -> ReplayReport {
    std::fs::create_dir_all(target).unwrap();
    let dir = std::fs::File::open(target).unwrap();
    let mut rec = PhaseRecorder::start("replay", Arc::new(Progress::default()));
    replay_into(trace, dir.as_fd(), mode, &mut rec).unwrap()
}

/// (a) and (b): every kind as often as captured, no call that came out otherwise, the same
/// tree (the replay's own comparison, modes included, and the tests'), and no line of
/// strace's that the capture could not read.
pub fn assert_faithful(report: &ReplayReport, original: &Path, replayed: &Path) {
    assert!(!report.captured.is_empty());
    assert_eq!(report.calls, report.captured, "{:?}", report.notes);
    assert_eq!(report.mismatched, 0, "{:?}", report.notes);
    assert_eq!(report.refused, 0, "{:?}", report.notes);
    assert_eq!(report.tree_differs, Some(0), "{:?}", report.notes);
    let mut replayed_tree = tree(replayed);
    replayed_tree.retain(|p, _| !p.starts_with(".fsbench-outside"));
    assert_eq!(tree(original), replayed_tree);
    for unread in ["could not read", "whose file is unknown", "cut short"] {
        assert!(
            !report.notes.iter().any(|n| n.contains(unread)),
            "{unread}: {:?}",
            report.notes
        );
    }
}

/// The trace's text, decompressed.
pub fn trace_text(trace: &Path) -> String {
    use std::io::Read;
    let mut text = String::new();
    let file = std::fs::File::open(trace).unwrap();
    zstd::Decoder::new(file)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

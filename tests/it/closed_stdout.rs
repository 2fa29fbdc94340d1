//! A closed stdout (`| head -1`): every command ends quietly, and a run on a loop mount
//! cleans up before it ends.

use std::path::Path;

use crate::common::*;

/// Runs `args` with stdout a pipe whose reader has already gone (as after `| head -1` read
/// its line): every write to it fails with EPIPE.
fn with_closed_stdout(state: &Path, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = fsbench(state)
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_drained_within(child, std::time::Duration::from_secs(120))
}

/// Ended by SIGPIPE, as `cat` is, without a panic or an error message.
fn assert_ended_by_sigpipe(args: &[&str], out: &std::process::Output) {
    use std::os::unix::process::ExitStatusExt;
    let err = text(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{args:?}: {:?}: {err}",
        out.status
    );
    assert!(
        !err.contains("panicked") && !err.contains("error"),
        "{args:?}: not quiet: {err}"
    );
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let db = db.to_str().unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    let run_args = [
        "--db",
        db,
        "run",
        "-q",
        "--purpose",
        "pipes",
        "-w",
        "tree:dirs=2,files=2,size=1,levels=2",
        "--runs",
        "2",
        "--dir",
        dir_arg,
    ];
    for format in ["table", "json"] {
        let args = [&run_args[..], &["--output-format", format]].concat();
        let out = with_closed_stdout(state.path(), &args);
        assert_ended_by_sigpipe(&args, &out);
        // The run completed and was saved before the output was written.
        assert!(
            text(&out.stderr).contains("completed; see it again"),
            "{args:?}"
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let report_args = ["--db", db, "report", "1", "2", "-o", "-"];
    let commands: &[&[&str]] = &[
        &["--db", db, "list"],
        &["--db", db, "show", "1"],
        &["--db", db, "show", "1", "--output-format", "json"],
        &["--db", db, "export", "1"],
        &["--db", db, "export", "1", "--format", "csv"],
        &["--db", db, "export", "1", "--format", "markdown"],
        &["--db", db, "compare", "1", "2"],
        &["--db", db, "compare", "1", "2", "--output-format", "json"],
        &["--db", db, "rank", "1", "2"],
        &report_args,
        &[
            "fdtree", "-d", "2", "-f", "2", "-s", "1", "-l", "2", "-o", dir_arg,
        ],
        &[
            "archive",
            "extract",
            "generated:tiny",
            "--remove",
            "-C",
            dir_arg,
        ],
    ];
    for args in commands {
        assert_ended_by_sigpipe(args, &with_closed_stdout(state.path(), args));
    }
    // The report really goes to stdout with `-o -`.
    let html = run(fsbench(state.path()).args(report_args));
    assert!(html.status.success() && text(&html.stdout).starts_with("<!DOCTYPE html>"));
}

#[test]
fn a_run_on_a_loop_mount_cleans_up_before_a_closed_stdout_ends_it() {
    if !can_run(
        "a_run_on_a_loop_mount_cleans_up_before_a_closed_stdout_ends_it",
        &["mkfs.ext4"],
    ) {
        return;
    }
    let images = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let args = [
        "--db",
        db.to_str().unwrap(),
        "run",
        "-q",
        "--purpose",
        "pipes",
        "--fs",
        "ext4",
        "-w",
        "tree:dirs=2,files=2,size=1,levels=2",
        "--runs",
        "1",
        "--image-dir",
        images.path().to_str().unwrap(),
    ];
    let out = with_closed_stdout(state.path(), &args);
    assert_ended_by_sigpipe(&args, &out);
    assert_nothing_left(images.path());
    let state_files: Vec<_> = std::fs::read_dir(state.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert!(state_files.is_empty(), "state left: {state_files:?}");
    let shown = json(&run(fsbench(state.path()).args([
        "--db",
        db.to_str().unwrap(),
        "show",
        "1",
        "--output-format",
        "json",
    ])));
    assert_eq!(shown["status"], "completed");
    assert_eq!(shown["runs"][0]["status"], "ok");
    assert_eq!(shown["runs"][0]["fsck"]["clean"], true);
}

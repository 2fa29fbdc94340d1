//! `--runs auto` on a directory target (no root needed): it stops on the CI target when the
//! runs are steady enough for it, and on the cap when they are not.

use crate::common::*;

/// A tiny tree, `--runs auto` with these options; the rounds run and what stderr said.
fn auto_run(extra: &[&str]) -> (usize, String) {
    let dir = tempdir();
    let state = tempdir();
    let out = run(fsbench(state.path())
        .args(["--db"])
        .arg(state.path().join("results.db"))
        .args([
            "run",
            "-q",
            "--output-format",
            "json",
            "--purpose",
            "auto test",
            "--dir",
        ])
        .arg(dir.path())
        .args([
            "-w",
            "tree:dirs=2,files=2,size=1,levels=2",
            "--runs",
            "auto",
        ])
        .args(extra));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let runs = json(&out)["runs"].as_array().unwrap().len();
    (runs, text(&out.stderr))
}

#[test]
fn runs_auto_stops_on_the_ci_target_or_the_cap() {
    // Any run-to-run spread is within ±100,000%: steady for this target, after the minimum 3.
    let (runs, stderr) = auto_run(&["--target-ci", "100000%", "--max-runs", "6"]);
    assert_eq!(runs, 3, "{stderr}");
    assert!(
        stderr.contains(
            "stopped after 3 rounds: every primary figure's 95% CI half-width is below the target"
        ),
        "{stderr}"
    );
    // No real filesystem is steady within ±0.0001%: the cap stops it.
    let (runs, stderr) = auto_run(&["--target-ci", "0.0001", "--max-runs", "4"]);
    assert_eq!(runs, 4, "{stderr}");
    assert!(
        stderr.contains("stopped after 4 rounds: the cap (--max-runs)"),
        "{stderr}"
    );
}

#[test]
fn runs_auto_options_are_checked() {
    let state = tempdir();
    for (args, message) in [
        // The default suite is `--runs auto` already; a chosen workload is not.
        (
            &["-w", "tree:quick", "--max-runs", "5"][..],
            "need --runs auto",
        ),
        (&["--runs", "auto", "--max-runs", "2"][..], "at least 3"),
        (
            &["--runs", "auto", "--target-ci", "0"][..],
            "positive percentage",
        ),
        (&["--runs", "often"][..], "a number of runs or `auto`"),
    ] {
        let out = run(fsbench(state.path())
            .arg("--db")
            .arg(state.path().join("results.db"))
            .args(["run", "--dir", "."])
            .args(args));
        assert!(!out.status.success());
        assert!(
            text(&out.stderr).contains(message),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

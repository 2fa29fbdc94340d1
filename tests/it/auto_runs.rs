//! `--runs auto` on a directory target (no root needed): it stops on the CI target when the
//! runs are steady enough for it, and on the cap when they are not.

use crate::common::*;

/// A small tree (7 directories, 140 files: phases of milliseconds, not microseconds, so that
/// a stall of a loaded machine is not a 100-fold spread), `--runs auto` with these options;
/// the rounds run and what stderr said.
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
            "tree:dirs=2,files=20,size=1,levels=2",
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
    // The intervals are log-normal (Cox): one round of three 20 × slower than the others is
    // already ±190,000% (which failed once under load), ±10¹⁵% takes one about 450 × slower:
    // steady for this target after the minimum 3.
    let (runs, stderr) = auto_run(&["--target-ci", "1e15%", "--max-runs", "6"]);
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

#[test]
fn the_time_budget_ends_the_runs_within_it() {
    let dir = tempdir();
    let state = tempdir();
    // Runs of about a second each, and a target no run reaches: only the budget stops them.
    let budget = 5.0;
    let started = std::time::Instant::now();
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(state.path().join("results.db"))
        .args([
            "run",
            "-q",
            "--output-format",
            "json",
            "--purpose",
            "budget",
        ])
        .args(["--no-drop-caches", "--dir"])
        .arg(dir.path())
        .args(["--command-phase", "nap=sleep 1", "--runs", "auto"])
        .args(["--target-ci", "0.0001", "--max-time", &format!("{budget}s")]));
    let took = started.elapsed().as_secs_f64();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let runs = json(&out)["runs"].as_array().unwrap().len();
    assert!((2..=5).contains(&runs), "{runs} runs: {stderr}");
    assert!(
        stderr.contains(&format!("stopped after {runs} rounds: the time budget")),
        "{stderr}"
    );
    // Within the budget, but for starting and summing up.
    assert!(
        took < budget + 2.0,
        "{took:.1} s for a budget of {budget} s"
    );
    // A line per run with the suite's progress, for a pipe or a log.
    assert!(
        stderr.contains(&format!("[runs {runs}/≤30, at most")),
        "{stderr}"
    );
}

#[test]
fn the_default_run_states_its_budget_honestly() {
    use std::process::Stdio;
    let dir = tempdir();
    let state = tempdir();
    let log = state.path().join("stderr");
    let mut child = fsbench(state.path())
        .arg("--db")
        .arg(state.path().join("results.db"))
        .args(["run", "--dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // Its header comes before its first run; then Ctrl-C ends it.
    let deadline = std::time::Instant::now() + limit();
    let header = loop {
        let said = std::fs::read_to_string(&log).unwrap();
        if let Some(line) = said.lines().find(|l| l.contains("configuration(s) ×")) {
            break line.to_string();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("no header: {said}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let out = wait_drained_within(child, limit());
    assert!(!out.status.success());
    assert!(
        header.contains("× up to 30 runs, about 5 minutes (--runs auto"),
        "{header}"
    );
    assert_nothing_left(dir.path());
}

#[test]
fn a_budget_that_ends_before_three_runs_says_to_give_it_more_time() {
    let dir = tempdir();
    let state = tempdir();
    // Runs of 3 s in a budget of 9 s: the third would end past it, whatever the set-up
    // took, and the second fits with up to 2.8 s of set-up (a busy machine's; with runs of
    // 2 s in 5 s a loaded CI machine's set-up left room for one run only).
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(state.path().join("results.db"))
        .args([
            "run",
            "-q",
            "--output-format",
            "json",
            "--purpose",
            "budget",
        ])
        .args(["--no-drop-caches", "--dir"])
        .arg(dir.path())
        .args(["--command-phase", "nap=sleep 3", "--runs", "auto"])
        .args(["--target-ci", "0.0001", "--max-time", "9s"]));
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc = json(&out);
    assert_eq!(doc["runs"].as_array().unwrap().len(), 2, "{stderr}");
    assert!(
        stderr.contains("stopped after 2 rounds: the time budget"),
        "{stderr}"
    );
    let few = (doc["warnings"].as_array().unwrap().iter())
        .find(|w| w["kind"] == "few-runs")
        .unwrap_or_else(|| panic!("{}", doc["warnings"]));
    let message = few["message"].as_str().unwrap();
    assert!(
        message.starts_with("only 2 run(s) per configuration")
            && message.contains("give --runs auto more time (--max-time)"),
        "{message}"
    );
}

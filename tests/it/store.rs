//! The results database through the command line: round trip of real runs, an interrupted
//! (SIGKILLed) suite that keeps its completed runs and resumes, and the query commands.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

fn db_run(db: &Path, state: &Path, dir: &Path, extra: &[&str]) -> std::process::Output {
    run(json_run(state)
        .arg("--db")
        .arg(db)
        .args(["--purpose", "store test", "--dir"])
        .arg(dir)
        .args(extra))
}

#[test]
fn a_run_round_trips_through_the_database() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let out = db_run(
        &db,
        state.path(),
        dir.path(),
        &["-w", "tree:dirs=3,files=2,size=1,levels=2", "--runs", "3"],
    );
    assert!(out.status.success());
    let ran = json(&out);
    let id = ran["id"].as_i64().expect("the suite ID is in the output");
    assert!(text(&out.stderr).contains(&format!("suite ID {id}")));
    let shown = json(&run(fsbench(state.path()).arg("--db").arg(&db).args([
        "show",
        &id.to_string(),
        "--output-format",
        "json",
    ])));
    // Every raw figure and every summary comes back as it was measured.
    for key in [
        "runs",
        "summaries",
        "warnings",
        "configurations",
        "system",
        "target",
        "suite",
        "started_at",
        "status",
    ] {
        assert_eq!(shown[key], ran[key], "{key} differs after the round trip");
    }
    let latency = &shown["runs"][0]["phases"][1]["latency"]["write"];
    assert!(
        latency["histogram"].as_str().is_some_and(|h| h.len() > 10),
        "histogram kept"
    );
    assert!(
        shown["runs"][0]["phases"][1]["progress"]
            .as_array()
            .is_some_and(|p| !p.is_empty())
    );

    let list = text(&run(fsbench(state.path()).arg("--db").arg(&db).arg("list")).stdout);
    assert!(list.contains("completed") && list.contains("3/3"), "{list}");
    // An unnamed suite is named by what it ran on what; its row names both.
    let label = ran["configurations"][0]["label"].as_str().unwrap();
    assert!(
        list.contains(&format!("tree:d3-f2-s1-l2 on {label}")),
        "{list}"
    );
    let table = text(
        &run(fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["show", &id.to_string()]))
        .stdout,
    );
    assert!(
        table.contains("Purpose: store test") && table.contains("Phase times"),
        "{table}"
    );

    let csv = text(
        &run(fsbench(state.path()).arg("--db").arg(&db).args([
            "export",
            &id.to_string(),
            "--format",
            "csv",
        ]))
        .stdout,
    );
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("kind,suite,config,workload,run,status,phase,metric")
    );
    let rows: Vec<&str> = lines.collect();
    assert!(rows.iter().filter(|l| l.starts_with("run,")).count() >= 3 * 4 * 3);
    assert!(
        rows.iter()
            .any(|l| l.starts_with("summary,") && l.contains(",file-create,rate,files/s,"))
    );
    let md = text(
        &run(fsbench(state.path()).arg("--db").arg(&db).args([
            "export",
            &id.to_string(),
            "--format",
            "markdown",
        ]))
        .stdout,
    );
    assert!(
        md.starts_with("# fsbench") && md.contains("\n| Configuration"),
        "{md}"
    );
    let exported = run(fsbench(state.path()).arg("--db").arg(&db).args([
        "export",
        &id.to_string(),
        "--format",
        "json",
    ]));
    assert_eq!(json(&exported)["runs"], ran["runs"]);
}

#[test]
fn compare_and_rank_across_suites() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    for _ in 0..2 {
        let out = db_run(
            &db,
            state.path(),
            dir.path(),
            &["-w", "tree:dirs=3,files=2,size=0,levels=2", "--runs", "3"],
        );
        assert!(out.status.success());
    }
    let base = ["--db", db.to_str().unwrap()];
    let out = run(fsbench(state.path()).args(base).args([
        "compare",
        "1",
        "2",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success());
    let doc = json(&out);
    let rows = doc["rows"].as_array().unwrap();
    let rate = rows
        .iter()
        .find(|r| r["phase"] == "file-create" && r["metric"] == "rate")
        .unwrap();
    assert_eq!(rate["cells"][0]["verdict"], "baseline");
    let other = &rate["cells"][1];
    let p = other["difference"]["p_value"].as_f64().unwrap();
    let adjusted = other["p_adjusted"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&p) && (p..=1.0).contains(&adjusted));
    assert!(["better", "worse", "same", "undecided"].contains(&other["verdict"].as_str().unwrap()));
    // One primary figure per phase: the rate decides, the time shares its verdict.
    assert_eq!(rate["role"], "primary");
    let time = rows
        .iter()
        .find(|r| r["phase"] == "file-create" && r["metric"] == "time")
        .unwrap();
    assert_eq!(time["role"], "derived");
    assert_eq!(time["cells"][1]["verdict"], other["verdict"]);
    assert_eq!(doc["corrections"][0]["correction"], "holm");
    assert_eq!(doc["answers"].as_array().unwrap().len(), 4, "one per phase");
    let table = text(&run(fsbench(state.path()).args(base).args(["compare", "1", "2"])).stdout);
    assert!(
        table.contains("Baseline: #1")
            && (table.contains("p = ") || table.contains("p < "))
            && table.contains("Corrections for multiple tests: Holm over 4 phase verdicts"),
        "{table}"
    );
    let rank = text(&run(fsbench(state.path()).args(base).args(["rank", "1", "2"])).stdout);
    assert!(
        rank.contains("Total points") && rank.contains("1. #"),
        "{rank}"
    );
    // Errors name what is wrong.
    let bad = run(fsbench(state.path()).args(base).args(["compare", "1:nope"]));
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("has no configuration `nope`"));
    let missing = run(fsbench(state.path()).args(base).args(["show", "99"]));
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("no suite 99"));
}

/// Runs of suite `id` committed so far, read straight from the database.
fn committed_runs(db: &Path, id: i64) -> i64 {
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    conn.query_row(
        "SELECT COUNT(*) FROM runs WHERE suite_id = ?1 AND status = 'ok'",
        [id],
        |r| r.get(0),
    )
    .unwrap_or(0)
}

#[test]
fn a_killed_suite_keeps_its_runs_and_resumes() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    // Each run takes a moment, so the kill lands between runs with some committed.
    let mut child = fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args([
            "run",
            "-q",
            "-w",
            "tree:dirs=10,files=5,size=0,levels=3",
            "--runs",
            "4",
            "--dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while committed_runs(&db, 1) < 2 {
        assert!(Instant::now() < deadline, "no runs were committed");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the suite finished before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The first `run` holds its claim while it runs: a resume now is refused.
    let early = wait_drained_within(
        fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["run", "-q", "--resume", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(60),
    );
    assert_eq!(early.status.code(), Some(2));
    assert!(text(&early.stderr).contains("suite 1 is still running in another process"));
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = committed_runs(&db, 1);
    assert!((2..4).contains(&kept), "{kept} runs");

    let list = text(&run(fsbench(state.path()).arg("--db").arg(&db).arg("list")).stdout);
    assert!(
        list.contains("incomplete") && list.contains(&format!("{kept}/4")),
        "{list}"
    );
    let shown = json(&run(fsbench(state.path()).arg("--db").arg(&db).args([
        "show",
        "1",
        "--output-format",
        "json",
    ])));
    assert_eq!(shown["status"], "incomplete");
    let ok = shown["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "ok")
        .count() as i64;
    assert_eq!(ok, kept);
    assert!(run(fsbench(state.path()).arg("clean")).status.success());

    let out = run(json_run(state.path())
        .arg("--db")
        .arg(&db)
        .args(["--resume", "1"]));
    assert!(out.status.success());
    let resumed = json(&out);
    assert_eq!(resumed["id"], 1);
    assert_eq!(resumed["status"], "completed");
    let rounds: Vec<u64> = resumed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "ok")
        .map(|r| r["run"].as_u64().unwrap())
        .collect();
    let mut sorted = rounds.clone();
    sorted.sort();
    assert_eq!(sorted, [1, 2, 3, 4], "each round exactly once: {rounds:?}");
    assert!(text(&out.stderr).contains(&format!("{kept} of 4 runs already done")));
    let again = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["run", "--resume", "1"]));
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("nothing to resume"));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn two_concurrent_resumes_run_the_missing_runs_once() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let out = db_run(
        &db,
        state.path(),
        dir.path(),
        &["-w", "tree:dirs=10,files=5,size=0,levels=3", "--runs", "3"],
    );
    assert!(out.status.success());
    // An interrupted suite with round 1 done and rounds 2 and 3 missing.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "PRAGMA foreign_keys = ON;
         DELETE FROM runs WHERE suite_id = 1 AND round > 1;
         UPDATE suites SET status = 'interrupted' WHERE id = 1;",
    )
    .unwrap();
    drop(conn);
    let resume = || {
        json_run(state.path())
            .arg("--db")
            .arg(&db)
            .args(["--resume", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (resume(), resume());
    let outs = [
        wait_drained_within(first, Duration::from_secs(300)),
        wait_drained_within(second, Duration::from_secs(300)),
    ];
    let ran: Vec<_> = outs.iter().filter(|o| o.status.success()).collect();
    let refused: Vec<_> = outs.iter().filter(|o| !o.status.success()).collect();
    assert_eq!(
        (ran.len(), refused.len()),
        (1, 1),
        "one runs, one is refused"
    );
    assert_eq!(refused[0].status.code(), Some(2));
    assert!(
        text(&refused[0].stderr).contains("suite 1 is still running in another process"),
        "{}",
        text(&refused[0].stderr)
    );
    let mut rounds: Vec<u64> = json(ran[0])["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_u64().unwrap())
        .collect();
    rounds.sort();
    assert_eq!(rounds, [1, 2, 3], "each round exactly once");
    assert_eq!(committed_runs(&db, 1), 3, "3 of 3 runs recorded, not more");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_damaged_database_is_refused_before_anything_is_written() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let small = ["-w", "tree:dirs=2,files=2,size=1,levels=2", "--runs", "2"];
    assert!(
        db_run(&db, state.path(), dir.path(), &small)
            .status
            .success()
    );
    // Overwrite the b-tree header of the last page (the latest rows) with garbage.
    let mut bytes = std::fs::read(&db).unwrap();
    let page_size = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    let last_page = bytes.len() - page_size;
    bytes[last_page..last_page + 64].fill(0xa5);
    std::fs::write(&db, &bytes).unwrap();

    let out = db_run(&db, state.path(), dir.path(), &small);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("the results database {} is damaged", db.display())),
        "{err}"
    );
    assert!(err.contains(".recover"), "says what to do: {err}");
    assert!(!err.contains("suite ID"), "no suite was started: {err}");
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "nothing was written");
}

#[test]
fn a_run_finished_while_the_database_is_locked_is_kept_and_imported() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let child = fsbench(state.path())
        .env("FSBENCH_DB_WAIT_SECS", "1")
        .arg("--db")
        .arg(&db)
        .args([
            "run",
            "-q",
            "--output-format",
            "json",
            "--purpose",
            "locked",
            "-w",
            "tree:dirs=10,files=5,size=0,levels=3",
            "--runs",
            "1",
            "--dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the suite is recorded (its run has started), another process locks the database
    // until fsbench has ended.
    let deadline = Instant::now() + Duration::from_secs(60);
    let lock = loop {
        assert!(Instant::now() < deadline, "the suite was never recorded");
        // Never creating the file: a zero-length one at --db is refused, not taken as new.
        let existing = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE;
        if let Ok(conn) = rusqlite::Connection::open_with_flags(&db, existing)
            && conn
                .query_row("SELECT COUNT(*) FROM suites", [], |r| r.get::<_, i64>(0))
                .is_ok_and(|n| n == 1)
            && conn.execute_batch("BEGIN EXCLUSIVE").is_ok()
        {
            break conn;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = wait_drained_within(child, Duration::from_secs(120));
    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let ran = json(&out);
    let pending = |db: &Path| -> Vec<_> {
        std::fs::read_dir(db.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains("results.db.pending-"))
            .collect()
    };
    let kept = pending(&db);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(
        err.contains(&format!("it is kept in {}", kept[0].display())),
        "{err}"
    );
    assert_eq!(committed_runs(&db, 1), 0, "the lock kept the run out");

    // The next command that opens the database imports the run, with the same figures.
    let show = || {
        run(fsbench(state.path()).arg("--db").arg(&db).args([
            "show",
            "1",
            "--output-format",
            "json",
        ]))
    };
    let first = show();
    assert!(text(&first.stderr).contains("imported run 1"));
    let shown = json(&first);
    assert_eq!(shown["runs"], ran["runs"]);
    assert_eq!(shown["summaries"], ran["summaries"]);
    assert!(pending(&db).is_empty(), "imported once");
    assert_eq!(json(&show())["runs"].as_array().unwrap().len(), 1);
}

#[test]
fn resume_finds_done_runs_by_key_not_by_label() {
    let (dir, state, data) = (tempdir(), tempdir(), tempdir());
    let db = data.path().join("results.db");
    let tiny = "tree:dirs=3,files=2,size=1,levels=2";
    let out = db_run(&db, state.path(), dir.path(), &["--runs", "2", "-w", tiny]);
    assert!(out.status.success());
    assert_eq!(committed_runs(&db, 1), 2);
    // Labels change (a new label format, say) and the suite was interrupted: its two runs
    // are still done, found by their keys.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "UPDATE runs SET config = 'old label', workload = 'tree:old-format';
         UPDATE suites SET status = 'interrupted';",
    )
    .unwrap();
    drop(conn);
    let resumed = run(json_run(state.path())
        .arg("--db")
        .arg(&db)
        .args(["--resume", "1"]));
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(committed_runs(&db, 1), 2, "resume ran the done runs again");
    let runs = json(&resumed)["runs"].as_array().unwrap().len();
    assert_eq!(runs, 2);
}

/// A damaged file, an empty file and a read-only database each get an error that names the
/// path and says what to do, on the commands that only read as well as on `run`.
#[test]
fn query_commands_explain_a_damaged_empty_or_read_only_database() {
    let state = tempdir();
    let damaged = state.path().join("damaged.db");
    std::fs::write(&damaged, vec![0x5au8; 8192]).unwrap();
    for command in [&["list"][..], &["show", "1"]] {
        let out = run(fsbench(state.path())
            .arg("--db")
            .arg(&damaged)
            .args(command));
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{command:?}");
        assert!(
            err.contains("is damaged") && err.contains(".recover"),
            "{command:?}: {err}"
        );
    }

    let empty = state.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let out = run(fsbench(state.path()).arg("--db").arg(&empty).arg("list"));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("empty file") && err.contains(&empty.display().to_string()),
        "{err}"
    );
    assert_eq!(
        std::fs::metadata(&empty).unwrap().len(),
        0,
        "the empty file is left as it was"
    );

    if !can_run("read-only results database", &["mount"]) {
        return;
    }
    let dir = tempdir();
    let db = state.path().join("results.db");
    assert!(
        db_run(
            &db,
            state.path(),
            dir.path(),
            &["-w", "tree:dirs=1,files=1,size=1,levels=1", "--runs", "1"]
        )
        .status
        .success()
    );
    // A tmpfs of its own, remounted read-only: never a shared mount.
    let ro = tempdir();
    let mount = |args: &[&str]| {
        status(
            std::process::Command::new("mount")
                .args(args)
                .arg(ro.path()),
        )
        .success()
    };
    assert!(mount(&["-t", "tmpfs", "-o", "size=4m", "tmpfs"]));
    let ro_db = ro.path().join("results.db");
    std::fs::copy(&db, &ro_db).unwrap();
    assert!(mount(&["-o", "remount,ro"]));
    // Reading it works; recording into it is refused with its path.
    assert!(
        run(fsbench(state.path()).arg("--db").arg(&ro_db).arg("list"))
            .status
            .success()
    );
    let out = db_run(
        &ro_db,
        state.path(),
        dir.path(),
        &["-w", "tree:dirs=1,files=1,size=1,levels=1", "--runs", "1"],
    );
    assert!(status(std::process::Command::new("umount").arg(ro.path())).success());
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("read-only") && err.contains(&ro_db.display().to_string()),
        "{err}"
    );
}

//! Statistics and reports read a stored suite's workloads (label, description, phases with
//! their units and directions) from the suite's record, not from today's workload code; a
//! suite stored before the record existed gets it from the workload code once, when loaded.
//! Synthetic suites are saved through the results database (no filesystem is run) and shown
//! by the binary.

use std::path::Path;

use crate::common::*;
use fsbench_model::config::FsConfig;
use fsbench_model::results::{ConfigInfo, RunRecord, SuiteResult, SuiteStatus};
use fsbench_store::Store;
use fsbench_workloads::Params;
use serde_json::json;

/// A completed suite of `tree:quick-shallow` on one configuration, recorded as this fsbench
/// records it, then changed by `edit`.
fn suite(edit: impl FnOnce(&mut SuiteResult)) -> SuiteResult {
    let mut r = SuiteResult::for_tests();
    r.started_at = "then".into();
    r.status = SuiteStatus::Completed;
    r.suite.runs = 3;
    r.suite.workloads = vec![Params::parse("tree:quick-shallow").unwrap().spec()];
    r.configurations.push(ConfigInfo {
        config: FsConfig::existing("a"),
        mkfs_version: None,
        fsck_version: None,
        mkfs_command: None,
        mount_options: None,
        crash: Vec::new(),
    });
    fsbench_workloads::record_workloads(&mut r).unwrap();
    edit(&mut r);
    r
}

/// Saves `r` with three runs of its recorded phases into a new database; its ID.
fn save(db: &Path, r: &SuiteResult) -> i64 {
    let mut store = Store::open(db).unwrap();
    let id = store.begin_suite(r, "synthetic").unwrap();
    for round in 1..=3u32 {
        let phases: Vec<_> = (r.workload_records[0].phases.iter().enumerate())
            .map(|(i, p)| {
                json!({
                    "name": p.name, "elapsed_ns": 1_000_000_000 + 1_000_000 * (10 * i as u64 + round as u64),
                    "ops": 1000, "bytes": 4096 * 1000, "cpu_user_ns": 1, "cpu_system_ns": 2,
                    "latency": {}, "errors": {}, "caches_dropped": true, "sync_after_ns": null,
                    "progress": [],
                })
            })
            .collect();
        let run: RunRecord = serde_json::from_value(json!({
            "run": round, "position": 1, "config_key": 0, "workload_key": 0,
            "config": r.configurations[0].config.label, "workload": r.workload_records[0].label,
            "started_at": "then", "status": "ok", "error": null, "source": "none",
            "mkfs_secs": null, "mount_options": "", "phases": phases, "unmount_secs": null,
            "fsck": null,
        }))
        .unwrap();
        store.record_run(id, &run, None).unwrap();
    }
    store.finish_suite(id, r).unwrap();
    id
}

/// The suite `id` of `db` as every output shows it: the tables, CSV, Markdown, JSON and HTML.
fn outputs(db: &Path, id: i64) -> Vec<String> {
    let state = tempdir();
    let id = id.to_string();
    let shown = |args: &[&str]| {
        let out = run(fsbench(state.path()).arg("--db").arg(db).args(args));
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let mut all = vec![shown(&["show", &id, "--all"])];
    for format in ["csv", "markdown", "json"] {
        all.push(shown(&["export", &id, "--format", format]));
    }
    let html = state.path().join("report.html");
    shown(&["report", &id, "-o", html.to_str().unwrap()]);
    all.push(std::fs::read_to_string(html).unwrap());
    all
}

#[test]
fn reports_and_statistics_use_the_recorded_phases() {
    let r = suite(|r| {
        let w = &mut r.workload_records[0];
        w.description = "as the suite recorded it".into();
        let phase = &mut w.phases[1];
        phase.name = "file-make".into();
        phase.unit = "widgets".into();
        phase.moves_data = false;
        w.phases[3].timed = false;
        r.ceilings = vec![
            serde_json::from_value(json!({
                "workload": w.label, "fsbench_version": "0", "cpu_model": "x",
                "kernel_release": "y", "measured_at": "then", "threads": 1,
                "phases": [{"phase": "file-make", "rate": 5000.0}],
            }))
            .unwrap(),
        ];
    });
    // Today's workload code says otherwise: the outputs below can only come from the record.
    let today = Params::of(&r.suite.workloads[0]).unwrap().phases();
    assert_eq!((&*today[1].name, &*today[1].unit), ("file-create", "files"));
    assert!(today[1].moves_data && today[3].timed);

    let dir = tempdir();
    let db = dir.path().join("r.db");
    let id = save(&db, &r);
    let loaded = load_suite(&db, id);
    assert_eq!(loaded.workload_records, r.workload_records);
    let made = (loaded.summaries.iter()).filter(|s| s.phase == "file-make");
    let metrics: Vec<(&str, &str)> = made.map(|s| (&*s.metric, &*s.unit)).collect();
    assert!(metrics.contains(&("rate", "widgets/s")), "{metrics:?}");
    assert!(
        !metrics.iter().any(|(m, _)| *m == "throughput"),
        "{metrics:?}"
    );
    assert!(!loaded.summaries.iter().any(|s| s.phase == "file-create"));
    let untimed = ("tree:quick-shallow".to_string(), "dir-remove".to_string());
    assert_eq!(loaded.untimed_phases(), [untimed]);

    let [table, csv, markdown, _, html] = &outputs(&db, id)[..] else {
        panic!("five outputs");
    };
    for out in [table, markdown] {
        assert!(
            out.contains("as the suite recorded it")
                && out.contains("file-make (widgets/s)")
                && out.contains("file-make 5,000.0 widgets/s")
                && !out.contains("file-create"),
            "{out}"
        );
    }
    assert!(csv.contains(",file-make,rate,widgets/s,"), "{csv}");
    assert!(!csv.contains("file-create"), "{csv}");
    assert!(
        html.contains("<h3>file-make</h3>") && html.contains("as the suite recorded it"),
        "{html}"
    );
}

#[test]
fn a_suite_stored_before_the_record_renders_as_a_recorded_one() {
    let r = suite(|_| {});
    let dir = tempdir();
    let [recorded, old] = ["recorded.db", "old.db"].map(|name| {
        let db = dir.path().join(name);
        (save(&db, &r), db)
    });
    // What schema 15 leaves of a suite an older fsbench stored: no record.
    let conn = rusqlite::Connection::open(&old.1).unwrap();
    assert_eq!(
        conn.execute("UPDATE suites SET workloads = NULL", [])
            .unwrap(),
        1
    );
    drop(conn);
    let loaded = load_suite(&old.1, old.0);
    assert_eq!(loaded.workload_records, r.workload_records);
    let (want, got) = (outputs(&recorded.1, recorded.0), outputs(&old.1, old.0));
    assert!(got[0].contains("file-create"), "{}", got[0]);
    for (want, got) in want.iter().zip(&got) {
        assert_eq!(got, want);
    }
}

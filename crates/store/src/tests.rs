use super::*;
use crate::migrations::{MIGRATIONS, Migration};
use fsbench_model::measurement::Figure;
use fsbench_model::results::SuiteResult;
use fsbench_workloads::Params;

/// A database as the first schema version left it, holding one suite with one run.
fn version_one_database(path: &Path) -> i64 {
    let conn = Connection::open(path).unwrap();
    apply_sql_migrations(&conn, 0..1);
    let r = SuiteResult::for_tests();
    conn.execute(
        "INSERT INTO suites (name, purpose, command, definition, system, target, skipped, started_at,
             finished_at, status, pid, pid_start)
         VALUES ('old', 'why', 'fsbench run', ?1, ?2, ?3, '[]', 'then', 'later', 'completed', 1, 1)",
        params![to_json(&r.suite), to_json(&r.system), to_json(&r.target)],
    )
    .unwrap();
    let id = conn.last_insert_rowid();
    let config = FsConfig::existing("ext4");
    conn.execute(
        "INSERT INTO configurations (suite_id, position, label, definition) VALUES (?1, 0, ?2, ?3)",
        params![id, config.label, to_json(&config)],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO runs (suite_id, round, position, config, workload, started_at, status, source, mount_options)
         VALUES (?1, 1, 1, ?2, 'tree:quick-shallow', 'then', 'ok', '/dev/x', 'rw')",
        params![id, config.label],
    )
    .unwrap();
    let run = conn.last_insert_rowid();
    conn.execute(
        "INSERT INTO phases (run_id, idx, name, elapsed_ns, ops, bytes, cpu_user_ns, cpu_system_ns, caches_dropped)
         VALUES (?1, 0, 'dir-create', 2000000000, 1000, 0, 1, 2, 1)",
        [run],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO phase_errors (run_id, idx, errno, count) VALUES (?1, 0, 'EMLINK', 3)",
        [run],
    )
    .unwrap();
    id
}

/// Applies the SQL steps `steps` of the history (0-based) and sets the schema version.
fn apply_sql_migrations(conn: &Connection, steps: std::ops::Range<usize>) {
    for step in &MIGRATIONS[steps.clone()] {
        let Migration::Sql(sql) = step else {
            panic!("step {steps:?} includes a code step");
        };
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", steps.end as i64)
        .unwrap();
}

#[test]
fn matrix_cells_of_schema_seven_become_figures_with_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seven.db");
    let id = version_one_database(&path);
    let conn = Connection::open(&path).unwrap();
    apply_sql_migrations(&conn, 1..7);
    // Two cells as fsbench stored them before schema 8 (two threads), after a figure of its own.
    let cell = |test: &str, kib_per_sec: f64| {
        serde_json::json!({
            "test": test, "file_size": 1 << 20, "record_size": 65536, "threads": 2,
            "bytes": 2 << 20, "elapsed_ns": 500_000_000u64, "cpu_ns": 250_000_000u64,
            "kib_per_sec": kib_per_sec, "thread_min_kib_per_sec": 3000.0,
            "thread_max_kib_per_sec": 5000.0, "thread_avg_kib_per_sec": 4000.0,
            "caches_dropped": true,
        })
    };
    let cells = serde_json::json!([cell("write", 4096.0), cell("read", 4096.0)]);
    let own = [Figure::new("extents", "per file", false, 1.0)];
    conn.execute(
        "UPDATE phases SET cells = ?1, figures = ?2",
        params![cells.to_string(), to_json(&own)],
    )
    .unwrap();
    drop(conn);

    let store = Store::open(&path).unwrap();
    let columns: Vec<String> = store
        .conn
        .prepare("SELECT name FROM pragma_table_info('phases')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!columns.contains(&"cells".to_string()), "{columns:?}");
    let figures = &store.load(id, Params::label_of).unwrap().runs[0].phases[0].figures;
    assert_eq!(figures[0], own[0], "the phase's own figure stays first");
    // Per cell: throughput, cpu, bytes and the three thread figures.
    assert_eq!(figures.len(), 1 + 2 * 6);
    let write = &figures[1..7];
    let dims = &write[0].dims;
    assert_eq!(
        dims.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["test", "file size", "record size"]
    );
    assert_eq!(
        dims[0].value,
        fsbench_model::measurement::DimValue::Text("write".into())
    );
    assert_eq!(
        dims[1].value,
        fsbench_model::measurement::DimValue::Bytes(1 << 20)
    );
    let value = |name: &str| write.iter().find(|f| f.name == name).unwrap().value;
    // IOzone's "Children see throughput": the threads' own rates added up (2 × 4,000).
    assert_eq!(value("throughput"), 8000.0);
    assert_eq!(value("cpu"), 50.0);
    assert_eq!(value("bytes"), (2 << 20) as f64);
    assert_eq!(value("thread min"), 3000.0);
    assert_eq!(value("thread max"), 5000.0);
    assert_eq!(
        figures[7].dims[0].value,
        fsbench_model::measurement::DimValue::Text("read".into())
    );
}

#[test]
fn migrates_a_first_version_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let id = version_one_database(&path);
    let store = Store::open(&path).unwrap();
    let version: i64 = store
        .conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version as usize, STORE_VERSION);
    let loaded = store.load(id, Params::label_of).unwrap();
    assert_eq!(loaded.suite.purpose, Suite::default().purpose);
    assert_eq!(loaded.status, SuiteStatus::Completed);
    assert_eq!(loaded.runs.len(), 1);
    let phase = &loaded.runs[0].phases[0];
    assert_eq!(
        (phase.measurement.ops, phase.measurement.elapsed_secs()),
        (1000, 2.0)
    );
    assert_eq!(phase.measurement.errors["EMLINK"], 3);
    assert!(phase.measurement.latency.is_empty() && phase.progress.is_empty());
    // Version 2 tables work on the migrated database.
    let listing = store.list(10, Params::label_of).unwrap();
    assert_eq!((listing[0].id, listing[0].runs_done), (id, 1));
}

#[test]
fn a_live_claim_holds_and_a_stale_one_is_free() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("claims.db")).unwrap();
    let id = store
        .begin_suite(&SuiteResult::for_tests(), "fsbench run")
        .unwrap();
    // The first run holds its own claim while it runs.
    let err = store.claim_suite(id).unwrap_err().to_string();
    assert!(err.contains("still running in another process"), "{err}");
    // The same pid and start time in another boot: a claim from before a reboot.
    store
        .conn
        .execute(
            "UPDATE suites SET boot_id = 'another boot' WHERE id = ?1",
            [id],
        )
        .unwrap();
    store.claim_suite(id).unwrap();
    let claimed: (i64, Option<String>) = store
        .conn
        .query_row("SELECT pid, boot_id FROM suites WHERE id = ?1", [id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(claimed, (std::process::id() as i64, boot_id()));
    assert!(
        store.claim_suite(id).is_err(),
        "claimed by this live process"
    );
    // A claimer that is gone (SIGKILLed): its pid no longer runs with that start time.
    store
        .conn
        .execute(
            "UPDATE suites SET pid_start = pid_start + 1 WHERE id = ?1",
            [id],
        )
        .unwrap();
    store.claim_suite(id).unwrap();
    store
        .conn
        .execute("UPDATE suites SET status = 'completed' WHERE id = ?1", [id])
        .unwrap();
    let err = store.claim_suite(id).unwrap_err().to_string();
    assert!(err.contains("nothing to resume"), "{err}");
}

#[test]
fn refuses_a_newer_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let err = Store::open(&path).err().unwrap().to_string();
    assert!(err.contains("newer than this fsbench understands"), "{err}");
}

#[test]
fn refuses_a_zero_length_file_and_leaves_it_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    let err = Store::open(&path).err().unwrap().to_string();
    assert!(
        err.contains("empty file") && err.contains("new path"),
        "{err}"
    );
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn a_path_that_is_no_regular_file_is_refused_and_nothing_made_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("socket.db");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    for path in [Path::new("/dev/null"), dir.path(), &socket] {
        for writing in [false, true] {
            let opened = match writing {
                true => Store::open_for_writing(path),
                false => Store::open(path),
            };
            let err = opened.err().unwrap().to_string();
            assert!(
                err.contains("not a regular file"),
                "{}: {err}",
                path.display()
            );
        }
    }
    assert!(!Path::new("/dev/null-journal").exists());
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

#[test]
fn reading_a_damaged_database_gives_the_recovery_hint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.db");
    drop(Store::open(&path).unwrap());
    // Keep the valid header page (and its user_version), damage every page after it.
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 4096, "{}", bytes.len());
    let page = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    for b in &mut bytes[page..] {
        *b = 0x5a;
    }
    std::fs::write(&path, &bytes).unwrap();
    let err = Store::open(&path).err().unwrap().to_string();
    assert!(
        err.contains("is damaged") && err.contains(".recover"),
        "{err}"
    );
}

#[test]
fn processes_opening_a_new_database_at_once_all_get_it_whole() {
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        let opened: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| Store::open(&path).map(|_| ()).map_err(|e| e.to_string())))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(opened.iter().all(Result::is_ok), "{opened:?}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["new.db"], "no temporary file is left");
    }
}

/// A suite written by a newer fsbench (a workload this one does not know) is listed as
/// unreadable, and the suites around it still are.
#[test]
fn list_shows_a_suite_it_cannot_read_and_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.db");
    let first = version_one_database(&path);
    let store = Store::open(&path).unwrap();
    let definition: String = store
        .conn
        .query_row(
            "SELECT definition FROM suites WHERE id = ?1",
            [first],
            |r| r.get(0),
        )
        .unwrap();
    let newer = definition.replacen(
        "\"workload\":[]",
        "\"workload\":[{\"kind\":\"a-workload-from-the-future\"}]",
        1,
    );
    assert_ne!(
        newer, definition,
        "the definition has a workload list: {definition}"
    );
    store
        .conn
        .execute(
            "INSERT INTO suites (name, purpose, command, definition, system, target, skipped,
                 started_at, finished_at, status, pid, pid_start)
             SELECT name, purpose, command, ?1, system, target, skipped, started_at,
                 finished_at, status, pid, pid_start FROM suites WHERE id = ?2",
            params![newer, first],
        )
        .unwrap();
    let second = store.conn.last_insert_rowid();
    let listed = store.list(10, Params::label_of).unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].id, second);
    assert!(
        listed[0].workloads[0].contains("not readable"),
        "{listed:?}"
    );
    assert_eq!(listed[1].id, first);
    assert!(
        listed[1].workloads.is_empty() && listed[1].name != "?",
        "{listed:?}"
    );
}

use super::*;
use crate::results::SuiteResult;

/// A database as the first schema version left it, holding one suite with one run.
fn version_one_database(path: &Path) -> i64 {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(MIGRATIONS[0]).unwrap();
    conn.pragma_update(None, "user_version", 1).unwrap();
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
    let loaded = store.load(id).unwrap();
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
    let listing = store.list(10).unwrap();
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

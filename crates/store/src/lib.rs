//! The results database: an embedded SQLite file holding every suite, its system, its
//! configurations, and every run with its phases, errors, latency histograms and progress
//! series. Each run is committed in its own transaction as soon as it finishes, so a suite
//! that is interrupted — by Ctrl-C, an error or SIGKILL — keeps every completed run.

use fsbench_model::{results, suite};
use fsbench_stats as stats;
use fsbench_testbed::{error, testbed};
use fsbench_workloads as workload;

mod claim;
mod legacy;
mod load;
mod recovery;

use std::path::{Path, PathBuf};

use anyhow::Context;
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use crate::error::{FsbenchError, invalid};
use crate::results::{
    ConfigInfo, ConfigKey, PhaseRecord, RunRecord, RunStatus, SCHEMA_VERSION, Skipped, SuiteResult,
    SuiteStatus, TargetInfo, WorkloadKey,
};
use crate::suite::Suite;
use claim::{boot_id, claimer_alive};
use fsbench_model::config::FsConfig;
use fsbench_model::measurement::{LatencySummary, PhaseMeasurement};
use fsbench_model::system::SystemInfo;
use fsbench_model::testbed::FsckOutcome;
use fsbench_model::workload::KeptOutput;

/// Forward migrations; `PRAGMA user_version` is the number applied. Never edit a released
/// step: add a new one.
const MIGRATIONS: &[Migration] = &[
    // 1: suites, configurations, runs, phases and their errors.
    Migration::Sql(
        "CREATE TABLE suites (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        purpose TEXT NOT NULL,
        command TEXT NOT NULL,
        definition TEXT NOT NULL,
        system TEXT NOT NULL,
        target TEXT NOT NULL,
        skipped TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL,
        error TEXT,
        pid INTEGER NOT NULL,
        pid_start INTEGER NOT NULL
    );
    CREATE TABLE configurations (
        suite_id INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        label TEXT NOT NULL,
        definition TEXT NOT NULL,
        mkfs_version TEXT,
        fsck_version TEXT,
        mkfs_command TEXT,
        mount_options TEXT,
        PRIMARY KEY (suite_id, position)
    );
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        suite_id INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
        round INTEGER NOT NULL,
        position INTEGER NOT NULL,
        config TEXT NOT NULL,
        workload TEXT NOT NULL,
        started_at TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        source TEXT NOT NULL,
        mkfs_secs REAL,
        mount_options TEXT NOT NULL,
        unmount_secs REAL,
        fsck_clean INTEGER,
        fsck_secs REAL,
        fsck_output TEXT
    );
    CREATE INDEX runs_by_suite ON runs (suite_id);
    CREATE TABLE phases (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        name TEXT NOT NULL,
        elapsed_ns INTEGER NOT NULL,
        ops INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        cpu_user_ns INTEGER NOT NULL,
        cpu_system_ns INTEGER NOT NULL,
        caches_dropped INTEGER NOT NULL,
        sync_after_ns INTEGER,
        PRIMARY KEY (run_id, idx)
    );
    CREATE TABLE phase_errors (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        errno TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (run_id, idx, errno)
    );",
    ),
    // 2: latency histograms, progress time series and warnings.
    Migration::Sql(
        "CREATE TABLE latency (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        op TEXT NOT NULL,
        count INTEGER NOT NULL,
        mean_ns REAL NOT NULL,
        min_ns INTEGER NOT NULL,
        p50_ns INTEGER NOT NULL,
        p90_ns INTEGER NOT NULL,
        p99_ns INTEGER NOT NULL,
        p999_ns INTEGER NOT NULL,
        max_ns INTEGER NOT NULL,
        histogram TEXT NOT NULL,
        PRIMARY KEY (run_id, idx, op)
    );
    CREATE TABLE progress (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        series TEXT NOT NULL,
        PRIMARY KEY (run_id, idx)
    );
    CREATE TABLE warnings (
        suite_id INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        config TEXT,
        workload TEXT,
        phase TEXT,
        message TEXT NOT NULL
    );",
    ),
    // 3: archive members refused, failure samples, and runs that made an incomplete tree.
    Migration::Sql(
        "ALTER TABLE phases ADD COLUMN refused INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE phases ADD COLUMN failures TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE runs ADD COLUMN incomplete TEXT;",
    ),
    // 4: throughput-matrix cells (the iozone workload).
    Migration::Sql("ALTER TABLE phases ADD COLUMN cells TEXT NOT NULL DEFAULT '[]';"),
    // 5: workloads' own figures and notes (extents, FFSB transactions, fsck after a phase).
    Migration::Sql(
        "ALTER TABLE phases ADD COLUMN figures TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE phases ADD COLUMN notes TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE phases ADD COLUMN unsupported TEXT;",
    ),
    // 6: the boot the claiming process ran in, so a claim from before a reboot is stale even
    // when its pid and start time happen to match a process of this boot.
    Migration::Sql("ALTER TABLE suites ADD COLUMN boot_id TEXT;"),
    // 7: a run's configuration and workload by key (their places in the suite), so that
    // finding them again never depends on label text. Older runs get the configuration's from
    // its label here and the workload's when loaded (its label is computed from the suite).
    Migration::Sql(
        "ALTER TABLE runs ADD COLUMN config_key INTEGER;
    ALTER TABLE runs ADD COLUMN workload_key INTEGER;
    UPDATE runs SET config_key = (SELECT position FROM configurations c
        WHERE c.suite_id = runs.suite_id AND c.label = runs.config);",
    ),
    // 8: throughput-matrix cells are figures with dimensions (see legacy.rs).
    Migration::Code(legacy::matrix_cells_to_figures),
    // 9: each run's loop device as read back while mounted (direct I/O or buffered, and why);
    // the storage stack under the suite and as each run saw it, with the load average; each
    // phase's shape (steady state after warm-up, first-done / last-done, share of the harness
    // ceiling) and the suite's harness ceilings.
    Migration::Sql(
        "ALTER TABLE runs ADD COLUMN loop_device TEXT;
    ALTER TABLE runs ADD COLUMN testbed TEXT;
    ALTER TABLE suites ADD COLUMN testbed TEXT;
    ALTER TABLE suites ADD COLUMN ceilings TEXT;
    ALTER TABLE phases ADD COLUMN shape TEXT;",
    ),
    // 10: why a phase had nothing to do (an empty file set), and each phase's latency over time
    // (p50, p99 and max per interval) beside its progress series.
    Migration::Sql(
        "ALTER TABLE phases ADD COLUMN idle TEXT;
    ALTER TABLE progress ADD COLUMN latency TEXT;",
    ),
    // 11: how a run's filesystem was aged and filled before its phases (JSON), with the
    // template it was copied from and the free-space probes.
    Migration::Sql("ALTER TABLE runs ADD COLUMN preparation TEXT;"),
    // 12: under MPI, every rank's progress series beside the phase's summed one.
    Migration::Sql("ALTER TABLE progress ADD COLUMN ranks TEXT NOT NULL DEFAULT '[]';"),
    // 13: the free-space probe after each run's phases (JSON), where the suite asked for it.
    Migration::Sql("ALTER TABLE runs ADD COLUMN probe_after TEXT;"),
    // 14: the end of what a run's commands wrote (the command workload), step by step.
    Migration::Sql(
        "CREATE TABLE run_output (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        step TEXT NOT NULL,
        stdout TEXT NOT NULL,
        stderr TEXT NOT NULL,
        PRIMARY KEY (run_id, idx)
    );",
    ),
    // 15: the suite's workloads as they ran (JSON: label, description, phases with units and
    // directions), so reports read them, not today's workload code. Older suites get them
    // from their workloads' code when loaded.
    Migration::Sql("ALTER TABLE suites ADD COLUMN workloads TEXT;"),
    // 16: what each configuration's crash states showed (JSON), where the suite asked.
    Migration::Sql("ALTER TABLE configurations ADD COLUMN crash TEXT;"),
    // 17: each thread of a fio job file's jobs as fio reports it (JSON), for fio's outputs.
    Migration::Sql("ALTER TABLE phases ADD COLUMN jobs TEXT;"),
];

/// One step of the schema's history: SQL, or code where SQL cannot say it.
enum Migration {
    Sql(&'static str),
    Code(fn(&Transaction) -> anyhow::Result<()>),
}

/// The schema version this fsbench writes.
pub const STORE_VERSION: usize = MIGRATIONS.len();

/// One line of `fsbench list`.
#[derive(Debug, Clone)]
pub struct SuiteListing {
    pub id: i64,
    pub started_at: String,
    pub name: String,
    pub status: String,
    /// The configurations' labels, in the suite's order.
    pub configurations: Vec<String>,
    /// The workloads' labels.
    pub workloads: Vec<String>,
    pub runs_done: usize,
    pub runs_planned: usize,
}

/// The database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("results serialize")
}

fn from_json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> anyhow::Result<T> {
    serde_json::from_str(text).with_context(|| format!("damaged {what} in the results database"))
}

/// Status names as stored: the same spelling as in the JSON document.
fn status_name<T: serde::Serialize>(v: &T) -> String {
    to_json(v).trim_matches('"').to_string()
}

fn parse_status<T: serde::de::DeserializeOwned>(name: &str) -> anyhow::Result<T> {
    from_json(&format!("\"{name}\""), "status")
}

impl Store {
    /// `$XDG_DATA_HOME/fsbench/results.db`, by default `~/.local/share/fsbench/results.db`.
    pub fn default_path() -> PathBuf {
        let base = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")))
            .unwrap_or_else(|| PathBuf::from("."));
        base.join("fsbench/results.db")
    }

    /// Opens (creating if needed) the database at `path` to read it: brings its schema up to
    /// date and imports runs kept in files beside it (checking its integrity first when it
    /// does either).
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        Store::open_checked(path, false)
    }

    /// Opens the database at `path` to record suites in it; a damaged database is refused.
    pub fn open_for_writing(path: &Path) -> anyhow::Result<Store> {
        Store::open_checked(path, true)
    }

    fn open_checked(path: &Path, writing: bool) -> anyhow::Result<Store> {
        recovery::refuse_non_regular(path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        recovery::create_whole(path)?;
        recovery::refuse_empty_file(path)?;
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open results database {}", path.display()))?;
        // SQLite falls back to read-only when it cannot open the file for writing (mode, directory
        // or a read-only filesystem); say so now rather than fail at the first write of a run.
        if writing && conn.is_readonly(c"main")? {
            return Err(FsbenchError::Failed(format!(
                "the results database {} is read-only (file mode, directory or filesystem); \
                 make it writable or pass --db with a writable path",
                path.display()
            ))
            .into());
        }
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Each attempt waits this long; `write_patiently` retries up to `patience()`.
        conn.busy_timeout(recovery::patience().min(std::time::Duration::from_secs(10)))?;
        let pending = recovery::pending_files(path);
        // Readers check too, so that `list` or `show` on a damaged file gives the same hint as `run`.
        recovery::check_integrity(&conn, path)?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate()?;
        for file in pending {
            store.import_pending(&file);
        }
        Ok(store)
    }

    /// Imports a run that an earlier fsbench could not save, and deletes its file; on failure
    /// the file stays for the next open.
    fn import_pending(&mut self, file: &Path) {
        let imported = recovery::read_pending(file).and_then(|p| {
            self.save_run(p.suite_id, &p.run, p.mkfs_command.as_deref())?;
            Ok(p)
        });
        match imported {
            Ok(p) => {
                fsbench_testbed::diag::say(&format!(
                    "fsbench: imported run {} of {} {} (suite {}) from {} into {}",
                    p.run.run,
                    p.run.config,
                    p.run.workload,
                    p.suite_id,
                    file.display(),
                    self.path.display()
                ));
                if let Err(e) = std::fs::remove_file(file) {
                    fsbench_testbed::diag::say(&format!(
                        "fsbench: cannot remove {} ({e}); remove it, or its run is imported again",
                        file.display()
                    ));
                }
            }
            Err(e) => fsbench_testbed::diag::say(&format!(
                "fsbench: cannot import the saved run {} yet ({e:#}); it is kept and tried again",
                file.display()
            )),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&mut self) -> anyhow::Result<()> {
        // Each step takes the write lock first and reads the version under it, so two fsbench
        // processes opening an old database at once do not both apply a step.
        loop {
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let current =
                tx.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))? as usize;
            if current > STORE_VERSION {
                return Err(invalid(format!(
                    "{} has schema version {current}, newer than this fsbench understands ({STORE_VERSION}); upgrade fsbench",
                    self.path.display()
                )));
            }
            let Some(step) = MIGRATIONS.get(current) else {
                return Ok(());
            };
            match step {
                Migration::Sql(sql) => tx.execute_batch(sql).map_err(anyhow::Error::from),
                Migration::Code(convert) => convert(&tx),
            }
            .with_context(|| format!("migration to schema version {}", current + 1))?;
            tx.pragma_update(None, "user_version", (current + 1) as i64)?;
            tx.commit()?;
        }
    }

    /// Records a new suite before its first run; returns its ID.
    pub fn begin_suite(&mut self, result: &SuiteResult, command: &str) -> anyhow::Result<i64> {
        let pid = std::process::id();
        recovery::write_patiently(&mut self.conn, |tx| {
            tx.execute(
                "INSERT INTO suites (name, purpose, command, definition, system, target, skipped,
                 started_at, status, pid, pid_start, boot_id, testbed, ceilings, workloads)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'running', ?9, ?10, ?11, ?12, ?13, ?14)",
                params![
                    result.suite.name,
                    result.suite.purpose,
                    command,
                    to_json(&result.suite),
                    to_json(&result.system),
                    to_json(&result.target),
                    to_json(&result.skipped),
                    result.started_at,
                    pid,
                    crate::testbed::scratch::process_start_ticks(pid).unwrap_or(0) as i64,
                    boot_id(),
                    result.testbed.as_ref().map(to_json),
                    to_json(&result.ceilings),
                    to_json(&result.workload_records),
                ],
            )?;
            let id = tx.last_insert_rowid();
            for (position, c) in result.configurations.iter().enumerate() {
                tx.execute(
                "INSERT INTO configurations (suite_id, position, label, definition, mkfs_version, fsck_version)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, position as i64, c.config.label, to_json(&c.config), c.mkfs_version, c.fsck_version],
            )?;
            }
            Ok(id)
        })
    }

    /// Commits one finished run, with everything measured and the mkfs command line it used,
    /// in one transaction. When the database cannot take it — locked longer than
    /// `patience()`, say — the run is kept in a JSON file beside it, which the next open
    /// imports.
    pub fn record_run(
        &mut self,
        suite_id: i64,
        run: &RunRecord,
        mkfs_command: Option<&str>,
    ) -> anyhow::Result<()> {
        let Err(e) = self.save_run(suite_id, run, mkfs_command) else {
            return Ok(());
        };
        let pending = recovery::PendingRun {
            suite_id,
            mkfs_command: mkfs_command.map(str::to_string),
            run: run.clone(),
        };
        let db = self.path.display();
        match recovery::keep_pending(&self.path, &pending) {
            Ok(file) => Err(e.context(format!(
                "cannot save run {} of {} {} in {db}; it is kept in {} and imported the next \
                 time fsbench opens {db} (e.g. `fsbench --db {db} list`)",
                run.run,
                run.config,
                run.workload,
                file.display()
            ))),
            Err(keep) => Err(e.context(format!(
                "cannot save run {} of {} {} in {db}, nor keep it beside it: {keep:#}",
                run.run, run.config, run.workload
            ))),
        }
    }

    fn save_run(
        &mut self,
        suite_id: i64,
        run: &RunRecord,
        mkfs_command: Option<&str>,
    ) -> anyhow::Result<()> {
        recovery::write_patiently(&mut self.conn, |tx| {
            insert_run(tx, suite_id, run)?;
            tx.execute(
                "UPDATE configurations SET mount_options = COALESCE(mount_options, NULLIF(?3, '')),
                     mkfs_command = COALESCE(mkfs_command, ?4)
                 WHERE suite_id = ?1 AND label = ?2",
                params![suite_id, run.config, run.mount_options, mkfs_command],
            )?;
            Ok(())
        })
    }

    /// Removes a suite and everything recorded of it (one that measured nothing, whose only
    /// record would be a failure in `list`).
    pub fn forget_suite(&mut self, suite_id: i64) -> anyhow::Result<()> {
        recovery::write_patiently(&mut self.conn, |tx| {
            tx.execute("DELETE FROM suites WHERE id = ?1", [suite_id])?;
            Ok(())
        })
    }

    /// Records how the suite ended, the harness ceilings its rounds measured and the
    /// warnings of its results.
    pub fn finish_suite(&mut self, suite_id: i64, result: &SuiteResult) -> anyhow::Result<()> {
        recovery::write_patiently(&mut self.conn, |tx| {
            tx.execute(
                "UPDATE suites SET status = ?2, error = ?3, finished_at = ?4,
                     testbed = COALESCE(?5, testbed), ceilings = ?6 WHERE id = ?1",
                params![
                    suite_id,
                    status_name(&result.status),
                    result.error,
                    result.finished_at,
                    result.testbed.as_ref().map(to_json),
                    to_json(&result.ceilings),
                ],
            )?;
            tx.execute("DELETE FROM warnings WHERE suite_id = ?1", [suite_id])?;
            for w in &result.warnings {
                tx.execute(
                "INSERT INTO warnings (suite_id, kind, config, workload, phase, message) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![suite_id, status_name(&w.kind), w.config, w.workload, w.phase, w.message],
            )?;
            }
            for (position, c) in result.configurations.iter().enumerate() {
                if !c.crash.is_empty() {
                    tx.execute(
                        "UPDATE configurations SET crash = ?3 WHERE suite_id = ?1 AND position = ?2",
                        params![suite_id, position as i64, to_json(&c.crash)],
                    )?;
                }
            }
            Ok(())
        })
    }
}

fn insert_run(tx: &Transaction<'_>, suite_id: i64, run: &RunRecord) -> anyhow::Result<()> {
    tx.execute(
        "INSERT INTO runs (suite_id, round, position, config, workload, started_at, status, error, source,
             mkfs_secs, mount_options, unmount_secs, fsck_clean, fsck_secs, fsck_output, incomplete,
             config_key, workload_key, loop_device, testbed, preparation, probe_after)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
        params![
            suite_id,
            run.run,
            run.position,
            run.config,
            run.workload,
            run.started_at,
            status_name(&run.status),
            run.error,
            run.source,
            run.mkfs_secs,
            run.mount_options,
            run.unmount_secs,
            run.fsck.as_ref().map(|f| f.clean),
            run.fsck.as_ref().map(|f| f.secs),
            run.fsck.as_ref().and_then(|f| f.output.clone()),
            run.incomplete,
            run.config_key.0,
            run.workload_key.0,
            run.loop_device.as_ref().map(to_json),
            run.testbed.as_ref().map(to_json),
            run.preparation.as_ref().map(to_json),
            run.probe_after.as_ref().map(to_json),
        ],
    )?;
    let run_id = tx.last_insert_rowid();
    for (idx, o) in run.output.iter().enumerate() {
        tx.execute(
            "INSERT INTO run_output (run_id, idx, step, stdout, stderr) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![run_id, idx as i64, o.step, o.stdout, o.stderr],
        )?;
    }
    for (idx, p) in run.phases.iter().enumerate() {
        let m = &p.measurement;
        tx.execute(
            "INSERT INTO phases (run_id, idx, name, elapsed_ns, ops, bytes, cpu_user_ns, cpu_system_ns,
                 caches_dropped, sync_after_ns, refused, failures, figures, notes, unsupported,
                 shape, idle, jobs)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                 ?18)",
            params![
                run_id,
                idx as i64,
                p.name,
                m.elapsed_ns as i64,
                m.ops as i64,
                m.bytes as i64,
                m.cpu_user_ns as i64,
                m.cpu_system_ns as i64,
                p.caches_dropped,
                p.sync_after_ns.map(|v| v as i64),
                m.refused as i64,
                to_json(&m.failures),
                to_json(&p.figures),
                to_json(&p.notes),
                p.unsupported,
                (!p.shape.is_empty()).then(|| to_json(&p.shape)),
                p.idle,
                (!m.jobs.is_empty()).then(|| to_json(&m.jobs)),
            ],
        )?;
        for (errno, count) in &m.errors {
            tx.execute(
                "INSERT INTO phase_errors (run_id, idx, errno, count) VALUES (?1, ?2, ?3, ?4)",
                params![run_id, idx as i64, errno, *count as i64],
            )?;
        }
        for (op, l) in &m.latency {
            tx.execute(
                "INSERT INTO latency (run_id, idx, op, count, mean_ns, min_ns, p50_ns, p90_ns, p99_ns, p999_ns, max_ns, histogram)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    run_id,
                    idx as i64,
                    op,
                    l.count as i64,
                    l.mean_ns,
                    l.min_ns as i64,
                    l.p50_ns as i64,
                    l.p90_ns as i64,
                    l.p99_ns as i64,
                    l.p999_ns as i64,
                    l.max_ns as i64,
                    l.histogram,
                ],
            )?;
        }
        tx.execute(
            "INSERT INTO progress (run_id, idx, series, latency, ranks) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                run_id,
                idx as i64,
                to_json(&p.progress),
                (!m.latency_timeline.is_empty()).then(|| to_json(&m.latency_timeline)),
                to_json(&p.rank_progress)
            ],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;

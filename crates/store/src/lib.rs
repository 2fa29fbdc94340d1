//! The results database: an embedded SQLite file holding every suite, its system, its
//! configurations, and every run with its phases, errors, latency histograms and progress
//! series. Each run is committed in its own transaction as soon as it finishes, so a suite
//! that is interrupted — by Ctrl-C, an error or SIGKILL — keeps every completed run.

mod claim;
mod load;
mod migrations;
mod recovery;

pub use load::LabelOf;

use std::path::{Path, PathBuf};

use anyhow::Context;
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use claim::{boot_id, claimer_alive};
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_model::config::FsConfig;
use fsbench_model::measurement::{LatencySummary, PhaseMeasurement};
use fsbench_model::results::{
    ConfigInfo, ConfigKey, PhaseRecord, RunRecord, RunStatus, SCHEMA_VERSION, Skipped, SuiteResult,
    SuiteStatus, TargetInfo, WorkloadKey,
};
use fsbench_model::suite::Suite;
use fsbench_model::system::SystemInfo;
use fsbench_model::testbed::FsckOutcome;
use fsbench_model::workload::KeptOutput;
pub use migrations::STORE_VERSION;

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
        migrations::migrate(&mut store.conn, &store.path)?;
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
                fsbench_measure::diag::say(&format!(
                    "fsbench: imported run {} of {} {} (suite {}) from {} into {}",
                    p.run.run,
                    p.run.config,
                    p.run.workload,
                    p.suite_id,
                    file.display(),
                    self.path.display()
                ));
                if let Err(e) = std::fs::remove_file(file) {
                    fsbench_measure::diag::say(&format!(
                        "fsbench: cannot remove {} ({e}); remove it, or its run is imported again",
                        file.display()
                    ));
                }
            }
            Err(e) => fsbench_measure::diag::say(&format!(
                "fsbench: cannot import the saved run {} yet ({e:#}); it is kept and tried again",
                file.display()
            )),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
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
                    fsbench_measure::sysinfo::process_start_ticks(pid).unwrap_or(0) as i64,
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
        insert_phase(tx, run_id, idx as i64, p)?;
    }
    Ok(())
}

/// Phase `idx` of run `run_id`: its measurement, errors, latencies and progress series.
fn insert_phase(
    tx: &Transaction<'_>,
    run_id: i64,
    idx: i64,
    p: &PhaseRecord,
) -> anyhow::Result<()> {
    let m = &p.measurement;
    tx.execute(
        "INSERT INTO phases (run_id, idx, name, elapsed_ns, ops, bytes, cpu_user_ns, cpu_system_ns,
                 caches_dropped, sync_after_ns, refused, failures, figures, notes, unsupported,
                 shape, idle, jobs)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                 ?18)",
        params![
            run_id,
            idx,
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
            params![run_id, idx, errno, *count as i64],
        )?;
    }
    for (op, l) in &m.latency {
        tx.execute(
                "INSERT INTO latency (run_id, idx, op, count, mean_ns, min_ns, p50_ns, p90_ns, p99_ns, p999_ns, max_ns, histogram)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    run_id,
                    idx,
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
            idx,
            to_json(&p.progress),
            (!m.latency_timeline.is_empty()).then(|| to_json(&m.latency_timeline)),
            to_json(&p.rank_progress)
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests;

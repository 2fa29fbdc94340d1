//! The schema's history: forward migrations, `PRAGMA user_version` the number applied. Each
//! SQL step is a file of its own in `migrations/`; what SQL cannot say is code
//! ([`matrix_cells`]). Never edit a released step: add a new one.

use anyhow::Context;
use std::path::Path;

use rusqlite::{Connection, Transaction, TransactionBehavior};

use fsbench_measure::error::invalid;

mod matrix_cells;

/// One step of the schema's history: SQL, or code where SQL cannot say it.
pub(crate) enum Migration {
    Sql(&'static str),
    Code(fn(&Transaction) -> anyhow::Result<()>),
}

/// Every step, in order: the schema version a step makes is its place in the list plus one.
pub(crate) const MIGRATIONS: &[Migration] = &[
    // 1: suites, configurations, runs, phases and their errors.
    Migration::Sql(include_str!("migrations/01-suites-runs-phases.sql")),
    // 2: latency histograms, progress time series and warnings.
    Migration::Sql(include_str!("migrations/02-latency-progress-warnings.sql")),
    // 3: archive members refused, failure samples, and runs that made an incomplete tree.
    Migration::Sql(include_str!(
        "migrations/03-refused-failures-incomplete.sql"
    )),
    // 4: throughput-matrix cells (the iozone workload).
    Migration::Sql(include_str!("migrations/04-matrix-cells.sql")),
    // 5: workloads' own figures and notes (extents, FFSB transactions, fsck after a phase).
    Migration::Sql(include_str!("migrations/05-figures-notes.sql")),
    // 6: the boot the claiming process ran in, so a claim from before a reboot is stale even
    // when its pid and start time happen to match a process of this boot.
    Migration::Sql(include_str!("migrations/06-boot-id.sql")),
    // 7: a run's configuration and workload by key (their places in the suite), so that
    // finding them again never depends on label text. Older runs get the configuration's from
    // its label here and the workload's when loaded (its label is computed from the suite).
    Migration::Sql(include_str!("migrations/07-run-keys.sql")),
    // 8: throughput-matrix cells are figures with dimensions (see matrix_cells.rs).
    Migration::Code(matrix_cells::to_figures),
    // 9: each run's loop device as read back while mounted (direct I/O or buffered, and why);
    // the storage stack under the suite and as each run saw it, with the load average; each
    // phase's shape (steady state after warm-up, first-done / last-done, share of the harness
    // ceiling) and the suite's harness ceilings.
    Migration::Sql(include_str!("migrations/09-testbed-and-shape.sql")),
    // 10: why a phase had nothing to do (an empty file set), and each phase's latency over time
    // (p50, p99 and max per interval) beside its progress series.
    Migration::Sql(include_str!("migrations/10-idle-and-latency-series.sql")),
    // 11: how a run's filesystem was aged and filled before its phases (JSON), with the
    // template it was copied from and the free-space probes.
    Migration::Sql(include_str!("migrations/11-preparation.sql")),
    // 12: under MPI, every rank's progress series beside the phase's summed one.
    Migration::Sql(include_str!("migrations/12-rank-progress.sql")),
    // 13: the free-space probe after each run's phases (JSON), where the suite asked for it.
    Migration::Sql(include_str!("migrations/13-probe-after.sql")),
    // 14: the end of what a run's commands wrote (the command workload), step by step.
    Migration::Sql(include_str!("migrations/14-run-output.sql")),
    // 15: the suite's workloads as they ran (JSON: label, description, phases with units and
    // directions), so reports read them, not today's workload code. Older suites get them
    // from their workloads' code when loaded.
    Migration::Sql(include_str!("migrations/15-workload-records.sql")),
    // 16: what each configuration's crash states showed (JSON), where the suite asked.
    Migration::Sql(include_str!("migrations/16-crash-states.sql")),
    // 17: each thread of a fio job file's jobs as fio reports it (JSON), for fio's outputs.
    Migration::Sql(include_str!("migrations/17-fio-jobs.sql")),
];

/// The schema version this fsbench writes.
pub const STORE_VERSION: usize = MIGRATIONS.len();

/// Brings the database at `path` to [`STORE_VERSION`], step by step; refuses a newer one.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> anyhow::Result<()> {
    // Each step takes the write lock first and reads the version under it, so two fsbench
    // processes opening an old database at once do not both apply a step.
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current = tx.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))? as usize;
        if current > STORE_VERSION {
            return Err(invalid(format!(
                "{} has schema version {current}, newer than this fsbench understands ({STORE_VERSION}); upgrade fsbench",
                path.display()
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

//! Keeping results safe when the database is not: an integrity check before writing, patient
//! retries while another process holds the lock, and finished runs that could not be saved
//! kept as JSON files next to the database until the next open imports them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use rusqlite::{Connection, Transaction, TransactionBehavior};

use fsbench_measure::error::FsbenchError;
use fsbench_model::results::RunRecord;

/// How long a write waits for a database another process holds locked:
/// `$FSBENCH_DB_WAIT_SECS`, by default five minutes (a finished run is worth the wait).
pub(crate) fn patience() -> Duration {
    let secs = std::env::var("FSBENCH_DB_WAIT_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(300);
    Duration::from_secs(secs)
}

fn is_busy(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<rusqlite::Error>()
                .and_then(rusqlite::Error::sqlite_error_code),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    })
}

/// Runs `write` in an immediate transaction and commits it; while the database is locked by
/// another process, tries again until `patience()` has passed.
pub(crate) fn write_patiently<T>(
    conn: &mut Connection,
    mut write: impl FnMut(&Transaction<'_>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let deadline = Instant::now() + patience();
    loop {
        let attempt = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(anyhow::Error::from)
            .and_then(|tx| {
                let value = write(&tx)?;
                tx.commit()?;
                Ok(value)
            });
        match attempt {
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100));
            }
            done => return done,
        }
    }
}

/// Creates a missing database under a temporary name, schema and all, and links it into place,
/// so that no process ever sees it half made: a zero-length file then only ever means a
/// damaged one. Two processes creating it at once both succeed; the first link wins.
pub(crate) fn create_whole(path: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(());
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".{name}.new.{}.{n}", std::process::id()));
    let made = (|| {
        let conn = Connection::open(&tmp)
            .with_context(|| format!("cannot create results database {}", tmp.display()))?;
        let mut store = super::Store {
            conn,
            path: tmp.clone(),
        };
        super::migrations::migrate(&mut store.conn, &store.path)?;
        drop(store);
        match std::fs::hard_link(&tmp, path) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                Err(e).with_context(|| format!("cannot create {}", path.display()))
            }
            _ => Ok(()),
        }
    })();
    // The temporary name goes whatever happened; the linked name keeps the data.
    let _ = std::fs::remove_file(&tmp);
    made
}

/// Refuses a database path that is neither a regular file nor absent (`/dev/null`, a
/// directory, a FIFO): SQLite would open a device as an empty database and make its journal
/// beside it (`/dev/null-journal`).
pub(crate) fn refuse_non_regular(path: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(fsbench_measure::error::invalid(format!(
            "--db {}: not a regular file (a results database is a regular file, or a path \
             where none exists yet)",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Refuses a zero-length file: SQLite would silently take it as a new, empty database, hiding a
/// truncated one.
pub(crate) fn refuse_empty_file(path: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() == 0 => Err(FsbenchError::Failed(format!(
            "the results database {} is an empty file, not a database (truncated?); delete it \
             or pass --db with a new path",
            path.display()
        ))
        .into()),
        _ => Ok(()),
    }
}

/// Refuses a damaged database before anything is written to it.
pub(crate) fn check_integrity(conn: &Connection, path: &Path) -> anyhow::Result<()> {
    let verdict = conn
        .prepare("PRAGMA quick_check(5)")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| vec![e.to_string()]);
    let problems = match verdict {
        Ok(lines) if lines == ["ok"] => return Ok(()),
        Ok(lines) | Err(lines) => lines.join("; "),
    };
    let p = path.display();
    Err(FsbenchError::Failed(format!(
        "the results database {p} is damaged ({problems}); fsbench does not write to it. Keep \
         a copy, recover what it holds with `sqlite3 {p} .recover | sqlite3 {p}.recovered` and \
         use --db {p}.recovered, or move it away to start a new database"
    ))
    .into())
}

/// A finished run the database could not take.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct PendingRun {
    pub suite_id: i64,
    pub mkfs_command: Option<String>,
    pub run: RunRecord,
}

/// `results.db.pending-` : the prefix of the pending-run files of database `db`.
fn pending_prefix(db: &Path) -> String {
    format!(
        "{}.pending-",
        db.file_name().unwrap_or_default().to_string_lossy()
    )
}

/// The pending-run files of database `db`, oldest name first.
pub(crate) fn pending_files(db: &Path) -> Vec<PathBuf> {
    let dir = db.parent().filter(|d| !d.as_os_str().is_empty());
    let prefix = pending_prefix(db);
    let Ok(entries) = std::fs::read_dir(dir.unwrap_or(Path::new("."))) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    files
}

/// Writes `pending` next to database `db` as a new file; returns its path.
pub(crate) fn keep_pending(db: &Path, pending: &PendingRun) -> anyhow::Result<PathBuf> {
    let stamp = chrono::Local::now().format("%Y%m%dT%H%M%S%.6f");
    let name = format!(
        "{}{stamp}-suite{}-run{}.json",
        pending_prefix(db),
        pending.suite_id,
        pending.run.run
    );
    let path = db.with_file_name(name);
    let text = serde_json::to_string_pretty(pending).expect("results serialize");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Reads a pending-run file.
pub(crate) fn read_pending(path: &Path) -> anyhow::Result<PendingRun> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a saved run", path.display()))
}

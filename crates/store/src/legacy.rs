//! Conversions of what older fsbench versions stored, run once by a migration.

use rusqlite::{Transaction, params};
use serde::Deserialize;

use super::{from_json, to_json};
use fsbench_model::measurement::Figure;
use fsbench_workloads::iozone::CellResult;

/// A throughput-matrix cell as versions before schema 8 stored it, in its own column.
#[derive(Deserialize)]
struct StoredCell {
    test: String,
    file_size: u64,
    record_size: u64,
    threads: u32,
    bytes: u64,
    elapsed_ns: u64,
    cpu_ns: u64,
    thread_min_kib_per_sec: f64,
    thread_avg_kib_per_sec: f64,
    thread_max_kib_per_sec: f64,
    caches_dropped: bool,
}

/// Schema 8: matrix cells become figures with dimensions, after the phase's other figures,
/// exactly as the iozone workload now reports them; the `cells` column goes.
pub(super) fn matrix_cells_to_figures(tx: &Transaction) -> anyhow::Result<()> {
    let rows: Vec<(i64, i64, String, String)> = tx
        .prepare("SELECT run_id, idx, cells, figures FROM phases WHERE cells != '[]'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<Result<_, _>>()?;
    for (run_id, idx, cells, figures) in rows {
        let cells: Vec<StoredCell> = from_json(&cells, "matrix cells")?;
        let mut figures: Vec<Figure> = from_json(&figures, "phase figures")?;
        for c in cells {
            let cell = CellResult {
                bytes: c.bytes,
                elapsed_ns: c.elapsed_ns,
                cpu_ns: c.cpu_ns,
                threads: c.threads,
                thread_rates: [
                    c.thread_min_kib_per_sec,
                    c.thread_avg_kib_per_sec,
                    c.thread_max_kib_per_sec,
                ],
                caches_dropped: c.caches_dropped,
            };
            figures.extend(cell.figures(&c.test, c.file_size, c.record_size));
        }
        tx.execute(
            "UPDATE phases SET figures = ?1 WHERE run_id = ?2 AND idx = ?3",
            params![to_json(&figures), run_id, idx],
        )?;
    }
    tx.execute_batch("ALTER TABLE phases DROP COLUMN cells;")?;
    Ok(())
}

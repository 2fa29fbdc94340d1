//! Schema 8: throughput-matrix cells, kept by older versions in a column of their own,
//! become figures with dimensions. What it needs of the iozone workload is frozen here.

use rusqlite::{Transaction, params};
use serde::Deserialize;

use anyhow::Context;
use fsbench_model::measurement::{Dim, DimValue, Figure};

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
}

/// Schema 8: matrix cells become figures with dimensions, after the phase's other figures,
/// as the iozone workload reported them at schema 8; the `cells` column goes.
pub(super) fn to_figures(tx: &Transaction) -> anyhow::Result<()> {
    let rows: Vec<(i64, i64, String, String)> = tx
        .prepare("SELECT run_id, idx, cells, figures FROM phases WHERE cells != '[]'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<Result<_, _>>()?;
    for (run_id, idx, cells, figures) in rows {
        let cells: Vec<StoredCell> =
            serde_json::from_str(&cells).context("damaged matrix cells")?;
        let mut figures: Vec<Figure> =
            serde_json::from_str(&figures).context("damaged phase figures")?;
        figures.extend(cells.iter().flat_map(StoredCell::figures));
        tx.execute(
            "UPDATE phases SET figures = ?1 WHERE run_id = ?2 AND idx = ?3",
            params![serde_json::to_string(&figures)?, run_id, idx],
        )?;
    }
    tx.execute_batch("ALTER TABLE phases DROP COLUMN cells;")?;
    Ok(())
}

impl StoredCell {
    /// The cell as figures at its place in the matrix, frozen as schema 8 wrote them (a
    /// migration's output must not change with the workload's code): IOzone's "Children see
    /// throughput" (the threads' mean rate × threads), CPU over wall time, bytes and, with
    /// several threads, their spread.
    fn figures(&self) -> Vec<Figure> {
        let dims = [
            Dim::new("test", DimValue::Text(self.test.clone())),
            Dim::new("file size", DimValue::Bytes(self.file_size)),
            Dim::new("record size", DimValue::Bytes(self.record_size)),
        ];
        let cpu = self.cpu_ns as f64 / self.elapsed_ns.max(1) as f64 * 100.0;
        let children_see = self.thread_avg_kib_per_sec * self.threads as f64;
        let mut out = vec![
            Figure::new("throughput", "KiB/s", true, children_see),
            Figure::new("cpu", "%", false, cpu),
            Figure::new("bytes", "B", true, self.bytes as f64),
        ];
        if self.threads > 1 {
            out.extend([
                Figure::new("thread min", "KiB/s", true, self.thread_min_kib_per_sec),
                Figure::new("thread avg", "KiB/s", true, self.thread_avg_kib_per_sec),
                Figure::new("thread max", "KiB/s", true, self.thread_max_kib_per_sec),
            ]);
        }
        out.into_iter().map(|f| f.at(&dims)).collect()
    }
}

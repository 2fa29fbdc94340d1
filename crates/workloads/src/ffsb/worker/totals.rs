//! What FFSB's threads did, added up per thread group and in total, and FFSB's report of it
//! as figures: each figure means what FFSB 6 prints under that name (read ffsb_op.c,
//! ffsb_thread.c and main.c).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::super::Op;
use fsbench_measure::measure::{CpuTimes, errno_name};
use fsbench_model::measurement::{Dim, DimValue, Figure};

/// What one worker (or a group, or all) did; a worker process sends it back to the phase's.
/// Its latencies go into the worker's recorder.
#[derive(Serialize, Deserialize)]
pub(super) struct ThreadStats {
    /// Transactions run per operation: FFSB's `op_weight` counter, behind "% Op Weight".
    pub(super) tx: [u64; Op::ALL.len()],
    /// FFSB's "Transactions" per operation: block calls of a read or write, one per delete,
    /// stat, metaop, createdir or open_close.
    pub(super) calls: [u64; Op::ALL.len()],
    /// Bytes read or written per operation.
    pub(super) bytes: [u64; Op::ALL.len()],
    pub(super) read_bytes: u64,
    pub(super) written_bytes: u64,
    pub(super) errors: BTreeMap<i32, u64>,
    /// Transactions that found no file to work on (the set was empty or all in use).
    pub(super) no_file: u64,
}

impl ThreadStats {
    pub(super) fn new() -> ThreadStats {
        ThreadStats {
            tx: [0; Op::ALL.len()],
            calls: [0; Op::ALL.len()],
            bytes: [0; Op::ALL.len()],
            read_bytes: 0,
            written_bytes: 0,
            errors: BTreeMap::new(),
            no_file: 0,
        }
    }

    fn add(&mut self, other: &ThreadStats) {
        for (total, n) in self.tx.iter_mut().zip(other.tx) {
            *total += n;
        }
        for (total, n) in self.calls.iter_mut().zip(other.calls) {
            *total += n;
        }
        for (total, n) in self.bytes.iter_mut().zip(other.bytes) {
            *total += n;
        }
        self.read_bytes += other.read_bytes;
        self.written_bytes += other.written_bytes;
        for (e, n) in &other.errors {
            *self.errors.entry(*e).or_default() += n;
        }
        self.no_file += other.no_file;
    }

    /// FFSB's table for these stats over `runtime`: per operation that ran, its throughput
    /// (bytes it really moved: FFSB 6.0-RC1 counts a write's whole file), Transactions,
    /// Trans/sec, % Trans and % Op Weight; then Transactions per Second and the read and
    /// write throughput. Each figure at `dims` (its thread group, or none for the total).
    fn figures(&self, runtime: f64, dims: &[Dim], out: &mut Vec<Figure>) {
        let total_calls: u64 = self.calls.iter().sum();
        let total_tx: u64 = self.tx.iter().sum();
        let share = |n: u64, of: u64| n as f64 / of.max(1) as f64 * 100.0;
        for (i, op) in Op::ALL.iter().enumerate() {
            // FFSB lists the operations with transactions.
            if self.calls[i] == 0 && self.tx[i] == 0 {
                continue;
            }
            let name = op.name();
            let calls = self.calls[i];
            if op.moves_data() {
                let mib = self.bytes[i] as f64 / f64::from(1 << 20) / runtime;
                // Not `write throughput`: that is the total of every writing operation.
                out.push(Figure::new(format!("{name} op throughput"), "MiB/s", true, mib).at(dims));
            }
            for f in [
                Figure::new(format!("{name} transactions"), "tx", true, calls as f64),
                Figure::new(format!("{name} tx/s"), "tx/s", true, calls as f64 / runtime),
                Figure::new(
                    format!("{name} % trans"),
                    "%",
                    true,
                    share(calls, total_calls),
                ),
                Figure::new(
                    format!("{name} % op weight"),
                    "%",
                    true,
                    share(self.tx[i], total_tx),
                ),
            ] {
                out.push(f.at(dims));
            }
        }
        let mib = |b: u64| b as f64 / f64::from(1 << 20) / runtime;
        out.push(
            Figure::new("transactions/s", "tx/s", true, total_calls as f64 / runtime).at(dims),
        );
        if self.read_bytes > 0 {
            out.push(Figure::new("read throughput", "MiB/s", true, mib(self.read_bytes)).at(dims));
        }
        if self.written_bytes > 0 {
            out.push(
                Figure::new("write throughput", "MiB/s", true, mib(self.written_bytes)).at(dims),
            );
        }
    }
}

/// Everything the thread groups did.
pub(crate) struct RunTotals {
    /// Per thread group, in the profile's order.
    pub(super) groups: Vec<ThreadStats>,
    pub(super) total: ThreadStats,
    /// FFSB's run time: from the common start to the end of the sync after the last thread.
    pub(super) runtime: Duration,
    /// From the common start to the last thread's end, before that sync.
    pub(super) threads_time: Duration,
}

/// The position of `op` in [`Op::ALL`].
pub(super) fn index(op: Op) -> usize {
    Op::ALL
        .iter()
        .position(|o| *o == op)
        .expect("every op is listed")
}

impl RunTotals {
    pub(super) fn new(groups: usize) -> RunTotals {
        RunTotals {
            groups: (0..groups).map(|_| ThreadStats::new()).collect(),
            total: ThreadStats::new(),
            runtime: Duration::ZERO,
            threads_time: Duration::ZERO,
        }
    }

    pub(super) fn add(&mut self, group: usize, thread: ThreadStats) {
        self.total.add(&thread);
        self.groups[group].add(&thread);
    }

    /// FFSB's report as figures: the total's table (no dimensions), each thread group's when
    /// there are several (dimension `thread group`), fsbench's throughput without the final
    /// sync beside FFSB's, and CPU as user and system percentages of the run time.
    pub(crate) fn figures(&self, cpu: &CpuTimes) -> Vec<Figure> {
        let runtime = self.runtime.as_secs_f64().max(1e-9);
        let mut out = Vec::new();
        self.total.figures(runtime, &[], &mut out);
        let before_sync = self.threads_time.as_secs_f64().max(1e-9);
        let mib = |b: u64| b as f64 / f64::from(1 << 20) / before_sync;
        for (name, bytes) in [
            ("read throughput before sync", self.total.read_bytes),
            ("write throughput before sync", self.total.written_bytes),
        ] {
            if bytes > 0 {
                out.push(Figure::new(name, "MiB/s", true, mib(bytes)));
            }
        }
        if self.groups.len() > 1 {
            for (g, stats) in self.groups.iter().enumerate() {
                let dims = [Dim::new("thread group", DimValue::Count(g as u64))];
                stats.figures(runtime, &dims, &mut out);
            }
        }
        for (name, t) in [("cpu user", cpu.user), ("cpu system", cpu.system)] {
            out.push(Figure::new(
                name,
                "%",
                false,
                t.as_secs_f64() / runtime * 100.0,
            ));
        }
        out
    }

    /// Bytes the transactions wrote.
    pub(crate) fn written(&self) -> u64 {
        self.total.written_bytes
    }

    pub(crate) fn notes(&self) -> Vec<String> {
        let s = &self.total;
        let mut notes: Vec<String> = s
            .errors
            .iter()
            .map(|(e, n)| {
                format!(
                    "{} ×{n} in transactions (counted, not retried)",
                    errno_name(*e)
                )
            })
            .collect();
        if s.no_file > 0 {
            notes.push(format!(
                "{} transaction(s) found no file to work on (the set was empty or every file was in use)",
                s.no_file
            ));
        }
        notes
    }
}

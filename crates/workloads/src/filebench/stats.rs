//! What the threads counted, as filebench counts it: per flowop its runs, bytes, reads and
//! writes and latency (sum, least, most), handed back by each process over a pipe; then the
//! IO Summary and the per-flowop breakdown as figures, and what fsbench counts besides
//! (waits for a file, deletes skipped because the file was open elsewhere).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use serde::{Deserialize, Serialize};

use super::model::{Counted, Model, Op};
use fsbench_model::measurement::{Dim, DimValue, Figure};

/// One flowop's counts in one thread, or added up.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct FlowStats {
    pub(super) count: u64,
    pub(super) bytes: u64,
    pub(super) reads: u64,
    pub(super) writes: u64,
    pub(super) lat_ns: u64,
    pub(super) min_ns: u64,
    pub(super) max_ns: u64,
    /// Times it found no file and waited for one, and how long in all.
    pub(super) waits: u64,
    pub(super) wait_ns: u64,
    /// Deletes not done because another thread had the file open (filebench skips them
    /// without counting).
    pub(super) skipped: u64,
}

impl FlowStats {
    #[inline]
    pub(super) fn record(&mut self, op: Op, ns: u64, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
        self.lat_ns += ns;
        if self.min_ns == 0 || ns < self.min_ns {
            self.min_ns = ns;
        }
        self.max_ns = self.max_ns.max(ns);
        if op.reads() {
            self.reads += 1;
        } else if op.writes() {
            self.writes += 1;
        }
    }

    pub(super) fn add(&mut self, o: &FlowStats) {
        self.count += o.count;
        self.bytes += o.bytes;
        self.reads += o.reads;
        self.writes += o.writes;
        self.lat_ns += o.lat_ns;
        if o.count > 0 && (self.min_ns == 0 || o.min_ns < self.min_ns) {
            self.min_ns = o.min_ns;
        }
        self.max_ns = self.max_ns.max(o.max_ns);
        self.waits += o.waits;
        self.wait_ns += o.wait_ns;
        self.skipped += o.skipped;
    }
}

/// What one thread hands back.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct ThreadReport {
    /// Its run-wide number.
    pub(super) thread: usize,
    /// Per flowop of its thread definition, in order.
    pub(super) flows: Vec<FlowStats>,
    /// Latency per flowop type (serialized histograms).
    pub(super) latency: Vec<(String, Vec<u8>)>,
    /// Passes through its flowop list.
    pub(super) passes: u64,
    pub(super) error: Option<String>,
}

/// Latency histograms of a thread, one per flowop type: two significant digits keep each
/// under 40 KiB, so a hundred threads cost a few MiB.
pub(super) fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 2).expect("static bounds are valid")
}

pub(super) fn encode(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut out)
        .expect("serializing to memory cannot fail");
    out
}

pub(super) fn decode(bytes: &[u8]) -> Option<Histogram<u64>> {
    Deserializer::new().deserialize(&mut &bytes[..]).ok()
}

/// The run's totals: per flowop name (filebench adds up the flowops of one name across
/// threads and processes), in the order the file defines them.
#[derive(Debug, Default)]
pub(super) struct Totals {
    pub(super) flows: Vec<(String, Op, FlowStats)>,
    pub(super) latency: BTreeMap<String, Histogram<u64>>,
    pub(super) passes: u64,
    /// Files each set holds at the end of the run.
    pub(super) files_left: Vec<(String, u64)>,
}

impl Totals {
    pub(super) fn new(model: &Model) -> Totals {
        let mut flows: Vec<(String, Op, FlowStats)> = Vec::new();
        for (_, _, f) in model.flowops() {
            if !flows.iter().any(|(n, _, _)| *n == f.name) {
                flows.push((f.name.clone(), f.op, FlowStats::default()));
            }
        }
        Totals {
            flows,
            ..Totals::default()
        }
    }

    pub(super) fn add(&mut self, model: &Model, place: super::plan::Place, report: &ThreadReport) {
        let thread = &model.processes[place.process].threads[place.thread];
        for (f, stats) in thread.flowops.iter().zip(&report.flows) {
            if let Some((_, _, total)) = self.flows.iter_mut().find(|(n, _, _)| *n == f.name) {
                total.add(stats);
            }
        }
        for (name, bytes) in &report.latency {
            let Some(h) = decode(bytes) else { continue };
            match self.latency.get_mut(name) {
                Some(total) => {
                    let _ = total.add(&h);
                }
                None => {
                    self.latency.insert(name.clone(), h);
                }
            }
        }
        self.passes += report.passes;
    }

    /// The IO Summary's flowops (IO and AIO) added up.
    pub(super) fn summary(&self) -> FlowStats {
        let mut s = FlowStats::default();
        for (_, op, f) in &self.flows {
            if op.counted() != Counted::Other {
                s.add(f);
            }
        }
        s
    }

    /// Figures over `secs` of run: the IO Summary's, then each flowop's at its name.
    pub(super) fn figures(&self, secs: f64) -> Vec<Figure> {
        let secs = secs.max(1e-9);
        let mb = |b: u64| b as f64 / 1048576.0 / secs;
        let ms = |f: &FlowStats| {
            if f.count > 0 {
                f.lat_ns as f64 / f.count as f64 / 1e6
            } else {
                0.0
            }
        };
        let s = self.summary();
        let mut out = vec![
            Figure::new("ops", "ops", true, s.count as f64),
            Figure::new("ops/s", "ops/s", true, s.count as f64 / secs),
            Figure::new("rd/s", "ops/s", true, s.reads as f64 / secs),
            Figure::new("wr/s", "ops/s", true, s.writes as f64 / secs),
            Figure::new("mb/s", "MiB/s", true, mb(s.bytes)),
            Figure::new("ms/op", "ms", false, ms(&s)),
        ];
        for (name, _, f) in &self.flows {
            let at = [Dim::new("flowop", DimValue::Text(name.clone()))];
            out.extend([
                Figure::new("flowop ops", "ops", true, f.count as f64).at(&at),
                Figure::new("flowop ops/s", "ops/s", true, f.count as f64 / secs).at(&at),
                Figure::new("flowop mb/s", "MiB/s", true, mb(f.bytes)).at(&at),
                Figure::new("flowop ms/op", "ms", false, ms(f)).at(&at),
                Figure::new("flowop min ms", "ms", false, f.min_ns as f64 / 1e6).at(&at),
                Figure::new("flowop max ms", "ms", false, f.max_ns as f64 / 1e6).at(&at),
            ]);
            if f.waits > 0 {
                out.push(Figure::new("flowop waits", "waits", false, f.waits as f64).at(&at));
            }
            if f.skipped > 0 {
                out.push(Figure::new("flowop skipped", "deletes", false, f.skipped as f64).at(&at));
            }
        }
        for (set, n) in &self.files_left {
            let at = [Dim::new("fileset", DimValue::Text(set.clone()))];
            out.push(Figure::new("files left", "files", true, *n as f64).at(&at));
        }
        out
    }

    /// What a reader must know: waits for files and skipped deletes, with their flowops.
    pub(super) fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for (name, _, f) in &self.flows {
            if f.waits > 0 {
                notes.push(format!(
                    "{name}: found no file {} times and waited for one ({:.3} s in all; filebench stops the run there)",
                    f.waits,
                    f.wait_ns as f64 / 1e9
                ));
            }
            if f.skipped > 0 {
                notes.push(format!(
                    "{name}: {} deletes skipped because another thread had the file open (filebench skips them uncounted)",
                    f.skipped
                ));
            }
        }
        notes
    }
}

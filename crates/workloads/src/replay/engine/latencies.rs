//! The replay's latency histograms: one per kind of call, shared by the workers, which
//! record into them a batch at a time. A worker holds a fixed buffer, not a histogram of its
//! own per kind (0.26 MiB each): the workers' memory does not grow with the kinds of calls
//! a trace makes.

use std::sync::Mutex;

use hdrhistogram::Histogram;

use crate::replay::trace::Kind;
use fsbench_measure::measure::new_histogram;

/// Latencies a worker holds before it records them.
const BATCH: usize = 4096;

/// The phase's histograms, one per kind, made when a call of the kind is first recorded.
pub(super) type Shared = [Mutex<Option<Histogram<u64>>>];

/// A worker's latencies not yet recorded; recorded when the buffer is full and when it is
/// dropped, however the worker ends.
pub(super) struct Latencies<'a> {
    pending: Vec<(Kind, u64)>,
    shared: &'a Shared,
}

impl<'a> Latencies<'a> {
    pub(super) fn new(shared: &'a Shared) -> Latencies<'a> {
        Latencies {
            pending: Vec::with_capacity(BATCH),
            shared,
        }
    }

    pub(super) fn record(&mut self, kind: Kind, ns: u64) {
        if self.pending.len() == BATCH {
            self.flush();
        }
        self.pending.push((kind, ns.max(1)));
    }

    /// Records the pending latencies, taking each kind's histogram once.
    fn flush(&mut self) {
        self.pending.sort_unstable_by_key(|p| p.0);
        for same in self.pending.chunk_by(|a, b| a.0 == b.0) {
            let mut h = self.shared[same[0].0 as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let h = h.get_or_insert_with(new_histogram);
            for (_, ns) in same {
                h.saturating_record(*ns);
            }
        }
        self.pending.clear();
    }
}

impl Drop for Latencies<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

//! What a job measured besides its recorder's counts, handed back from its worker.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use fsbench_measure::fio::JobStats;
use fsbench_measure::measure::new_histogram;

/// What a job measured besides its recorder's counts and total latency (serde: a worker
/// process hands it back).
#[derive(Serialize, Deserialize)]
pub(crate) struct JobOut {
    /// Per direction (read, write): submission and completion latency.
    #[serde(with = "fsbench_measure::measure::histogram_serde::pair")]
    pub slat: [Histogram<u64>; 2],
    #[serde(with = "fsbench_measure::measure::histogram_serde::pair")]
    pub clat: [Histogram<u64>; 2],
    /// A trimwrite job's trims' completion latency (its writes are in `clat`).
    #[serde(with = "fsbench_measure::measure::histogram_serde")]
    pub trim_clat: Histogram<u64>,
    /// Open loop: how late each I/O was issued after its scheduled time (the harness's
    /// lateness, or an engine with no free slot), to tell it from the filesystem's latency.
    #[serde(with = "fsbench_measure::measure::histogram_serde")]
    pub lag: Histogram<u64>,
    /// Open loop: per direction, each I/O's latency from its scheduled time.
    #[serde(with = "fsbench_measure::measure::histogram_serde::pair")]
    pub from_schedule: [Histogram<u64>; 2],
    /// What fio reports of the thread besides (its lat, syncs, depths, CPU, rates, logs).
    pub stats: JobStats,
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    /// Blocks read back and checked (fio's `verify`).
    pub verified: u64,
    /// The completion latency of the reads `verify` made to check the job's writes: fio's
    /// figures count them as the job's reads, fsbench's own do not.
    #[serde(with = "fsbench_measure::measure::histogram_serde")]
    pub verify_clat: Histogram<u64>,
    /// The verify phase after the writes: its reads and its time.
    pub verify_reads: u64,
    pub verify_time: Duration,
    /// fio's steady state check, from the thread that made it.
    #[serde(default)]
    pub steady: Option<fsbench_model::measurement::FioSteadyState>,
    /// fio's latency target search, where it ended.
    #[serde(default)]
    pub latency_search: Option<fsbench_model::measurement::LatencySearch>,
    /// An exec job's program: how it ended.
    #[serde(default)]
    pub exec_ended: Option<String>,
    /// From the common start to the job's end (its final syncs included).
    pub elapsed: Duration,
    /// A read that failed its verify ended the job (fio's EILSEQ): the mismatch, which
    /// fails the phase once every job's figures are recorded.
    #[serde(default)]
    pub verify_failed: Option<String>,
}

impl JobOut {
    pub(super) fn new(stats: JobStats) -> JobOut {
        JobOut {
            slat: [new_histogram(), new_histogram()],
            clat: [new_histogram(), new_histogram()],
            trim_clat: new_histogram(),
            lag: new_histogram(),
            from_schedule: [new_histogram(), new_histogram()],
            stats,
            ios: [0; 2],
            bytes: [0; 2],
            verified: 0,
            verify_clat: new_histogram(),
            verify_reads: 0,
            verify_time: Duration::ZERO,
            steady: None,
            latency_search: None,
            exec_ended: None,
            elapsed: Duration::ZERO,
            verify_failed: None,
        }
    }

    /// Everything measured so far dropped (fio's `reset_all_stats` and `reset_io_stats`
    /// before the final run at the depth its latency target's search found); the logs go on.
    pub(super) fn restart(&mut self) {
        let histograms = (self.slat.iter_mut())
            .chain(&mut self.clat)
            .chain(&mut self.from_schedule)
            .chain([&mut self.trim_clat, &mut self.lag, &mut self.verify_clat]);
        histograms.for_each(|h| h.reset());
        self.stats.restart();
        (self.ios, self.bytes) = ([0; 2], [0; 2]);
    }
}

//! What fio reports of each thread of a job file's job (its thread_stat) beside the phase's
//! totals: the thread's own I/Os, CPU time, queue depths, bandwidth and IOPS samples and
//! latency histograms, so that fio's outputs can be made again from a stored run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::LatencySummary;

/// One thread of a job (one of its `numjobs` copies).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct JobThread {
    /// The job's name, its place among the jobs that ran at the same time, its copy.
    pub job: String,
    pub index: u32,
    pub copy: u32,
    /// From the jobs' common start to this thread's end (its last sync included).
    pub runtime_ns: u64,
    /// The process (or thread, for a worker thread) that ran it, as fio's job header names
    /// it; 0 in records stored before it was kept.
    #[serde(default)]
    pub pid: u32,
    /// The thread's own getrusage over its run.
    pub usr_ns: u64,
    pub sys_ns: u64,
    /// Context switches, voluntary and not.
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    /// Per direction (read, write): I/Os and bytes completed.
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    /// fsync and fdatasync calls.
    pub syncs: u64,
    /// fio's "IO depths": I/Os by the queue depth they were submitted at (1, 2, 4, 8, 16,
    /// 32, ≥64).
    pub depth: [u64; 7],
    /// Submit calls by the I/Os each submitted, and reaps by the I/Os each completed (0,
    /// 1–4, 5–8, 9–16, 17–32, 33–64, >64).
    pub submit: [u64; 7],
    pub complete: [u64; 7],
    /// Bandwidth samples (KiB/s) and IOPS samples per direction, one per interval as fio's
    /// `bwavgtime` and `iopsavgtime` take them.
    pub bw: [SampleStats; 2],
    pub iops: [SampleStats; 2],
    /// `read slat`, `read clat`, `read lat` (from the I/O's preparation, fio's), the same
    /// for `write` (and `trim` beside them), and `sync`.
    pub latency: BTreeMap<String, LatencySummary>,
    /// Failed I/Os the thread went past (fio's `continue_on_error`), and the first one's
    /// errno (0: none).
    #[serde(default)]
    pub total_err: u64,
    #[serde(default)]
    pub first_error: i32,
    /// The errno that ended the thread (fio's `error`): EILSEQ (84) where a read failed its
    /// verify; 0: it ran to its end.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub error: i32,
    /// Per direction, the I/Os that failed and were gone past: fio counts them issued (in
    /// its `total_ios` and IOPS), not in the bytes.
    #[serde(default)]
    pub failed: [u64; 2],
    /// fio's steady state check (`ss`), from the thread that checked (with
    /// `group_reporting`, the group's last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<FioSteadyState>,
    /// The trims of a job that trims and writes (fio's `trimwrite`); a job that only trims
    /// keeps its trims in the second direction.
    #[serde(default, skip_serializing_if = "Trims::is_empty")]
    pub trims: Trims,
    /// fio's latency target search (`latency_target`), where the thread's ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_search: Option<LatencySearch>,
    /// fio's verify phase after the thread's writes (`verify`): its reads (counted in
    /// `ios`, `bytes` and the `read` latencies, as fio counts them) and its time, after
    /// `runtime_ns`. A check during the writes (`verify_backlog`) is in the job's time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verify_reads: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verify_ns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_i32(n: &i32) -> bool {
    *n == 0
}

/// What fio reports of a job's latency target search: the depth it ended at (fio's
/// `latency_depth`) and the search's settings.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencySearch {
    pub depth: u32,
    /// The target an I/O's latency (from its preparation) must meet.
    pub target_ns: u64,
    /// How long each depth runs before its window is judged.
    pub window_us: u64,
    /// The share of a window's I/Os that must meet the target, in percent.
    pub percentile: f64,
}

/// What fio reports of a steady state check: the criterion, whether it was attained, and
/// the window's samples.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FioSteadyState {
    /// fio's `ss` as its JSON writes it (`iops_slope:0.100000%`).
    pub ss: String,
    /// The window, in seconds (one sample each).
    pub duration: u64,
    pub attained: bool,
    /// The last criterion computed: a slope or the largest deviation from the mean, in % of
    /// the mean where `percent`.
    pub criterion: f64,
    pub percent: bool,
    /// IOPS (else bandwidth) was checked, by its slope (else its deviation).
    pub iops: bool,
    pub by_slope: bool,
    pub max_deviation: f64,
    pub slope: f64,
    /// The window's samples, oldest first: bandwidth (bytes/s) and IOPS.
    pub bw_samples: Vec<u64>,
    pub iops_samples: Vec<u64>,
}

/// A thread's trims beside its writes, as one direction of [`JobThread`].
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Trims {
    pub ios: u64,
    pub bytes: u64,
    pub bw: SampleStats,
    pub iops: SampleStats,
}

impl Trims {
    pub fn is_empty(&self) -> bool {
        self.ios == 0
    }
}

/// Samples of a rate summarized as fio keeps them: count, min, max, mean and the sum of
/// squared deviations (Welford's), so that threads and runs merge.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct SampleStats {
    pub samples: u64,
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub squares: f64,
}

impl SampleStats {
    pub fn add(&mut self, value: u64) {
        self.samples += 1;
        if self.samples == 1 {
            (self.min, self.max) = (value, value);
        } else {
            self.min = self.min.min(value);
            self.max = self.max.max(value);
        }
        let delta = value as f64 - self.mean;
        self.mean += delta / self.samples as f64;
        self.squares += delta * (value as f64 - self.mean);
    }

    /// The sample standard deviation, 0 for fewer than two samples.
    pub fn stdev(&self) -> f64 {
        if self.samples > 1 {
            (self.squares / (self.samples - 1) as f64).sqrt()
        } else {
            0.0
        }
    }

    /// Both sets of samples as one (Chan's parallel algorithm, as fio's `sum_stat`).
    pub fn merge(&mut self, other: &SampleStats) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *other;
            return;
        }
        let n = (self.samples + other.samples) as f64;
        let delta = other.mean - self.mean;
        self.squares +=
            other.squares + delta * delta * (self.samples as f64 * other.samples as f64) / n;
        self.mean = (self.mean * self.samples as f64 + other.mean * other.samples as f64) / n;
        self.samples += other.samples;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Rates of threads that ran side by side added up, as fio's group reporting adds them.
    pub fn add_up(&mut self, other: &SampleStats) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *other;
            return;
        }
        self.min += other.min;
        self.max += other.max;
        self.mean += other.mean;
        self.squares += other.squares;
        self.samples += other.samples;
    }
}

/// Log files (fio's `write_*_log`) a phase made in memory: never stored with the results;
/// whoever writes them takes them, once, as the phase ends (a clone shares them).
#[derive(Debug, Clone, Default)]
pub struct PendingLogs(Arc<Mutex<Vec<LogFile>>>);

/// One log file: where fio would write it (relative to the working directory unless the job
/// file named an absolute path) and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct LogFile {
    pub path: PathBuf,
    pub text: String,
}

impl PendingLogs {
    pub fn push(&self, file: LogFile) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(file);
    }

    pub fn extend(&self, other: &PendingLogs) {
        let taken = other.take();
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(taken);
    }

    pub fn take(&self) -> Vec<LogFile> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Logs are no part of what was measured: two measurements compare equal without them.
impl PartialEq for PendingLogs {
    fn eq(&self, _: &PendingLogs) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[u64]) -> SampleStats {
        let mut s = SampleStats::default();
        for v in values {
            s.add(*v);
        }
        s
    }

    #[test]
    fn samples_merge_as_if_taken_together() {
        let (a, b) = ([4, 8, 6], [10, 2, 7, 7]);
        let mut merged = of(&a);
        merged.merge(&of(&b));
        let all = of(&[4, 8, 6, 10, 2, 7, 7]);
        assert_eq!((merged.samples, merged.min, merged.max), (7, 2, 10));
        assert!((merged.mean - all.mean).abs() < 1e-9);
        assert!((merged.stdev() - all.stdev()).abs() < 1e-9);
        // 4, 6, 8: mean 6, sample standard deviation 2.
        assert!((of(&a).stdev() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn side_by_side_rates_add_up() {
        let mut total = of(&[100, 200]);
        total.add_up(&of(&[50, 50]));
        assert_eq!((total.min, total.max, total.samples), (150, 250, 4));
        assert!((total.mean - 200.0).abs() < 1e-12);
    }
}

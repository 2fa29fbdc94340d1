//! What a phase measured: totals, CPU time, latency percentiles per operation type and over
//! time, errors, the workload's own figures and the phase's shape.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod figure;
mod job;
mod shape;
pub use figure::{Dim, DimValue, Figure, figure_name};
pub use job::{FioSteadyState, JobThread, LatencySearch, LogFile, PendingLogs, SampleStats, Trims};
pub use shape::{PhaseShape, SteadyState, ThreadsDone};

/// What a phase measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PhaseMeasurement {
    pub elapsed_ns: u64,
    /// Units completed (directories or files, as the phase defines).
    pub ops: u64,
    pub bytes: u64,
    pub cpu_user_ns: u64,
    pub cpu_system_ns: u64,
    /// Per operation type.
    pub latency: BTreeMap<String, LatencySummary>,
    /// Failed system calls by errno name.
    pub errors: BTreeMap<String, u64>,
    /// Archive members refused because they would land outside the target.
    #[serde(default)]
    pub refused: u64,
    /// The first few failures and refusals, with their paths.
    #[serde(default)]
    pub failures: Vec<String>,
    /// p50, p99 and max of the calls per interval of the phase (calls timed on the phase's
    /// own thread, and the io workload's jobs; other worker threads' calls are in `latency`
    /// only).
    #[serde(default, skip_serializing_if = "LatencyTimeline::is_empty")]
    pub latency_timeline: LatencyTimeline,
    /// Each thread of a fio job file's jobs, as fio reports it (the io workload).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobThread>,
    /// fio's log files (`write_lat_log`...), for the command line to write: not stored.
    #[serde(skip)]
    pub logs: PendingLogs,
}

impl PhaseMeasurement {
    /// Failed calls and refusals, e.g. `EMLINK ×1,001, refused ×2`; `None` when there were none.
    pub fn failure_summary(&self) -> Option<String> {
        let mut parts: Vec<String> = self
            .errors
            .iter()
            .map(|(e, n)| format!("{e} ×{}", crate::units::group_thousands(*n)))
            .collect();
        if self.refused > 0 {
            parts.push(format!(
                "refused ×{}",
                crate::units::group_thousands(self.refused)
            ));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
    pub fn elapsed_secs(&self) -> f64 {
        self.elapsed_ns as f64 / 1e9
    }

    /// Units per second.
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed_secs()
    }

    pub fn kib_per_sec(&self) -> f64 {
        self.bytes as f64 / 1024.0 / self.elapsed_secs()
    }

    /// CPU time (user + system) as a percentage of elapsed time.
    pub fn cpu_percent(&self) -> f64 {
        (self.cpu_user_ns + self.cpu_system_ns) as f64 / self.elapsed_ns as f64 * 100.0
    }
}

/// Percentiles of one operation type, in nanoseconds, and the histogram they came from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// The whole histogram, HdrHistogram's V2 encoding in base64, so that any percentile can
    /// be recomputed and runs can be merged.
    #[serde(default)]
    pub histogram: String,
}

/// The latency of a phase's calls per interval, from the phase's start.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencyTimeline {
    /// Every interval's width; interval `i` covers [i × width, (i + 1) × width).
    pub interval_ms: u64,
    pub points: Vec<LatencyPoint>,
}

impl LatencyTimeline {
    pub fn is_empty(&self) -> bool {
        self.points.iter().all(|p| p.calls == 0)
    }
}

/// One interval: the calls that ended in it and their latencies (all operation types).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencyPoint {
    pub calls: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

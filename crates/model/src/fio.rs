//! What a fio job file said of a job beyond what it does: its options as written (fio's
//! JSON repeats them), its group and thread numbers, how fio reports it, and the log files
//! it asks for.

use serde::{Deserialize, Serialize};

/// One job of a job file, as fio's outputs name and group it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FioJob {
    /// The job's own section's options, as written (after `${VAR}` and keyword expansion),
    /// in order; flags (options without a value) are left out, as fio leaves them out.
    pub options: Vec<(String, String)>,
    /// The `[global]` options above it, the same way.
    pub global: Vec<(String, String)>,
    /// fio's group id: counts `stonewall` and `new_group` from 0.
    pub groupid: u32,
    /// fio's thread number of the job's first copy (from 1 over the whole file), which its
    /// log files carry.
    pub first_thread: u32,
    /// `group_reporting`: the group's threads are reported as one.
    #[serde(default)]
    pub group_reporting: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "LogOptions::is_off")]
    pub logs: LogOptions,
    /// What fio says of the job as it reads it and goes on (`time_based` without a
    /// runtime), for stderr before the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// fio's `write_*_log` options and how they log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogOptions {
    /// Each log's file prefix (the job's name where the option has no value).
    pub lat: Option<String>,
    pub bw: Option<String>,
    pub iops: Option<String>,
    pub hist: Option<String>,
    /// `log_avg_msec`: one averaged entry per window; 0 logs every I/O.
    pub avg_msec: u64,
    /// `log_max_value`: a window's maximum instead of its mean.
    pub max_value: bool,
    /// `log_offset`: each entry with its I/O's offset.
    pub offset: bool,
    /// `per_job_logs` (default on): a file per thread, `NAME_lat.N.log`; off: one file.
    pub per_job: bool,
    /// `log_hist_msec`: the histogram log's interval (no histogram log without it).
    pub hist_msec: u64,
    /// `log_prio`: each entry's I/O priority as its value (`0x2004`); without it, 1 for
    /// the real-time class and 0 for the others, as fio writes them.
    #[serde(default)]
    pub prio: bool,
}

impl Default for LogOptions {
    fn default() -> LogOptions {
        LogOptions {
            lat: None,
            bw: None,
            iops: None,
            hist: None,
            avg_msec: 0,
            max_value: false,
            offset: false,
            per_job: true,
            hist_msec: 0,
            prio: false,
        }
    }
}

impl LogOptions {
    pub fn is_off(&self) -> bool {
        self.lat.is_none() && self.bw.is_none() && self.iops.is_none() && self.hist.is_none()
    }

    /// The file a log of kind `kind` (`lat`, `clat`, `bw`, `clat_hist`...) with prefix
    /// `prefix` has for fio's thread `thread`: `PREFIX_KIND.THREAD.log`, or `PREFIX_KIND.log`
    /// without `per_job_logs`.
    pub fn file_name(&self, prefix: &str, kind: &str, thread: u32) -> String {
        if self.per_job {
            format!("{prefix}_{kind}.{thread}.log")
        } else {
            format!("{prefix}_{kind}.log")
        }
    }
}

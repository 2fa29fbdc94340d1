//! What a configuration's crash states showed: a crash-recorded run's states checked, beside
//! (never inside) its speed figures.

use serde::{Deserialize, Serialize};

/// One configuration's crash check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CrashSummary {
    /// The workload recorded (its label).
    pub workload: String,
    /// States checked; `planned` were chosen (fewer checked when the time bound ended it).
    pub states: u32,
    pub planned: u32,
    /// States whose recovery mount failed.
    pub unmountable: u32,
    /// Mounted states that fsck found inconsistent after recovery.
    pub inconsistent: u32,
    /// States that fsck found inconsistent before recovery (informative: a journal not
    /// replayed yet is expected to show).
    pub dirty_before: u32,
    /// States that lost something a durability call had promised (mounted ones only).
    pub lost: u32,
    /// States that could not be checked (a tool failed): counted in none of the above.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: u32,
    /// What was lost, as `path: why`, the first few distinct ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_files: Vec<String>,
    /// Promises the workload noted (files and directories fsync'ed): 0 means the states
    /// were checked for consistency only.
    pub promises: u32,
    /// Crash points (flushes, promises, the log's end) the states were taken at.
    pub points: u32,
    /// The block log: records, flushes among them, bytes.
    pub records: u64,
    pub flushes: u64,
    pub log_bytes: u64,
    /// The recorded run's time over the mean of the plain runs' (same workload and
    /// configuration): what recording costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// The seed the states were chosen with: the same log and seed give the same states.
    pub seed: u64,
    /// Set when the time bound stopped the checks before every planned state.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub time_limited: bool,
    /// Where the recording was kept (`--crash-keep`), for `fsbench crash show`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// Why the crash check could not be done, where it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl CrashSummary {
    /// Whether any state lost promised data.
    pub fn loses_data(&self) -> bool {
        self.lost > 0
    }

    /// `lost 3/500` or `0/500 lost`: the one-line safety figure, with its state count.
    pub fn safety_cell(&self) -> String {
        if self.error.is_some() && self.states == 0 {
            return "not checked".into();
        }
        if self.promises == 0 {
            return format!("{} unmountable/{}", self.unmountable, self.states);
        }
        format!("{}/{} lost", self.lost, self.states)
    }
}

/// A configuration's checks (one a workload) as one: states and losses added up, the
/// lost files of each, the largest cost.
pub fn total(checks: &[CrashSummary]) -> Option<CrashSummary> {
    let first = checks.first()?;
    let mut sum = CrashSummary {
        workload: checks
            .iter()
            .map(|c| c.workload.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        ..first.clone()
    };
    for c in &checks[1..] {
        sum.states += c.states;
        sum.planned += c.planned;
        sum.unmountable += c.unmountable;
        sum.inconsistent += c.inconsistent;
        sum.dirty_before += c.dirty_before;
        sum.lost += c.lost;
        sum.errors += c.errors;
        sum.promises += c.promises;
        sum.points += c.points;
        sum.records += c.records;
        sum.flushes += c.flushes;
        sum.log_bytes += c.log_bytes;
        sum.time_limited |= c.time_limited;
        sum.cost = match (sum.cost, c.cost) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        sum.lost_files.extend(c.lost_files.iter().cloned());
        sum.error = sum.error.or_else(|| c.error.clone());
    }
    Some(sum)
}

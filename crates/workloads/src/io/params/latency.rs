//! fio's latency target (`latency_target`, `latency_window`, `latency_percentile`,
//! `latency_run`): the settings of the search for the deepest queue whose I/Os meet a
//! latency, as fio's io_u.c makes it.

use serde::{Deserialize, Serialize};

use super::{IoParams, values};
use crate::options::Parsed;
use fsbench_measure::error::invalid;

/// A job's latency target (fio's options of the same names).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyTarget {
    /// An I/O slower than this (from its preparation to its completion, fio's `lat`)
    /// misses the target.
    pub target_ns: u64,
    /// How long each depth runs before the share of its I/Os that met the target is
    /// judged (0: at every completion).
    pub window_us: u64,
    /// The share of a window's I/Os that must meet the target, in percent; at 100 a single
    /// I/O that misses lowers the depth at once.
    pub percentile: f64,
    /// fio's `latency_run`: the search goes on for the whole job, instead of ending with a
    /// window at the depth found.
    pub keeps_searching: bool,
}

/// The job's latency target; `None` without `latency_target` (or at 0, as in fio).
pub(super) fn latency_target(p: &Parsed) -> anyhow::Result<Option<LatencyTarget>> {
    let micros = |key| p.text(key).map_or(Ok(0), |t| values::parse_micros(key, t));
    let target_us = micros("latency-target")?;
    if target_us == 0 {
        return Ok(None);
    }
    let percentile = match p.text("latency-percentile") {
        None => 100.0,
        Some(text) => {
            let number = text.trim().trim_end_matches('%').parse::<f64>().ok();
            number
                .filter(|n| (0.0..=100.0).contains(n))
                .ok_or_else(|| {
                    invalid(format!(
                        "io: `latency-percentile={text}`: a percentage from 0 to 100"
                    ))
                })?
        }
    };
    Ok(Some(LatencyTarget {
        target_ns: target_us.saturating_mul(1000),
        window_us: micros("latency-window")?,
        percentile,
        keeps_searching: p.flag("latency-run"),
    }))
}

impl IoParams {
    /// What fsbench does not take with a latency target: the file engines, a rate and a
    /// steady state check, whose schedule and samples fio starts again with the final run
    /// at the depth found.
    pub(super) fn validate_latency_target(&self) -> anyhow::Result<()> {
        if self.latency_target.is_none() {
            return Ok(());
        }
        if self.engine.file_op() {
            return Err(invalid(format!(
                "io: `latency-target` with ioengine={}: each file's operation is made once, so a final run at the depth found would have none left; not implemented",
                self.engine.name()
            )));
        }
        let with = if self.rate > 0 || self.rate_iops > 0 {
            "`rate` or `rate-iops`"
        } else if self.steady.is_some() {
            "`ss-dur`"
        } else {
            return Ok(());
        };
        Err(invalid(format!(
            "io: `latency-target` with {with} is not implemented (fio starts their schedule or samples again for the final run at the depth found)"
        )))
    }
}

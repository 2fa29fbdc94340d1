//! fio's steady state options (`ss`, `ss_dur`, `ss_ramp`): what a job's rolling window of
//! per-second IOPS or bandwidth must show for the job to stop, as fio's steadystate.c.

use serde::{Deserialize, Serialize};

use super::parse_time;
use crate::options::Parsed;
use fsbench_measure::error::invalid;

/// A job's steady state criterion (fio's `ss=iops_slope:0.1%`, `ss_dur`, `ss_ramp`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadySpec {
    /// IOPS (else bandwidth, bytes per second) is what the window holds.
    pub iops: bool,
    /// The criterion is the window's slope (else its largest deviation from its mean).
    pub slope: bool,
    /// The limit is a percentage of the window's mean (else an absolute value).
    pub percent: bool,
    /// Below this the state is attained.
    pub limit: f64,
    /// The window: one sample a second, this many.
    pub seconds: u64,
    /// Samples start a second after this long (fio's `ss_ramp`).
    pub ramp_ms: u64,
}

impl SteadySpec {
    /// fio's `ss` as its JSON gives it: `iops_slope:0.100000%`.
    pub fn text(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            if self.iops { "iops" } else { "bw" },
            if self.slope { "_slope" } else { "" },
            self.limit as f32,
            if self.percent { "%" } else { "" }
        )
    }
}

/// The job's steady state criterion; `None` without `ss_dur` (fio checks nothing then).
pub(super) fn steady(p: &Parsed) -> anyhow::Result<Option<SteadySpec>> {
    let time = |key| p.text(key).map_or(Ok(0), |t| parse_time(key, t));
    // fio counts the window in whole seconds: none under a second.
    let seconds = time("ss-dur")? / 1000;
    if seconds == 0 {
        return Ok(None);
    }
    let ramp_ms = time("ss-ramp")?;
    // fio's default criterion.
    let text = p.text("ss").unwrap_or("iops_slope:0.01%");
    let bad = |why: &str| invalid(format!("io: `ss={text}`: {why}"));
    let (kind, limit) = text
        .split_once(':')
        .ok_or_else(|| bad("the threshold must be given after the criterion (KIND:LIMIT)"))?;
    let (iops, slope) = match kind {
        "iops" => (true, false),
        "iops_slope" => (true, true),
        "bw" => (false, false),
        "bw_slope" => (false, true),
        _ => return Err(bad("fio's criteria are iops, iops_slope, bw and bw_slope")),
    };
    let limit = limit.trim();
    let (limit, percent) = match limit.strip_suffix('%') {
        Some(pct) => (pct.trim().parse::<f64>().ok(), true),
        // fio reads a bandwidth with its size suffixes, IOPS as a number.
        None if !iops => (
            fsbench_model::units::parse_size(limit)
                .ok()
                .map(|b| b as f64),
            false,
        ),
        None => (limit.parse::<f64>().ok(), false),
    };
    let limit = limit.ok_or_else(|| bad("the threshold is not a number"))?;
    Ok(Some(SteadySpec {
        iops,
        slope,
        percent,
        limit,
        seconds,
        ramp_ms,
    }))
}

//! fio's options on when a job's I/Os are issued beyond its rate: `rate_process` (the
//! rate's arrivals evenly spaced or a Poisson process's), `io_submit_mode` (who submits)
//! and `flow` (jobs sharing their I/Os by weight).

use serde::{Deserialize, Serialize};

use super::{Engine, IoParams};
use crate::options::Parsed;
use fsbench_measure::error::invalid;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pacing {
    /// fio's `rate_process=poisson`: the rate's I/Os arrive as a Poisson process (each gap
    /// drawn from an exponential distribution of the rate's mean), not evenly spaced.
    pub poisson: bool,
    /// fio's `io_submit_mode=offload`: fio's job thread only prepares each I/O on the rate's
    /// schedule and worker threads submit it. fsbench's open loop already issues each I/O
    /// when due, whatever completes, while a slot of `iodepth` is free (fio's offload has as
    /// many I/Os): with a queueing engine it is the same schedule, issued from the job's
    /// thread.
    pub offload: bool,
    /// fio's `flow_id`, `flow` (the job's weight in it; 0: none) and `flow_sleep`
    /// (microseconds a held-back job sleeps): jobs of one flow share its I/Os by weight.
    #[serde(default)]
    pub flow_id: u32,
    #[serde(default)]
    pub flow: u32,
    #[serde(default)]
    pub flow_sleep_us: u64,
}

impl Pacing {
    pub fn is_default(&self) -> bool {
        *self == Pacing::default()
    }
}

pub(super) fn pacing(p: &Parsed) -> Pacing {
    Pacing {
        poisson: p.text("rate-process") == Some("poisson"),
        offload: p.text("io-submit-mode") == Some("offload"),
        flow_id: p.small("flow-id").expect("has a default"),
        flow: p.small("flow").expect("has a default"),
        flow_sleep_us: p.num("flow-sleep").expect("has a default"),
    }
}

impl IoParams {
    /// `io_submit_mode=offload` where fsbench's inline issuing is the same: a queueing
    /// engine, or one I/O at a time.
    pub(super) fn validate_pacing(&self) -> anyhow::Result<()> {
        let queues = matches!(
            self.engine,
            Engine::IoUring | Engine::Libaio | Engine::Posixaio
        );
        if self.pacing.offload && !queues && self.iodepth > 1 {
            return Err(invalid(format!(
                "io: `io_submit_mode=offload` with ioengine={} has {} worker threads each do one I/O at a time, {} at once: not implemented (give a queueing engine, or iodepth=1)",
                self.engine.name(),
                self.iodepth,
                self.iodepth
            )));
        }
        Ok(())
    }

    /// The rate's I/Os per second as fio's Poisson process takes them: `rate_iops`, or
    /// `rate` over the smallest block (fio's `bps / min_bs`).
    pub(crate) fn poisson_iops(&self) -> u64 {
        match self.rate_iops {
            0 => self.rate / self.min_bs().max(1),
            iops => iops,
        }
    }
}

/// One gap of fio's Poisson process at `iops` (from a uniform draw `u` in (0, 1]), in
/// nanoseconds: fio's whole microseconds of `1000000 / iops` (integer) times `-ln u`.
pub(crate) fn poisson_gap_ns(iops: u64, u: f64) -> u64 {
    let mean_us = (1_000_000 / iops.max(1)) as f64;
    // fio computes in single precision (`logf`) and truncates to whole microseconds.
    let gap_us = (mean_us * -(u as f32).ln() as f64) as u64;
    gap_us * 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_gaps_have_the_rate_s_mean() {
        assert_eq!(poisson_gap_ns(50, 1.0), 0);
        let one_mean = poisson_gap_ns(50, (-1.0f64).exp());
        assert!((19_999_000..=20_000_000).contains(&one_mean), "{one_mean}");
        assert_eq!(one_mean % 1000, 0, "whole microseconds");
        // The mean of -ln u over u evenly in (0, 1] is 1.
        let n = 100_000;
        let total: u64 = (1..=n)
            .map(|i| poisson_gap_ns(1000, i as f64 / n as f64))
            .sum();
        let mean_us = total as f64 / n as f64 / 1000.0;
        assert!((mean_us - 1000.0).abs() < 5.0, "{mean_us}");
    }
}

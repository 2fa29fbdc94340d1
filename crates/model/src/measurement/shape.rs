//! The shape of a phase beyond its totals: its steady state after warm-up (MSER-5) and,
//! for several threads, first-done against last-done.

use serde::{Deserialize, Serialize};

/// The steady state of a phase.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SteadyState {
    /// Whether the phase settled: MSER-5's truncation lies in its first half.
    pub reached: bool,
    /// Seconds of warm-up MSER-5 cut off.
    pub warmup_secs: f64,
    /// Units per second after the warm-up (over the retained stretch).
    pub rate: f64,
    /// Batches of 5 intervals analysed, and how many were cut as warm-up.
    pub batches: usize,
    pub truncated_batches: usize,
}

/// First-done and last-done of a phase run by several threads.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThreadsDone {
    pub threads: u32,
    /// When the first thread finished, from the phase's start.
    pub first_done_secs: f64,
    /// Units per second of all threads until the first finished.
    pub first_done_rate: f64,
    /// Units per second until the last finished: the whole phase's rate.
    pub last_done_rate: f64,
}

/// What a phase's time series says beyond its totals.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PhaseShape {
    /// `None` when the phase was too short to analyse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyState>,
    /// Only for phases with several threads that said when they finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<ThreadsDone>,
    /// The phase's rate as a percentage of the harness ceiling (the same phase on tmpfs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_percent: Option<f64>,
}

impl PhaseShape {
    pub fn is_empty(&self) -> bool {
        self.steady.is_none() && self.threads.is_none() && self.harness_percent.is_none()
    }
}

impl ThreadsDone {
    /// `threads` threads; the first finished `first.0` seconds into the phase, when all had
    /// done `first.1` units; the phase ended after `last.0` seconds with `last.1` units.
    pub fn new(threads: u32, first: (f64, u64), last: (f64, u64)) -> ThreadsDone {
        ThreadsDone {
            threads,
            first_done_secs: first.0,
            first_done_rate: first.1 as f64 / first.0.max(1e-9),
            last_done_rate: last.1 as f64 / last.0.max(1e-9),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_done_is_the_rate_until_the_first_thread_finished() {
        // Four threads at 100 units/s each for 2 s, then one alone until 4 s.
        let t = ThreadsDone::new(4, (2.0, 800), (4.0, 1000));
        assert_eq!(t.first_done_rate, 400.0);
        assert_eq!(t.last_done_rate, 250.0);
        assert_eq!(t.first_done_secs, 2.0);
    }
}

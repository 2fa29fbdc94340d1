//! fio's latency target search (io_u.c's `lat_target_*`): the job starts at depth 1, and at
//! the end of each window raises its depth limit when enough of the window's I/Os met the
//! target and lowers it when not (at `latency_percentile=100`, at the first I/O that misses
//! it); once a raise leaves the depth where it was, the figures are dropped and a last
//! window runs at that depth, which is what the job reports (unless `latency_run`, which
//! searches to the job's end).

use std::time::Instant;

use super::params::LatencyTarget;
use fsbench_model::measurement::LatencySearch;

/// What the job does after a step of the search.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Go on.
    Go,
    /// The depth changed: the I/Os in flight complete before the next window starts
    /// ([`DepthSearch::settled`]).
    Quiesce,
    /// An I/O missed a target of 100% at depth 1: the job fails, as fio's (ETIMEDOUT).
    Fails,
}

/// One job thread's search.
pub(crate) struct DepthSearch {
    spec: LatencyTarget,
    iodepth: u32,
    /// fio's `latency_qd`: the depth limit now, and the bounds the search bisects between.
    depth: u32,
    high: u32,
    low: u32,
    /// Raises in a row that could not raise the depth (fio's `latency_stable_count`).
    stable: u32,
    window_start: Instant,
    /// I/Os completed in this window, and how many missed the target.
    ios: u64,
    missed: u64,
    /// The depth changed: what is in flight completes before the next window starts.
    quiescing: bool,
    /// The last window at the depth found runs now (fio's `latency_end_run`).
    final_run: bool,
    /// The job's figures are dropped once nothing is in flight: the final run starts.
    restart_due: bool,
    /// The final run ended: the job is done.
    done: bool,
}

impl DepthSearch {
    /// The search of a job whose queue holds at most `iodepth` I/Os (fio's
    /// `lat_target_init`).
    pub(crate) fn new(spec: LatencyTarget, iodepth: u32) -> DepthSearch {
        DepthSearch {
            spec,
            iodepth: iodepth.max(1),
            depth: 1,
            high: iodepth.max(1),
            low: 1,
            stable: 0,
            window_start: Instant::now(),
            ios: 0,
            missed: 0,
            quiescing: false,
            final_run: false,
            restart_due: false,
            done: false,
        }
    }

    /// The I/Os the job may have in flight now.
    #[inline]
    pub(crate) fn depth(&self) -> u32 {
        self.depth
    }

    /// Whether the search has ended the job (its final window ran).
    #[inline]
    pub(crate) fn done(&self) -> bool {
        self.done
    }

    /// Whether the I/Os in flight must complete before the next is issued.
    #[inline]
    pub(crate) fn quiescing(&self) -> bool {
        self.quiescing
    }

    /// An I/O completed at `now`, `lat_ns` after its preparation: counted in the window
    /// (fio's `lat_target_failed` for one that missed), then the window judged when it is
    /// over (fio's `lat_target_check`).
    #[inline]
    pub(crate) fn completed(&mut self, lat_ns: u64, now: Instant) -> Step {
        self.ios += 1;
        if lat_ns > self.spec.target_ns {
            if self.spec.percentile >= 100.0 {
                return match self.lower() {
                    Step::Go => Step::Fails,
                    step => step,
                };
            }
            self.missed += 1;
        }
        if self.quiescing {
            return Step::Go;
        }
        let window = now.saturating_duration_since(self.window_start);
        if (window.as_micros() as u64) < self.spec.window_us {
            return Step::Go;
        }
        let met = 100.0 * (self.ios - self.missed) as f64 / self.ios as f64;
        if met >= self.spec.percentile {
            self.raise()
        } else {
            self.lower()
        }
    }

    /// Nothing is in flight any more: the next window starts now; whether the job's figures
    /// are to be dropped first (the final run starts).
    pub(crate) fn settled(&mut self) -> bool {
        self.quiescing = false;
        self.new_window();
        std::mem::take(&mut self.restart_due)
    }

    /// The window started at `at` (the final run's start).
    pub(crate) fn window_from(&mut self, at: Instant) {
        self.window_start = at;
    }

    /// What the job reports of its search.
    pub(crate) fn record(&self) -> LatencySearch {
        LatencySearch {
            depth: self.depth,
            target_ns: self.spec.target_ns,
            window_us: self.spec.window_us,
            percentile: self.spec.percentile,
        }
    }

    fn new_window(&mut self) {
        self.window_start = Instant::now();
        (self.ios, self.missed) = (0, 0);
    }

    /// fio's `__lat_target_failed`: the depth halfway down to the lowest that met the
    /// target (one lower where it is that one). At depth 1 nothing changes, not even the
    /// window, which goes on until its share is met (`Go`).
    fn lower(&mut self) -> Step {
        if self.depth == 1 {
            return Step::Go;
        }
        self.high = self.depth;
        if self.depth == self.low {
            self.low = self.low.saturating_sub(1).max(1);
        }
        self.depth = ((self.depth + self.low) / 2).max(1);
        self.stable = 0;
        self.quiescing = true;
        Step::Quiesce
    }

    /// fio's `lat_target_success`: the depth doubled while nothing failed, else halfway up
    /// to the lowest that failed (which rises by one after three raises in a row could not
    /// move it); a raise that leaves it where it was starts the final run, or after the
    /// final run ends the job.
    fn raise(&mut self) -> Step {
        let before = self.depth;
        self.low = self.depth;
        if self.depth + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.depth = if self.high != self.iodepth {
            (self.depth + self.high) / 2
        } else {
            self.depth * 2
        }
        .min(self.iodepth);
        if !self.spec.keeps_searching && self.depth == before {
            if self.final_run {
                self.done = true;
            } else {
                self.final_run = true;
                self.restart_due = true;
                self.quiescing = true;
                return Step::Quiesce;
            }
        }
        self.new_window();
        Step::Go
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(percentile: f64, iodepth: u32) -> DepthSearch {
        let spec = LatencyTarget {
            target_ns: 1000,
            window_us: 0,
            percentile,
            keeps_searching: false,
        };
        DepthSearch::new(spec, iodepth)
    }

    /// Windows of I/Os that all meet the target double the depth up to the job's iodepth,
    /// then a final window runs there and ends the job, as fio's search.
    #[test]
    fn a_loose_target_climbs_to_iodepth_then_runs_a_final_window() {
        let mut s = search(99.0, 16);
        let mut depths = vec![s.depth()];
        while !s.done() {
            if s.completed(10, Instant::now()) == Step::Quiesce {
                assert!(s.settled(), "only the final run quiesces on a raise");
            }
            depths.push(s.depth());
            assert!(depths.len() < 20, "the search ends: {depths:?}");
        }
        depths.dedup();
        assert_eq!(depths, [1, 2, 4, 8, 16]);
        assert_eq!(s.record().depth, 16);
    }

    /// At 100%, an I/O that misses at depth 1 fails the job; above it, it lowers the depth
    /// at once and the job waits for what is in flight.
    #[test]
    fn a_miss_at_100_percent_lowers_the_depth_and_fails_at_depth_1() {
        let mut s = search(100.0, 8);
        assert_eq!(s.completed(10, Instant::now()), Step::Go);
        assert_eq!(s.depth(), 2);
        assert_eq!(s.completed(10, Instant::now()), Step::Go);
        assert_eq!(s.depth(), 4);
        assert_eq!(s.completed(5000, Instant::now()), Step::Quiesce);
        assert!(s.quiescing());
        // fio's bisection: halfway down to the last depth that met the target.
        assert_eq!(s.depth(), 3);
        assert!(!s.settled());
        assert_eq!(s.completed(5000, Instant::now()), Step::Quiesce);
        assert_eq!(s.depth(), 2);
        s.settled();
        s.completed(5000, Instant::now());
        assert_eq!(s.depth(), 1);
        s.settled();
        assert_eq!(s.completed(5000, Instant::now()), Step::Fails);
    }

    /// Below 100%, a window whose share of I/Os met is under the percentile lowers the
    /// depth; at depth 1 it stays there, its window going on until the share is met.
    #[test]
    fn a_window_under_the_percentile_stays_at_depth_1_until_its_share_is_met() {
        let mut s = search(90.0, 4);
        assert_eq!(s.completed(5000, Instant::now()), Step::Go);
        assert_eq!(s.depth(), 1);
        for _ in 0..8 {
            assert_eq!(s.completed(10, Instant::now()), Step::Go);
            assert_eq!(s.depth(), 1, "8 of 9 met: under 90%");
        }
        assert_eq!(s.completed(10, Instant::now()), Step::Go);
        assert_eq!(s.depth(), 2, "9 of 10 met");
        assert_eq!(s.completed(5000, Instant::now()), Step::Quiesce);
        assert_eq!(s.depth(), 1);
        assert!(!s.done());
    }
}

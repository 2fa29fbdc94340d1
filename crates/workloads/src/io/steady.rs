//! fio's steady state detection (steadystate.c): once a second a job's IOPS and bandwidth
//! over the last second go into a rolling window of `ss_dur` samples; once the window is
//! full, its slope or its largest deviation from its mean (absolute, or in % of the mean)
//! below the limit ends the job. With `group_reporting` the group's threads are summed and
//! its last thread checks for all of them, as fio's: their counts are in memory the
//! workers share, and the group stops together.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::IoParams;
use super::params::SteadySpec;
use crate::parallel::shm::Region;
use fsbench_measure::error::FsbenchError;
use fsbench_model::measurement::FioSteadyState;

/// The rolling window and its sums, as fio's `steadystate_data` (the same ring, the same
/// sums updated the same way, so that the criterion and the samples' order are fio's).
struct Window {
    spec: SteadySpec,
    dur: usize,
    head: usize,
    tail: usize,
    iops: Vec<u64>,
    bw: Vec<u64>,
    full: bool,
    sum_y: u64,
    sum_xy: u64,
    oldest_y: u64,
    slope: f64,
    deviation: f64,
    criterion: f64,
}

impl Window {
    fn new(spec: SteadySpec) -> Window {
        let dur = spec.seconds as usize;
        Window {
            spec,
            dur,
            head: 0,
            tail: 0,
            iops: vec![0; dur],
            bw: vec![0; dur],
            full: false,
            sum_y: 0,
            sum_xy: 0,
            oldest_y: 0,
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
        }
    }

    fn values(&self) -> &[u64] {
        if self.spec.iops { &self.iops } else { &self.bw }
    }

    /// One second's sample; whether the state is attained (fio's `steadystate_slope` and
    /// `steadystate_deviation`).
    fn add(&mut self, iops: u64, bw: u64) -> bool {
        self.iops[self.tail] = iops;
        self.bw[self.tail] = bw;
        let new = if self.spec.iops { iops } else { bw };
        let window_full = self.full || self.tail.wrapping_sub(self.head) == self.dur - 1;
        if window_full && self.check(new) {
            return true;
        }
        self.tail = (self.tail + 1) % self.dur;
        if self.tail <= self.head {
            self.head = (self.head + 1) % self.dur;
        }
        false
    }

    /// The criterion over the full window, `new` its latest value.
    fn check(&mut self, new: u64) -> bool {
        let n = self.dur as u64;
        if !self.full {
            // As fio's first time through: the sums over the ring as it lies.
            self.sum_y = self.values().iter().sum();
            for i in 0..self.dur {
                let j = (self.head + i) % self.dur;
                self.sum_xy = (self.sum_xy).wrapping_add(i as u64 * self.values()[j]);
            }
            self.full = true;
        } else {
            self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(new);
            self.sum_xy = (self.sum_xy.wrapping_sub(self.sum_y)).wrapping_add(n * new);
        }
        self.oldest_y = self.values()[self.head];
        let mean = self.sum_y as f64 / n as f64;
        if self.spec.slope {
            let sum_x = (n * (n - 1) / 2) as f64;
            let sum_x_sq = ((n - 1) * n * (2 * n - 1) / 6) as f64;
            self.slope = (self.sum_xy as f64 - sum_x * self.sum_y as f64 / n as f64)
                / (sum_x_sq - sum_x * sum_x / n as f64);
            self.criterion = match self.spec.percent {
                true => 100.0 * self.slope / mean,
                false => self.slope,
            };
            return self.criterion.abs() < self.spec.limit;
        }
        self.deviation = (self.values().iter())
            .map(|v| (*v as f64 - mean).abs())
            .fold(0.0, f64::max);
        self.criterion = match self.spec.percent {
            true => 100.0 * self.deviation / mean,
            false => self.deviation,
        };
        self.criterion < self.spec.limit
    }
}

/// A job thread's steady state check.
pub(crate) struct Steady<'s> {
    window: Window,
    /// With `group_reporting`: the group's counts and stop flag, and this thread's place.
    share: Option<Share<'s>>,
    /// The next check, and the last one, in milliseconds from the job's start.
    next_ms: u64,
    last_ms: u64,
    ramp_over: bool,
    /// Per thread checked (this one alone, or the group's): its I/Os and bytes at the last
    /// check.
    last: Vec<(u64, u64)>,
    attained: bool,
}

impl<'s> Steady<'s> {
    /// The check of a thread of a job with `spec` (its group's `share` with
    /// `group_reporting`).
    pub(crate) fn new(spec: SteadySpec, share: Option<Share<'s>>) -> Steady<'s> {
        let threads = share.as_ref().map_or(1, |s| s.threads());
        Steady {
            window: Window::new(spec),
            share,
            next_ms: 1000,
            last_ms: 0,
            ramp_over: spec.ramp_ms == 0,
            last: vec![(0, 0); threads],
            attained: false,
        }
    }

    /// Whether the job stops now, its state attained (its group's), after `elapsed` with
    /// `ios` and `bytes` done; samples and checks once a second.
    #[inline]
    pub(crate) fn attained(&mut self, elapsed: Duration, ios: u64, bytes: u64) -> bool {
        if let Some(share) = &self.share {
            share.publish(ios, bytes);
            if share.stopped() {
                return true;
            }
            if !share.checks() {
                return false;
            }
        }
        let ms = elapsed.as_millis() as u64;
        if ms < self.next_ms {
            return false;
        }
        self.next_ms = ms - ms % 1000 + 1000;
        if !self.ramp_over && ms >= self.window.spec.ramp_ms + 1000 {
            self.ramp_over = true;
        }
        let span = (ms - self.last_ms).max(1);
        self.last_ms = ms;
        let (mut iops, mut bw) = (0, 0);
        for (t, last) in self.last.iter_mut().enumerate() {
            let now = match &self.share {
                Some(share) => share.counts(t),
                None => (ios, bytes),
            };
            iops += 1000 * (now.0 - last.0) / span;
            bw += 1000 * (now.1 - last.1) / span;
            *last = now;
        }
        if !self.ramp_over || !self.window.add(iops, bw) {
            return false;
        }
        self.attained = true;
        if let Some(share) = &self.share {
            share.stop();
        }
        true
    }

    /// What fio reports of the check; `None` from a thread that checked nothing (another
    /// of its group did).
    pub(crate) fn record(&self) -> Option<FioSteadyState> {
        if self.share.as_ref().is_some_and(|s| !s.checks()) {
            return None;
        }
        let w = &self.window;
        // fio's order: from the head when attained or not yet full, else from the slot
        // before it.
        let first = match self.attained || !w.full {
            true => w.head,
            false => (w.head + w.dur - 1) % w.dur,
        };
        let ordered =
            |v: &[u64]| -> Vec<u64> { (0..w.dur).map(|l| v[(first + l) % w.dur]).collect() };
        Some(FioSteadyState {
            ss: w.spec.text(),
            duration: w.spec.seconds,
            attained: self.attained,
            criterion: w.criterion,
            percent: w.spec.percent,
            iops: w.spec.iops,
            by_slope: w.spec.slope,
            max_deviation: w.deviation,
            slope: w.slope,
            bw_samples: ordered(&w.bw),
            iops_samples: ordered(&w.iops),
        })
    }
}

/// One thread's place in its group's shared counts.
#[derive(Clone, Copy)]
pub(crate) struct Share<'s> {
    /// Per thread of the group, its I/Os and bytes; then the group's stop flag.
    counts: &'s [AtomicU64],
    me: usize,
}

impl Share<'_> {
    fn threads(&self) -> usize {
        (self.counts.len() - 1) / 2
    }

    /// The group's last thread checks for all of them, as fio's.
    fn checks(&self) -> bool {
        self.me + 1 == self.threads()
    }

    fn publish(&self, ios: u64, bytes: u64) {
        self.counts[2 * self.me].store(ios, Ordering::Relaxed);
        self.counts[2 * self.me + 1].store(bytes, Ordering::Relaxed);
    }

    fn counts(&self, thread: usize) -> (u64, u64) {
        let at = |i: usize| self.counts[i].load(Ordering::Relaxed);
        (at(2 * thread), at(2 * thread + 1))
    }

    fn stopped(&self) -> bool {
        self.counts[self.counts.len() - 1].load(Ordering::Relaxed) != 0
    }

    fn stop(&self) {
        self.counts[self.counts.len() - 1].store(1, Ordering::Relaxed);
    }
}

/// The reporting group of a thread whose job checks steady state with `group_reporting`.
fn group_of(p: &IoParams) -> Option<u32> {
    let fio = p.fio.as_ref().filter(|f| f.group_reporting)?;
    p.steady.map(|_| fio.groupid)
}

/// The shared memory for the counts of the groups of `threads` (one entry per thread),
/// made before the workers are; `None` where no group reports as one and checks.
pub(super) fn region(threads: &[&IoParams]) -> Result<Option<Region>, FsbenchError> {
    let grouped = threads.iter().filter(|p| group_of(p).is_some()).count();
    let mut groups: Vec<u32> = threads.iter().filter_map(|p| group_of(p)).collect();
    groups.dedup();
    match grouped {
        0 => Ok(None),
        n => Region::new(Region::room::<AtomicU64>(2 * n + groups.len())).map(Some),
    }
}

/// Each thread's share of its group's counts in `region` (made by [`region`] for
/// `threads`), in the threads' order.
pub(super) fn shares<'r>(region: &'r Region, threads: &[&IoParams]) -> Vec<Option<Share<'r>>> {
    let mut out: Vec<Option<Share<'r>>> = (0..threads.len()).map(|_| None).collect();
    let mut seen: Vec<u32> = Vec::new();
    for (t, p) in threads.iter().enumerate() {
        let Some(group) = group_of(p).filter(|g| !seen.contains(g)) else {
            continue;
        };
        seen.push(group);
        let members: Vec<usize> = (t..threads.len())
            .filter(|u| group_of(threads[*u]) == Some(group))
            .collect();
        let counts = region.take::<AtomicU64>(2 * members.len() + 1);
        for (me, u) in members.into_iter().enumerate() {
            out[u] = Some(Share { counts, me });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(iops: bool, slope: bool, percent: bool, limit: f64) -> SteadySpec {
        SteadySpec {
            iops,
            slope,
            percent,
            limit,
            seconds: 4,
            ramp_ms: 0,
        }
    }

    #[test]
    fn a_flat_window_is_steady_and_a_rising_one_is_not() {
        let mut w = Window::new(spec(true, true, true, 1.0));
        assert!(!w.add(100, 0) && !w.add(200, 0) && !w.add(300, 0));
        assert!(!w.add(400, 0), "rising by 100 a second");
        assert!((w.slope - 100.0).abs() < 1e-9, "{}", w.slope);
        for _ in 0..3 {
            assert!(!w.add(1000, 0));
        }
        assert!(w.add(1000, 0), "four equal samples: slope 0");
        let mut w = Window::new(spec(false, false, false, 50.0));
        for bw in [1000, 1040, 960] {
            assert!(!w.add(0, bw));
        }
        assert!(w.add(0, 1000), "every sample within 40 of the mean");
        assert!((w.criterion - 40.0).abs() < 1e-9, "{}", w.criterion);
    }

    #[test]
    fn the_samples_are_reported_in_fio_s_order() {
        let mut s = Steady::new(spec(true, false, false, 0.5), None);
        let mut ios = 0;
        for second in 1..=6u64 {
            ios += 10 * second;
            assert!(!s.attained(Duration::from_secs(second), ios, 0));
        }
        let r = s.record().unwrap();
        assert!(!r.attained);
        // Not attained with a full window: from the slot before the head, the oldest.
        assert_eq!(r.iops_samples, [30, 40, 50, 60]);
        assert_eq!(r.ss, "iops:0.500000");
    }
}

//! Latency over time: the calls of a phase binned by when they ended, with p50, p99 and the
//! maximum of every interval, so that a stall shows where in the phase it happened.
//!
//! Each interval keeps a small fixed-size log-linear histogram (16 buckets per octave: a
//! percentile is within 6% of the exact one; the maximum is exact). Intervals start at
//! [`FIRST_INTERVAL_MS`]; when [`MAX_INTERVALS`] are full, adjacent pairs are merged (their
//! histograms add exactly) and the width doubles, so memory is bounded whatever the
//! phase's length. A call is placed by the lap clock's running sum, which is the time since
//! the phase started, so the hot path adds one integer and increments one counter.

use fsbench_model::measurement::{LatencyPoint, LatencyTimeline};
use serde::{Deserialize, Serialize};

/// The width of the intervals until the phase outgrows [`MAX_INTERVALS`] of them.
pub const FIRST_INTERVAL_MS: u64 = 100;
/// Intervals kept (even, so that pairs merge): 128 to 256 points per phase.
const MAX_INTERVALS: usize = 256;
/// Sub-buckets per octave, as a power of two: 16 buckets per doubling.
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
/// Octaves above the linear first [`SUB`] nanoseconds, up to 2^42 ns (73 minutes; longer
/// calls fall in the last bucket, with their exact maximum kept).
const OCTAVES: usize = 42 - SUB_BITS as usize + 1;
const BUCKETS: usize = SUB * (OCTAVES + 1);

/// One interval's calls.
#[derive(Clone)]
struct Bins {
    counts: Box<[u32; BUCKETS]>,
    calls: u64,
    max_ns: u64,
}

impl Bins {
    fn new() -> Bins {
        Bins {
            counts: Box::new([0; BUCKETS]),
            calls: 0,
            max_ns: 0,
        }
    }

    #[inline]
    fn record(&mut self, ns: u64) {
        self.counts[bucket(ns)] += 1;
        self.calls += 1;
        self.max_ns = self.max_ns.max(ns);
    }

    fn add(&mut self, other: &Bins) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.calls += other.calls;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// The latency below which `q` of the calls fall: its bucket's upper bound, never above
    /// the maximum.
    fn quantile(&self, q: f64) -> u64 {
        let rank = ((self.calls as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, n) in self.counts.iter().enumerate() {
            seen += u64::from(*n);
            if seen >= rank {
                return upper_bound(i).min(self.max_ns);
            }
        }
        self.max_ns
    }

    fn point(&self) -> LatencyPoint {
        LatencyPoint {
            calls: self.calls,
            p50_ns: if self.calls == 0 {
                0
            } else {
                self.quantile(0.5)
            },
            p99_ns: if self.calls == 0 {
                0
            } else {
                self.quantile(0.99)
            },
            max_ns: self.max_ns,
        }
    }
}

/// The bucket of a latency: linear below [`SUB`] ns, then [`SUB`] per octave.
#[inline]
fn bucket(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let octave = (63 - ns.leading_zeros()) as usize; // ≥ SUB_BITS
    let sub = (ns >> (octave - SUB_BITS as usize)) as usize & (SUB - 1);
    let index = (octave - SUB_BITS as usize + 1) * SUB + sub;
    index.min(BUCKETS - 1)
}

/// The largest latency that falls in bucket `i`.
fn upper_bound(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let octave = i / SUB - 1 + SUB_BITS as usize;
    let sub = (i % SUB) as u64;
    let low = (SUB as u64 + sub) << (octave - SUB_BITS as usize);
    low + (1u64 << (octave - SUB_BITS as usize)) - 1
}

/// Adjacent intervals merged pairwise: the series at twice the width.
fn pairs(bins: Vec<Bins>) -> Vec<Bins> {
    let mut merged = Vec::with_capacity(bins.len().div_ceil(2));
    for pair in bins.chunks(2) {
        let mut sum = pair[0].clone();
        if let Some(second) = pair.get(1) {
            sum.add(second);
        }
        merged.push(sum);
    }
    merged
}

/// Records the calls of one phase by interval.
pub(super) struct Timeline {
    width_ns: u64,
    /// Where the current interval ends, in nanoseconds since the phase started.
    end_ns: u64,
    /// The running sum of the laps: the time since the phase started.
    now_ns: u64,
    closed: Vec<Bins>,
    current: Bins,
}

impl Default for Timeline {
    fn default() -> Timeline {
        let width_ns = FIRST_INTERVAL_MS * 1_000_000;
        Timeline {
            width_ns,
            end_ns: width_ns,
            now_ns: 0,
            closed: Vec::new(),
            current: Bins::new(),
        }
    }
}

impl Timeline {
    /// A call that took `ns` and ended the lap that started where the previous call ended.
    #[inline]
    pub(super) fn record(&mut self, ns: u64) {
        self.now_ns += ns;
        if self.now_ns >= self.end_ns {
            self.roll();
        }
        self.current.record(ns);
    }

    /// A call that ended `at_ns` after the phase started and took `ns`: for calls in flight
    /// at once, whose latencies do not add up to the phase's time (a late one is placed in
    /// the current interval).
    #[inline]
    pub(super) fn record_at(&mut self, at_ns: u64, ns: u64) {
        self.now_ns = self.now_ns.max(at_ns);
        if self.now_ns >= self.end_ns {
            self.roll();
        }
        self.current.record(ns);
    }

    /// Adds the calls another timeline of the same phase recorded (a worker thread's),
    /// interval by interval, at the wider of the two widths.
    pub(super) fn absorb(&mut self, other: Timeline) {
        let all = |t: Timeline| {
            let mut bins = t.closed;
            bins.push(t.current);
            (bins, t.width_ns, t.now_ns)
        };
        let (mut mine, mut width, now) = all(std::mem::take(self));
        let (mut theirs, mut their_width, their_now) = all(other);
        while width < their_width {
            mine = pairs(mine);
            width *= 2;
        }
        while their_width < width {
            theirs = pairs(theirs);
            their_width *= 2;
        }
        if theirs.len() > mine.len() {
            std::mem::swap(&mut mine, &mut theirs);
        }
        for (m, t) in mine.iter_mut().zip(&theirs) {
            m.add(t);
        }
        while mine.len() > MAX_INTERVALS + 1 {
            mine = pairs(mine);
            width *= 2;
        }
        self.current = mine.pop().expect("a timeline has a current interval");
        self.closed = mine;
        self.width_ns = width;
        self.end_ns = (self.closed.len() as u64 + 1) * width;
        self.now_ns = now.max(their_now);
    }

    /// Closes intervals until the one holding `now_ns` is current (empty ones for a stall).
    #[cold]
    fn roll(&mut self) {
        while self.now_ns >= self.end_ns {
            if self.closed.len() == MAX_INTERVALS {
                self.merge_pairs();
                // The current interval now ends at the doubled width (its start is unchanged,
                // since an even number of intervals precedes it).
                self.end_ns = (self.closed.len() as u64 + 1) * self.width_ns;
                continue;
            }
            let full = std::mem::replace(&mut self.current, Bins::new());
            self.closed.push(full);
            self.end_ns += self.width_ns;
        }
    }

    fn merge_pairs(&mut self) {
        self.closed = pairs(std::mem::take(&mut self.closed));
        self.width_ns *= 2;
    }

    /// The series: every closed interval and the last, partial one (when it saw a call).
    pub(super) fn finish(self) -> LatencyTimeline {
        let mut points: Vec<LatencyPoint> = self.closed.iter().map(Bins::point).collect();
        if self.current.calls > 0 {
            points.push(self.current.point());
        }
        LatencyTimeline {
            interval_ms: self.width_ns / 1_000_000,
            points,
        }
    }
}

/// One interval as it crosses between processes: calls, maximum, (bucket, count) pairs of
/// its non-empty buckets.
type SparseBins = (u64, u64, Vec<(u32, u32)>);

/// A timeline as it crosses between processes: each interval's non-empty buckets only.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct TimelineTally {
    width_ns: u64,
    end_ns: u64,
    now_ns: u64,
    /// Per interval, the last being the current one.
    bins: Vec<SparseBins>,
}

impl Timeline {
    pub(super) fn tally(self) -> TimelineTally {
        let sparse = |b: &Bins| {
            let counts = (b.counts.iter().enumerate())
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| (i as u32, *n))
                .collect();
            (b.calls, b.max_ns, counts)
        };
        let mut bins: Vec<_> = self.closed.iter().map(sparse).collect();
        bins.push(sparse(&self.current));
        TimelineTally {
            width_ns: self.width_ns,
            end_ns: self.end_ns,
            now_ns: self.now_ns,
            bins,
        }
    }

    pub(super) fn from_tally(tally: TimelineTally) -> Result<Timeline, String> {
        let mut closed = Vec::with_capacity(tally.bins.len());
        for (calls, max_ns, counts) in tally.bins {
            let mut b = Bins::new();
            for (i, n) in counts {
                *b.counts
                    .get_mut(i as usize)
                    .ok_or_else(|| format!("timeline bucket {i} of {BUCKETS}"))? = n;
            }
            b.calls = calls;
            b.max_ns = max_ns;
            closed.push(b);
        }
        let current = closed
            .pop()
            .ok_or("a timeline without its current interval")?;
        if closed.len() > MAX_INTERVALS || tally.width_ns == 0 {
            return Err("a timeline of more intervals than kept".into());
        }
        Ok(Timeline {
            width_ns: tally.width_ns,
            end_ns: tally.end_ns,
            now_ns: tally.now_ns,
            closed,
            current,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn buckets_bound_their_values_within_six_percent() {
        let mut last = 0;
        for ns in [
            0u64,
            1,
            15,
            16,
            17,
            31,
            32,
            1000,
            4095,
            4096,
            123_456_789,
            1 << 41,
        ] {
            let b = bucket(ns);
            assert!(b >= last, "{ns}");
            last = b;
            let upper = upper_bound(b);
            assert!(upper >= ns, "{ns}: {upper}");
            assert!(upper as f64 <= ns as f64 * 1.0625 + 1.0, "{ns}: {upper}");
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn a_stall_shows_in_the_interval_it_ended_in() {
        let mut t = Timeline::default();
        // 2 s of 10 µs calls, then one 750 ms call, then 1 s more of 10 µs calls.
        for _ in 0..200_000 {
            t.record(10_000);
        }
        t.record(750 * MS);
        for _ in 0..100_000 {
            t.record(10_000);
        }
        let series = t.finish();
        assert_eq!(series.interval_ms, 100);
        let worst = series
            .points
            .iter()
            .enumerate()
            .max_by_key(|(_, p)| p.max_ns)
            .unwrap();
        // It ended at 2.75 s: interval 27 (2.7–2.8 s); the 6 before it saw no call (the 20th
        // has the call that ended at 2.0 s exactly).
        assert_eq!(worst.0, 27, "{series:?}");
        assert_eq!(worst.1.max_ns, 750 * MS);
        assert!(series.points[21..27].iter().all(|p| p.calls == 0));
        let quiet = &series.points[5];
        assert_eq!(quiet.calls, 10_000);
        assert!((10_000..=10_625).contains(&quiet.p50_ns), "{quiet:?}");
        assert!(quiet.p99_ns <= quiet.max_ns && quiet.max_ns == 10_000);
        let total: u64 = series.points.iter().map(|p| p.calls).sum();
        assert_eq!(total, 300_001);
    }

    #[test]
    fn long_phases_merge_intervals_and_keep_the_spike() {
        let mut t = Timeline::default();
        // 100 s of 1 ms calls with a 2 s call ending at 60 s.
        for i in 0..100_000u64 {
            t.record(if i == 58_000 { 2_000 * MS } else { MS });
        }
        let series = t.finish();
        assert!(series.points.len() <= MAX_INTERVALS + 1);
        assert!(series.points.len() > MAX_INTERVALS / 2);
        assert_eq!(series.interval_ms, 400);
        let worst = series
            .points
            .iter()
            .position(|p| p.max_ns == 2_000 * MS)
            .unwrap();
        let at = worst as u64 * series.interval_ms;
        assert!((59_600..=60_000).contains(&at), "{at}");
        let total: u64 = series.points.iter().map(|p| p.calls).sum();
        assert_eq!(total, 100_000);
    }

    #[test]
    fn workers_timelines_add_up_interval_by_interval_at_the_wider_width() {
        // One worker: 1 s of calls at 1 ms ending every 10 ms; the other: 60 s, whose
        // intervals have widened, with one 2 s stall at 30 s.
        let mut short = Timeline::default();
        for i in 1..=100 {
            short.record_at(i * 10 * MS, MS);
        }
        let mut long = Timeline::default();
        for i in 1..=6000 {
            long.record_at(i * 10 * MS, if i == 3000 { 2000 * MS } else { MS });
        }
        let mut phase = Timeline::default();
        phase.absorb(short);
        phase.absorb(long);
        let series = phase.finish();
        assert_eq!(series.interval_ms, 400);
        assert_eq!(series.points.iter().map(|p| p.calls).sum::<u64>(), 6100);
        // The first 400 ms hold both workers' calls; the stall is where it ended.
        assert_eq!(series.points[0].calls, 39 + 39);
        let stall = series.points.iter().position(|p| p.max_ns == 2000 * MS);
        assert_eq!(stall, Some(30_000 / 400));
    }
}

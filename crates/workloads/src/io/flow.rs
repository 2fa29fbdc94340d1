//! fio's `flow`: jobs with the same `flow_id` share a count of their I/Os, and each holds
//! back while its own share of that count is above its weight's share of the flow's
//! weights (fio's flow.c). The count lives in memory shared by the jobs' worker processes,
//! made before they are forked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::IoParams;
use crate::parallel::shm::Region;
use fsbench_measure::error::FsbenchError;

/// The flows of the jobs running together: per flow, its count and its weights.
pub(super) struct Flows<'r> {
    /// The flow ids, in the order of their counters.
    ids: Vec<u32>,
    /// Per flow: its count of I/Os (from 1, as fio's) and the weights of its jobs.
    counters: &'r [AtomicU64],
}

/// The shared memory for the flows of `threads` (each job's parameters, one entry per
/// copy), made before the workers are; `None` where no job has a `flow` weight.
pub(super) fn region(threads: &[&IoParams]) -> Result<Option<Region>, FsbenchError> {
    match flow_ids(threads).len() {
        0 => Ok(None),
        n => Region::new(Region::room::<AtomicU64>(2 * n)).map(Some),
    }
}

fn flow_ids(threads: &[&IoParams]) -> Vec<u32> {
    let mut ids: Vec<u32> = (threads.iter())
        .filter(|p| p.pacing.flow > 0)
        .map(|p| p.pacing.flow_id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

impl<'r> Flows<'r> {
    /// The flows of `threads` in `region` (made by [`region`] for them): each flow's count
    /// from 1 and its jobs' weights added up.
    pub(super) fn new(region: &'r Region, threads: &[&IoParams]) -> Flows<'r> {
        let ids = flow_ids(threads);
        let counters = region.take::<AtomicU64>(2 * ids.len());
        for (f, id) in ids.iter().enumerate() {
            let weights: u64 = (threads.iter())
                .filter(|p| p.pacing.flow > 0 && p.pacing.flow_id == *id)
                .map(|p| u64::from(p.pacing.flow))
                .sum();
            counters[2 * f].store(1, Ordering::Relaxed);
            counters[2 * f + 1].store(weights, Ordering::Relaxed);
        }
        Flows { ids, counters }
    }

    /// A job thread's gate on its flow; `None` for a job without a weight.
    pub(super) fn gate(&self, params: &IoParams) -> Option<Gate<'r>> {
        let f = (params.pacing.flow > 0)
            .then(|| self.ids.iter().position(|id| *id == params.pacing.flow_id))??;
        let counters: &'r [AtomicU64] = self.counters;
        Some(Gate {
            count: &counters[2 * f],
            weights: &counters[2 * f + 1],
            weight: u64::from(params.pacing.flow),
            sleep: Duration::from_micros(params.pacing.flow_sleep_us),
            mine: 0,
        })
    }
}

/// One job thread's place in its flow.
pub(crate) struct Gate<'f> {
    count: &'f AtomicU64,
    weights: &'f AtomicU64,
    weight: u64,
    /// fio's `flow_sleep`: how long a held-back job sleeps before it looks again (0: it
    /// looks again at once).
    sleep: Duration,
    /// The thread's own I/Os counted in the flow.
    mine: u64,
}

impl Gate<'_> {
    /// fio's `flow_threshold_exceeded`: whether the job holds back now (its I/Os' share of
    /// the flow's above its weight's share), sleeping `flow_sleep` if so; else its next I/O
    /// is counted in the flow.
    #[inline]
    pub(crate) fn holds_back(&mut self) -> bool {
        let count = self.count.load(Ordering::Relaxed) as f64;
        let weights = self.weights.load(Ordering::Relaxed) as f64;
        if self.mine as f64 / count > self.weight as f64 / weights {
            if !self.sleep.is_zero() {
                std::thread::sleep(self.sleep);
            }
            return true;
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.mine += 1;
        false
    }
}

impl Drop for Gate<'_> {
    /// fio's `flow_put`: a job that ends takes its I/Os and its weight out of the flow, so
    /// the others do not hold back for it.
    fn drop(&mut self) {
        self.count.fetch_sub(self.mine, Ordering::Relaxed);
        self.weights.fetch_sub(self.weight, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_of_a_flow_pass_by_weight_and_leave_it_to_the_others() {
        let mut light = IoParams::parse("size=1m").unwrap();
        light.pacing.flow = 1;
        let mut heavy = light.clone();
        heavy.pacing.flow = 3;
        let other = IoParams::parse("size=1m").unwrap();
        let threads = [&light, &heavy, &other];
        let region = region(&threads).unwrap().unwrap();
        let flows = Flows::new(&region, &threads);
        assert!(flows.gate(&other).is_none(), "no weight, no flow");
        let (mut a, mut b) = (flows.gate(&light).unwrap(), flows.gate(&heavy).unwrap());
        // Each asks as often: the heavy one passes three times as often.
        let (mut passed_a, mut passed_b) = (0, 0);
        for _ in 0..400 {
            passed_a += u32::from(!a.holds_back());
            passed_b += u32::from(!b.holds_back());
        }
        let ratio = f64::from(passed_b) / f64::from(passed_a);
        assert!((2.8..=3.2).contains(&ratio), "{passed_a} : {passed_b}");
        // Once the heavy one has left, the light one is held back no more.
        drop(b);
        assert!((0..10).all(|_| !a.holds_back()));
    }
}

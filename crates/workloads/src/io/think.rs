//! fio's `thinktime`: after every `thinktime_blocks` I/Os a job idles, spinning for
//! `thinktime_spin` of it and sleeping the rest; and fio's `rate_process=poisson`: a rate's
//! I/Os due at a Poisson process's arrivals.

use std::time::{Duration, Instant};

use super::IoParams;
use super::params::poisson_gap_ns;
use super::pattern::Rng;

pub(super) struct Thinker {
    every: u32,
    spin: Duration,
    sleep: Duration,
    /// I/Os since the last think.
    since: u32,
}

impl Thinker {
    /// The job's thinking; `None` where it does not think.
    pub(super) fn of(params: &IoParams) -> Option<Thinker> {
        (params.thinktime_us > 0).then(|| Thinker {
            every: params.thinktime_blocks.max(1),
            spin: Duration::from_micros(params.thinktime_spin_us),
            sleep: Duration::from_micros(params.thinktime_us - params.thinktime_spin_us),
            since: 0,
        })
    }

    /// After an I/O: idles when `thinktime_blocks` of them have been done since the last.
    #[inline]
    pub(super) fn after_io(&mut self) {
        self.since += 1;
        if self.since < self.every {
            return;
        }
        self.since = 0;
        let spin_until = Instant::now() + self.spin;
        while Instant::now() < spin_until {
            std::hint::spin_loop();
        }
        if !self.sleep.is_zero() {
            std::thread::sleep(self.sleep);
        }
    }
}

/// fio's `rate_process=poisson`: the first I/O due at the start, each next one a gap drawn
/// as fio's `usec_for_io` draws it after the one before.
pub(super) struct Arrivals {
    iops: u64,
    due_ns: u64,
    rng: Rng,
}

impl Arrivals {
    /// The job's arrivals (`seed`: its copy's own); `None` without a rate or Poisson's.
    pub(super) fn of(params: &IoParams, seed: u64) -> Option<Arrivals> {
        let rated = params.rate_iops > 0 || params.rate > 0;
        (params.pacing.poisson && rated).then(|| Arrivals {
            iops: params.poisson_iops(),
            due_ns: 0,
            rng: Rng::new(seed),
        })
    }

    /// When the next I/O is due, from the job's start.
    #[inline]
    pub(super) fn due_ns(&self) -> u64 {
        self.due_ns
    }

    /// The next I/O was issued: the one after is due a gap later (fio draws in (0, 1]).
    #[inline]
    pub(super) fn issued(&mut self) {
        self.due_ns += poisson_gap_ns(self.iops, 1.0 - self.rng.unit());
    }
}

/// The time between two I/Os a rate sets (`rate_iops`, else `rate` in bytes a second over
/// the I/Os' mean size `mean_bs`), in nanoseconds; `None` unpaced.
pub(super) fn interval_ns(params: &IoParams, mean_bs: f64) -> Option<f64> {
    if params.rate_iops > 0 {
        Some(1e9 / params.rate_iops as f64)
    } else if params.rate > 0 {
        Some(1e9 * mean_bs / params.rate as f64)
    } else {
        None
    }
}

//! fio's `thinktime`: after every `thinktime_blocks` I/Os a job idles, spinning for
//! `thinktime_spin` of it and sleeping the rest.

use std::time::{Duration, Instant};

use super::IoParams;

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

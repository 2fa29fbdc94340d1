//! What the run's processes share besides the files: the start barrier and the stop flag,
//! the counts the finish and limit flowops read, the event queue `eventgen` fills, and the
//! semaphores and wake-ups of semblock/sempost and block/wakeup. Every wait here is bounded
//! and looks at the stop flag, so no thread outlives the run.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::parallel::shm::{Region, SharedLock};

/// How long a wait sleeps before it looks at the stop flag again.
pub(super) const POLL: Duration = Duration::from_millis(50);

/// Why the run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub(super) enum Stop {
    Running = 0,
    /// The time is up, or the mode's threads are done.
    Done = 1,
    /// A thread failed, or the run was interrupted.
    Abort = 2,
}

/// The run-wide flags and counts.
pub(super) struct Control<'r> {
    pub(super) lock: &'r SharedLock,
    go: &'r AtomicU64,
    stop: &'r AtomicU64,
    /// Threads at the start barrier.
    pub(super) ready: &'r AtomicU64,
    /// Threads done (finishoncount, finishonbytes) or ended.
    pub(super) finished: &'r AtomicU64,
    /// Threads waiting for a file.
    pub(super) waiting: &'r AtomicU64,
    /// The IO and AIO flowops' count and bytes, and their reads' and writes' count and
    /// bytes, for finish and limit flowops without a target (kept only if one needs them).
    pub(super) io_count: &'r AtomicU64,
    pub(super) io_bytes: &'r AtomicU64,
    pub(super) rw_count: &'r AtomicU64,
    pub(super) rw_bytes: &'r AtomicU64,
    /// Events posted by eventgen, not yet taken.
    pub(super) events: &'r AtomicI64,
    pub(super) events_lock: &'r SharedLock,
}

impl<'r> Control<'r> {
    pub(super) fn room() -> usize {
        2 * Region::lock_room() + Region::room::<AtomicU64>(9) + Region::room::<AtomicI64>(1)
    }

    pub(super) fn new(region: &'r Region) -> Control<'r> {
        let lock = region.lock();
        let events_lock = region.lock();
        let n = region.take::<AtomicU64>(9);
        Control {
            lock,
            go: &n[0],
            stop: &n[1],
            ready: &n[2],
            finished: &n[3],
            waiting: &n[4],
            io_count: &n[5],
            io_bytes: &n[6],
            rw_count: &n[7],
            rw_bytes: &n[8],
            events: &region.take::<AtomicI64>(1)[0],
            events_lock,
        }
    }

    pub(super) fn stop(&self, why: Stop) {
        // An abort is never turned back into a plain end.
        self.stop.fetch_max(why as u64, Relaxed);
        self.lock.notify_all();
        self.events_lock.notify_all();
    }

    pub(super) fn stopping(&self) -> bool {
        self.stop.load(Relaxed) != Stop::Running as u64
    }

    pub(super) fn aborted(&self) -> bool {
        self.stop.load(Relaxed) == Stop::Abort as u64
    }

    /// A worker at the barrier: counts itself in, then waits for the start (or the stop).
    pub(super) fn arrive(&self) {
        let mut g = self.lock.lock();
        self.ready.fetch_add(1, Relaxed);
        self.lock.notify_all();
        while self.go.load(Relaxed) == 0 && !self.stopping() {
            g.wait(POLL);
        }
    }

    /// The parent: waits for `threads` workers at the barrier, at most `limit`; whether they
    /// all came.
    pub(super) fn all_arrived(&self, threads: u64, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        let mut g = self.lock.lock();
        while self.ready.load(Relaxed) < threads {
            if Instant::now() >= end || self.stopping() {
                return false;
            }
            g.wait(POLL);
        }
        true
    }

    pub(super) fn start(&self) {
        let _g = self.lock.lock();
        self.go.store(1, Relaxed);
        self.lock.notify_all();
    }

    /// Takes `n` events, waiting for eventgen to post them; false if the run stops first.
    pub(super) fn take_events(&self, n: i64) -> bool {
        let mut g = self.events_lock.lock();
        loop {
            if self.events.load(Relaxed) >= n {
                self.events.fetch_sub(n, Relaxed);
                return true;
            }
            if self.stopping() {
                return false;
            }
            g.wait(POLL);
        }
    }

    /// eventgen's producer, on the parent's thread until the run stops: every ten periods it
    /// posts the events due since the last post, keeping at most five seconds' worth.
    pub(super) fn generate_events(&self, rate: u64) {
        let period = Duration::from_nanos((1_000_000_000 / rate.max(1)).max(100) * 10);
        let mut last = Instant::now();
        while !self.stopping() {
            std::thread::sleep(period);
            let now = Instant::now();
            let due = (rate as f64 * now.duration_since(last).as_secs_f64()) as i64;
            last = now;
            let _g = self.events_lock.lock();
            if self.events.load(Relaxed) < 5 * rate as i64 {
                self.events.fetch_add(due, Relaxed);
            }
            self.events_lock.notify_all();
        }
    }
}

/// A semblock flowop's pair of counts, as filebench's System V semaphores: posts add to
/// `low`, which semblock takes from; semblock gives back to `high`, which blocking posts
/// take from, so posters run at most `highwater` ahead. As the kernel's semop, a post wakes
/// the semblock only when it can go on: waking it on every post (200 posters, a semblock
/// waiting for 1,000 of them) cost oltp's posters more than its reads.
pub(super) struct Semaphore<'r> {
    lock: &'r SharedLock,
    low: &'r AtomicI64,
    high: &'r AtomicI64,
    /// Semblocks waiting for `low`, and the least any of them waits for (it may be lower
    /// than what those left wait for: that wakes one too many, never one too few).
    low_waiters: &'r AtomicI64,
    low_wanted: &'r AtomicI64,
    /// Blocking posts waiting for room under the high water mark.
    high_waiters: &'r AtomicI64,
}

impl<'r> Semaphore<'r> {
    pub(super) fn room() -> usize {
        Region::lock_room() + Region::room::<AtomicI64>(5)
    }

    pub(super) fn new(region: &'r Region, highwater: u64) -> Semaphore<'r> {
        let lock = region.lock();
        let counts = region.take::<AtomicI64>(5);
        counts[1].store(highwater as i64, Relaxed);
        Semaphore {
            lock,
            low: &counts[0],
            high: &counts[1],
            low_waiters: &counts[2],
            low_wanted: &counts[3],
            high_waiters: &counts[4],
        }
    }

    /// semblock: gives `n` back to the posters, then waits for `n` posts; false if the run
    /// stops first.
    pub(super) fn block(&self, n: i64, control: &Control<'_>) -> bool {
        let mut g = self.lock.lock();
        self.high.fetch_add(n, Relaxed);
        if self.high_waiters.load(Relaxed) > 0 {
            self.lock.notify_all();
        }
        while self.low.load(Relaxed) < n {
            if control.stopping() {
                return false;
            }
            if self.low_waiters.fetch_add(1, Relaxed) == 0 || n < self.low_wanted.load(Relaxed) {
                self.low_wanted.store(n, Relaxed);
            }
            g.wait(POLL);
            self.low_waiters.fetch_sub(1, Relaxed);
        }
        self.low.fetch_sub(n, Relaxed);
        true
    }

    /// sempost: posts `n`; a blocking post first waits for room under the high water mark
    /// (both at once, as semop's pair of operations); false if the run stops first.
    pub(super) fn post(&self, n: i64, blocking: bool, control: &Control<'_>) -> bool {
        let mut g = self.lock.lock();
        if blocking {
            while self.high.load(Relaxed) < n {
                if control.stopping() {
                    return false;
                }
                self.high_waiters.fetch_add(1, Relaxed);
                g.wait(POLL);
                self.high_waiters.fetch_sub(1, Relaxed);
            }
            self.high.fetch_sub(n, Relaxed);
        }
        let low = self.low.fetch_add(n, Relaxed) + n;
        if self.low_waiters.load(Relaxed) > 0 && low >= self.low_wanted.load(Relaxed) {
            self.lock.notify_all();
        }
        true
    }
}

/// A block flowop's wake-up count: block waits for it to change, wakeup changes it.
pub(super) struct WakePoint<'r> {
    lock: &'r SharedLock,
    generation: &'r AtomicU64,
}

impl<'r> WakePoint<'r> {
    pub(super) fn room() -> usize {
        Region::lock_room() + Region::room::<AtomicU64>(1)
    }

    pub(super) fn new(region: &'r Region) -> WakePoint<'r> {
        WakePoint {
            lock: region.lock(),
            generation: &region.take::<AtomicU64>(1)[0],
        }
    }

    pub(super) fn wait(&self, control: &Control<'_>) {
        let mut g = self.lock.lock();
        let seen = self.generation.load(Relaxed);
        while self.generation.load(Relaxed) == seen && !control.stopping() {
            g.wait(POLL);
        }
    }

    pub(super) fn wake(&self) {
        let _g = self.lock.lock();
        self.generation.fetch_add(1, Relaxed);
        self.lock.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// Waits up to 10 s for `flag`; the test's threads always end: each test stops the run
    /// last, which every wait here looks at.
    fn soon(flag: &AtomicBool) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while !flag.load(Relaxed) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
        }
        flag.load(Relaxed)
    }

    fn region() -> Region {
        Region::new(Control::room() + Semaphore::room()).expect("a shared region")
    }

    #[test]
    fn a_semblock_goes_on_after_as_many_posts_as_it_waits_for() {
        let region = region();
        let control = Control::new(&region);
        let sem = Semaphore::new(&region, 10);
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(sem.block(3, &control));
                done.store(true, Relaxed);
            });
            assert!(sem.post(1, false, &control) && sem.post(1, true, &control));
            std::thread::sleep(Duration::from_millis(100));
            assert!(
                !done.load(Relaxed),
                "the semblock went on after 2 posts of 3"
            );
            assert!(sem.post(1, false, &control));
            assert!(soon(&done), "the third post did not release the semblock");
            control.stop(Stop::Done);
        });
        assert_eq!(sem.low.load(Relaxed), 0);
        // 10, less the blocking post, plus the 3 the semblock gave back.
        assert_eq!(sem.high.load(Relaxed), 12);
    }

    #[test]
    fn blocking_posts_wait_at_the_high_water_mark_until_a_semblock_gives_room() {
        let region = region();
        let control = Control::new(&region);
        let sem = Semaphore::new(&region, 2);
        let posted = AtomicBool::new(false);
        std::thread::scope(|s| {
            assert!(sem.post(1, true, &control) && sem.post(1, true, &control));
            s.spawn(|| {
                assert!(sem.post(1, true, &control));
                posted.store(true, Relaxed);
            });
            std::thread::sleep(Duration::from_millis(100));
            assert!(
                !posted.load(Relaxed),
                "a third post went past a high water mark of 2"
            );
            // Gives 1 back, takes 1 of the 2 posted.
            assert!(sem.block(1, &control));
            assert!(
                soon(&posted),
                "the room a semblock gave did not release the post"
            );
            control.stop(Stop::Done);
        });
        assert_eq!(sem.low.load(Relaxed), 2);
    }

    #[test]
    fn a_stopping_run_releases_a_waiting_semblock() {
        let region = region();
        let control = Control::new(&region);
        let sem = Semaphore::new(&region, 1);
        let released = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(!sem.block(5, &control));
                released.store(true, Relaxed);
            });
            control.stop(Stop::Abort);
            assert!(soon(&released));
        });
    }
}

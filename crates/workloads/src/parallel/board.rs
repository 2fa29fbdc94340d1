//! What a crew's workers and the phase's thread share, in memory shared by processes (the
//! same for threads): the start line, where every worker waits until all are ready and the
//! phase's thread releases them at once; a flag by which a failing worker stops the others;
//! and per worker, on a cache line of its own, its count of units (a worker process's
//! recorder publishes it there) and when it ended.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::shm::{Region, SharedLock, Zeroed};

/// How long a wait at the start line sleeps before it looks again (the release wakes it).
const START_POLL: Duration = Duration::from_millis(50);

/// The start line's states.
const WAITING: u32 = 0;
const GO: u32 = 1;
const HALT: u32 = 2;

/// One worker's slot: written by that worker alone, read by the phase's thread.
#[repr(C, align(128))]
pub(super) struct Slot {
    /// Units done (a worker process's; a worker thread's count is its progress's).
    pub(super) count: AtomicU64,
    /// When it ended, in nanoseconds of the monotonic clock; 0 while it runs.
    ended_ns: AtomicU64,
    /// The units all worker processes had done when it ended (for first-done rates).
    pub(super) units_then: AtomicU64,
}

impl Zeroed for Slot {}

/// The start line (its lock, its state, the workers at it) and the slots, in a [`Region`]
/// made for it ([`Board::room`]) before any worker starts.
pub(super) struct Board<'r> {
    lock: &'r SharedLock,
    state: &'r AtomicU32,
    arrived: &'r AtomicU32,
    /// Set by a worker that fails, for work whose workers stop when one does.
    halt: &'r AtomicBool,
    slots: &'r [Slot],
}

impl<'r> Board<'r> {
    /// Bytes of shared memory a board for `workers` takes.
    pub(super) fn room(workers: usize) -> usize {
        Region::lock_room()
            + Region::room::<AtomicU32>(2)
            + Region::room::<AtomicBool>(1)
            + Region::room::<Slot>(workers)
    }

    pub(super) fn new(region: &'r Region, workers: usize) -> Board<'r> {
        let lock = region.lock();
        let flags = region.take::<AtomicU32>(2);
        Board {
            lock,
            state: &flags[0],
            arrived: &flags[1],
            halt: &region.take::<AtomicBool>(1)[0],
            slots: region.take::<Slot>(workers),
        }
    }

    pub(super) fn halt_flag(&self) -> &'r AtomicBool {
        self.halt
    }

    pub(super) fn slot(&self, worker: usize) -> &'r Slot {
        &self.slots[worker]
    }

    pub(super) fn slots(&self) -> &'r [Slot] {
        self.slots
    }

    /// A worker is ready: it waits until every worker is and the phase's thread releases
    /// them (true), or the crew stops before it starts (false).
    pub(super) fn wait_at_start(&self) -> bool {
        let mut guard = self.lock.lock();
        self.arrived.fetch_add(1, Ordering::AcqRel);
        self.lock.notify_all();
        loop {
            match self.state.load(Ordering::Acquire) {
                GO => return true,
                HALT => return false,
                _ => guard.wait(START_POLL),
            }
        }
    }

    /// Counts a worker that leaves without starting (it failed getting ready), so that the
    /// others are not kept waiting for it.
    pub(super) fn arrive_without_waiting(&self) {
        let _guard = self.lock.lock();
        self.arrived.fetch_add(1, Ordering::AcqRel);
        self.lock.notify_all();
    }

    /// On the phase's thread: waits up to `limit` for all `workers` to be at the start line,
    /// and releases them if they are; when.
    pub(super) fn release_if_ready(&self, workers: usize, limit: Duration) -> Option<Instant> {
        let mut guard = self.lock.lock();
        if self.arrived.load(Ordering::Acquire) < workers as u32 {
            guard.wait(limit);
        }
        if self.arrived.load(Ordering::Acquire) < workers as u32 {
            return None;
        }
        let at = Instant::now();
        self.state.store(GO, Ordering::Release);
        self.lock.notify_all();
        Some(at)
    }

    /// Tells the workers not yet released that the crew stops.
    pub(super) fn halt(&self) {
        let _guard = self.lock.lock();
        if self.state.load(Ordering::Acquire) == WAITING {
            self.state.store(HALT, Ordering::Release);
        }
        self.lock.notify_all();
    }
}

impl Slot {
    pub(super) fn mark_ended(&self) {
        self.ended_ns
            .store(monotonic_ns().max(1), Ordering::Release);
    }

    /// When the worker ended, if it has.
    pub(super) fn ended(&self) -> Option<Instant> {
        let ns = self.ended_ns.load(Ordering::Acquire);
        (ns != 0).then(|| {
            // Instant is the monotonic clock too, but cannot be made from a reading: go back
            // from now by the time since.
            let ago = monotonic_ns().saturating_sub(ns);
            Instant::now() - Duration::from_nanos(ago)
        })
    }
}

/// The monotonic clock, which every process reads alike.
fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_start_together_or_not_at_all() {
        let region = Region::new(Board::room(3)).unwrap();
        let board = Board::new(&region, 3);
        std::thread::scope(|s| {
            let waiting: Vec<_> = (0..2).map(|_| s.spawn(|| board.wait_at_start())).collect();
            // Two of three are there: no release yet, however long it waits.
            assert!(
                board
                    .release_if_ready(3, Duration::from_millis(20))
                    .is_none()
            );
            board.arrive_without_waiting();
            let mut released = None;
            while released.is_none() {
                released = board.release_if_ready(3, Duration::from_millis(20));
            }
            assert!(waiting.into_iter().all(|w| w.join().unwrap()));
        });
        let region = Region::new(Board::room(2)).unwrap();
        let halted = Board::new(&region, 2);
        std::thread::scope(|s| {
            let w = s.spawn(|| halted.wait_at_start());
            halted.halt();
            assert!(!w.join().unwrap());
        });
    }

    #[test]
    fn a_slot_says_when_its_worker_ended() {
        let region = Region::new(Board::room(2)).unwrap();
        let board = Board::new(&region, 2);
        assert!(board.slot(1).ended().is_none());
        let before = Instant::now();
        board.slot(1).mark_ended();
        let ended = board.slot(1).ended().unwrap();
        // Within the clock's conversion (a microsecond or so) of the call.
        assert!(ended + Duration::from_millis(1) >= before);
        assert!(ended <= Instant::now());
        assert!(board.slot(0).ended().is_none());
    }
}

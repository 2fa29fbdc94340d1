//! FFSB's file table: every file ever made has a number (it names the file) and a size; the
//! live ones are listed for picking at random. Between phases fsbench keeps it in its own
//! memory ([`FileTable`]); for the run it is copied into memory shared by the workers,
//! processes or threads ([`SharedFiles`]): fixed arrays sized for the most files the run can
//! make, under a process-shared lock, and copied back after.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::parallel::shm::{Region, SharedLock};

/// The most files a run's table holds (the set and what the run creates): 16 bytes each of
/// a shared mapping that takes memory only where it is written, so a time-based run that
/// creates files, whose count is not known before, has room for 2^27 of them.
const CAPACITY_MAX: u64 = 1 << 27;

/// The file set between phases.
#[derive(Debug, Default)]
pub(crate) struct FileTable {
    /// Each file's size, by its number.
    sizes: Vec<u64>,
    /// The numbers of the files that exist.
    pub(super) live: Vec<u32>,
}

impl FileTable {
    pub(crate) fn live(&self) -> usize {
        self.live.len()
    }

    /// The number the next file added gets.
    pub(super) fn next_id(&self) -> u32 {
        self.sizes.len() as u32
    }

    /// Adds a file made of `size` bytes, numbered [`FileTable::next_id`].
    pub(super) fn add(&mut self, size: u64) {
        self.live.push(self.next_id());
        self.sizes.push(size);
    }
}

/// The file table as the run's workers share it. A file a worker uses is marked so that no
/// other deletes it meanwhile.
pub(super) struct SharedFiles<'r> {
    lock: &'r SharedLock,
    /// The numbers given out ([`MADE`]), and the live files listed ([`LIVE`]).
    counts: &'r [AtomicU32],
    sizes: &'r [AtomicU64],
    users: &'r [AtomicU32],
    live: &'r [AtomicU32],
}

const MADE: usize = 0;
const LIVE: usize = 1;

impl<'r> SharedFiles<'r> {
    /// How many files a run starting with `set` may hold: the set and every transaction of
    /// a creating group (`creates`: at most that many; `None`: not known, a time-based run).
    pub(super) fn capacity_for(set: &FileTable, creates: Option<u64>) -> u64 {
        let made = set.sizes.len() as u64;
        let more = creates.unwrap_or(CAPACITY_MAX);
        made.saturating_add(more).min(CAPACITY_MAX.max(made))
    }

    /// Bytes of shared memory for a table of `capacity` files.
    pub(super) fn room(capacity: u64) -> usize {
        let n = capacity as usize;
        Region::lock_room()
            + Region::room::<AtomicU32>(2)
            + Region::room::<AtomicU64>(n)
            + 2 * Region::room::<AtomicU32>(n)
    }

    /// The table in `region` (of [`SharedFiles::room`]), holding `set`.
    pub(super) fn new(region: &'r Region, capacity: u64, set: &FileTable) -> SharedFiles<'r> {
        let n = capacity as usize;
        let table = SharedFiles {
            lock: region.lock(),
            counts: region.take(2),
            sizes: region.take(n),
            users: region.take(n),
            live: region.take(n),
        };
        for (slot, size) in table.sizes.iter().zip(&set.sizes) {
            slot.store(*size, Relaxed);
        }
        for (slot, id) in table.live.iter().zip(&set.live) {
            slot.store(*id, Relaxed);
        }
        table.counts[MADE].store(set.sizes.len() as u32, Relaxed);
        table.counts[LIVE].store(set.live.len() as u32, Relaxed);
        table
    }

    /// The table as the run left it, into `set`.
    pub(super) fn copy_out(&self, set: &mut FileTable) {
        let _held = self.lock.lock();
        let (made, live) = (self.count(MADE), self.count(LIVE));
        set.sizes = self.sizes[..made].iter().map(|s| s.load(Relaxed)).collect();
        set.live = self.live[..live]
            .iter()
            .map(|id| id.load(Relaxed))
            .collect();
    }

    /// The most files it holds.
    pub(super) fn capacity(&self) -> usize {
        self.users.len()
    }

    fn count(&self, which: usize) -> usize {
        self.counts[which].load(Relaxed) as usize
    }

    /// A number for a file about to be made, marked in use: it is not picked until
    /// published. `None` when the table is full.
    pub(super) fn reserve(&self) -> Option<u32> {
        let _held = self.lock.lock();
        let id = self.count(MADE);
        self.users.get(id)?.store(1, Relaxed);
        self.counts[MADE].store(id as u32 + 1, Relaxed);
        Some(id as u32)
    }

    /// File `id`, reserved, now made with `size` bytes.
    pub(super) fn publish(&self, id: u32, size: u64) {
        let _held = self.lock.lock();
        self.sizes[id as usize].store(size, Relaxed);
        self.users[id as usize].store(0, Relaxed);
        let live = self.count(LIVE);
        self.live[live].store(id, Relaxed);
        self.counts[LIVE].store(live as u32 + 1, Relaxed);
    }

    /// A live file, marked in use, and its size.
    pub(super) fn pick(&self, draw: u64) -> Option<(u32, u64)> {
        let _held = self.lock.lock();
        let live = self.count(LIVE) as u64;
        if live == 0 {
            return None;
        }
        let id = self.live[(draw % live) as usize].load(Relaxed);
        self.users[id as usize].fetch_add(1, Relaxed);
        Some((id, self.sizes[id as usize].load(Relaxed)))
    }

    /// File `id` no longer used by the caller, `grew` bytes longer.
    pub(super) fn release(&self, id: u32, grew: u64) {
        let _held = self.lock.lock();
        self.users[id as usize].fetch_sub(1, Relaxed);
        self.sizes[id as usize].fetch_add(grew, Relaxed);
    }

    /// A live file nobody is using, taken out of the set for deleting.
    pub(super) fn take_idle(&self, draw: u64) -> Option<u32> {
        let _held = self.lock.lock();
        let n = self.count(LIVE) as u64;
        for k in 0..8u64.min(n) {
            let index = ((draw + k * 7919) % n) as usize;
            let id = self.live[index].load(Relaxed);
            if self.users[id as usize].load(Relaxed) == 0 {
                // The last of the list takes its place.
                let last = self.live[n as usize - 1].load(Relaxed);
                self.live[index].store(last, Relaxed);
                self.counts[LIVE].store(n as u32 - 1, Relaxed);
                return Some(id);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_table_keeps_the_sets_files_and_what_the_run_did() {
        let mut set = FileTable::default();
        for size in [10, 20, 30] {
            set.add(size);
        }
        let capacity = SharedFiles::capacity_for(&set, Some(2));
        assert_eq!(capacity, 5);
        let region = Region::new(SharedFiles::room(capacity)).unwrap();
        let table = SharedFiles::new(&region, capacity, &set);
        let (id, size) = table.pick(4).unwrap();
        assert_eq!((id, size), (1, 20));
        // Files nobody uses are taken for deleting; the one in use never.
        let mut taken: Vec<u32> = (0..8).filter_map(|draw| table.take_idle(draw)).collect();
        taken.sort_unstable();
        assert_eq!(taken, [0, 2]);
        table.release(id, 5);
        let made = table.reserve().unwrap();
        table.publish(made, 7);
        assert_eq!(table.reserve(), Some(made + 1), "the last the table holds");
        assert_eq!(table.reserve(), None, "full");
        table.copy_out(&mut set);
        assert_eq!((set.sizes[1], set.sizes[made as usize]), (25, 7));
        assert_eq!(set.live, [1, made]);
    }
}

//! Which files of a set exist, which are being picked and how many descriptors each has open,
//! shared by every process of the run, and filebench's rule for choosing one: not at random,
//! but the next in number order after a rotor (one for the set, or one per thread for
//! `opennext`), skipping a file another thread is picking. Two bits and a 16-bit count a
//! file, whatever the number of files.

use std::sync::atomic::{AtomicU16, AtomicU64, Ordering::Relaxed};

use crate::parallel::shm::{Guard, Region, SharedLock};

/// What a flowop wants of a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    /// A file that exists (open, delete, stat).
    Existing,
    /// A slot with no file (create).
    Free,
}

/// Why no file was picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Missing {
    /// No file of the kind wanted: none exists, or every slot has one.
    None,
    /// Some exist, but other threads are picking every one of them.
    AllBusy,
}

/// The entries of one kind of a set (its files, or its leaf directories), sharing the set's
/// lock.
pub(super) struct Entries<'r> {
    pub(super) lock: &'r SharedLock,
    exists: &'r [AtomicU64],
    busy: &'r [AtomicU64],
    opens: &'r [AtomicU16],
    /// The rotor of creates, then the rotors of the others: the set's, and one per thread.
    rotors: &'r [AtomicU64],
    entries: u64,
}

/// One set's shared state: its files, its leaf directories (for makedir and removedir), and
/// the rotor listdir steps through its directories with. Used as its files'.
pub(super) struct SetState<'r> {
    pub(super) files: Entries<'r>,
    pub(super) leafdirs: Entries<'r>,
    pub(super) dir_rotor: &'r AtomicU64,
}

impl<'r> std::ops::Deref for SetState<'r> {
    type Target = Entries<'r>;
    fn deref(&self) -> &Entries<'r> {
        &self.files
    }
}

impl<'r> SetState<'r> {
    /// Bytes of shared memory a set of `entries` files and `leafdirs` leaf directories
    /// needs with `threads` threads.
    pub(super) fn room(entries: u64, leafdirs: u64, threads: u64) -> usize {
        Entries::room(entries, threads)
            + Entries::room(leafdirs, threads)
            + Region::lock_room()
            + 128
    }

    pub(super) fn new(
        region: &'r Region,
        entries: u64,
        leafdirs: u64,
        threads: u64,
    ) -> SetState<'r> {
        let lock = region.lock();
        SetState {
            files: Entries::new(region, lock, entries, threads),
            leafdirs: Entries::new(region, lock, leafdirs, threads),
            dir_rotor: &region.take::<AtomicU64>(1)[0],
        }
    }
}

impl<'r> Entries<'r> {
    fn room(entries: u64, threads: u64) -> usize {
        let words = entries.div_ceil(64) as usize;
        2 * Region::room::<AtomicU64>(words)
            + Region::room::<AtomicU16>(entries as usize)
            + Region::room::<AtomicU64>(threads as usize + 2)
    }

    fn new(region: &'r Region, lock: &'r SharedLock, entries: u64, threads: u64) -> Entries<'r> {
        let words = entries.div_ceil(64) as usize;
        Entries {
            lock,
            exists: region.take(words),
            busy: region.take(words),
            opens: region.take(entries as usize),
            rotors: region.take(threads as usize + 2),
            entries,
        }
    }

    /// Marks file `i` as made (before the run, while one thread owns the set).
    pub(super) fn set_exists(&self, i: u64, exists: bool) {
        let (w, bit) = ((i / 64) as usize, 1u64 << (i % 64));
        if exists {
            self.exists[w].fetch_or(bit, Relaxed);
        } else {
            self.exists[w].fetch_and(!bit, Relaxed);
        }
    }

    /// Files that exist now.
    pub(super) fn existing(&self) -> u64 {
        self.exists
            .iter()
            .map(|w| u64::from(w.load(Relaxed).count_ones()))
            .sum()
    }

    /// The first file at or after `from` (wrapping) that exists (`want` Existing) or not,
    /// and that no thread is picking if `idle`.
    fn scan(&self, from: u64, want: Want, idle: bool) -> Option<u64> {
        if self.entries == 0 {
            return None;
        }
        let words = self.exists.len();
        let from = from % self.entries;
        let (first, skip) = ((from / 64) as usize, from % 64);
        let last_bits = match self.entries % 64 {
            0 => u64::MAX,
            n => (1u64 << n) - 1,
        };
        for step in 0..=words {
            let w = (first + step) % words;
            let mut bits = self.exists[w].load(Relaxed);
            if want == Want::Free {
                bits = !bits;
            }
            if idle {
                bits &= !self.busy[w].load(Relaxed);
            }
            if w == words - 1 {
                bits &= last_bits;
            }
            if step == 0 {
                bits &= u64::MAX << skip;
            } else if step == words {
                // Back at the first word: the bits before `from`.
                bits &= (1u64 << skip).wrapping_sub(1);
            }
            if bits != 0 {
                return Some(w as u64 * 64 + u64::from(bits.trailing_zeros()));
            }
        }
        None
    }

    /// Picks a file as filebench does (the lock held): by `index` if given, else the first
    /// at or after rotor `rotor` (0: creates', 1: the set's, 2 + n: thread n's), which moves
    /// past it; then, if that one is busy, the next that is not. The file is left busy.
    pub(super) fn pick(
        &self,
        _held: &Guard<'_>,
        want: Want,
        rotor: usize,
        index: Option<u64>,
    ) -> Result<u64, Missing> {
        let start = match index {
            Some(i) => self.scan(i, want, false),
            None => {
                let r = &self.rotors[rotor];
                let found = self.scan(r.load(Relaxed), want, false);
                if let Some(f) = found {
                    r.store(f + 1, Relaxed);
                }
                found
            }
        }
        .ok_or(Missing::None)?;
        let chosen = self.scan(start, want, true).ok_or(Missing::AllBusy)?;
        self.busy[(chosen / 64) as usize].fetch_or(1 << (chosen % 64), Relaxed);
        Ok(chosen)
    }

    /// Ends a pick of `i` (the lock held): it now exists or not if `exists` says, and has
    /// `opened` more descriptors open (negative: closed). Wakes threads waiting for a file.
    pub(super) fn unbusy(&self, _held: &Guard<'_>, i: u64, exists: Option<bool>, opened: i32) {
        if let Some(e) = exists {
            self.set_exists(i, e);
        }
        let opens = &self.opens[i as usize];
        let n = i32::from(opens.load(Relaxed)) + opened;
        opens.store(n.clamp(0, i32::from(u16::MAX)) as u16, Relaxed);
        self.busy[(i / 64) as usize].fetch_and(!(1 << (i % 64)), Relaxed);
        self.lock.notify_all();
    }

    /// Descriptors open on file `i`, by any thread.
    pub(super) fn opens(&self, i: u64) -> u16 {
        self.opens[i as usize].load(Relaxed)
    }

    /// Whether some entry, with a file or not, is not being picked (filebench waits
    /// without stopping the run while every entry is busy).
    pub(super) fn any_idle(&self) -> bool {
        let busy: u64 = self
            .busy
            .iter()
            .map(|w| u64::from(w.load(Relaxed).count_ones()))
            .sum();
        busy < self.entries
    }

    pub(super) fn is_busy(&self, i: u64) -> bool {
        self.busy[(i / 64) as usize].load(Relaxed) & (1 << (i % 64)) != 0
    }

    /// Marks `i` busy (the lock held), for a close or a delete of a file a thread holds.
    pub(super) fn make_busy(&self, _held: &Guard<'_>, i: u64) {
        self.busy[(i / 64) as usize].fetch_or(1 << (i % 64), Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set<'r>(region: &'r Region, entries: u64, existing: &[u64]) -> SetState<'r> {
        let s = SetState::new(region, entries, 0, 4);
        for i in existing {
            s.set_exists(*i, true);
        }
        s
    }

    #[test]
    fn picks_step_through_the_files_in_order_and_wrap() {
        let region = Region::new(SetState::room(200, 0, 4)).unwrap();
        let s = set(&region, 200, &[3, 70, 150]);
        let mut got = Vec::new();
        for _ in 0..4 {
            let g = s.lock.lock();
            let f = s.pick(&g, Want::Existing, 1, None).unwrap();
            s.unbusy(&g, f, None, 0);
            got.push(f);
        }
        assert_eq!(got, vec![3, 70, 150, 3]);
        // Creates step through the free slots on their own rotor.
        let g = s.lock.lock();
        assert_eq!(s.pick(&g, Want::Free, 0, None), Ok(0));
        assert_eq!(s.pick(&g, Want::Free, 0, None), Ok(1));
    }

    #[test]
    fn a_busy_file_is_skipped_and_all_busy_is_told_from_none() {
        let region = Region::new(SetState::room(10, 0, 4)).unwrap();
        let s = set(&region, 10, &[2, 5]);
        let g = s.lock.lock();
        assert_eq!(s.pick(&g, Want::Existing, 1, None), Ok(2));
        // 2 is busy: the rotor is at 3, finds 5.
        assert_eq!(s.pick(&g, Want::Existing, 1, None), Ok(5));
        // Both busy: the rotor wraps to 2, and nothing idle is left.
        assert_eq!(s.pick(&g, Want::Existing, 1, None), Err(Missing::AllBusy));
        s.unbusy(&g, 2, Some(false), 0);
        s.unbusy(&g, 5, Some(false), 0);
        assert_eq!(s.pick(&g, Want::Existing, 1, None), Err(Missing::None));
        assert_eq!(s.existing(), 0);
    }

    #[test]
    fn an_index_picks_that_file_or_the_next() {
        let region = Region::new(SetState::room(100, 0, 4)).unwrap();
        let s = set(&region, 100, &[10, 90]);
        let g = s.lock.lock();
        assert_eq!(s.pick(&g, Want::Existing, 1, Some(11)), Ok(90));
        assert_eq!(s.pick(&g, Want::Existing, 1, Some(95)), Ok(10));
    }
}

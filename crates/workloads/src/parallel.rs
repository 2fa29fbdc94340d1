//! What every worker thread of a parallel phase runs under, so that the threads measure the
//! filesystem and not fsbench's process: a descriptor table of its own (all threads of a
//! process share one, and every open and close takes its lock: 16 threads creating files
//! reached 0.67 × the rate of 16 processes), and a progress counter of its own on a cache
//! line of its own, which the phase's thread sums by polling.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread::{ScopedJoinHandle, Thread};
use std::time::Duration;

use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::Progress;

/// How often the threads' counts are summed for the progress bar and series.
const POLL: Duration = Duration::from_millis(10);

/// Runs `work` on the calling thread (a worker thread started for it) with a descriptor table
/// of its own: a copy of the process's, keeping only stdin, stdout, stderr and `keep` (the
/// directories `work` makes its `*at()` calls in, at the same numbers). What `work` opens is
/// private to the thread, and when it returns (or panics) every descriptor left in the table
/// is closed, before the thread is joined: a copy left for the thread's exit would be closed
/// only after the join returned (the kernel wakes the joiner first), keeping the filesystem
/// busy for the unmount that follows.
///
/// `work` must return no descriptor (it would mean nothing, or another file, to the caller)
/// and own none opened before the call (closing it would close the copy only).
pub(crate) fn with_private_fds<R>(
    keep: &[BorrowedFd<'_>],
    work: impl FnOnce() -> R,
) -> Result<R, FsbenchError> {
    // SAFETY: unshare affects this thread only; the descriptors it copies stay open in the
    // process's table, and this thread keeps using only `keep`'s copies, at the same numbers.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(FsbenchError::Failed(format!(
            "a worker thread cannot get a descriptor table of its own (unshare CLONE_FILES): {e}"
        )));
    }
    let table = PrivateTable;
    let mut kept: Vec<u32> = keep.iter().map(|fd| fd.as_raw_fd() as u32).collect();
    kept.sort_unstable();
    let mut first = 3;
    for fd in kept.into_iter().chain([u32::MAX]) {
        if fd > first {
            close_range(first, fd - 1).map_err(|e| {
                FsbenchError::Failed(format!(
                    "a worker thread cannot close the descriptors it copied ({first}–{}): {e}",
                    fd - 1
                ))
            })?;
        }
        first = first.max(fd.saturating_add(1));
    }
    let outcome = work();
    drop(table);
    Ok(outcome)
}

/// A thread's private descriptor table, emptied when dropped.
struct PrivateTable;

impl Drop for PrivateTable {
    fn drop(&mut self) {
        // Nothing in this thread owns a descriptor any more; an error leaves only this
        // thread's copies, which its exit closes.
        let _ = close_range(0, u32::MAX);
    }
}

fn close_range(first: u32, last: u32) -> std::io::Result<()> {
    // SAFETY: only this thread's private table is touched, and the caller guarantees that
    // nothing in the thread owns a descriptor in the range.
    match unsafe { libc::close_range(first, last, 0) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// The workers of one parallel phase, as the phase's thread sees them: it sums their counts
/// into the phase's progress every [`POLL`] and is woken as soon as the last one finishes
/// (not up to a poll later, which the phase's time would include).
pub(crate) struct Crew<'a> {
    counts: Vec<&'a AtomicU64>,
    progress: &'a Progress,
    left: AtomicUsize,
    phase_thread: Thread,
}

impl<'a> Crew<'a> {
    /// On the phase's thread, before starting a worker per counter of `counts`.
    pub(crate) fn new(counts: Vec<&'a AtomicU64>, progress: &'a Progress) -> Crew<'a> {
        Crew {
            left: AtomicUsize::new(counts.len()),
            counts,
            progress,
            phase_thread: std::thread::current(),
        }
    }

    fn units(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// One worker's `work`, on its thread, with a descriptor table of its own (see
    /// [`with_private_fds`]); says when it is done (the first-done time), also by a panic.
    pub(crate) fn work<R>(
        &self,
        keep: &[BorrowedFd<'_>],
        work: impl FnOnce() -> R,
    ) -> Result<R, FsbenchError> {
        let _finished = Finished(self);
        with_private_fds(keep, work)
    }

    /// Until every worker has finished (or every thread of `handles` has, if some were
    /// never started), sets the progress's count to the workers' sum.
    pub(crate) fn wait<T>(&self, handles: &[ScopedJoinHandle<'_, T>]) {
        loop {
            self.progress.done.store(self.units(), Ordering::Relaxed);
            if self.left.load(Ordering::Acquire) == 0 || handles.iter().all(|h| h.is_finished()) {
                return;
            }
            std::thread::park_timeout(POLL);
        }
    }
}

/// Each thread's outcome, in order; a thread that panicked failed with `panicked`.
pub(crate) fn join_all<T>(
    handles: Vec<ScopedJoinHandle<'_, Result<T, FsbenchError>>>,
    panicked: &str,
) -> Vec<Result<T, FsbenchError>> {
    let failed = || Err(FsbenchError::Failed(panicked.to_string()));
    (handles.into_iter())
        .map(|h| h.join().unwrap_or_else(|_| failed()))
        .collect()
}

/// Counts a worker out of its crew when dropped, waking the phase's thread after the last.
struct Finished<'a, 'b>(&'a Crew<'b>);

impl Drop for Finished<'_, '_> {
    fn drop(&mut self) {
        let crew = self.0;
        crew.progress.thread_finished(crew.units());
        if crew.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            crew.phase_thread.unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;
    use std::sync::mpsc;
    use std::time::Instant;

    use rustix::fs::{Mode, OFlags};

    use super::*;

    /// Entries of the calling thread's descriptor table (the listing's own descriptor included).
    fn own_table() -> Vec<String> {
        std::fs::read_dir("/proc/thread-self/fd")
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    }

    fn target_of(fd: i32) -> Option<std::path::PathBuf> {
        std::fs::read_link(format!("/proc/thread-self/fd/{fd}")).ok()
    }

    #[test]
    fn a_workers_descriptors_are_its_own_and_closed_before_it_ends() {
        let scratch = tempfile::tempdir().unwrap();
        let open = |path: &std::path::Path, flags| {
            rustix::fs::open(path, flags | OFlags::CLOEXEC, Mode::from(0o600)).unwrap()
        };
        let kept = open(scratch.path(), OFlags::DIRECTORY | OFlags::RDONLY);
        let other = open(
            &scratch.path().join("other"),
            OFlags::CREATE | OFlags::WRONLY,
        );
        let (opened, seen) = mpsc::channel();
        let (checked, check) = mpsc::channel::<()>();
        let worker_file = scratch.path().join("worker");
        let left_after = std::thread::scope(|s| {
            let (kept, other) = (kept.as_fd(), other.as_raw_fd());
            let worker = s.spawn(move || {
                with_private_fds(&[kept], || {
                    // The other copy was closed; the kept directory is at its number.
                    // SAFETY: only asks whether the number is open in this table.
                    let other_gone =
                        rustix::io::fcntl_getfd(unsafe { BorrowedFd::borrow_raw(other) });
                    let file = rustix::fs::openat(kept, "worker", OFlags::CREATE, Mode::empty());
                    let file = file.unwrap();
                    opened.send(file.as_raw_fd()).unwrap();
                    check.recv().unwrap();
                    other_gone
                })
                .map(|other_gone| (other_gone, own_table()))
            });
            // The worker's file is open in its table, not in the process's.
            let fd = seen.recv().unwrap();
            assert_ne!(target_of(fd), Some(worker_file.clone()));
            checked.send(()).unwrap();
            worker.join().unwrap().unwrap()
        });
        assert_eq!(left_after.0, Err(rustix::io::Errno::BADF));
        // Only the listing's own descriptor was left in the worker's table once `work` ended.
        assert_eq!(left_after.1.len(), 1, "{:?}", left_after.1);
        // The process's copies are untouched.
        assert_eq!(
            target_of(other.as_raw_fd()),
            Some(scratch.path().join("other"))
        );
        assert!(rustix::io::fcntl_getfd(&kept).is_ok());
    }

    #[test]
    fn a_crew_wakes_its_phase_thread_when_the_last_worker_ends() {
        let (count, progress) = (AtomicU64::new(0), Progress::default());
        let crew = Crew::new(vec![&count, &count], &progress);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..2)
                .map(|_| s.spawn(|| crew.work(&[], || ()).unwrap()))
                .collect();
            // Joined one by one, without parking (the scope's end parks, and would take the
            // wake-up).
            for w in workers {
                w.join().unwrap();
            }
        });
        // The last worker left the phase thread a wake-up: this returns at once.
        let parked = Instant::now();
        std::thread::park_timeout(Duration::from_secs(10));
        assert!(parked.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_panicking_worker_still_counts_out() {
        let (count, progress) = (AtomicU64::new(7), Progress::default());
        let crew = Crew::new(vec![&count], &progress);
        std::thread::scope(|s| {
            let h = s.spawn(|| crew.work(&[], || panic!("worker fails")));
            crew.wait(std::slice::from_ref(&h));
            assert!(h.join().is_err());
        });
        assert_eq!(crew.left.load(Ordering::Relaxed), 0);
        // Its first-done carries the units done then, not the last poll's.
        assert_eq!(progress.threads().1.map(|(_, units)| units), Some(7));
    }

    #[test]
    fn join_all_keeps_order_and_names_a_panic() {
        let outcomes = std::thread::scope(|s| {
            let handles = vec![
                s.spawn(|| Ok(1)),
                s.spawn(|| panic!("worker fails")),
                s.spawn(|| Err(FsbenchError::Failed("its own".into()))),
            ];
            join_all(handles, "a test thread panicked")
        });
        let texts: Vec<String> = (outcomes.iter())
            .map(|o| match o {
                Ok(n) => n.to_string(),
                Err(e) => e.to_string(),
            })
            .collect();
        assert_eq!(texts[0], "1");
        assert!(texts[1].contains("a test thread panicked"), "{texts:?}");
        assert!(texts[2].contains("its own"), "{texts:?}");
    }
}

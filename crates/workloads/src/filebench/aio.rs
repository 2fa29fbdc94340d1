//! aiowrite and aiowait as filebench makes them on Linux: POSIX AIO (glibc's, whose helper
//! threads make the pwrite calls), and a wait that reaps the finished writes, half of those
//! outstanding at most, and blocks only while more than [`MOST_OUTSTANDING`] remain.
//! Control blocks are reused; the buffer a write reads from stays allocated until every
//! write has finished.

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use fsbench_measure::calls::Aligned;

use super::control::POLL;

/// filebench's MAXREAP: its aiowait reaps at most this many a pass and returns only once
/// no more than this many writes are outstanding.
pub(super) const MOST_OUTSTANDING: usize = 4096;

/// A thread's outstanding asynchronous writes. Boxed control blocks: the kernel and glibc
/// hold their addresses while a write runs, and a vector moves its items as it grows.
#[derive(Default)]
#[allow(clippy::vec_box)]
pub(super) struct Aio {
    pending: Vec<Box<libc::aiocb>>,
    spare: Vec<Box<libc::aiocb>>,
    /// The buffers writes read from; the last is the one in use.
    bufs: Vec<(Aligned, usize)>,
    /// `pending`'s control blocks for `aio_suspend`, kept to be refilled without allocating.
    waiting: Vec<*const libc::aiocb>,
}

impl Aio {
    /// Starts a write of `len` bytes at `offset` of `fd`.
    pub(super) fn write(&mut self, fd: RawFd, len: usize, offset: u64) -> std::io::Result<()> {
        if self.bufs.last().is_none_or(|(_, l)| *l < len) {
            // A larger buffer; the old one stays until the writes reading it are done.
            self.bufs.push((Aligned::new(len), len));
        }
        let (buf, _) = self.bufs.last_mut().expect("pushed");
        // SAFETY: a zeroed aiocb is a valid request to fill in.
        let mut cb = self
            .spare
            .pop()
            .unwrap_or_else(|| Box::new(unsafe { std::mem::zeroed() }));
        cb.aio_fildes = fd;
        cb.aio_buf = buf.buf().as_mut_ptr().cast();
        cb.aio_nbytes = len;
        cb.aio_offset = offset as libc::off_t;
        cb.aio_reqprio = 0;
        cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
        // SAFETY: the control block and the buffer are kept until the write has finished
        // (`pending`, `bufs`, drained before they are dropped).
        if unsafe { libc::aio_write(&mut *cb) } != 0 {
            let e = std::io::Error::last_os_error();
            self.spare.push(cb);
            return Err(e);
        }
        self.pending.push(cb);
        Ok(())
    }

    /// filebench's aiowait: takes back up to half of the outstanding writes (at least one)
    /// that have finished, then, while more than `most` ([`MOST_OUTSTANDING`]) are outstanding (a
    /// writer its O_SYNC writes fall behind), waits for more to finish, until `stopping`;
    /// the errors of failed ones. filebench spins through `aio_error` there (on Linux it
    /// has no `aio_waitn`), which takes from the run's other threads the CPU it burns (half
    /// of its CPU in oltp on ext4); fsbench waits in `aio_suspend`, the same wait without
    /// that cost.
    pub(super) fn reap(&mut self, most: usize, stopping: impl Fn() -> bool) -> Result<(), String> {
        let mut failed = self.reap_pass((self.pending.len() / 2).clamp(1, most));
        while self.pending.len() > most && !stopping() {
            self.suspend(POLL);
            failed = self.reap_pass(most).or(failed);
        }
        if self.pending.is_empty() && self.bufs.len() > 1 {
            self.bufs.drain(..self.bufs.len() - 1);
        }
        failed.map_or(Ok(()), Err)
    }

    /// One pass over the outstanding writes taking back up to `todo` finished ones; the
    /// error of a failed one.
    fn reap_pass(&mut self, todo: usize) -> Option<String> {
        let mut reaped = 0;
        let mut i = 0;
        let mut failed = None;
        while i < self.pending.len() && reaped < todo {
            // SAFETY: a control block submitted by `write` and not yet returned.
            let status = unsafe { libc::aio_error(&*self.pending[i]) };
            if status == libc::EINPROGRESS {
                i += 1;
                continue;
            }
            // SAFETY: finished: its result is taken once, then the block is reused.
            let n = unsafe { libc::aio_return(&mut *self.pending[i]) };
            if n < 0 || status != 0 {
                failed = Some(format!(
                    "an asynchronous write failed: {}",
                    std::io::Error::from_raw_os_error(status)
                ));
            }
            let cb = self.pending.swap_remove(i);
            self.spare.push(cb);
            reaped += 1;
        }
        failed
    }

    /// Waits up to `timeout` for one of the outstanding writes to finish.
    fn suspend(&mut self, timeout: Duration) {
        self.waiting.clear();
        (self.waiting).extend(self.pending.iter().map(|cb| &**cb as *const libc::aiocb));
        let timeout = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: every entry is a submitted control block kept alive by `pending`.
        unsafe { libc::aio_suspend(self.waiting.as_ptr(), self.waiting.len() as i32, &timeout) };
    }

    /// Cancels the writes glibc has not started and waits for the others to finish (at
    /// most a minute; glibc's helpers end with the process in any case). A writer whose
    /// O_SYNC writes fall behind queues thousands: waiting for them all held a stopping run
    /// past its workers' minute under load, where filebench's processes end with them.
    pub(super) fn drain(&mut self) {
        for cb in &mut self.pending {
            // SAFETY: a submitted control block kept alive by `pending`; a cancelled one
            // finishes with ECANCELED, which the loop below takes back as any other.
            unsafe { libc::aio_cancel(cb.aio_fildes, &mut **cb) };
        }
        let end = Instant::now() + Duration::from_secs(60);
        while !self.pending.is_empty() && Instant::now() < end {
            self.suspend(Duration::from_millis(100));
            self.pending.retain_mut(|cb| {
                // SAFETY: as above.
                let status = unsafe { libc::aio_error(&**cb) };
                if status != libc::EINPROGRESS {
                    // SAFETY: finished; its result is taken once.
                    unsafe { libc::aio_return(&mut **cb) };
                    false
                } else {
                    true
                }
            });
        }
    }
}

impl Drop for Aio {
    fn drop(&mut self) {
        self.drain();
        if !self.pending.is_empty() {
            // Writes still running after the drain's minute keep their memory: the process
            // ends with them.
            std::mem::forget(std::mem::take(&mut self.pending));
            std::mem::forget(std::mem::take(&mut self.bufs));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn a_wait_returns_once_no_more_than_the_most_are_outstanding() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("f")).unwrap();
        let mut aio = Aio::default();
        for i in 0..64 {
            aio.write(file.as_raw_fd(), 4096, i * 4096).unwrap();
        }
        // A pass takes back half of them at most: 32 or more are left after it, and the
        // wait goes on until 8 are.
        aio.reap(8, || false).unwrap();
        assert!(aio.pending.len() <= 8, "{} outstanding", aio.pending.len());
        // Stopping ends the wait after the pass, however many are outstanding.
        for i in 0..64 {
            aio.write(file.as_raw_fd(), 4096, i * 4096).unwrap();
        }
        let before = aio.pending.len();
        aio.reap(8, || true).unwrap();
        assert!(aio.pending.len() >= before - before / 2 && aio.pending.len() > 8);
        aio.drain();
        assert!(aio.pending.is_empty());
    }
}

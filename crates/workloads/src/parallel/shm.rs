//! Memory a phase's processes share: one anonymous shared mapping made before they are
//! forked, so it is at the same address in each (no pointer into it depends on where the
//! kernel puts it in a later exec: filebench's crash with ASLR), with process-shared locks.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use fsbench_measure::error::FsbenchError;

/// A shared anonymous mapping, handed out front to back; unmapped when dropped.
pub(crate) struct Region {
    base: *mut u8,
    len: usize,
    used: Cell<usize>,
}

// SAFETY: the region is only handed out as atomics and process-shared locks, which are safe
// to use from any thread; the bump offset is only used while the region is being laid out,
// on one thread, before any worker starts.
unsafe impl Sync for Region {}
unsafe impl Send for Region {}

/// Types that are valid when all their bytes are zero (a fresh mapping's), and meant to be
/// shared: atomics and the locks below.
pub(crate) trait Zeroed {}
impl Zeroed for std::sync::atomic::AtomicBool {}
impl Zeroed for std::sync::atomic::AtomicU64 {}
impl Zeroed for std::sync::atomic::AtomicI64 {}
impl Zeroed for std::sync::atomic::AtomicU32 {}
impl Zeroed for std::sync::atomic::AtomicU16 {}

impl Region {
    /// A region of `len` bytes. Its pages take memory only once written (`MAP_NORESERVE`):
    /// a table sized for the most a phase may need costs what it holds.
    pub(crate) fn new(len: usize) -> Result<Region, FsbenchError> {
        let len = len.max(4096);
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(FsbenchError::Failed(format!(
                "cannot map {len} bytes of memory shared by worker processes: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(Region {
            base: base.cast(),
            len,
            used: Cell::new(0),
        })
    }

    /// `n` zeroed values of `T`, aligned, from the region.
    pub(crate) fn take<T: Zeroed>(&self, n: usize) -> &[T] {
        let align = std::mem::align_of::<T>().max(64);
        let start = self.used.get().next_multiple_of(align);
        let end = start + n * std::mem::size_of::<T>();
        assert!(
            end <= self.len,
            "the shared region was sized for everything it holds"
        );
        self.used.set(end);
        // SAFETY: in bounds (checked), aligned, zeroed by the kernel and valid as T (Zeroed),
        // and never handed out twice; it lives as long as the region.
        unsafe { std::slice::from_raw_parts(self.base.add(start).cast::<T>(), n) }
    }

    /// A process-shared lock with its condition, ready to use.
    pub(crate) fn lock(&self) -> &SharedLock {
        let align = std::mem::align_of::<SharedLock>().max(64);
        let start = self.used.get().next_multiple_of(align);
        let end = start + std::mem::size_of::<SharedLock>();
        assert!(
            end <= self.len,
            "the shared region was sized for everything it holds"
        );
        self.used.set(end);
        // SAFETY: in bounds, aligned, used only here; initialized before it is returned.
        let lock = unsafe { &*self.base.add(start).cast::<SharedLock>() };
        lock.init();
        lock
    }

    /// Bytes to ask for `n` values of `T` (with their alignment).
    pub(crate) fn room<T>(n: usize) -> usize {
        n * std::mem::size_of::<T>() + 64
    }

    pub(crate) fn lock_room() -> usize {
        std::mem::size_of::<SharedLock>() + 64
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; nothing borrowed from it outlives the region.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// A mutex and a condition shared by processes. The mutex is glibc's, process-shared and
/// robust: a worker process killed while it holds it (SIGKILL lands at any instruction)
/// leaves it to the next locker, who takes it over, instead of leaving every other process
/// blocked on it for ever. The condition is a futex on a notification count, not glibc's
/// process-shared condition variable: a waiter killed inside `pthread_cond_wait` stays
/// counted in the variable, and the next broadcast waits for it for ever (seen: a run whose
/// worker was killed hung in `pthread_cond_broadcast`). What the lock guards is atomics that
/// a dead holder cannot leave half-written.
#[repr(C)]
pub(crate) struct SharedLock {
    mutex: UnsafeCell<libc::pthread_mutex_t>,
    notified: AtomicU32,
}

// SAFETY: pthread mutexes and atomics are made for concurrent use.
unsafe impl Sync for SharedLock {}

impl SharedLock {
    fn init(&self) {
        // SAFETY: the attributes are made, used and destroyed here; the mutex is initialized
        // once, before any other use.
        unsafe {
            let mut ma: libc::pthread_mutexattr_t = std::mem::zeroed();
            libc::pthread_mutexattr_init(&mut ma);
            libc::pthread_mutexattr_setpshared(&mut ma, libc::PTHREAD_PROCESS_SHARED);
            libc::pthread_mutexattr_setrobust(&mut ma, libc::PTHREAD_MUTEX_ROBUST);
            libc::pthread_mutex_init(self.mutex.get(), &ma);
            libc::pthread_mutexattr_destroy(&mut ma);
        }
        self.notified.store(0, Ordering::Release);
    }

    pub(crate) fn lock(&self) -> Guard<'_> {
        // SAFETY: an initialized mutex; the guard unlocks it.
        let r = unsafe { libc::pthread_mutex_lock(self.mutex.get()) };
        self.take_over_if_orphaned(r);
        Guard(self)
    }

    /// After a lock that returned `r`: a holder that died leaves the mutex `EOWNERDEAD`,
    /// held by this caller; marked consistent, it goes on as any other.
    fn take_over_if_orphaned(&self, r: libc::c_int) {
        if r == libc::EOWNERDEAD {
            // SAFETY: the mutex is held by this thread (EOWNERDEAD says so).
            unsafe { libc::pthread_mutex_consistent(self.mutex.get()) };
        }
    }

    /// Wakes every waiter.
    pub(crate) fn notify_all(&self) {
        self.notified.fetch_add(1, Ordering::AcqRel);
        // SAFETY: a futex wake on a word of shared memory (not FUTEX_PRIVATE: the waiters
        // are other processes); it reads nothing else.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.notified.as_ptr(),
                libc::FUTEX_WAKE,
                i32::MAX,
            )
        };
    }
}

/// The lock, held.
pub(crate) struct Guard<'a>(&'a SharedLock);

impl Guard<'_> {
    /// Waits for a notification, at most `limit` (callers look at what they wait for again,
    /// and at whether the run is stopping: no wait outlasts the run).
    pub(crate) fn wait(&mut self, limit: Duration) {
        // Read under the lock: a notification after it changes the count, and the futex
        // wait below returns at once.
        let seen = self.0.notified.load(Ordering::Acquire);
        let timeout = libc::timespec {
            tv_sec: limit.as_secs() as libc::time_t,
            tv_nsec: limit.subsec_nanos() as libc::c_long,
        };
        // SAFETY: the mutex is held by this guard, released for the wait and taken again;
        // the futex word lives in the shared region, the timeout on this stack.
        unsafe {
            libc::pthread_mutex_unlock(self.0.mutex.get());
            libc::syscall(
                libc::SYS_futex,
                self.0.notified.as_ptr(),
                libc::FUTEX_WAIT,
                seen,
                &timeout as *const libc::timespec,
            );
            let r = libc::pthread_mutex_lock(self.0.mutex.get());
            self.0.take_over_if_orphaned(r);
        }
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        // SAFETY: locked by this guard.
        unsafe { libc::pthread_mutex_unlock(self.0.mutex.get()) };
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[test]
    fn a_forked_process_sees_and_wakes_through_the_region() {
        let region = Region::new(4096).unwrap();
        let lock = region.lock();
        let flag = &region.take::<AtomicU64>(1)[0];
        // SAFETY: the child only touches the region and exits without unwinding.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let _g = lock.lock();
            flag.store(7, Ordering::Relaxed);
            lock.notify_all();
            drop(_g);
            unsafe { libc::_exit(0) };
        }
        let mut guard = lock.lock();
        for _ in 0..100 {
            if flag.load(Ordering::Relaxed) == 7 {
                break;
            }
            guard.wait(Duration::from_millis(100));
        }
        drop(guard);
        let mut status = 0;
        // SAFETY: the child made above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(flag.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn a_process_killed_holding_the_lock_leaves_it_to_the_next() {
        let region = Region::new(4096).unwrap();
        let lock = region.lock();
        // SAFETY: the child only locks the region's mutex and exits without unlocking it, as
        // a worker killed while holding it would.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            std::mem::forget(lock.lock());
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: the child made above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        // Locked on another thread, so that a lock left for ever fails the test, not hangs it.
        let at = lock as *const SharedLock as usize;
        let got = off_thread(region, at, |lock, _| {
            drop(lock.lock());
            drop(lock.lock());
        });
        assert_eq!(
            got.recv_timeout(Duration::from_secs(5)),
            Ok(DONE),
            "the lock of a dead holder was never taken over"
        );
    }

    /// What [`off_thread`] sends when `work` has returned.
    const DONE: u32 = u32::MAX;

    /// Runs `work` on the lock at address `at` (in `region`) on a thread of its own, which
    /// owns the region and sends [`DONE`] after it: a call that blocks for ever fails the
    /// test by a receive's time limit instead of hanging it.
    fn off_thread(
        region: Region,
        at: usize,
        work: impl FnOnce(&SharedLock, &std::sync::mpsc::Sender<u32>) + Send + 'static,
    ) -> std::sync::mpsc::Receiver<u32> {
        let (sent, got) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // SAFETY: the lock lives in the region, which this thread owns.
            let lock = unsafe { &*(at as *const SharedLock) };
            work(lock, &sent);
            drop(region);
            let _ = sent.send(DONE);
        });
        got
    }

    #[test]
    fn a_process_killed_while_waiting_leaves_the_next_notification_free() {
        let region = Region::new(4096).unwrap();
        let lock = region.lock();
        // SAFETY: each child only waits on the region's condition, in short timed waits as a
        // worker at the start line does, until it is killed.
        let children: Vec<libc::pid_t> = (0..3)
            .map(|_| match unsafe { libc::fork() } {
                0 => loop {
                    lock.lock().wait(Duration::from_millis(1));
                },
                pid => pid,
            })
            .collect();
        // Notified on another thread while the waiters churn and one is killed, so that a
        // notification that blocks for ever (glibc's process-shared condition variable did)
        // fails the test, not hangs it.
        let at = lock as *const SharedLock as usize;
        let got = off_thread(region, at, |lock, sent| {
            for i in 0..200_000 {
                lock.notify_all();
                if i % 100 == 0 {
                    let _ = sent.send(i);
                }
            }
        });
        let mut status = 0;
        for pid in &children {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: the children made above, killed (one, then the rest) and reaped.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
            unsafe { libc::waitpid(*pid, &mut status, 0) };
        }
        loop {
            match got.recv_timeout(Duration::from_secs(5)) {
                Ok(DONE) => break,
                Ok(_) => continue,
                Err(_) => panic!("a notification after a waiter was killed never returned"),
            }
        }
    }
}

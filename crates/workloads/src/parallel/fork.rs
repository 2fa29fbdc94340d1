//! Worker processes: forked from the phase's thread, all in one process group of their own
//! (the first one's), each handing one report back over a pipe of its own when its work is
//! done. None outlives fsbench: each asks for SIGKILL when its parent dies, however it dies
//! (the parent-death signal, then a check that the parent did not die before it was set),
//! and a [`Brood`] dropped with children unreaped (fsbench failing, interrupted, panicking)
//! kills and reaps them. Each names itself `fsbw.<fsbench's pid>`, which `fsbench clean`
//! looks for ([`super::strays`]).
//!
//! fsbench has other threads when it forks (the progress sampler and bar, an MPI library's),
//! and a child has only the forking thread: it must take no lock another thread may have held
//! at the fork. glibc's fork takes and resets malloc's own locks, so a child allocates as it
//! pleases; what it must not touch is what Rust locks: stdout and stderr (the progress bar
//! writes there), so a child never prints, and a panic's message goes straight to descriptor 2
//! (fsbench's hook would abort every MPI rank), from a hook set once in the parent before its
//! first fork (setting it in the child could wait forever for a lock a panicking thread held
//! at the fork). Forking at the
//! phase, rather than from a single-threaded process made early, keeps a worker's code the
//! same in both modes: it inherits the workload's state and descriptors as they are.

use std::io::Read;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use fsbench_measure::measure::CpuTimes;

/// The child's name (`/proc/PID/comm`) starts with this, then fsbench's pid.
pub(super) const NAME_PREFIX: &str = "fsbw.";

/// A child's exit status when its work panicked.
const PANICKED: i32 = 101;

/// Set in a worker process right after the fork: its panics' messages are written as they are.
static IN_WORKER: AtomicBool = AtomicBool::new(false);

/// Once per process, before its first fork: a panic in a worker process is written straight
/// to descriptor 2; one of fsbench's own goes to the hook it had.
fn hook_worker_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_WORKER.load(Ordering::Relaxed) {
                return previous(info);
            }
            let text = format!("fsbench: worker process {}: {info}\n", std::process::id());
            // SAFETY: write(2) on stderr, taking no lock.
            unsafe { libc::write(libc::STDERR_FILENO, text.as_ptr().cast(), text.len()) };
        }));
    });
}

struct Child {
    pid: libc::pid_t,
    pipe: std::fs::File,
    report: Vec<u8>,
    eof: bool,
    /// Its wait status and CPU time, once reaped.
    ended: Option<(i32, CpuTimes)>,
}

/// Forked children, killed and reaped when dropped if they have not ended.
pub(crate) struct Brood {
    children: Vec<Child>,
    pgid: libc::pid_t,
}

impl Brood {
    pub(crate) fn new() -> Brood {
        Brood {
            children: Vec::new(),
            pgid: 0,
        }
    }

    /// Forks a child that runs `body` with the descriptors of `keep` (every other one is
    /// closed), writes what `body` returns down its pipe and ends; its number, from 0.
    pub(crate) fn fork(
        &mut self,
        keep: &[BorrowedFd<'_>],
        body: impl FnOnce() -> Vec<u8>,
    ) -> Result<usize, String> {
        hook_worker_panics();
        let parent = std::process::id() as libc::pid_t;
        let (read, write) = pipe().map_err(|e| format!("cannot make a pipe: {e}"))?;
        // Made before the fork: the child allocates nothing it could do without.
        let mut kept: Vec<u32> = keep.iter().map(|fd| fd.as_raw_fd() as u32).collect();
        kept.push(write.as_raw_fd() as u32);
        kept.sort_unstable();
        let name = std::ffi::CString::new(format!("{NAME_PREFIX}{parent}")).expect("no NUL");
        // SAFETY: the child runs `body` on memory it inherited and ends with _exit: it never
        // returns into the caller's code, and takes no lock another thread may hold (see the
        // module's documentation).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("cannot fork: {}", std::io::Error::last_os_error()));
        }
        if pid == 0 {
            drop(read);
            child(parent, self.pgid, &kept, &name, write, body);
        }
        // Both sides set the group, so that it is set before either goes on.
        let pgid = if self.pgid == 0 { pid } else { self.pgid };
        // SAFETY: our child, not yet reaped.
        unsafe { libc::setpgid(pid, pgid) };
        self.pgid = pgid;
        drop(write);
        let pipe = std::fs::File::from(read);
        rustix::io::ioctl_fionbio(&pipe, true).map_err(|e| format!("pipe: {e}"))?;
        self.children.push(Child {
            pid,
            pipe,
            report: Vec::new(),
            eof: false,
            ended: None,
        });
        Ok(self.children.len() - 1)
    }

    pub(crate) fn len(&self) -> usize {
        self.children.len()
    }

    pub(crate) fn pid(&self, child: usize) -> libc::pid_t {
        self.children[child].pid
    }

    /// Waits up to `limit` for a child to write or end, then reads what the children wrote
    /// and reaps those that ended.
    pub(crate) fn watch(&mut self, limit: Duration) {
        let mut fds: Vec<libc::pollfd> = (self.children.iter())
            .filter(|c| !c.eof)
            .map(|c| libc::pollfd {
                fd: c.pipe.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = limit.as_millis().min(i32::MAX as u128) as i32;
        if fds.is_empty() {
            // Only reaping is left: the children closed their pipes on the way out.
            std::thread::sleep(limit.min(Duration::from_millis(1)));
        } else {
            // SAFETY: `fds` is a valid array of pollfd for the call; EINTR is a wake-up.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        }
        for c in &mut self.children {
            drain(c);
            if c.ended.is_none() {
                reap(c, libc::WNOHANG);
            }
        }
    }

    /// A child that ended with a status other than 0: its number and how it ended.
    pub(crate) fn failed(&self) -> Option<(usize, String)> {
        (0..self.children.len()).find_map(|n| {
            let (status, _) = self.children[n].ended?;
            (!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0))
                .then(|| (n, describe(status)))
        })
    }

    /// How child `n` ended (`exit status 0`, `killed by signal 9 (SIGKILL)`), once reaped.
    pub(crate) fn how_ended(&self, n: usize) -> Option<String> {
        self.children[n].ended.map(|(status, _)| describe(status))
    }

    /// Whether every child has ended, reaped with all it wrote read.
    pub(crate) fn all_ended(&self) -> bool {
        (self.children.iter()).all(|c| c.eof && c.ended.is_some())
    }

    /// What child `n` wrote (all of it once it has ended).
    pub(crate) fn report(&self, n: usize) -> &[u8] {
        &self.children[n].report
    }

    /// The CPU time of the children reaped so far.
    pub(crate) fn cpu(&self) -> CpuTimes {
        let mut cpu = CpuTimes::default();
        for (_, used) in self.children.iter().filter_map(|c| c.ended) {
            cpu.user += used.user;
            cpu.system += used.system;
        }
        cpu
    }

    /// Kills every child not yet reaped and reaps them.
    pub(crate) fn kill(&mut self) {
        if self.children.iter().all(|c| c.ended.is_some()) {
            return;
        }
        // SAFETY: the group of our own children; one that left it (none does) is killed by pid.
        unsafe { libc::killpg(self.pgid, libc::SIGKILL) };
        for c in self.children.iter_mut().filter(|c| c.ended.is_none()) {
            // SAFETY: our child, not yet reaped.
            unsafe { libc::kill(c.pid, libc::SIGKILL) };
            reap(c, 0);
            drain(c);
        }
    }
}

impl Drop for Brood {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The child's side of [`Brood::fork`]: never returns.
fn child(
    parent: libc::pid_t,
    pgid: libc::pid_t,
    kept: &[u32],
    name: &std::ffi::CStr,
    pipe: OwnedFd,
    body: impl FnOnce() -> Vec<u8>,
) -> ! {
    // SAFETY: plain calls on this process.
    unsafe {
        libc::setpgid(0, pgid);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            // The parent died before the signal was asked for.
            libc::_exit(1);
        }
        // fsbench's handlers only set a flag of the parent's (a copy, here): they would leave
        // the worker deaf to signals.
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_DFL);
        }
        libc::prctl(libc::PR_SET_NAME, name.as_ptr());
    }
    IN_WORKER.store(true, Ordering::Relaxed);
    close_all_but(kept);
    let code = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(report) => {
            let mut pipe = std::fs::File::from(pipe);
            i32::from(std::io::Write::write_all(&mut pipe, &report).is_err())
        }
        Err(_) => PANICKED,
    };
    // SAFETY: ends the child without the parent's exit handlers or destructors.
    unsafe { libc::_exit(code) }
}

/// Closes every descriptor from 3 up but those of `kept` (sorted).
pub(super) fn close_all_but(kept: &[u32]) {
    let mut first = 3;
    for &fd in kept.iter().chain(&[u32::MAX]) {
        if fd > first {
            // SAFETY: nothing in the caller owns a descriptor in the range.
            unsafe { libc::close_range(first, fd - 1, 0) };
        }
        first = first.max(fd.saturating_add(1));
    }
}

/// A pipe's read and write ends (close-on-exec).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors, owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads what the child has written so far.
fn drain(c: &mut Child) {
    let mut buf = [0u8; 65536];
    while !c.eof {
        match c.pipe.read(&mut buf) {
            Ok(0) => c.eof = true,
            Ok(n) => c.report.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => c.eof = true,
        }
    }
}

/// Waits for the child (`flags`: 0 or WNOHANG); whether it has ended.
fn reap(c: &mut Child, flags: i32) -> bool {
    let mut status = 0;
    // SAFETY: rusage is plain data; the pid is our child's.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(c.pid, &mut status, flags, &mut usage) };
    if pid != c.pid {
        return false;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    c.ended = Some((
        status,
        CpuTimes {
            user: tv(usage.ru_utime),
            system: tv(usage.ru_stime),
        },
    ));
    true
}

/// How a child ended, from its wait status.
fn describe(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        let name = match sig {
            libc::SIGKILL => " (SIGKILL)",
            libc::SIGTERM => " (SIGTERM)",
            libc::SIGINT => " (SIGINT)",
            libc::SIGSEGV => " (SIGSEGV)",
            libc::SIGBUS => " (SIGBUS)",
            libc::SIGABRT => " (SIGABRT)",
            libc::SIGFPE => " (SIGFPE)",
            libc::SIGILL => " (SIGILL)",
            _ => "",
        };
        format!("killed by signal {sig}{name}")
    } else if libc::WEXITSTATUS(status) == PANICKED {
        format!("exit status {PANICKED}: it panicked")
    } else {
        format!("exit status {}", libc::WEXITSTATUS(status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(brood: &mut Brood) {
        while !brood.all_ended() {
            brood.watch(Duration::from_millis(50));
        }
    }

    #[test]
    fn children_report_and_end() {
        let mut brood = Brood::new();
        for n in 0..3u8 {
            // A report larger than a pipe holds: the parent reads while the child writes.
            brood.fork(&[], move || vec![n; 200_000]).unwrap();
        }
        collect(&mut brood);
        assert!(brood.failed().is_none());
        for n in 0..3 {
            assert_eq!(brood.report(n), &vec![n as u8; 200_000][..]);
        }
        // Each child is in the first one's group.
        assert_eq!(brood.pgid, brood.pid(0));
    }

    #[test]
    fn a_child_that_dies_or_panics_is_named() {
        let mut brood = Brood::new();
        brood.fork(&[], Vec::new).unwrap();
        brood
            .fork(&[], || {
                // SAFETY: ends this child only.
                unsafe { libc::raise(libc::SIGKILL) };
                Vec::new()
            })
            .unwrap();
        collect(&mut brood);
        let (n, how) = brood.failed().unwrap();
        assert_eq!((n, how.as_str()), (1, "killed by signal 9 (SIGKILL)"));
        let mut brood = Brood::new();
        brood
            .fork(&[], || panic!("a test of a worker's panic, on purpose"))
            .unwrap();
        collect(&mut brood);
        assert_eq!(brood.failed().unwrap().1, "exit status 101: it panicked");
    }

    #[test]
    fn a_dropped_brood_leaves_no_child() {
        let mut brood = Brood::new();
        let pid = brood
            .fork(&[], || {
                std::thread::sleep(Duration::from_secs(60));
                Vec::new()
            })
            .map(|n| brood.pid(n))
            .unwrap();
        drop(brood);
        // Reaped: the pid is no child of ours any more.
        // SAFETY: only asks.
        assert_eq!(
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) },
            -1
        );
    }
}

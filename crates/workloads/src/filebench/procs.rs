//! The workload's processes: forked before the timed part, each running its threads in a
//! process group of their own, killed if fsbench dies (PR_SET_PDEATHSIG) or fails (the
//! group is killed when the crew is dropped), and handing their threads' counts back over a
//! pipe when the run ends.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use super::plan::Shared;
use super::stats::ThreadReport;
use super::worker::Worker;
use fsbench_measure::measure::CpuTimes;

/// How long the processes may take to hand their counts back and end once told to stop.
const WIND_DOWN: Duration = Duration::from_secs(60);

struct Child {
    pid: libc::pid_t,
    pipe: std::fs::File,
    out: Vec<u8>,
    eof: bool,
    /// Its wait status and CPU time, once reaped.
    ended: Option<(i32, CpuTimes)>,
}

/// The forked processes, killed and reaped when dropped if they have not ended.
pub(super) struct Crew {
    children: Vec<Child>,
    pgid: libc::pid_t,
}

/// Forks one process per process instance of the plan, each running its threads (which
/// wait at the start barrier); `seed` varies the draws between runs.
pub(super) fn fork_all(sh: &Shared<'_>, seed: u64) -> Result<Crew, String> {
    let parent = std::process::id() as libc::pid_t;
    let mut crew = Crew {
        children: Vec::new(),
        pgid: 0,
    };
    for (n, threads) in sh.plan.processes.iter().enumerate() {
        let (read, write) =
            pipe().map_err(|e| format!("cannot make a pipe for a worker process: {e}"))?;
        // SAFETY: the child runs only its own threads on memory it inherited, then _exits:
        // it never returns into the caller's code, nor touches a lock another thread of
        // this process may have held at the fork (it writes nothing to stdout or stderr).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!(
                "cannot fork a worker process: {}",
                std::io::Error::last_os_error()
            ));
        }
        if pid == 0 {
            drop(read);
            child(
                sh,
                parent,
                crew.pgid,
                threads.clone(),
                write,
                seed ^ (n as u64) << 32,
            );
        }
        // Both sides set the group, so it is set before either goes on.
        let pgid = if crew.pgid == 0 { pid } else { crew.pgid };
        // SAFETY: our child, not yet reaped.
        unsafe { libc::setpgid(pid, pgid) };
        crew.pgid = pgid;
        drop(write);
        rustix::io::ioctl_fionbio(&read, true).map_err(|e| format!("pipe: {e}"))?;
        crew.children.push(Child {
            pid,
            pipe: std::fs::File::from(read),
            out: Vec::new(),
            eof: false,
            ended: None,
        });
    }
    Ok(crew)
}

/// A pipe's read and write ends (close-on-exec).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors, owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A worker process: its threads' run, their reports down the pipe, then `_exit`.
fn child(
    sh: &Shared<'_>,
    parent: libc::pid_t,
    pgid: libc::pid_t,
    threads: std::ops::Range<usize>,
    pipe: OwnedFd,
    seed: u64,
) -> ! {
    let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: plain calls on this process.
        unsafe {
            libc::setpgid(0, if pgid == 0 { 0 } else { pgid });
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                return 1;
            }
            // fsbench's own handlers only set a flag of the parent's: here they would
            // leave the worker deaf to the group's signals.
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_DFL);
            }
            let mut lim: libc::rlimit = std::mem::zeroed();
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                lim.rlim_cur = lim.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            }
        }
        let nice = sh.model.processes[sh.plan.threads[threads.start].process].nice;
        if nice != 0 {
            // SAFETY: plain call on this process.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
        }
        let reports = run_threads(sh, threads, seed);
        let text = serde_json::to_vec(&reports).unwrap_or_default();
        let mut pipe = std::fs::File::from(pipe);
        use std::io::Write;
        i32::from(pipe.write_all(&text).is_err())
    }));
    // SAFETY: ends the child without running the parent's exit handlers or destructors.
    unsafe { libc::_exit(code.unwrap_or(101)) }
}

fn run_threads(sh: &Shared<'_>, threads: std::ops::Range<usize>, seed: u64) -> Vec<ThreadReport> {
    std::thread::scope(|s| {
        let handles: Vec<_> = threads
            .map(|n| {
                let place = sh.plan.threads[n];
                let handle = s.spawn(move || match Worker::new(sh, n, place, seed ^ n as u64) {
                    Ok(mut w) => w.run(),
                    Err(e) => {
                        sh.control.stop(super::control::Stop::Abort);
                        ThreadReport {
                            thread: n,
                            error: Some(e),
                            ..ThreadReport::default()
                        }
                    }
                });
                (n, handle)
            })
            .collect();
        (handles.into_iter())
            .map(|(n, h)| {
                h.join().unwrap_or_else(|_| {
                    sh.control.stop(super::control::Stop::Abort);
                    ThreadReport {
                        thread: n,
                        error: Some("a worker thread panicked".into()),
                        ..ThreadReport::default()
                    }
                })
            })
            .collect()
    })
}

impl Crew {
    /// Whether a process ended badly (a crash, a kill) before it was told to stop; one
    /// whose threads are all done ends cleanly, its report read from its pipe.
    pub(super) fn lost(&mut self) -> Option<String> {
        for c in &mut self.children {
            drain(c);
            if c.ended.is_none() && reap(c, libc::WNOHANG) {
                let (status, _) = c.ended.expect("reaped");
                if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                    return Some(format!(
                        "a worker process (pid {}) ended during the run: {}",
                        c.pid,
                        describe(status)
                    ));
                }
            }
        }
        None
    }

    /// After the stop: every process's reports (drained from the pipes) and their CPU time;
    /// an error naming a process that ended without its reports.
    pub(super) fn collect(mut self) -> Result<(Vec<ThreadReport>, CpuTimes), String> {
        let end = Instant::now() + WIND_DOWN;
        while self.children.iter().any(|c| !c.eof || c.ended.is_none()) {
            if Instant::now() > end {
                return Err(format!(
                    "the worker processes did not end within {} s of the stop",
                    WIND_DOWN.as_secs()
                ));
            }
            for c in &mut self.children {
                drain(c);
                if c.ended.is_none() {
                    reap(c, libc::WNOHANG);
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut reports = Vec::new();
        let mut cpu = CpuTimes::default();
        for c in &self.children {
            let (status, used) = c.ended.expect("all ended");
            cpu.user += used.user;
            cpu.system += used.system;
            match serde_json::from_slice::<Vec<ThreadReport>>(&c.out) {
                Ok(r) => reports.extend(r),
                Err(_) => {
                    return Err(format!(
                        "a worker process (pid {}) ended without its figures: {}",
                        c.pid,
                        describe(status)
                    ));
                }
            }
        }
        Ok((reports, cpu))
    }
}

/// Reads what the child has written so far.
fn drain(c: &mut Child) {
    let mut buf = [0u8; 65536];
    while !c.eof {
        match c.pipe.read(&mut buf) {
            Ok(0) => c.eof = true,
            Ok(n) => c.out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => c.eof = true,
        }
    }
}

/// Waits for the child (`flags`: 0 or WNOHANG); whether it has ended.
fn reap(c: &mut Child, flags: i32) -> bool {
    let mut status = 0;
    // SAFETY: rusage is plain data; the pid is our child.
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

fn describe(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("exit status {}", libc::WEXITSTATUS(status))
    }
}

impl Drop for Crew {
    fn drop(&mut self) {
        if self.children.iter().all(|c| c.ended.is_some()) {
            return;
        }
        // SAFETY: the group of our own children.
        unsafe { libc::killpg(self.pgid, libc::SIGKILL) };
        for c in &mut self.children {
            if c.ended.is_none() {
                reap(c, 0);
            }
        }
    }
}

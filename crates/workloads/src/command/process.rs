//! One user command run to its end: `sh -c` in the run's directory, in a process group and
//! (where the machine allows) a cgroup v2 of its own, its stdout and stderr drained into
//! bounded tails as it writes them, the whole tree killed on timeout, Ctrl-C, error or panic.

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal};

use super::cgroup::Cgroup;
use fsbench_measure::error::FsbenchError;

/// Bytes of each stream kept: the tail.
pub(crate) const TAIL_BYTES: usize = 64 << 10;

/// How long a stream may stay open once every process of the command is killed (a process
/// that escaped both its group and, without cgroups, any kill, holding the pipe).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// What to run, where, and for how long at most.
pub struct Step<'a> {
    pub command: &'a str,
    pub dir: &'a Path,
    /// The run's round, for `FSBENCH_RUN`.
    pub run: u32,
    pub timeout: Duration,
    pub cancel: &'a AtomicBool,
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
}

/// What the command's process tree used.
#[derive(Debug, Default)]
pub struct Usage {
    pub cpu_user: Duration,
    pub cpu_system: Duration,
    /// Bytes read from and written to block devices.
    pub block: Option<(u64, u64)>,
    /// Bytes passed to read and write calls (`rchar`, `wchar`): any file, pipes included.
    pub chars: Option<(u64, u64)>,
    pub peak_memory: u64,
    /// Where a figure comes from a fallback, and why.
    pub notes: Vec<String>,
}

pub struct Finished {
    pub exit: Exit,
    pub stdout: Tail,
    pub stderr: Tail,
    pub usage: Usage,
}

/// The last [`TAIL_BYTES`] of a stream, and how many came before them.
#[derive(Debug, Default)]
pub struct Tail {
    bytes: Vec<u8>,
    dropped: u64,
}

impl Tail {
    fn push(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        // Trimmed in batches, so that a chatty command costs no copy per read.
        if self.bytes.len() > 2 * TAIL_BYTES {
            let cut = self.bytes.len() - TAIL_BYTES;
            self.bytes.drain(..cut);
            self.dropped += cut as u64;
        }
    }

    /// The kept text, saying how much came before it.
    pub fn text(&self) -> String {
        let start = self.bytes.len().saturating_sub(TAIL_BYTES);
        let dropped = self.dropped + start as u64;
        let body = String::from_utf8_lossy(&self.bytes[start..]);
        match dropped {
            0 => body.into_owned(),
            n => format!("[{n} earlier bytes not kept]\n{body}"),
        }
    }

    /// The last `lines` lines (at most 4 KiB of them), for an error message.
    pub fn last_lines(&self, lines: usize) -> String {
        let text = String::from_utf8_lossy(&self.bytes);
        let all: Vec<&str> = text.trim_end().lines().collect();
        let tail = all[all.len().saturating_sub(lines)..].join("\n");
        let cut = tail.len().saturating_sub(4096);
        let cut = (cut..=tail.len())
            .find(|i| tail.is_char_boundary(*i))
            .unwrap_or(tail.len());
        tail[cut..].to_string()
    }
}

/// The command's processes: killed and reaped whatever ends the step.
struct Tree {
    pid: Pid,
    cgroup: Option<Cgroup>,
    /// The held command's standard input, until it is released.
    stdin: Option<File>,
    reaped: bool,
}

impl Tree {
    fn kill(&self) {
        // The group first: without a cgroup it is all there is.
        let _ = rustix::process::kill_process_group(self.pid, Signal::KILL);
        if let Some(c) = &self.cgroup {
            c.kill_all(Duration::from_secs(5));
        }
    }

    /// Waits for the shell; its status and the resources it and its waited-for children used.
    fn reap(&mut self) -> Result<(i32, libc::rusage), FsbenchError> {
        let mut status = 0;
        // SAFETY: rusage is plain data, valid all zeros.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = self.pid.as_raw_nonzero().get();
        loop {
            // SAFETY: wait4 writes only the int and the struct it is given; `pid` is our child.
            let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            if r >= 0 {
                self.reaped = true;
                return Ok((status, usage));
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                self.reaped = true;
                return Err(FsbenchError::Failed(format!(
                    "cannot wait for the command: {e}"
                )));
            }
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.kill();
        if !self.reaped {
            let _ = self.reap();
        }
        // The cgroup (its own Drop) goes after its processes are reaped.
    }
}

/// Runs `step` to its end; an error only when it could not be run or the user interrupted it.
pub fn run(step: &Step<'_>) -> Result<Finished, FsbenchError> {
    let (tree, stdout, stderr, notes) = spawn(step, false)?;
    watch(step, tree, stdout, stderr, notes)
}

/// What holds a command back until what must watch it is ready: given the directory of the
/// command's cgroup (`None` where none could be made), it readies that, or says why not.
pub type Release<'r> = dyn FnMut(Option<&Path>) -> Result<(), String> + 'r;

/// Runs `step` as [`run`] does, its shell held until `release` returns: the command must
/// read a line from its standard input first, and gets it (then end of file) once
/// `release` is done. `Ok(Err(why))` when `release` refused: the command ended unreleased.
pub fn run_held(
    step: &Step<'_>,
    release: &mut Release<'_>,
) -> Result<Result<Finished, String>, FsbenchError> {
    use std::io::Write;
    let (mut tree, stdout, stderr, notes) = spawn(step, true)?;
    let mut stdin = tree.stdin.take();
    if let Err(why) = release(tree.cgroup.as_ref().map(Cgroup::path)) {
        return Ok(Err(why));
    }
    let released = stdin.as_mut().map(|s| s.write_all(b"\n"));
    drop(stdin);
    if let Some(Err(e)) = released {
        return Err(FsbenchError::Failed(format!(
            "cannot release the command: {e}"
        )));
    }
    watch(step, tree, stdout, stderr, notes).map(Ok)
}

/// Drains the started command's output until it ends, kills what it left and reaps it.
fn watch(
    step: &Step<'_>,
    mut tree: Tree,
    stdout: File,
    stderr: File,
    mut notes: Vec<String>,
) -> Result<Finished, FsbenchError> {
    let pidfd = rustix::process::pidfd_open(tree.pid, PidfdFlags::empty())
        .map_err(|e| FsbenchError::Failed(format!("cannot watch the command: {e}")))?;
    let mut streams = [Stream::new(stdout), Stream::new(stderr)];
    let deadline = Instant::now() + step.timeout;
    let timed_out = loop {
        if step.cancel.load(Ordering::Relaxed) {
            return Err(FsbenchError::Interrupted);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break true;
        }
        if poll(
            Some(&pidfd),
            &mut streams,
            left.min(Duration::from_millis(100)),
        )? {
            break false;
        }
    };
    // The shell is a zombie now (unless it timed out): its counters hold its own I/O and
    // that of the children it waited for.
    let proc_io = (!timed_out).then(|| proc_io(tree.pid)).flatten();
    // Whatever it left running in the background is part of the phase no longer.
    tree.kill();
    let (status, rusage) = tree.reap()?;
    let grace = Instant::now() + DRAIN_GRACE;
    while streams.iter().any(|s| s.pipe.is_some()) && Instant::now() < grace {
        poll(None, &mut streams, Duration::from_millis(100))?;
    }
    let exit = if timed_out {
        Exit::TimedOut
    } else if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Code(libc::WEXITSTATUS(status))
    };
    let usage = usage(tree.cgroup.as_ref(), &rusage, proc_io, &mut notes);
    let [stdout, stderr] = streams.map(|s| s.tail);
    Ok(Finished {
        exit,
        stdout,
        stderr,
        usage: Usage { notes, ..usage },
    })
}

/// Starts `sh -c COMMAND` in a cgroup of its own if one can be made (else without, with a
/// note why), in a process group of its own; `held`: its standard input a pipe.
fn spawn(step: &Step<'_>, held: bool) -> Result<(Tree, File, File, Vec<String>), FsbenchError> {
    let mut notes = Vec::new();
    let mut cgroup = match Cgroup::create() {
        Ok((c, unswept)) => {
            notes.extend(unswept);
            Some(c)
        }
        Err(why) => {
            notes.push(why);
            None
        }
    };
    loop {
        let join = cgroup.as_ref().map(|c| c.procs_path().to_owned());
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(step.command)
            .current_dir(step.dir)
            .env("FSBENCH_DIR", step.dir)
            .env("FSBENCH_RUN", step.run.to_string())
            .stdin(if held { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // SAFETY: between fork and exec the closure makes only system calls (open, write,
        // close, prctl) on memory allocated before the fork.
        unsafe {
            command.pre_exec(move || enter(join.as_ref()));
        }
        match command.spawn() {
            Ok(mut child) => {
                let pid = Pid::from_child(&child);
                let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
                let stdin = child.stdin.take().map(|s| File::from(OwnedFd::from(s)));
                let tree = Tree {
                    pid,
                    cgroup,
                    stdin,
                    reaped: false,
                };
                let (Some(stdout), Some(stderr)) = (stdout, stderr) else {
                    return Err(FsbenchError::Failed(
                        "the command's pipes are missing".into(),
                    ));
                };
                let file = |fd: OwnedFd| File::from(fd);
                return Ok((tree, file(stdout.into()), file(stderr.into()), notes));
            }
            // A cgroup fsbench may make but not move a process into (delegation rules).
            Err(e) if cgroup.is_some() => {
                notes.push(format!("cannot move the command into its cgroup: {e}"));
                cgroup = None;
            }
            Err(e) => {
                return Err(FsbenchError::Failed(format!(
                    "cannot start `sh -c` in {}: {e}",
                    step.dir.display()
                )));
            }
        }
    }
}

/// In the child, before exec: into the cgroup, and killed if fsbench dies.
pub(crate) fn enter(cgroup_procs: Option<&CString>) -> std::io::Result<()> {
    // SAFETY: plain system calls on a NUL-terminated path and a static buffer.
    unsafe {
        if let Some(procs) = cgroup_procs {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let written = libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
            if written < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    Ok(())
}

/// One of the command's output pipes and what it wrote.
struct Stream {
    pipe: Option<File>,
    tail: Tail,
}

impl Stream {
    fn new(pipe: File) -> Stream {
        Stream {
            pipe: Some(pipe),
            tail: Tail::default(),
        }
    }

    /// Reads what is there (poll said so); an end of file closes the pipe.
    fn drain(&mut self) {
        let mut buf = [0u8; 16 << 10];
        if let Some(pipe) = &mut self.pipe {
            match pipe.read(&mut buf) {
                Ok(0) => self.pipe = None,
                Ok(n) => self.tail.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => self.pipe = None,
            }
        }
    }
}

/// Waits up to `wait` for output or the process's end, draining what came; whether the
/// process (`pidfd`) ended.
fn poll(
    pidfd: Option<&OwnedFd>,
    streams: &mut [Stream; 2],
    wait: Duration,
) -> Result<bool, FsbenchError> {
    let entry = |fd: i32| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let raw = |s: &Stream| s.pipe.as_ref().map_or(-1, |p| p.as_fd().as_raw_fd());
    let mut fds = [
        entry(pidfd.map_or(-1, |p| p.as_raw_fd())),
        entry(raw(&streams[0])),
        entry(raw(&streams[1])),
    ];
    let ms = wait.as_millis().clamp(1, 1000) as i32;
    // SAFETY: poll writes only the `revents` of the three entries it is given.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if ready < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(FsbenchError::Failed(format!(
            "cannot watch the command: {e}"
        )));
    }
    for (stream, fd) in streams.iter_mut().zip(&fds[1..]) {
        if fd.fd >= 0 && fd.revents != 0 {
            stream.drain();
        }
    }
    Ok(fds[0].fd >= 0 && fds[0].revents != 0)
}

/// `rchar`, `wchar`, `read_bytes`, `write_bytes` of a process (with its reaped children).
fn proc_io(pid: Pid) -> Option<[u64; 4]> {
    let text = std::fs::read_to_string(format!("/proc/{}/io", pid.as_raw_nonzero())).ok()?;
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(": ")?.trim().parse().ok())
    };
    Some([
        field("rchar")?,
        field("wchar")?,
        field("read_bytes")?,
        field("write_bytes")?,
    ])
}

/// The tree's figures: the cgroup's where it has them, else the fallbacks, each said.
fn usage(
    cgroup: Option<&Cgroup>,
    rusage: &libc::rusage,
    proc_io: Option<[u64; 4]>,
    notes: &mut Vec<String>,
) -> Usage {
    let measured = cgroup.map(Cgroup::usage).unwrap_or_default();
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let mut fallbacks = Vec::new();
    let (cpu_user, cpu_system) = measured.cpu.unwrap_or_else(|| {
        fallbacks.push("CPU time (rusage)");
        (tv(rusage.ru_utime), tv(rusage.ru_stime))
    });
    let block = measured.io.or_else(|| {
        fallbacks.push("block bytes (/proc/PID/io)");
        proc_io.map(|io| (io[2], io[3]))
    });
    let peak_memory = measured.peak_memory.unwrap_or_else(|| {
        fallbacks.push("peak memory (ru_maxrss: the largest single process's)");
        (rusage.ru_maxrss as u64) * 1024
    });
    if !fallbacks.is_empty() {
        let why = match cgroup.map(Cgroup::missing_controllers) {
            Some(missing) if !missing.is_empty() => format!(
                "the {} controller(s) are not enabled for fsbench's cgroup",
                missing.join(" and ")
            ),
            _ if notes.is_empty() => "the kernel's cgroup has no such file".into(),
            _ => notes.join("; "),
        };
        *notes = vec![format!(
            "{} count only the processes the shell waited for ({why})",
            fallbacks.join(", ")
        )];
    }
    Usage {
        cpu_user,
        cpu_system,
        block,
        chars: proc_io.map(|io| (io[0], io[1])),
        peak_memory,
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_last_bytes_and_counts_the_rest() {
        let mut tail = Tail::default();
        for i in 0..10_000u32 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        let text = tail.text();
        assert!(text.starts_with('['), "{}", &text[..40]);
        assert!(text.ends_with("line 9999\n"));
        assert!(text.len() <= TAIL_BYTES + 40);
        assert_eq!(tail.last_lines(2), "line 9998\nline 9999");
    }
}

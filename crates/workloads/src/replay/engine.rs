//! The timed replay: one thread per traced thread, each with a descriptor table of its own,
//! making its calls in its order after the other threads' calls it depends on. Every path is
//! resolved beneath the run's directory by the kernel (`RESOLVE_BENEATH`) or, in a trace that
//! never makes a symlink, checked lexically as archive extraction does: nothing outside is
//! ever touched.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

mod paths;

use super::load::{Loaded, Op, ThreadCalls};
use super::trace::Kind;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::{errno_name, fatal_error, lap_clock, new_histogram};
use fsbench_measure::units::shown;
use paths::{BENEATH, normalized, resolution, resolve};

/// The most one read or write moves at once (a larger recorded one is made in pieces).
const BUFFER_MAX: u64 = 16 << 20;
/// Mismatches described by name, per thread.
const SAMPLES: usize = 10;

/// A thread's progress: calls done, on a cache line pair of its own (the prefetcher fetches
/// lines in pairs).
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Done(pub AtomicU64);

/// What one replay thread measured.
pub(crate) struct Replayed {
    pub latency: Vec<Option<Histogram<u64>>>,
    pub calls: [u64; Kind::ALL.len()],
    pub bytes: u64,
    /// (kind, errno here or 0, errno in the capture or 0) → calls.
    pub mismatches: BTreeMap<(Kind, i32, i32), u64>,
    pub samples: Vec<String>,
    pub refused: u64,
    /// Descriptors the thread did not open itself (inherited, another thread's), opened by
    /// their path when first used.
    pub reopened: u64,
}

/// Replays thread `me`'s calls below `dir`.
pub(crate) fn replay_thread(
    loaded: &Loaded,
    me: usize,
    dir: BorrowedFd<'_>,
    done: &[Done],
    think: bool,
    halt: &Halt<'_>,
) -> Result<Replayed, FsbenchError> {
    let calls = &loaded.threads[me];
    let mut t = Thread {
        dir,
        calls,
        symlinks: loaded.symlinks,
        fds: Vec::new(),
        buf: vec![0x5a; calls.max_len.clamp(4096, BUFFER_MAX) as usize],
        parent: Vec::with_capacity(256),
        parent2: Vec::with_capacity(256),
        full: Vec::with_capacity(256),
        full2: Vec::with_capacity(256),
        out: Replayed {
            latency: Kind::ALL.iter().map(|_| None).collect(),
            calls: [0; Kind::ALL.len()],
            bytes: 0,
            mismatches: BTreeMap::new(),
            samples: Vec::new(),
            refused: 0,
            reopened: 0,
        },
    };
    let clock = lap_clock();
    for (i, op) in calls.ops.iter().enumerate() {
        for dep in &calls.deps[op.deps.0 as usize..op.deps.1 as usize] {
            if !wait_for(&done[dep.thread as usize], dep.index, halt)? {
                return Ok(t.out);
            }
        }
        if think && op.think_us > 0 {
            std::thread::sleep(Duration::from_micros(op.think_us));
        }
        let start = clock.raw();
        let outcome = t.call(op);
        let ns = clock.delta_as_nanos(start, clock.raw());
        t.out.latency[op.kind as usize]
            .get_or_insert_with(new_histogram)
            .saturating_record(ns.max(1));
        t.out.calls[op.kind as usize] += 1;
        t.check(op, outcome)?;
        done[me].0.store(i as u64 + 1, Ordering::Release);
        if i % 1024 == 0 && !halt.go_on()? {
            return Ok(t.out);
        }
    }
    Ok(t.out)
}

/// Why replay threads stop early: the user's Ctrl-C, or another thread's failure (that
/// thread's error is the phase's; the others stop quietly).
pub(crate) struct Halt<'a> {
    pub user: &'a AtomicBool,
    pub failed: AtomicBool,
}

impl Halt<'_> {
    /// Whether to go on; an error when the user asked to stop.
    fn go_on(&self) -> Result<bool, FsbenchError> {
        if self.user.load(Ordering::Relaxed) {
            return Err(FsbenchError::Interrupted);
        }
        Ok(!self.failed.load(Ordering::Relaxed))
    }
}

/// Waits until `done` passes `index`: spinning briefly, then yielding, then sleeping; false
/// when the replay stops first.
fn wait_for(done: &Done, index: u32, halt: &Halt<'_>) -> Result<bool, FsbenchError> {
    let mut tries = 0u32;
    while done.0.load(Ordering::Acquire) <= u64::from(index) {
        tries += 1;
        if tries < 100 {
            std::hint::spin_loop();
        } else if tries < 1000 {
            std::thread::yield_now();
        } else {
            if !halt.go_on()? {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    Ok(true)
}

/// How a call came out: its value, a refusal (a path outside the directory), or an errno.
enum Outcome {
    Done,
    Failed(Errno),
    Refused,
}

impl From<rustix::io::Result<u64>> for Outcome {
    fn from(r: rustix::io::Result<u64>) -> Outcome {
        r.map_or_else(Outcome::Failed, |_| Outcome::Done)
    }
}

struct Thread<'a> {
    dir: BorrowedFd<'a>,
    calls: &'a ThreadCalls,
    symlinks: bool,
    /// The replay's descriptor for each traced descriptor number.
    fds: Vec<Option<OwnedFd>>,
    buf: Vec<u8>,
    parent: Vec<u8>,
    parent2: Vec<u8>,
    full: Vec<u8>,
    full2: Vec<u8>,
    out: Replayed,
}

impl<'a> Thread<'a> {
    fn call(&mut self, op: &Op) -> Outcome {
        let calls = self.calls;
        let path = calls.path(op.path);
        match op.kind {
            Kind::Open => {
                let flags = OFlags::from_bits_retain(op.a as u32 & !(libc::O_DIRECT as u32))
                    | OFlags::CLOEXEC;
                let mode = Mode::from_bits_truncate(op.b as u32);
                let Some(p) = normalized(path, &mut self.parent, &mut self.full) else {
                    return Outcome::Refused;
                };
                match rustix::fs::openat2(self.dir, p, flags, mode, resolution(op.a)) {
                    Ok(fd) => {
                        self.set_fd(op.fd2, fd);
                        Outcome::Done
                    }
                    Err(Errno::XDEV) => Outcome::Refused,
                    Err(e) => Outcome::Failed(e),
                }
            }
            Kind::Close => match self.fd(op) {
                Ok(()) => {
                    self.fds[op.fd as usize] = None;
                    Outcome::Done
                }
                Err(o) => o,
            },
            Kind::Read
            | Kind::Write
            | Kind::Getdents
            | Kind::Lseek
            | Kind::Fsync
            | Kind::Fdatasync
            | Kind::SyncRange
            | Kind::Fallocate
            | Kind::Dup
            | Kind::Copy
            | Kind::Sendfile => self.by_fd(op),
            Kind::Truncate | Kind::Stat | Kind::Chmod | Kind::Chown | Kind::Utimens
                if op.fd >= 0 =>
            {
                self.by_fd(op)
            }
            _ => self.by_path(op),
        }
    }

    /// Maps traced descriptor `n` to `fd`; an open that failed in the capture (no number)
    /// and succeeds here is closed at once.
    fn set_fd(&mut self, n: i32, fd: OwnedFd) {
        let Ok(n) = usize::try_from(n) else {
            return;
        };
        if self.fds.len() <= n {
            self.fds.resize_with(n + 1, || None);
        }
        self.fds[n] = Some(fd);
    }

    /// Makes traced descriptor `op.fd` mapped: one the thread did not open is opened by
    /// its path beneath the directory, for reading and writing where it may be (a
    /// directory, a read-only file: for reading).
    fn fd(&mut self, op: &Op) -> Result<(), Outcome> {
        let n = op.fd.max(0) as usize;
        if self.fds.get(n).is_some_and(Option::is_some) {
            return Ok(());
        }
        let path = self.calls.path(op.path);
        let Some(p) = normalized(path, &mut self.parent, &mut self.full) else {
            return Err(Outcome::Refused);
        };
        let flags = OFlags::CLOEXEC | OFlags::NOCTTY;
        let mut opened =
            rustix::fs::openat2(self.dir, p, flags | OFlags::RDWR, Mode::empty(), BENEATH);
        if matches!(
            opened,
            Err(Errno::ISDIR | Errno::ACCESS | Errno::PERM | Errno::ROFS | Errno::TXTBSY)
        ) {
            opened = rustix::fs::openat2(self.dir, p, flags, Mode::empty(), BENEATH);
        }
        match opened {
            Ok(fd) => {
                self.out.reopened += 1;
                self.set_fd(op.fd, fd);
                Ok(())
            }
            Err(Errno::XDEV) => Err(Outcome::Refused),
            Err(e) => Err(Outcome::Failed(e)),
        }
    }

    fn by_fd(&mut self, op: &Op) -> Outcome {
        if let Err(o) = self.fd(op) {
            return o;
        }
        let fd = self.fds[op.fd as usize].as_ref().expect("mapped above");
        let len = (op.a.min(self.buf.len() as u64)) as usize;
        let buf = &mut self.buf[..len];
        let moved = |r: rustix::io::Result<usize>, bytes: &mut u64| {
            r.map(|n| {
                *bytes += n as u64;
                n as u64
            })
        };
        let bytes = &mut self.out.bytes;
        let outcome: rustix::io::Result<u64> = match op.kind {
            Kind::Read if op.b >= 0 => moved(rustix::io::pread(fd, buf, op.b as u64), bytes),
            Kind::Read => moved(rustix::io::read(fd, buf), bytes),
            Kind::Write if op.b >= 0 => moved(rustix::io::pwrite(fd, buf, op.b as u64), bytes),
            Kind::Write => moved(rustix::io::write(fd, buf), bytes),
            Kind::Getdents => {
                // SAFETY: getdents64 writes at most `len` bytes into the thread's buffer.
                let n = unsafe {
                    libc::syscall(
                        libc::SYS_getdents64,
                        fd.as_raw_fd(),
                        buf.as_mut_ptr(),
                        buf.len(),
                    )
                };
                if n < 0 {
                    Err(Errno::from_raw_os_error(errno()))
                } else {
                    Ok(n as u64)
                }
            }
            Kind::Lseek => {
                use rustix::fs::SeekFrom;
                let pos = match op.a {
                    0 => SeekFrom::Start(op.b as u64),
                    1 => SeekFrom::Current(op.b),
                    2 => SeekFrom::End(op.b),
                    3 => SeekFrom::Data(op.b as u64),
                    _ => SeekFrom::Hole(op.b as u64),
                };
                rustix::fs::seek(fd, pos)
            }
            Kind::Fsync => rustix::fs::fsync(fd).map(|()| 0),
            Kind::Fdatasync => rustix::fs::fdatasync(fd).map(|()| 0),
            Kind::SyncRange => {
                // SAFETY: a plain system call on a descriptor the thread owns.
                let r = unsafe { libc::sync_file_range(fd.as_raw_fd(), 0, 0, 2) };
                if r < 0 {
                    Err(Errno::from_raw_os_error(errno()))
                } else {
                    Ok(0)
                }
            }
            Kind::Fallocate => rustix::fs::fallocate(
                fd,
                rustix::fs::FallocateFlags::from_bits_retain(op.fd2 as u32),
                op.b.max(0) as u64,
                op.a,
            )
            .map(|()| 0),
            Kind::Truncate => rustix::fs::ftruncate(fd, op.a).map(|()| 0),
            Kind::Stat => rustix::fs::fstat(fd).map(|_| 0),
            Kind::Chmod => {
                rustix::fs::fchmod(fd, Mode::from_bits_truncate(op.a as u32)).map(|()| 0)
            }
            // Ownership is kept: -1, -1 changes nothing and checks the same permissions.
            Kind::Chown => rustix::fs::fchown(fd, None, None).map(|()| 0),
            Kind::Utimens => rustix::fs::futimens(fd, &now()).map(|()| 0),
            Kind::Dup => match rustix::io::fcntl_dupfd_cloexec(fd, 0) {
                Ok(new) => {
                    self.set_fd(op.fd2, new);
                    Ok(0)
                }
                Err(e) => Err(e),
            },
            Kind::Copy | Kind::Sendfile => {
                let out_op = Op {
                    fd: op.fd2,
                    path: op.path2,
                    ..op.clone()
                };
                if let Err(o) = self.fd(&out_op) {
                    return o;
                }
                let (Some(Some(from)), Some(Some(to))) =
                    (self.fds.get(op.fd as usize), self.fds.get(op.fd2 as usize))
                else {
                    return Outcome::Failed(Errno::BADF);
                };
                // From the recorded input offset (-1: the descriptor's own position).
                let mut at = u64::try_from(op.b).ok();
                let r = if op.kind == Kind::Sendfile {
                    rustix::fs::sendfile(to, from, at.as_mut(), op.a as usize)
                } else {
                    rustix::fs::copy_file_range(from, at.as_mut(), to, None, op.a as usize)
                };
                moved(r, &mut self.out.bytes)
            }
            _ => unreachable!("calls by path go to by_path"),
        };
        outcome.into()
    }

    fn by_path(&mut self, op: &Op) -> Outcome {
        let (root, calls) = (self.dir, self.calls);
        let path = calls.path(op.path);
        let done = |r: rustix::io::Result<()>| Outcome::from(r.map(|()| 0));
        // Calls that follow the final name: opened beneath the directory by the kernel.
        let follow = match op.kind {
            Kind::Truncate => Some(OFlags::WRONLY),
            Kind::Stat if op.a == 1 && self.symlinks => Some(OFlags::PATH),
            _ => None,
        };
        if let Some(flags) = follow {
            let Some(p) = normalized(path, &mut self.parent, &mut self.full) else {
                return Outcome::Refused;
            };
            return match rustix::fs::openat2(
                root,
                p,
                flags | OFlags::CLOEXEC,
                Mode::empty(),
                BENEATH,
            ) {
                Ok(fd) if op.kind == Kind::Truncate => done(rustix::fs::ftruncate(fd, op.a)),
                Ok(fd) => Outcome::from(rustix::fs::fstat(fd).map(|_| 0)),
                Err(Errno::XDEV) => Outcome::Refused,
                Err(e) => Outcome::Failed(e),
            };
        }
        let (held, name) =
            match resolve(root, self.symlinks, path, &mut self.parent, &mut self.full) {
                Ok(r) => r,
                Err(o) => return o,
            };
        let dir = held.as_ref().map_or(root, |f| f.as_fd());
        let nofollow = AtFlags::SYMLINK_NOFOLLOW;
        match op.kind {
            Kind::Mkdir => done(rustix::fs::mkdirat(
                dir,
                name,
                Mode::from_bits_truncate(op.a as u32),
            )),
            Kind::Rmdir => done(rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)),
            Kind::Unlink => done(rustix::fs::unlinkat(
                dir,
                name,
                AtFlags::from_bits_retain(op.a as u32) & AtFlags::REMOVEDIR,
            )),
            Kind::Symlink => done(rustix::fs::symlinkat(calls.path(op.path2), dir, name)),
            Kind::Readlink => {
                let buf = &mut self.buf;
                // SAFETY: readlinkat writes at most buf.len() bytes into buf.
                let r = with_c_path(name, |c| unsafe {
                    libc::readlinkat(dir.as_raw_fd(), c, buf.as_mut_ptr().cast(), buf.len())
                });
                if r < 0 {
                    Outcome::Failed(Errno::from_raw_os_error(errno()))
                } else {
                    Outcome::Done
                }
            }
            Kind::Stat => {
                let flags = if op.a == 1 {
                    AtFlags::empty()
                } else {
                    nofollow
                };
                Outcome::from(rustix::fs::statat(dir, name, flags).map(|_| 0))
            }
            Kind::Chmod => {
                // chmod follows a final symlink, which could lead anywhere: refused.
                if rustix::fs::statat(dir, name, nofollow)
                    .is_ok_and(|s| rustix::fs::FileType::from_raw_mode(s.st_mode).is_symlink())
                {
                    return Outcome::Refused;
                }
                done(rustix::fs::chmodat(
                    dir,
                    name,
                    Mode::from_bits_truncate(op.a as u32),
                    AtFlags::empty(),
                ))
            }
            // Ownership is kept: -1, -1 changes nothing and checks the same permissions.
            Kind::Chown => done(rustix::fs::chownat(dir, name, None, None, nofollow)),
            Kind::Utimens => done(rustix::fs::utimensat(dir, name, &now(), nofollow)),
            Kind::Rename | Kind::Link => {
                let path2 = calls.path(op.path2);
                let (held2, name2) = match resolve(
                    root,
                    self.symlinks,
                    path2,
                    &mut self.parent2,
                    &mut self.full2,
                ) {
                    Ok(r) => r,
                    Err(o) => return o,
                };
                let dir2 = held2.as_ref().map_or(root, |f| f.as_fd());
                if op.kind == Kind::Link {
                    done(rustix::fs::linkat(dir, name, dir2, name2, AtFlags::empty()))
                } else {
                    let flags = rustix::fs::RenameFlags::from_bits_retain(op.a as u32);
                    done(rustix::fs::renameat_with(dir, name, dir2, name2, flags))
                }
            }
            _ => Outcome::Failed(Errno::NOSYS),
        }
    }

    /// Compares the outcome with the capture's: a difference is counted and described.
    fn check(&mut self, op: &Op, outcome: Outcome) -> Result<(), FsbenchError> {
        let here = match outcome {
            Outcome::Done => 0,
            Outcome::Failed(e) => e.raw_os_error(),
            Outcome::Refused => {
                self.out.refused += 1;
                if self.out.samples.len() < SAMPLES {
                    let path = shown(self.calls.path(op.path));
                    self.out.samples.push(format!(
                        "{} {path}: refused, outside the run's directory",
                        op.kind.name()
                    ));
                }
                return Ok(());
            }
        };
        if (here == 0) == (op.errno == 0) {
            return Ok(());
        }
        *self
            .out
            .mismatches
            .entry((op.kind, here, op.errno))
            .or_default() += 1;
        if self.out.samples.len() < SAMPLES {
            let path = shown(self.calls.path(op.path));
            let there = if op.errno == 0 {
                "succeeded".to_string()
            } else {
                errno_name(op.errno)
            };
            let now = if here == 0 {
                "succeeded".to_string()
            } else {
                errno_name(here)
            };
            self.out.samples.push(format!(
                "{} {path}: {now} here, {there} in the capture",
                op.kind.name()
            ));
        }
        match (here != 0).then(|| fatal_error(Errno::from_raw_os_error(here), "replay", 0)) {
            Some(Some(e)) => Err(e),
            _ => Ok(()),
        }
    }
}

fn now() -> rustix::fs::Timestamps {
    let omit_none = rustix::fs::Timespec {
        tv_sec: 0,
        tv_nsec: libc::UTIME_NOW,
    };
    rustix::fs::Timestamps {
        last_access: omit_none,
        last_modification: omit_none,
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Calls `f` with `path` as a C string (on the stack when short).
fn with_c_path<R>(path: &[u8], f: impl FnOnce(*const libc::c_char) -> R) -> R {
    let mut stack = [0u8; 512];
    if path.len() < stack.len() && !path.contains(&0) {
        stack[..path.len()].copy_from_slice(path);
        return f(stack.as_ptr().cast());
    }
    let owned = std::ffi::CString::new(path.to_vec()).unwrap_or_default();
    f(owned.as_ptr())
}

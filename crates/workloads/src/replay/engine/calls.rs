//! One replayed call: on a traced descriptor mapped to the replay's, or on a path resolved
//! beneath the run's directory ([`super::paths`]).

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

mod named;

use super::data::{Buffer, copy, getdents, last_errno, map};
use super::paths::{BENEATH, Dirs, Scratch, open_beneath, resolution};
use super::xattr::{NoFollow, fd_xattr, xattr_bytes, xattr_name};
use super::{Adapted, Outcome, Replayed};
use crate::replay::load::{Op, ThreadCalls};
use crate::replay::trace::{BY_FD_NAME, Kind};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::{errno_name, fatal_error};
use fsbench_measure::units::shown;
use named::now;

/// Mismatches described by name, per worker.
const SAMPLES: usize = 10;

/// A traced thread's descriptors: the replay's descriptor for each traced number. A map,
/// not a table indexed by number: a trace may name any number. The second map: the path
/// each descriptor the thread did not open itself was opened by.
#[derive(Default)]
pub(super) struct Fds(HashMap<i32, OwnedFd>, HashMap<i32, (u32, u32)>);

impl Fds {
    /// A crash-recorded run: what a call that promises durability covered (an fsync or
    /// fdatasync of a file or directory, a write to an O_SYNC or O_DSYNC descriptor). Later
    /// calls may change it, so it binds a crash at this moment only.
    pub(super) fn note_promise(&self, oracle: &crate::oracle::Oracle, op: &Op) {
        let Some(fd) = self.0.get(&op.fd) else {
            return;
        };
        let synced = match op.kind {
            Kind::Fsync | Kind::Fdatasync => true,
            Kind::Write => rustix::fs::fcntl_getfl(fd)
                .is_ok_and(|f| f.intersects(OFlags::SYNC | OFlags::DSYNC)),
            _ => false,
        };
        if !synced {
            return;
        }
        match rustix::fs::fstat(fd) {
            Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir() => {
                oracle.dir_synced(fd.as_fd(), false)
            }
            Ok(_) => oracle.file_synced(fd.as_fd(), false),
            Err(_) => {}
        }
    }
}

/// A worker's means of making calls: the run's directory, a buffer, what it measured.
pub(super) struct Worker<'a> {
    dir: BorrowedFd<'a>,
    /// The user's stop: a read or write past what one call moves stops between calls.
    user: &'a AtomicBool,
    buf: Buffer,
    /// For the first and second path of a call, and C strings (symlink targets, xattr
    /// names).
    scratch: Scratch,
    scratch2: Scratch,
    /// The directories its calls are made in, kept open.
    dirs: Dirs<'a>,
    /// The `l` xattr calls, on any kernel.
    nofollow: NoFollow,
    /// A setxattr's recorded value, for the call.
    value: Vec<u8>,
    text: Vec<u8>,
    pub out: Replayed,
}

impl<'a> Worker<'a> {
    /// A worker whose threads read and write at most `longest` bytes at once; `moved`
    /// counts the replay's renames and removed directories, where directories are kept
    /// open (see [`Dirs`]).
    pub(super) fn new(
        dir: BorrowedFd<'a>,
        longest: u64,
        user: &'a AtomicBool,
        moved: Option<&'a AtomicU64>,
    ) -> Worker<'a> {
        Worker {
            dir,
            user,
            buf: Buffer::new(longest),
            scratch: Scratch::default(),
            scratch2: Scratch::default(),
            dirs: Dirs::new(moved),
            nofollow: NoFollow::default(),
            value: Vec::new(),
            text: Vec::with_capacity(256),
            out: Replayed::default(),
        }
    }

    pub(super) fn call(&mut self, fds: &mut Fds, calls: &ThreadCalls, op: &Op) -> Outcome {
        if op.flags & BY_FD_NAME != 0 {
            return self.by_fd_name(fds, calls, op);
        }
        match op.kind {
            Kind::Open => self.open(fds, calls.path(op.path), op),
            Kind::Close => match self.mapped(fds, calls, op.fd, op.path) {
                Ok(()) => {
                    fds.0.remove(&op.fd);
                    fds.1.remove(&op.fd);
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
            | Kind::Sendfile
            | Kind::Mmap => self.by_fd(fds, calls, op),
            Kind::Truncate
            | Kind::Stat
            | Kind::Chmod
            | Kind::Chown
            | Kind::Utimens
            | Kind::GetXattr
            | Kind::SetXattr
            | Kind::ListXattr
            | Kind::RemoveXattr
                if op.fd >= 0 =>
            {
                self.by_fd(fds, calls, op)
            }
            _ => self.by_path(calls, op),
        }
    }

    fn open(&mut self, fds: &mut Fds, path: &[u8], op: &Op) -> Outcome {
        let (flags, mode) = self.open_flags(op);
        let path = match self.scratch.normalized(path) {
            Ok(p) => p,
            Err(o) => return o,
        };
        let mut opened = open_beneath(self.dir, path, flags, mode, resolution(op.a));
        // The directories kept open must not cost the program a descriptor it had.
        if matches!(opened, Err(Outcome::Failed(Errno::MFILE))) {
            self.dirs.close_all_but(None);
            opened = open_beneath(self.dir, path, flags, mode, resolution(op.a));
        }
        match opened {
            Ok(fd) => {
                // An open that failed in the capture (no number) is closed at once.
                if op.fd2 >= 0 {
                    fds.0.insert(op.fd2, fd);
                    fds.1.remove(&op.fd2);
                }
                Outcome::Done
            }
            Err(o) => o,
        }
    }

    /// An open's flags, without O_DIRECT (the pattern buffer is not aligned), and mode.
    fn open_flags(&mut self, op: &Op) -> (OFlags, Mode) {
        let direct = libc::O_DIRECT as u32;
        if op.a as u32 & direct != 0 {
            self.out.adapt(Adapted::NoDirect);
        }
        let flags = OFlags::from_bits_retain(op.a as u32 & !direct) | OFlags::CLOEXEC;
        (flags, Mode::from_bits_truncate(op.b as u32))
    }

    /// Makes traced descriptor `n` mapped: one the thread did not open is opened by its
    /// path beneath the directory, for reading and writing where it may be (a directory, a
    /// read-only file: for reading). A negative number is no descriptor.
    fn mapped(
        &mut self,
        fds: &mut Fds,
        calls: &ThreadCalls,
        n: i32,
        path: (u32, u32),
    ) -> Result<(), Outcome> {
        if n < 0 {
            return Err(Outcome::Failed(Errno::BADF));
        }
        // One opened by its path, used again on another path: the traced thread closed it
        // and opened another file as `n` where the capture did not see it (outside the
        // root): opened anew by the new path.
        let stale = fds
            .1
            .get(&n)
            .is_some_and(|&was| calls.path(was) != calls.path(path));
        if fds.0.contains_key(&n) && !stale {
            return Ok(());
        }
        let p = self.scratch.normalized(calls.path(path))?;
        let flags = OFlags::NOCTTY;
        let mut opened = open_beneath(self.dir, p, flags | OFlags::RDWR, Mode::empty(), BENEATH);
        if matches!(
            opened,
            Err(Outcome::Failed(
                Errno::ISDIR | Errno::ACCESS | Errno::PERM | Errno::ROFS | Errno::TXTBSY
            ))
        ) {
            opened = open_beneath(self.dir, p, flags, Mode::empty(), BENEATH);
        }
        self.out.adapt(Adapted::Reopened);
        fds.0.insert(n, opened?);
        fds.1.insert(n, path);
        Ok(())
    }

    // One piece: one arm per kind of call on a descriptor, each a line or two; split, it
    // would scatter the kinds.
    fn by_fd(&mut self, fds: &mut Fds, calls: &ThreadCalls, op: &Op) -> Outcome {
        if let Err(o) = self.mapped(fds, calls, op.fd, op.path) {
            return o;
        }
        if matches!(op.kind, Kind::Copy | Kind::Sendfile)
            && let Err(o) = self.mapped(fds, calls, op.fd2, op.path2)
        {
            return o;
        }
        let fd = fds.0[&op.fd].as_fd();
        let len = op.a.min(self.buf.bytes.len() as u64) as usize;
        let offset = u64::try_from(op.b).ok();
        let done = |r: rustix::io::Result<()>| r.map(|()| 0);
        let outcome: rustix::io::Result<u64> = match op.kind {
            Kind::Read | Kind::Write => {
                let moved = self.buf.transfer(fd, op, offset, self.user);
                if let Ok(n) = moved {
                    self.out.bytes = self.out.bytes.saturating_add(n);
                }
                moved
            }
            Kind::Mmap => {
                self.out.adapt(Adapted::Mapped);
                self.out.mapped(calls.path(op.path));
                map(fd, op)
            }
            Kind::Getdents => getdents(fd, &mut self.buf.bytes[..len]),
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
            Kind::Fsync => done(rustix::fs::fsync(fd)),
            Kind::Fdatasync => done(rustix::fs::fdatasync(fd)),
            Kind::SyncRange => {
                // SAFETY: a plain system call on a descriptor the thread owns.
                let r = unsafe { libc::sync_file_range(fd.as_raw_fd(), 0, 0, 2) };
                if r < 0 { Err(last_errno()) } else { Ok(0) }
            }
            Kind::Fallocate => done(rustix::fs::fallocate(
                fd,
                rustix::fs::FallocateFlags::from_bits_retain(op.fd2 as u32),
                op.b.max(0) as u64,
                op.a,
            )),
            Kind::Truncate => done(rustix::fs::ftruncate(fd, op.a)),
            Kind::Stat => rustix::fs::fstat(fd).map(|_| 0),
            Kind::Chmod => done(rustix::fs::fchmod(
                fd,
                Mode::from_bits_truncate(op.a as u32),
            )),
            // Ownership is kept: -1, -1 changes nothing and checks the same permissions.
            Kind::Chown => {
                self.out.adapt(Adapted::Ownership);
                done(rustix::fs::fchown(fd, None, None))
            }
            Kind::Utimens => {
                self.out.adapt(Adapted::TimesNow);
                done(rustix::fs::futimens(fd, &now()))
            }
            Kind::GetXattr | Kind::SetXattr | Kind::ListXattr | Kind::RemoveXattr => {
                let name = match xattr_name(&mut self.text, calls, op) {
                    Ok(n) => n,
                    Err(o) => return o,
                };
                let bytes = xattr_bytes(&mut self.value, &mut self.buf.bytes, calls, op);
                fd_xattr(fd, name, bytes, op)
            }
            Kind::Dup => match rustix::io::fcntl_dupfd_cloexec(fd, 0) {
                Ok(new) => {
                    if op.fd2 >= 0 {
                        fds.0.insert(op.fd2, new);
                        fds.1.remove(&op.fd2);
                    }
                    Ok(0)
                }
                Err(e) => Err(e),
            },
            Kind::Copy | Kind::Sendfile => {
                let copied = copy(fd, fds.0[&op.fd2].as_fd(), op, offset);
                if let Ok(n) = copied {
                    self.out.bytes = self.out.bytes.saturating_add(n);
                }
                copied
            }
            _ => unreachable!("calls by path go to by_path"),
        };
        outcome.map_or_else(Outcome::Failed, |_| Outcome::Done)
    }

    /// Counts the call and compares its outcome with the capture's: a difference
    /// is counted and described; a full or failing filesystem ends the replay.
    pub(super) fn record(
        &mut self,
        op: &Op,
        calls: &ThreadCalls,
        outcome: Outcome,
    ) -> Result<(), FsbenchError> {
        self.out.calls[op.kind as usize] += 1;
        let here = match outcome {
            Outcome::Done => 0,
            Outcome::Failed(e) => e.raw_os_error(),
            Outcome::Refused => {
                self.out.refused += 1;
                if self.out.samples.len() < SAMPLES {
                    let path = shown(calls.path(op.path));
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
            let path = shown(calls.path(op.path));
            let side = |e: i32| {
                if e == 0 {
                    "succeeded".to_string()
                } else {
                    errno_name(e)
                }
            };
            self.out.samples.push(format!(
                "{} {path}: {} here, {} in the capture",
                op.kind.name(),
                side(here),
                side(op.errno)
            ));
        }
        match (here != 0).then(|| fatal_error(Errno::from_raw_os_error(here), "replay", 0)) {
            Some(Some(e)) => Err(e),
            _ => Ok(()),
        }
    }
}

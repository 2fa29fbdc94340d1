//! Calls by path: on the last name in its directory (kept open, see [`super::super::paths`]),
//! on the file itself for those that follow a last symlink, or through
//! `/proc/thread-self/fd/N` for a descriptor's file named so.

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::super::data::last_errno;
use super::super::paths::{BENEATH, ProcFd, c_string, chmod_nofollow, file, open_beneath};
use super::super::xattr::{xattr_bytes, xattr_flags, xattr_name};
use super::super::{Adapted, Outcome};
use super::{Fds, Worker};
use crate::replay::load::{Op, ThreadCalls};
use crate::replay::trace::Kind;

impl Worker<'_> {
    pub(super) fn by_path(&mut self, calls: &ThreadCalls, op: &Op) -> Outcome {
        let path = calls.path(op.path);
        let follows = op.a == 1;
        let root = self.dir;
        let done = |r: rustix::io::Result<()>| r.map_or_else(Outcome::Failed, |()| Outcome::Done);
        // Calls that follow the last symlink: made on the file itself, opened beneath.
        match op.kind {
            Kind::Truncate => {
                return match self.scratch.normalized(path).and_then(|p| {
                    open_beneath(
                        root,
                        p,
                        OFlags::WRONLY | OFlags::NOCTTY,
                        Mode::empty(),
                        BENEATH,
                    )
                }) {
                    Ok(fd) => done(rustix::fs::ftruncate(fd, op.a)),
                    Err(o) => o,
                };
            }
            // chmod follows, unless fchmodat2's AT_SYMLINK_NOFOLLOW (B 0) said not to.
            Kind::Chmod if op.b == 0 => return self.in_parent(calls, op),
            Kind::Chmod => {
                return match file(root, path, true, &mut self.scratch) {
                    Ok(fd) => {
                        let mode = Mode::from_bits_truncate(op.a as u32);
                        let name = ProcFd::of(fd.as_fd());
                        done(rustix::fs::chmodat(
                            rustix::fs::CWD,
                            name.name(),
                            mode,
                            AtFlags::empty(),
                        ))
                    }
                    Err(o) => o,
                };
            }
            // Most files are no symlink: their stat, made without following, is the one call.
            Kind::Stat if follows => {
                if let Some(outcome) = self.stat_unless_symlink(root, path) {
                    return outcome;
                }
                return match file(root, path, true, &mut self.scratch) {
                    Ok(fd) => done(rustix::fs::fstat(&fd).map(drop)),
                    Err(o) => o,
                };
            }
            Kind::Chown | Kind::Utimens if follows => {
                self.out.adapt_kind(op.kind);
                return match file(root, path, true, &mut self.scratch) {
                    Ok(fd) => done(owner_or_times(fd.as_fd(), op.kind)),
                    Err(o) => o,
                };
            }
            Kind::GetXattr | Kind::SetXattr | Kind::ListXattr | Kind::RemoveXattr => {
                return self.xattr(calls, op, op.b == 1);
            }
            _ => {}
        }
        self.in_parent(calls, op)
    }

    /// A stat that follows a last symlink, made without following: its outcome, or `None`
    /// when the last name is a symlink (the stat is then made on what it leads to).
    fn stat_unless_symlink(&mut self, root: BorrowedFd<'_>, path: &[u8]) -> Option<Outcome> {
        let (parent, name) = match self
            .dirs
            .parent_and_name(root, path, &mut self.scratch, None)
        {
            Ok(r) => r,
            Err(o) => return Some(o),
        };
        let dir = self.dirs.fd(root, &parent);
        match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink() => None,
            Ok(_) => Some(Outcome::Done),
            // No last name there: following it would not find one either.
            Err(e) => Some(Outcome::Failed(e)),
        }
    }

    /// A call on a descriptor's file by its `/proc/thread-self/fd/N` name (the program named
    /// it `/proc/self/fd/N`): the kernel follows the name to that file and no further.
    pub(super) fn by_fd_name(&mut self, fds: &mut Fds, calls: &ThreadCalls, op: &Op) -> Outcome {
        if let Err(o) = self.mapped(fds, calls, op.fd, op.path) {
            return o;
        }
        let proc = ProcFd::of(fds.0[&op.fd].as_fd());
        let name = proc.name();
        let cwd = rustix::fs::CWD;
        let done = |r: rustix::io::Result<()>| r.map_or_else(Outcome::Failed, |()| Outcome::Done);
        self.out.adapt_kind(op.kind);
        match op.kind {
            Kind::Open => {
                let (flags, mode) = self.open_flags(op);
                match rustix::fs::openat(cwd, name, flags, mode) {
                    Ok(fd) => {
                        if op.fd2 >= 0 {
                            fds.0.insert(op.fd2, fd);
                            fds.1.remove(&op.fd2);
                        }
                        Outcome::Done
                    }
                    Err(e) => Outcome::Failed(e),
                }
            }
            Kind::Chmod => done(rustix::fs::chmodat(
                cwd,
                name,
                Mode::from_bits_truncate(op.a as u32),
                AtFlags::empty(),
            )),
            Kind::Stat => done(rustix::fs::statat(cwd, name, AtFlags::empty()).map(drop)),
            Kind::Chown => done(rustix::fs::chownat(cwd, name, None, None, AtFlags::empty())),
            Kind::Utimens => done(rustix::fs::utimensat(cwd, name, &now(), AtFlags::empty())),
            Kind::Truncate => match rustix::fs::openat(cwd, name, OFlags::WRONLY, Mode::empty()) {
                Ok(fd) => done(rustix::fs::ftruncate(fd, op.a)),
                Err(e) => Outcome::Failed(e),
            },
            Kind::Link => {
                let root = self.dir;
                let to = calls.path(op.path2);
                let (parent, new) =
                    match (self.dirs).parent_and_name(root, to, &mut self.scratch2, None) {
                        Ok(r) => r,
                        Err(o) => return o,
                    };
                let dir = self.dirs.fd(root, &parent);
                done(rustix::fs::linkat(
                    cwd,
                    name,
                    dir,
                    new,
                    AtFlags::SYMLINK_FOLLOW,
                ))
            }
            _ => Outcome::Failed(Errno::NOSYS),
        }
    }

    /// Calls that do not follow the last name: made on it in its directory, opened beneath.
    fn in_parent(&mut self, calls: &ThreadCalls, op: &Op) -> Outcome {
        let root = self.dir;
        let target = if op.kind == Kind::Symlink {
            self.text.clear();
            self.text.extend_from_slice(calls.path(op.path2));
            match c_string(&mut self.text) {
                Ok(t) => Some(t),
                Err(o) => return o,
            }
        } else {
            None
        };
        let path = calls.path(op.path);
        let (parent, name) = match self
            .dirs
            .parent_and_name(root, path, &mut self.scratch, None)
        {
            Ok(r) => r,
            Err(o) => return o,
        };
        // The second path of a rename or link, in a directory of its own.
        let second = if matches!(op.kind, Kind::Rename | Kind::Link) {
            let to = calls.path(op.path2);
            match (self.dirs).parent_and_name(root, to, &mut self.scratch2, Some(&parent)) {
                Ok(r) => Some(r),
                Err(o) => return o,
            }
        } else {
            None
        };
        match op.kind {
            Kind::Chown => self.out.adapt(Adapted::Ownership),
            Kind::Utimens => self.out.adapt(Adapted::TimesNow),
            _ => {}
        }
        let dir = self.dirs.fd(root, &parent);
        let second = second.as_ref().map(|(p, n)| (self.dirs.fd(root, p), *n));
        let outcome = in_dir(op, dir, name, second, target, &mut self.buf.bytes);
        let removes_dir = op.kind == Kind::Rmdir
            || op.kind == Kind::Rename
            || (op.kind == Kind::Unlink && op.a & libc::AT_REMOVEDIR as u64 != 0);
        if removes_dir && matches!(outcome, Outcome::Done) {
            self.dirs.moved();
        }
        outcome
    }

    /// An xattr call by path: on the file, opened beneath, by its `/proc/thread-self/fd`
    /// name. Without `follow` (lgetxattr...), on the last name in its directory, not
    /// followed ([`NoFollow`](super::super::xattr::NoFollow)); where that directory cannot
    /// be reached, on the file opened beneath, a last symlink refused.
    fn xattr(&mut self, calls: &ThreadCalls, op: &Op, follow: bool) -> Outcome {
        if !follow && let Some(outcome) = self.xattr_in_parent(calls, op) {
            return outcome;
        }
        let fd = match file(self.dir, calls.path(op.path), follow, &mut self.scratch) {
            Ok(fd) => fd,
            Err(o) => return o,
        };
        if !follow
            && rustix::fs::fstat(&fd)
                .is_ok_and(|s| rustix::fs::FileType::from_raw_mode(s.st_mode).is_symlink())
        {
            return Outcome::Refused;
        }
        let file = ProcFd::of(fd.as_fd());
        let name = match xattr_name(&mut self.text, calls, op) {
            Ok(n) => n,
            Err(o) => return o,
        };
        let buf = xattr_bytes(&mut self.value, &mut self.buf.bytes, calls, op);
        let file = file.name();
        let outcome = match op.kind {
            Kind::GetXattr => rustix::fs::getxattr(file, name, buf).map(drop),
            Kind::SetXattr => rustix::fs::setxattr(file, name, buf, xattr_flags(op)),
            Kind::ListXattr => rustix::fs::listxattr(file, buf).map(drop),
            _ => rustix::fs::removexattr(file, name),
        };
        outcome.map_or_else(Outcome::Failed, |()| Outcome::Done)
    }

    /// An xattr call that does not follow the last name, made on it in its directory, opened
    /// beneath; `None` where that directory cannot be reached, for the file opened beneath
    /// to say why.
    fn xattr_in_parent(&mut self, calls: &ThreadCalls, op: &Op) -> Option<Outcome> {
        let root = self.dir;
        let path = calls.path(op.path);
        let (parent, file) = (self.dirs)
            .parent_and_name(root, path, &mut self.scratch, None)
            .ok()?;
        let dir = self.dirs.fd(root, &parent);
        let name = match xattr_name(&mut self.text, calls, op) {
            Ok(n) => n,
            Err(o) => return Some(o),
        };
        let buf = xattr_bytes(&mut self.value, &mut self.buf.bytes, calls, op);
        let r = (self.nofollow).call(op.kind, (dir, file), name, buf, xattr_flags(op));
        Some(r.map_or_else(Outcome::Failed, |_| Outcome::Done))
    }
}

/// A call that does not follow the last name: on `name` in `dir` (and on `second`'s name in
/// its directory; a symlink's `target`; a readlink's `buf`).
fn in_dir(
    op: &Op,
    dir: BorrowedFd<'_>,
    name: &CStr,
    second: Option<(BorrowedFd<'_>, &CStr)>,
    target: Option<&CStr>,
    buf: &mut [u8],
) -> Outcome {
    let nofollow = AtFlags::SYMLINK_NOFOLLOW;
    let done = |r: rustix::io::Result<()>| r.map_or_else(Outcome::Failed, |()| Outcome::Done);
    match (op.kind, second, target) {
        (Kind::Mkdir, ..) => done(rustix::fs::mkdirat(
            dir,
            name,
            Mode::from_bits_truncate(op.a as u32),
        )),
        (Kind::Rmdir, ..) => done(rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)),
        (Kind::Unlink, ..) => done(rustix::fs::unlinkat(
            dir,
            name,
            AtFlags::from_bits_retain(op.a as u32) & AtFlags::REMOVEDIR,
        )),
        (Kind::Symlink, _, Some(target)) => done(rustix::fs::symlinkat(target, dir, name)),
        (Kind::Readlink, ..) => {
            // SAFETY: readlinkat writes at most buf.len() bytes into buf.
            let r = unsafe {
                libc::readlinkat(
                    dir.as_raw_fd(),
                    name.as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            };
            if r < 0 {
                Outcome::Failed(last_errno())
            } else {
                Outcome::Done
            }
        }
        (Kind::Stat, ..) => done(rustix::fs::statat(dir, name, nofollow).map(drop)),
        (Kind::Chmod, ..) => done(chmod_nofollow(
            dir,
            name,
            Mode::from_bits_truncate(op.a as u32),
        )),
        // Ownership is kept: -1, -1 changes nothing and checks the same permissions.
        (Kind::Chown, ..) => done(rustix::fs::chownat(dir, name, None, None, nofollow)),
        (Kind::Utimens, ..) => done(rustix::fs::utimensat(dir, name, &now(), nofollow)),
        (Kind::Link, Some((dir2, name2)), _) => {
            done(rustix::fs::linkat(dir, name, dir2, name2, AtFlags::empty()))
        }
        (Kind::Rename, Some((dir2, name2)), _) => {
            let flags = rustix::fs::RenameFlags::from_bits_retain(op.a as u32);
            done(rustix::fs::renameat_with(dir, name, dir2, name2, flags))
        }
        _ => Outcome::Failed(Errno::NOSYS),
    }
}

pub(super) fn now() -> rustix::fs::Timestamps {
    let omit_none = rustix::fs::Timespec {
        tv_sec: 0,
        tv_nsec: libc::UTIME_NOW,
    };
    rustix::fs::Timestamps {
        last_access: omit_none,
        last_modification: omit_none,
    }
}

/// A chown or utimens of the open file `fd` (a last symlink followed to it). Ownership is
/// kept: -1, -1 changes nothing and checks the same permissions.
fn owner_or_times(fd: BorrowedFd<'_>, kind: Kind) -> rustix::io::Result<()> {
    match kind {
        Kind::Chown => rustix::fs::chownat(fd, c"", None, None, AtFlags::EMPTY_PATH),
        _ => {
            let name = ProcFd::of(fd.as_fd());
            rustix::fs::utimensat(rustix::fs::CWD, name.name(), &now(), AtFlags::empty())
        }
    }
}

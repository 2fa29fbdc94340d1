//! One system call, parsed, as a trace call: its kind, what it works on (a path beneath the
//! root, a descriptor, a descriptor's `/proc/self/fd` name, a file taken from outside the
//! root) and its kind's fields.

use super::syntax::{Arg, num};
use super::xattr::{Form, xattr_call};
use super::{Parser, Skip};
use crate::replay::trace::{BY_FD_NAME, Call, Kind};

/// `RESOLVE_IN_ROOT` of linux/openat2.h.
const RESOLVE_IN_ROOT: i64 = 0x10;
/// `AT_SYMLINK_NOFOLLOW` and `AT_EMPTY_PATH` of linux/fcntl.h.
const AT_SYMLINK_NOFOLLOW: i64 = libc::AT_SYMLINK_NOFOLLOW as i64;
const AT_EMPTY_PATH: i64 = 0x1000;
/// renameat2's flag that swaps the two names (linux/fs.h).
const RENAME_EXCHANGE: i64 = 2;
/// A failed read's or write's recorded length at most (what it asked for is no measure).
const FAILED_LEN_MAX: i64 = 1 << 16;

/// A path-taking call's kind, its directory descriptor's argument (none for the calls
/// without `at`) and its path's argument.
pub(super) fn path_call(name: &str) -> Option<(Kind, Option<usize>, usize)> {
    let at = |dirfd: usize| Some(dirfd);
    Some(match name {
        "open" | "creat" => (Kind::Open, None, 0),
        "openat" | "openat2" => (Kind::Open, at(0), 1),
        "truncate" => (Kind::Truncate, None, 0),
        "mkdir" => (Kind::Mkdir, None, 0),
        "mkdirat" => (Kind::Mkdir, at(0), 1),
        "rmdir" => (Kind::Rmdir, None, 0),
        "unlink" => (Kind::Unlink, None, 0),
        "unlinkat" => (Kind::Unlink, at(0), 1),
        "rename" | "link" => (named(name), None, 0),
        "renameat" | "renameat2" | "linkat" => (named(name), at(0), 1),
        "symlink" => (Kind::Symlink, None, 1),
        "symlinkat" => (Kind::Symlink, at(1), 2),
        "readlink" => (Kind::Readlink, None, 0),
        "readlinkat" => (Kind::Readlink, at(0), 1),
        "stat" | "lstat" => (Kind::Stat, None, 0),
        "newfstatat" | "statx" => (Kind::Stat, at(0), 1),
        "chmod" | "chown" | "lchown" => (named(name), None, 0),
        "fchmodat" | "fchmodat2" | "fchownat" | "utimensat" => (named(name), at(0), 1),
        _ => match xattr_call(name)? {
            (kind, Form::Path | Form::NoFollow) => (kind, None, 0),
            (kind, Form::At) => (kind, at(0), 1),
            (_, Form::Fd) => return None,
        },
    })
}

impl Parser {
    /// Fills `call` for syscall `name`; why not when it is not recorded: the forms of path a
    /// path-taking call takes (`""`, RESOLVE_IN_ROOT, `/proc/self/fd/N`), each in one place.
    pub(super) fn build(
        &mut self,
        tid: u32,
        name: &str,
        args: &[Arg],
        call: &mut Call,
    ) -> Result<(), Skip> {
        let Some((kind, dir, path_arg)) = path_call(name) else {
            return self.by_fd(name, args, call);
        };
        call.kind = Some(kind);
        let path = match args.get(path_arg) {
            Some(Arg::Str(p)) => p.as_slice(),
            // utimensat(fd, NULL, ...): on the descriptor.
            _ if kind == Kind::Utimens => return self.fd_call(kind, args, 0, call),
            _ => return Err(Skip::Unreadable),
        };
        let dirpath = dir.and_then(|i| args.get(i)).and_then(Arg::path);
        if path.is_empty() && dir.is_some() {
            return self.empty_path(tid, name, args, dirpath, call);
        }
        if dir.is_some() && dirpath.is_none() && path.first() != Some(&b'/') {
            return Err(Skip::NotAFile);
        }
        // openat2's RESOLVE_IN_ROOT: an absolute path, and `..`, stay below the directory.
        let in_root = name == "openat2"
            && args.get(2).and_then(|h| h.field("resolve")).unwrap_or(0) & RESOLVE_IN_ROOT != 0;
        if in_root {
            let dirpath = dirpath.ok_or(Skip::NotAFile)?;
            self.absolute(tid, Some(b"/"), path);
            let below = std::mem::take(&mut self.abs);
            self.absolute(tid, Some(dirpath), &below[1..]);
        } else {
            self.absolute(tid, dirpath, path);
        }
        // `/proc/self/fd/N`: the file of descriptor N, by that name (as glibc's fchmodat
        // and linkat of an O_TMPFILE file do).
        if let Some(fd) = self.proc_fd(tid) {
            if !matches!(
                kind,
                Kind::Open
                    | Kind::Stat
                    | Kind::Chmod
                    | Kind::Chown
                    | Kind::Utimens
                    | Kind::Link
                    | Kind::Truncate
            ) {
                return Err(Skip::Outside);
            }
            // Not followed, the name is /proc's own symlink, whose mode cannot change
            // (EOPNOTSUPP): the descriptor's file is never touched.
            if name == "fchmodat2" && num(args, 3).unwrap_or(0) & AT_SYMLINK_NOFOLLOW != 0 {
                return Err(Skip::Outside);
            }
            self.abs = self.fd_path(tid, fd).ok_or(Skip::UnknownFd)?.to_vec();
            call.fd = fd;
            call.flags = BY_FD_NAME;
        }
        self.fields(tid, name, args, call)
    }

    /// A call on an empty path beside a descriptor: the descriptor's file with
    /// AT_EMPTY_PATH, else no file at all.
    fn empty_path(
        &mut self,
        tid: u32,
        name: &str,
        args: &[Arg],
        dirpath: Option<&[u8]>,
        call: &mut Call,
    ) -> Result<(), Skip> {
        let kind = call.kind();
        let flags = match name {
            "linkat" | "fchownat" => num(args, 4),
            "fchmodat2" | "newfstatat" | "fstatat64" | "utimensat" => num(args, 3),
            "statx" => num(args, 2),
            _ if xattr_call(name).is_some() => num(args, 2),
            // readlinkat takes an empty path as its descriptor's symlink, with no flag.
            "readlinkat" => Some(AT_EMPTY_PATH),
            _ => None,
        };
        // Without AT_EMPTY_PATH the kernel finds no file (ENOENT) and touches nothing;
        // a call on the descriptor instead would succeed, or change a mode, in the replay.
        if flags.unwrap_or(0) & AT_EMPTY_PATH == 0 {
            return Err(Skip::EmptyPath);
        }
        // linkat's and fchmodat2's: the descriptor's file, by its name (fchmod would
        // refuse the O_PATH descriptor fchmodat2 takes).
        if matches!(name, "linkat" | "fchmodat2") {
            let fd = num(args, 0).ok_or(Skip::Unreadable)?;
            self.abs = dirpath.ok_or(Skip::NotAFile)?.to_vec();
            call.fd = fd as i32;
            call.flags = BY_FD_NAME;
            return self.fields(tid, name, args, call);
        }
        // `newfstatat(fd, "", ..., AT_EMPTY_PATH)` (glibc's fstat), fchownat's,
        // utimensat's, readlinkat's and the `*xattrat` calls': on the descriptor.
        self.fd_call(kind, args, 0, call)?;
        if xattr_call(name).is_some() {
            return self.xattr_fields(name, args, call);
        }
        Ok(())
    }

    /// `self.abs` is what the call works on: makes it the call's path and fills the kind's
    /// fields.
    fn fields(&mut self, tid: u32, name: &str, args: &[Arg], call: &mut Call) -> Result<(), Skip> {
        let kind = call.kind();
        if matches!(kind, Kind::Rename | Kind::Link) {
            return self.two_paths(tid, name, args, call);
        }
        call.path = self.relative().ok_or(Skip::Outside)?;
        let num = |i: usize| num(args, i).ok_or(Skip::Unreadable);
        match name {
            "open" => {
                call.a = num(1)? as u64;
                call.b = num(2).unwrap_or(0);
            }
            "openat" => {
                call.a = num(2)? as u64;
                call.b = num(3).unwrap_or(0);
            }
            // `struct open_how`: flags, with the RESOLVE_* flags above them (see trace.rs).
            "openat2" => {
                let how = args.get(2).ok_or(Skip::Unreadable)?;
                let resolve = how.field("resolve").ok_or(Skip::Unreadable)? as u64;
                let flags = how.field("flags").ok_or(Skip::Unreadable)? as u64;
                call.a = flags & u64::from(u32::MAX) | resolve << 32;
                call.b = how.field("mode").ok_or(Skip::Unreadable)?;
            }
            // creat is open(O_CREAT|O_WRONLY|O_TRUNC).
            "creat" => {
                call.a = 0o1101;
                call.b = num(1)?;
            }
            "truncate" | "mkdir" | "chmod" => call.a = num(1)? as u64,
            "mkdirat" | "fchmodat" | "unlinkat" => call.a = num(2)? as u64,
            // B 0: a last symlink is not followed (its own mode cannot change: EOPNOTSUPP).
            "fchmodat2" => {
                call.a = num(2)? as u64;
                if num(3)? & AT_SYMLINK_NOFOLLOW != 0 {
                    call.b = 0;
                }
            }
            "symlink" | "symlinkat" => {
                let Some(Arg::Str(target)) = args.first() else {
                    return Err(Skip::Unreadable);
                };
                call.path2.clone_from(target);
            }
            "stat" | "chown" => call.a = 1,
            "lstat" | "lchown" => call.a = 0,
            "newfstatat" | "utimensat" => call.a = u64::from(num(3)? & AT_SYMLINK_NOFOLLOW == 0),
            "statx" => call.a = u64::from(num(2)? & AT_SYMLINK_NOFOLLOW == 0),
            "fchownat" => call.a = u64::from(num(4)? & AT_SYMLINK_NOFOLLOW == 0),
            _ if xattr_call(name).is_some() => self.xattr_fields(name, args, call)?,
            _ => {}
        }
        // A descriptor's name always leads to its file.
        if call.flags & BY_FD_NAME != 0 && matches!(kind, Kind::Stat | Kind::Chown | Kind::Utimens)
        {
            call.a = 1;
        }
        if kind == Kind::Open && call.errno == 0 {
            call.fd2 = call.result as i32;
        }
        Ok(())
    }

    /// Rename and link: the old name (in `self.abs`) and the new one. A side outside the
    /// root, when the other is inside, is named below `OUTSIDE`: the old file (or the new
    /// name's directory) is made there before the replay.
    fn two_paths(
        &mut self,
        tid: u32,
        name: &str,
        args: &[Arg],
        call: &mut Call,
    ) -> Result<(), Skip> {
        let (dir2, new) = if name.ends_with("at") || name.ends_with("at2") {
            (args.get(2).and_then(Arg::path).map(<[u8]>::to_vec), 3)
        } else {
            (None, 1)
        };
        let Some(Arg::Str(new)) = args.get(new) else {
            return Err(Skip::Unreadable);
        };
        let old_abs = std::mem::take(&mut self.abs);
        self.absolute(tid, dir2.as_deref(), new);
        let new_abs = std::mem::take(&mut self.abs);
        if call.kind() == Kind::Rename && call.errno == 0 {
            let exchanged = name == "renameat2" && num(args, 4).unwrap_or(0) & RENAME_EXCHANGE != 0;
            self.renamed(&old_abs, &new_abs, exchanged);
            self.links.renamed(&old_abs, &new_abs, exchanged);
        }
        match (self.relative_of(&old_abs), self.relative_of(&new_abs)) {
            (Some(old), Some(new)) => (call.path, call.path2) = (old, new),
            (Some(old), None) => {
                call.path = old;
                call.path2 = outside_of(&new_abs);
                self.need_dir(&new_abs);
            }
            // Taken from outside: the old file exists before the replay. One that failed
            // (across filesystems, say) would not fail the same way there.
            (None, Some(new)) if call.errno == 0 => {
                call.path = outside_of(&old_abs);
                call.path2 = new;
                let moved = (call.kind() == Kind::Rename).then_some(new_abs);
                self.need_source(&old_abs, 0, moved);
            }
            _ => return Err(Skip::Outside),
        }
        call.a = match name {
            "renameat2" => num(args, 4).ok_or(Skip::Unreadable)? as u64,
            // AT_SYMLINK_FOLLOW.
            "linkat" => num(args, 4).ok_or(Skip::Unreadable)? as u64 & 0x400,
            _ => 0,
        };
        Ok(())
    }

    /// Calls on a descriptor: recorded when the descriptor is a file beneath the root.
    fn by_fd(&mut self, name: &str, args: &[Arg], call: &mut Call) -> Result<(), Skip> {
        let num = |i: usize| num(args, i).ok_or(Skip::Unreadable);
        let kind = match name {
            "close" => Kind::Close,
            "read" | "pread64" | "readv" | "preadv" | "preadv2" => Kind::Read,
            "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2" => Kind::Write,
            "copy_file_range" => Kind::Copy,
            "sendfile" | "sendfile64" => Kind::Sendfile,
            "lseek" => Kind::Lseek,
            "fsync" => Kind::Fsync,
            "fdatasync" => Kind::Fdatasync,
            "sync_file_range" => Kind::SyncRange,
            "ftruncate" => Kind::Truncate,
            "fallocate" => Kind::Fallocate,
            "fstat" => Kind::Stat,
            "getdents64" => Kind::Getdents,
            "fchmod" => Kind::Chmod,
            "fchown" => Kind::Chown,
            "dup" | "dup2" | "dup3" => Kind::Dup,
            // F_DUPFD and F_DUPFD_CLOEXEC only.
            "fcntl" if matches!(num(1)?, 0 | 0x406) => Kind::Dup,
            "fcntl" => return Err(Skip::Fcntl),
            "mmap" => Kind::Mmap,
            _ => match xattr_call(name) {
                Some((kind, Form::Fd)) => {
                    self.fd_call(kind, args, 0, call)?;
                    return self.xattr_fields(name, args, call);
                }
                _ => return Err(Skip::Unreadable),
            },
        };
        if matches!(kind, Kind::Copy | Kind::Sendfile) {
            return self.copy(name, args, call);
        }
        self.fd_call(kind, args, if name == "mmap" { 4 } else { 0 }, call)?;
        let len = |ret: i64, asked: Option<i64>| {
            if ret > 0 {
                ret as u64
            } else {
                asked.unwrap_or(0).clamp(0, FAILED_LEN_MAX) as u64
            }
        };
        let asked = |i: usize| num(i).ok();
        match name {
            "read" | "write" => call.a = len(call.result, asked(2)),
            "pread64" | "pwrite64" => {
                call.a = len(call.result, asked(2));
                call.b = num(3)?;
            }
            "readv" | "writev" => call.a = len(call.result, None),
            "preadv" | "preadv2" | "pwritev" | "pwritev2" => {
                call.a = len(call.result, None);
                call.b = num(3)?;
            }
            "lseek" => {
                call.b = num(1)?;
                call.a = num(2)? as u64;
            }
            "ftruncate" | "fchmod" => call.a = num(1)? as u64,
            "fallocate" => {
                call.fd2 = num(1)? as i32;
                call.b = num(2)?;
                call.a = num(3)? as u64;
            }
            "getdents64" => call.a = num(2)?.clamp(0, 1 << 20) as u64,
            "dup" | "fcntl" => call.fd2 = call.result as i32,
            "dup2" | "dup3" => call.fd2 = num(1)? as i32,
            // The range, its protection and its type (MAP_SHARED, MAP_PRIVATE) above it.
            "mmap" => {
                call.a = num(1)? as u64;
                call.b = num(5)?;
                call.fd2 = (num(2)? & 0xff | (num(3)? & 0xf) << 8) as i32;
            }
            _ => {}
        }
        Ok(())
    }

    /// copy_file_range(in, off, out, ...) and sendfile(out, in, off, ...): on the input
    /// descriptor, writing to the output. An input outside the root, copied into it, is a
    /// file made before the replay, at least as long as what was read of it.
    fn copy(&mut self, name: &str, args: &[Arg], call: &mut Call) -> Result<(), Skip> {
        let sendfile = name != "copy_file_range";
        let (input, output, offset) = if sendfile { (1, 0, 2) } else { (0, 2, 1) };
        let fd = |i: usize| match args.get(i) {
            Some(Arg::Num(fd, Some(d))) => Ok((*fd as i32, d.path.clone())),
            Some(Arg::Num(..)) => Err(Skip::NotAFile),
            _ => Err(Skip::Unreadable),
        };
        let ((in_fd, in_path), (out_fd, out_path)) = (fd(input)?, fd(output)?);
        call.kind = Some(if sendfile { Kind::Sendfile } else { Kind::Copy });
        (call.fd, call.fd2) = (in_fd, out_fd);
        call.a = call.result.max(0) as u64;
        // The input offset: `[N]` (sendfile: `[N] => [M]`), NULL for the position.
        call.b = match args.get(offset) {
            Some(Arg::Offset(n)) => *n,
            _ => -1,
        };
        let read_to = (call.b.max(0) as u64).saturating_add(call.a);
        match (self.relative_of(&in_path), self.relative_of(&out_path)) {
            (Some(i), Some(o)) => (call.path, call.path2) = (i, o),
            // A copy from outside that failed (across filesystems, say) would not fail the
            // same way in the replay.
            (None, Some(o)) if call.errno == 0 => {
                call.path = outside_of(&in_path);
                call.path2 = o;
                self.need_source(&in_path, read_to, None);
            }
            (Some(i), None) if call.errno == 0 => {
                call.path = i;
                call.path2 = outside_of(&out_path);
                self.need_source(&out_path, 0, None);
            }
            _ => return Err(Skip::Outside),
        }
        Ok(())
    }

    /// Records `kind` on the descriptor argument `i` when it is a file beneath the root.
    pub(super) fn fd_call(
        &mut self,
        kind: Kind,
        args: &[Arg],
        i: usize,
        call: &mut Call,
    ) -> Result<(), Skip> {
        let (fd, path) = match args.get(i) {
            Some(Arg::Num(fd, Some(d))) => (*fd, &d.path),
            Some(Arg::Num(..)) => return Err(Skip::NotAFile),
            _ => return Err(Skip::Unreadable),
        };
        call.kind = Some(kind);
        call.fd = fd as i32;
        call.path = self.relative_of(path).ok_or(Skip::Outside)?;
        if matches!(kind, Kind::Stat | Kind::Utimens | Kind::Chown) {
            call.a = 1;
        }
        Ok(())
    }

    /// The descriptor a `/proc/self/fd/N` path in `self.abs` names (also
    /// `/proc/thread-self/fd/N`, and `/proc/PID/fd/N` of the thread's own process).
    fn proc_fd(&self, tid: u32) -> Option<i32> {
        let rest = self.abs.strip_prefix(b"/proc/")?;
        let slash = rest.iter().position(|&c| c == b'/')?;
        let (who, rest) = rest.split_at(slash);
        let own = who == b"self"
            || who == b"thread-self"
            || std::str::from_utf8(who)
                .ok()
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|pid| self.table_of.get(&pid) == self.table_of.get(&tid));
        let fd = rest.strip_prefix(b"/fd/")?;
        if !own || fd.is_empty() || !fd.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(fd).ok()?.parse().ok()
    }
}

/// An absolute path outside the root, as the trace names it: below [`OUTSIDE`].
fn outside_of(abs: &[u8]) -> Vec<u8> {
    let mut p = crate::replay::trace::OUTSIDE.to_vec();
    p.extend_from_slice(abs);
    p
}

fn named(name: &str) -> Kind {
    match name {
        "rename" | "renameat" | "renameat2" => Kind::Rename,
        "link" | "linkat" => Kind::Link,
        "chmod" | "fchmodat" | "fchmodat2" => Kind::Chmod,
        "chown" | "lchown" | "fchownat" => Kind::Chown,
        _ => Kind::Utimens,
    }
}

//! Turns strace's output (`-f -ttt -T -y -X raw -s 0`) into trace calls, one line at a time:
//! an unfinished call waits for its `resumed` half, paths are made absolute (from the
//! descriptors' and `AT_FDCWD`'s decoded paths, or each process's working directory) and
//! kept relative to the root, and calls on anything else are counted and dropped.

use std::collections::HashMap;
use std::path::Path;

mod syntax;

use super::trace::{Call, Kind};
use syntax::{Arg, micros, parse_result, split_args};

/// `RESOLVE_IN_ROOT` of linux/openat2.h.
const RESOLVE_IN_ROOT: i64 = 0x10;

/// strace's arguments, before the command (`-o FILE` comes after): every thread and child,
/// absolute start times and durations, descriptors' paths, flags as numbers, no data, and
/// only the calls fsbench records (a seccomp filter lets every other call run unstopped).
pub const STRACE_ARGS: &[&str] = &[
    "-f",
    "-qq",
    "-ttt",
    "-T",
    "-y",
    "-X",
    "raw",
    "-s",
    "0",
    "--seccomp-bpf",
    "-e",
    "signal=none",
    "-e",
    // `?`: a call this architecture lacks (open, stat on arm64) is no error.
    "trace=?open,?openat,?openat2,?creat,?close,?read,?pread64,?readv,?preadv,?preadv2,\
     ?write,?pwrite64,?writev,?pwritev,?pwritev2,?copy_file_range,?sendfile,?sendfile64,\
     ?lseek,?fsync,?fdatasync,?sync_file_range,?truncate,?ftruncate,?fallocate,?mkdir,\
     ?mkdirat,?rmdir,?unlink,?unlinkat,?rename,?renameat,?renameat2,?link,?linkat,?symlink,?symlinkat,?readlink,\
     ?readlinkat,?stat,?lstat,?fstat,?newfstatat,?statx,?getdents64,?chmod,?fchmod,\
     ?fchmodat,?chown,?fchown,?lchown,?fchownat,?utimensat,?dup,?dup2,?dup3,?fcntl,?mmap,\
     ?chdir,?fchdir,?clone,?clone3,?fork,?vfork",
];

/// The parser's state across lines.
pub struct Parser {
    /// The root, absolute and without a trailing slash.
    root: Vec<u8>,
    /// Where relative paths start, per thread (a process's threads learn it separately).
    cwd: HashMap<u32, Vec<u8>>,
    /// The first half of each thread's unfinished call, with its start.
    unfinished: HashMap<u32, (u64, String)>,
    /// The first timestamp, which trace times are relative to.
    epoch: Option<u64>,
    start_cwd: Vec<u8>,
    /// Calls not replayed: outside the root, on pipes, sockets, or of no replayed kind.
    pub dropped: u64,
    abs: Vec<u8>,
}

impl Parser {
    pub fn new(root: &Path, cwd: &Path) -> Parser {
        let bytes = |p: &Path| p.as_os_str().as_encoded_bytes().to_vec();
        let mut root = bytes(root);
        while root.len() > 1 && root.ends_with(b"/") {
            root.pop();
        }
        Parser {
            root,
            cwd: HashMap::new(),
            unfinished: HashMap::new(),
            epoch: None,
            start_cwd: bytes(cwd),
            dropped: 0,
            abs: Vec::new(),
        }
    }

    /// Parses one line; `Some` with the call when it is one to record.
    pub fn line(&mut self, line: &str, call: &mut Call) -> Option<()> {
        // strace pads thread ids to five columns: `42    1795665584.073292 ...`.
        let (tid, rest) = line.trim_start().split_once(' ')?;
        let tid: u32 = tid.parse().ok()?;
        let (time, rest) = rest.trim_start().split_once(' ')?;
        let time = micros(time)?;
        let (time, text) = if let Some(first) = rest.strip_suffix(" <unfinished ...>") {
            self.unfinished.insert(tid, (time, first.to_string()));
            return None;
        } else if let Some(resumed) = rest.strip_prefix("<... ") {
            let (_, tail) = resumed.split_once(" resumed>")?;
            let (start, first) = self.unfinished.remove(&tid)?;
            (start, format!("{first}{tail}"))
        } else {
            (time, rest.to_string())
        };
        let epoch = *self.epoch.get_or_insert(time);
        let outcome = self.call(tid, &text, call);
        if outcome.is_some() {
            call.tid = tid;
            call.start_us = time.saturating_sub(epoch);
        }
        outcome
    }

    fn call(&mut self, tid: u32, text: &str, call: &mut Call) -> Option<()> {
        let open = text.find('(')?;
        let name = &text[..open];
        let (args, result) = split_args(&text[open + 1..])?;
        let (ret, errno, dur) = parse_result(result)?;
        // A new process starts where its parent is.
        if matches!(name, "clone" | "clone3" | "fork" | "vfork") {
            if ret > 0 {
                let cwd = self.cwd_of(tid).to_vec();
                self.cwd.insert(ret as u32, cwd);
            }
            return None;
        }
        if name == "chdir" || name == "fchdir" {
            if ret == 0 {
                let dir = match args.first()? {
                    Arg::Str(p) => self.absolute(tid, None, p).then(|| self.abs.clone()),
                    Arg::Num(_, Some(p)) => Some(p.clone()),
                    _ => None,
                };
                self.cwd.insert(tid, dir?);
            }
            return None;
        }
        // `AT_FDCWD</dir>`: the thread's working directory, whatever call shows it.
        if let Some(Arg::Num(-100, Some(dir))) = args.first() {
            self.cwd.insert(tid, dir.clone());
        }
        *call = Call {
            result: ret,
            errno,
            dur_us: dur,
            fd: -1,
            fd2: -1,
            b: -1,
            path: std::mem::take(&mut call.path),
            path2: std::mem::take(&mut call.path2),
            ..Call::default()
        };
        call.path.clear();
        call.path2.clear();
        let kept = self.build(tid, name, &args, call);
        if kept.is_none() {
            self.dropped += 1;
        }
        kept
    }

    fn cwd_of(&self, tid: u32) -> &[u8] {
        self.cwd.get(&tid).unwrap_or(&self.start_cwd)
    }

    /// Fills `call` for syscall `name`; `None` when it is not recorded.
    fn build(&mut self, tid: u32, name: &str, args: &[Arg], call: &mut Call) -> Option<()> {
        let num = |i: usize| match args.get(i) {
            Some(Arg::Num(n, _)) => Some(*n),
            _ => None,
        };
        // Path-taking calls: (kind, dirfd argument or None, path argument).
        let at = |dirfd: usize| Some(dirfd);
        let (kind, dir, path_arg) = match name {
            "open" => (Kind::Open, None, 0),
            "openat" | "openat2" => (Kind::Open, at(0), 1),
            "creat" => (Kind::Open, None, 0),
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
            "fchmodat" | "fchownat" | "utimensat" => (named(name), at(0), 1),
            _ => return self.by_fd(name, args, call),
        };
        call.kind = Some(kind);
        let path = match args.get(path_arg) {
            Some(Arg::Str(p)) => p.as_slice(),
            // utimensat(fd, NULL, ...): on the descriptor.
            _ if kind == Kind::Utimens => return self.fd_call(kind, args, 0, call),
            _ => return None,
        };
        let dirpath = dir.and_then(|i| match args.get(i) {
            Some(Arg::Num(_, Some(p))) => Some(p.as_slice()),
            _ => None,
        });
        // `newfstatat(fd, "", ..., AT_EMPTY_PATH)`: fstat.
        if path.is_empty() && dir.is_some() {
            return self.fd_call(kind, args, 0, call);
        }
        if dir.is_some() && dirpath.is_none() && path.first() != Some(&b'/') {
            return None;
        }
        // openat2's RESOLVE_IN_ROOT: an absolute path, and `..`, stay below the directory.
        let in_root = name == "openat2"
            && args.get(2).and_then(|h| h.field("resolve")).unwrap_or(0) & RESOLVE_IN_ROOT != 0;
        if in_root {
            dirpath?;
            self.absolute(tid, Some(b"/"), path);
            let below = std::mem::take(&mut self.abs);
            if !self.absolute(tid, dirpath, &below[1..]) {
                return None;
            }
        } else if !self.absolute(tid, dirpath, path) {
            return None;
        }
        call.path = self.relative()?;
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
                let how = args.get(2)?;
                let resolve = how.field("resolve")? as u64;
                call.a = how.field("flags")? as u64 & u64::from(u32::MAX) | resolve << 32;
                call.b = how.field("mode")?;
            }
            // creat is open(O_CREAT|O_WRONLY|O_TRUNC).
            "creat" => {
                call.a = 0o1101;
                call.b = num(1)?;
            }
            "truncate" => call.a = num(1)? as u64,
            "mkdir" | "chmod" => call.a = num(1)? as u64,
            "mkdirat" | "fchmodat" => call.a = num(2)? as u64,
            "unlinkat" => call.a = num(2)? as u64,
            "rename" | "link" | "renameat" | "renameat2" | "linkat" => {
                let (dir2, p2) = if name.ends_with("at") || name.ends_with("at2") {
                    (
                        match args.get(2) {
                            Some(Arg::Num(_, p)) => p.clone(),
                            _ => None,
                        },
                        3,
                    )
                } else {
                    (None, 1)
                };
                let Some(Arg::Str(new)) = args.get(p2) else {
                    return None;
                };
                if !self.absolute(tid, dir2.as_deref(), new) {
                    return None;
                }
                call.path2 = self.relative()?;
                call.a = if name == "renameat2" {
                    num(4)? as u64
                } else {
                    0
                };
            }
            "symlink" | "symlinkat" => {
                let Some(Arg::Str(target)) = args.first() else {
                    return None;
                };
                call.path2 = target.clone();
            }
            "stat" | "chown" => call.a = 1,
            "lstat" | "lchown" => call.a = 0,
            "newfstatat" => call.a = u64::from(num(3)? & 0x100 == 0),
            "statx" => call.a = u64::from(num(2)? & 0x100 == 0),
            "fchownat" => call.a = u64::from(num(4)? & 0x100 == 0),
            "utimensat" => call.a = u64::from(num(3)? & 0x100 == 0),
            _ => {}
        }
        if kind == Kind::Open && call.errno == 0 {
            call.fd2 = call.result as i32;
        }
        Some(())
    }

    /// Calls on a descriptor: recorded when the descriptor is a file beneath the root.
    fn by_fd(&mut self, name: &str, args: &[Arg], call: &mut Call) -> Option<()> {
        let num = |i: usize| match args.get(i) {
            Some(Arg::Num(n, _)) => Some(*n),
            _ => None,
        };
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
            "mmap" => Kind::Mmap,
            _ => return None,
        };
        // sendfile(out, in, ...): the input is the descriptor it works on, as copy_file_range's.
        let fd_arg = match name {
            "mmap" => 4,
            "sendfile" | "sendfile64" => 1,
            _ => 0,
        };
        self.fd_call(kind, args, fd_arg, call)?;
        let len = |ret: i64, asked: Option<i64>| {
            if ret > 0 {
                ret as u64
            } else {
                asked.unwrap_or(0).clamp(0, 1 << 16) as u64
            }
        };
        match name {
            "read" | "write" => call.a = len(call.result, num(2)),
            "pread64" | "pwrite64" => {
                call.a = len(call.result, num(2));
                call.b = num(3)?;
            }
            "readv" | "writev" => call.a = len(call.result, None),
            "preadv" | "preadv2" | "pwritev" | "pwritev2" => {
                call.a = len(call.result, None);
                call.b = num(3)?;
            }
            "copy_file_range" | "sendfile" | "sendfile64" => {
                let sendfile = name != "copy_file_range";
                let Some(Arg::Num(out, Some(p))) = args.get(if sendfile { 0 } else { 2 }) else {
                    return None;
                };
                call.fd2 = *out as i32;
                self.abs.clone_from(p);
                call.path2 = self.relative()?;
                call.a = call.result.max(0) as u64;
                // The input offset: `[N]` (sendfile: `[N] => [M]`), NULL for the position.
                call.b = match args.get(if sendfile { 2 } else { 1 }) {
                    Some(Arg::Offset(n)) => *n,
                    _ => -1,
                };
            }
            "lseek" => {
                call.b = num(1)?;
                call.a = num(2)? as u64;
            }
            "ftruncate" => call.a = num(1)? as u64,
            "fallocate" => {
                call.fd2 = num(1)? as i32;
                call.b = num(2)?;
                call.a = num(3)? as u64;
            }
            "getdents64" => call.a = num(2)?.clamp(0, 1 << 20) as u64,
            "fchmod" => call.a = num(1)? as u64,
            "dup" | "fcntl" => call.fd2 = call.result as i32,
            "dup2" | "dup3" => call.fd2 = num(1)? as i32,
            "mmap" => call.a = num(1)? as u64,
            _ => {}
        }
        Some(())
    }

    /// Records `kind` on the descriptor argument `i` when it is a file beneath the root.
    fn fd_call(&mut self, kind: Kind, args: &[Arg], i: usize, call: &mut Call) -> Option<()> {
        let Some(Arg::Num(fd, Some(path))) = args.get(i) else {
            return None;
        };
        // strace marks a descriptor of a removed file; its path is what it was.
        let path = path.strip_suffix(b" (deleted)").unwrap_or(path);
        self.abs.clear();
        self.abs.extend_from_slice(path);
        call.kind = Some(kind);
        call.fd = *fd as i32;
        call.path = self.relative()?;
        if kind == Kind::Stat || kind == Kind::Utimens || kind == Kind::Chown {
            call.a = 1;
        }
        Some(())
    }

    /// Makes `self.abs` the lexically normalized absolute form of `path`, relative to `dir`
    /// (or the thread's working directory); false when there is no telling.
    fn absolute(&mut self, tid: u32, dir: Option<&[u8]>, path: &[u8]) -> bool {
        let mut joined = Vec::with_capacity(path.len() + 64);
        if path.first() != Some(&b'/') {
            joined.extend_from_slice(dir.unwrap_or_else(|| self.cwd_of(tid)));
            joined.push(b'/');
        }
        joined.extend_from_slice(path);
        self.abs.clear();
        for part in joined.split(|&c| c == b'/') {
            match part {
                b"" | b"." => {}
                b".." => {
                    let cut = self.abs.iter().rposition(|&c| c == b'/').unwrap_or(0);
                    self.abs.truncate(cut);
                }
                _ => {
                    self.abs.push(b'/');
                    self.abs.extend_from_slice(part);
                }
            }
        }
        if self.abs.is_empty() {
            self.abs.push(b'/');
        }
        true
    }

    /// `self.abs` relative to the root (`.` for the root), or `None` when outside it.
    fn relative(&self) -> Option<Vec<u8>> {
        let rest = self.abs.strip_prefix(self.root.as_slice())?;
        if self.root == b"/" {
            return Some(if rest.is_empty() {
                b".".to_vec()
            } else {
                rest.to_vec()
            });
        }
        match rest {
            [] => Some(b".".to_vec()),
            [b'/', tail @ ..] if !tail.is_empty() => Some(tail.to_vec()),
            _ => None,
        }
    }
}

fn named(name: &str) -> Kind {
    match name {
        "rename" | "renameat" | "renameat2" => Kind::Rename,
        "link" | "linkat" => Kind::Link,
        "chmod" | "fchmodat" => Kind::Chmod,
        "chown" | "lchown" | "fchownat" => Kind::Chown,
        _ => Kind::Utimens,
    }
}

#[cfg(test)]
mod tests;

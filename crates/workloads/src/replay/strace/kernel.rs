//! The bpf tracer's records ([`SyscallRecord`]) as calls for the parser: each becomes the
//! arguments strace would have printed, and the parser follows descriptors from the calls
//! themselves, as strace's `-y` did for it: an open's result is its resolved path, dups and
//! `F_DUPFD` copy, close and close_range drop, exec drops the close-on-exec ones, pipes,
//! sockets and the like are no files, and a rename moves what was open below its old name.

use std::path::Path;

use fsbench_model::syscall::SyscallRecord;

use super::build::path_call;
use super::links::renamed_path;
use super::syntax::{Arg, Decoded, Outcome};
use super::{Parser, Skip};
use crate::replay::trace::{BY_FD_NAME, Call, Kind, Xattr};

/// `AT_FDCWD`, and the open flags that matter here (linux/fcntl.h, x86's values).
const AT_FDCWD: i64 = -100;
const O_CREAT: u64 = 0o100;
const O_TMPFILE: u64 = 0o20000000;
const O_CLOEXEC: u64 = 0o2000000;
/// fcntl's commands that make or mark descriptors.
const F_DUPFD: u64 = 0;
const F_SETFD: u64 = 2;
const F_DUPFD_CLOEXEC: u64 = 1030;
/// close_range's flags.
const CLOSE_RANGE_UNSHARE: u64 = 2;
const CLOSE_RANGE_CLOEXEC: u64 = 4;

impl Parser {
    /// A parser of the bpf tracer's records for a capture of `root` started in `cwd`: nothing
    /// stopped the program, so its calls' starts are its own.
    pub fn for_kernel(root: &Path, cwd: &Path) -> Parser {
        Parser {
            follows_fds: true,
            ..Parser::new(root, cwd, 0)
        }
    }

    /// What the bpf tracer cost the program, as far as its calls tell (the most any call's
    /// task had been delayed by it): its time under capture less this is its own.
    pub fn program_cost_us(&self) -> u64 {
        self.program_cost_ns / 1000
    }

    /// Task `parent` forked `child` with `flags` (before the child ran).
    pub fn kernel_fork(&mut self, parent: u32, child: u32, flags: u64) {
        self.first_tid.get_or_insert(parent);
        self.forked(parent, child, flags as i64);
    }

    /// Task `tid` is closing `fd` (its close has not returned): the descriptor is no more
    /// (another thread's open may be given its number at once), its path is kept for the
    /// close's own record.
    pub fn kernel_closing(&mut self, tid: u32, fd: i32) {
        let table = self.table(tid);
        let path = self.tables.get_mut(&table).and_then(|t| t.remove(&fd));
        if let Some(marks) = self.cloexec.get_mut(&table) {
            marks.remove(&fd);
        }
        self.closing.insert(tid, (fd, path));
    }

    /// Parses one record; `Some` with the call when it is one to record.
    pub fn kernel_call(&mut self, k: &SyscallRecord<'_>, call: &mut Call) -> Option<()> {
        call.value.clear();
        let start_us = k.start_ns / 1000;
        let epoch = *self.epoch.get_or_insert(start_us);
        self.first_tid.get_or_insert(k.tid);
        self.total += 1;
        // A parent that waited for its children goes on with their cost (the BPF program
        // sees to it): the most any call had is what the program's end was delayed by.
        self.program_cost_ns = self.program_cost_ns.max(k.cost_ns);
        if self.descriptors_only(k) {
            return None;
        }
        let since = start_us.saturating_sub(epoch);
        let text = || describe(k);
        // A path the kernel could not read (a NULL one is utimensat's descriptor form), or
        // the structure the call points to.
        let path_unread = (k.paths.iter().flatten().next().copied())
            .is_some_and(|(arg, path)| path.is_none() && k.args[arg] != 0);
        if path_unread || k.data_unread {
            self.dropped_result(k);
            return self.outcome(
                k.tid,
                since,
                k.cost_ns / 1000,
                Err(Skip::PathUnread),
                call,
                text,
            );
        }
        let args = self.kernel_args(k);
        let outcome = Outcome {
            value: if k.ret < 0 { -1 } else { k.ret },
            decoded: None,
            errno: if k.ret < 0 { -k.ret as i32 } else { 0 },
            dur_us: k.end_ns.saturating_sub(k.start_ns) / 1000,
        };
        self.abs.clear();
        let result = self.call(k.tid, k.name, &args, &outcome, call);
        // A POSIX ACL's value, which the kernel reads: the replay sets it as it was.
        if result == Ok(true)
            && call.kind() == Kind::SetXattr
            && let Some(value) = k.value
            && Xattr::valued(&call.path2)
            && value.len() as u64 == call.a
        {
            call.value.extend_from_slice(value);
        }
        self.follow(k);
        // A file linked by its descriptor's name is named so from now on.
        if result == Ok(true) && call.kind() == Kind::Link && call.flags & BY_FD_NAME != 0 {
            let mut named = self.root.clone();
            named.push(b'/');
            named.extend_from_slice(&call.path2);
            let cloexec = self.is_cloexec(k.tid, call.fd);
            self.set_fd(k.tid, call.fd, Some(named), cloexec);
        }
        self.outcome(k.tid, since, k.cost_ns / 1000, result, call, text)
    }

    /// The arguments as strace prints them: strings for paths, descriptors with the paths
    /// the parser knows them by, `AT_FDCWD` with the working directory, openat2's
    /// structure, the copies' offsets as they were before the call.
    fn kernel_args(&mut self, k: &SyscallRecord<'_>) -> Vec<Arg> {
        let fds = fd_args(k.name);
        let table = self.table(k.tid);
        (0..6)
            .map(|i| {
                let v = k.args[i];
                if let Some(path) = k.path(i) {
                    return path.map_or(Arg::Other, |p| Arg::Str(p.to_vec()));
                }
                if fds.contains(&i) {
                    let fd = i64::from(v as i32);
                    let closing = (k.name == "close")
                        .then(|| self.closing.remove(&k.tid))
                        .flatten()
                        .filter(|(c, _)| i64::from(*c) == fd);
                    let path = if let Some((_, path)) = closing {
                        path
                    } else if fd == AT_FDCWD {
                        Some(self.cwd_of(k.tid).to_vec())
                    } else {
                        (self.tables.get(&table))
                            .and_then(|t| t.get(&(fd as i32)))
                            .cloned()
                    };
                    let decoded = path.map(|path| Decoded {
                        path,
                        deleted: false,
                    });
                    return Arg::Num(fd, decoded);
                }
                match (k.name, i) {
                    ("openat2", 2) => k.data.map_or(Arg::Other, |[flags, mode, resolve]| {
                        let field = |name: &str, v: u64| (name.as_bytes().to_vec(), v as i64);
                        Arg::Fields(vec![
                            field("flags", flags),
                            field("mode", mode),
                            field("resolve", resolve),
                        ])
                    }),
                    // `struct xattr_args`: the value's address, its size and the flags.
                    ("setxattrat" | "getxattrat", 4) => k.data.map_or(Arg::Other, |[_, sf, _]| {
                        Arg::Fields(vec![
                            (b"size".to_vec(), i64::from(sf as u32)),
                            (b"flags".to_vec(), i64::from((sf >> 32) as u32)),
                        ])
                    }),
                    ("copy_file_range", 1) | ("sendfile", 2) => match k.data {
                        Some([after, ..]) if v != 0 => {
                            Arg::Offset((after as i64).saturating_sub(k.ret.max(0)))
                        }
                        _ => Arg::Other,
                    },
                    // strace prints an open's mode only where the open can make a file.
                    ("open", 2) | ("openat", 3) if k.args[i - 1] & (O_CREAT | O_TMPFILE) == 0 => {
                        Arg::Other
                    }
                    _ => Arg::Num(v as i64, None),
                }
            })
            .collect()
    }

    /// Follows the descriptors a recorded call made, copied or marked.
    fn follow(&mut self, k: &SyscallRecord<'_>) {
        if k.ret < 0 {
            return;
        }
        let (ret, arg) = (k.ret as i32, |i: usize| k.args[i] as i32);
        match k.name {
            "open" | "openat" | "openat2" | "creat" => {
                let flags = match k.name {
                    "open" => k.args[1],
                    "openat" => k.args[2],
                    "openat2" => k.data.map_or(0, |d| d[0]),
                    _ => 0,
                };
                // An O_TMPFILE file has no name until it is linked (strace shows `#INODE`).
                let mut path = (!self.abs.is_empty()).then(|| self.abs.clone());
                if let (Some(dir), true) = (&mut path, flags & O_TMPFILE == O_TMPFILE) {
                    dir.extend_from_slice(b"/#tmpfile");
                }
                self.set_fd(k.tid, ret, path, flags & O_CLOEXEC != 0);
            }
            "dup" => self.dup_fd(k.tid, arg(0), ret, false),
            "dup2" if arg(0) != arg(1) => self.dup_fd(k.tid, arg(0), arg(1), false),
            "dup3" => self.dup_fd(k.tid, arg(0), arg(1), k.args[2] & O_CLOEXEC != 0),
            "fcntl" => match k.args[1] {
                F_DUPFD => self.dup_fd(k.tid, arg(0), ret, false),
                F_DUPFD_CLOEXEC => self.dup_fd(k.tid, arg(0), ret, true),
                F_SETFD => self.mark_cloexec(k.tid, arg(0), k.args[2] & 1 != 0),
                _ => {}
            },
            _ => {}
        }
    }

    /// The calls outside strace's set, recorded only for the descriptors they make or drop:
    /// whether `k` is one (followed here, nothing recorded).
    fn descriptors_only(&mut self, k: &SyscallRecord<'_>) -> bool {
        let ok = k.ret >= 0;
        match k.name {
            "pipe" | "pipe2" | "socketpair" => {
                if let (true, Some([pair, ..])) = (ok, k.data) {
                    self.set_fd(k.tid, pair as i32, None, false);
                    self.set_fd(k.tid, (pair >> 32) as i32, None, false);
                }
            }
            "socket" | "accept" | "accept4" | "eventfd" | "eventfd2" | "memfd_create"
            | "epoll_create" | "epoll_create1" | "timerfd_create" | "signalfd" | "signalfd4"
            | "inotify_init" | "inotify_init1" | "fanotify_init" | "userfaultfd"
            | "perf_event_open" | "pidfd_open" | "pidfd_getfd" | "io_uring_setup" | "open_tree"
            | "open_tree_attr" | "fsopen" | "fsmount" => {
                if ok {
                    self.set_fd(k.tid, k.ret as i32, None, false);
                }
            }
            "close_range" if ok => {
                let (first, last) = (k.args[0] as u32, k.args[1] as u32);
                let mut table = self.table(k.tid);
                if k.args[2] & CLOSE_RANGE_UNSHARE != 0 {
                    table = self.copy_table(table);
                    self.table_of.insert(k.tid, table);
                }
                let in_range = |fd: &i32| (first..=last).contains(&(*fd as u32));
                if k.args[2] & CLOSE_RANGE_CLOEXEC != 0 {
                    let open: Vec<i32> = (self.tables.get(&table).into_iter())
                        .flat_map(|t| t.keys().copied().filter(in_range))
                        .collect();
                    self.cloexec.entry(table).or_default().extend(open);
                } else {
                    if let Some(t) = self.tables.get_mut(&table) {
                        t.retain(|fd, _| !in_range(fd));
                    }
                    if let Some(marks) = self.cloexec.get_mut(&table) {
                        marks.retain(|fd| !in_range(fd));
                    }
                }
            }
            // The new program has a table of its own, without the close-on-exec descriptors.
            "execve" | "execveat" => {
                if ok {
                    let table = self.table(k.tid);
                    let table = self.copy_table(table);
                    self.table_of.insert(k.tid, table);
                    let marks = self.cloexec.remove(&table).unwrap_or_default();
                    if let Some(t) = self.tables.get_mut(&table) {
                        t.retain(|fd, _| !marks.contains(fd));
                    }
                }
            }
            "close_range" => {}
            _ => return false,
        }
        true
    }

    /// A call not recorded still made its descriptor: one the parser cannot name.
    fn dropped_result(&mut self, k: &SyscallRecord<'_>) {
        if k.ret >= 0 && matches!(k.name, "open" | "openat" | "openat2" | "creat") {
            self.set_fd(k.tid, k.ret as i32, None, false);
        }
    }

    /// Descriptor `fd` of `tid`'s table is now the file at `path` (`None`: no file fsbench
    /// can name).
    fn set_fd(&mut self, tid: u32, fd: i32, path: Option<Vec<u8>>, cloexec: bool) {
        let table = self.table(tid);
        let fds = self.tables.entry(table).or_default();
        match path {
            Some(path) => fds.insert(fd, path),
            None => fds.remove(&fd),
        };
        self.mark_cloexec(tid, fd, cloexec);
    }

    fn dup_fd(&mut self, tid: u32, old: i32, new: i32, cloexec: bool) {
        let path = self.fd_path(tid, old).map(<[u8]>::to_vec);
        self.set_fd(tid, new, path, cloexec);
    }

    fn is_cloexec(&mut self, tid: u32, fd: i32) -> bool {
        let table = self.table(tid);
        self.cloexec.get(&table).is_some_and(|m| m.contains(&fd))
    }

    fn mark_cloexec(&mut self, tid: u32, fd: i32, cloexec: bool) {
        let table = self.table(tid);
        let marks = self.cloexec.entry(table).or_default();
        if cloexec {
            marks.insert(fd);
        } else {
            marks.remove(&fd);
        }
    }

    /// `old` was renamed `new` (or the two exchanged): what is open below them, and the
    /// working directories below them, are where the rename put them (followed only where
    /// no decoded path says so).
    pub(super) fn renamed(&mut self, old: &[u8], new: &[u8], exchanged: bool) {
        if !self.follows_fds {
            return;
        }
        let open = self.tables.values_mut().flat_map(|t| t.values_mut());
        for path in open.chain(self.cwd.values_mut()) {
            if let Some(moved) = renamed_path(path, old, new, exchanged) {
                *path = moved;
            }
        }
    }
}

/// The arguments of `name` that are descriptors.
fn fd_args(name: &str) -> &'static [usize] {
    match name {
        "renameat" | "renameat2" | "linkat" => &[0, 2],
        "copy_file_range" => &[0, 2],
        "sendfile" => &[0, 1],
        "mmap" => &[4],
        "symlinkat" => &[1],
        _ => match path_call(name) {
            Some((_, Some(0), _)) => &[0],
            Some(_) => &[],
            None => &[0],
        },
    }
}

/// A record as text for a note's example: its name, arguments and result.
fn describe(k: &SyscallRecord<'_>) -> Vec<u8> {
    let mut text = format!("{} {}(", k.tid, k.name).into_bytes();
    for i in 0..6 {
        if i > 0 {
            text.extend_from_slice(b", ");
        }
        match k.path(i) {
            Some(Some(p)) => {
                text.push(b'"');
                text.extend_from_slice(p);
                text.push(b'"');
            }
            Some(None) => text.extend_from_slice(format!("{:#x}", k.args[i]).as_bytes()),
            // A negative int (AT_FDCWD, -1) in a register's low half reads as one.
            None => {
                let v = k.args[i];
                let shown = if v >> 32 == 0 {
                    i64::from(v as u32 as i32)
                } else {
                    v as i64
                };
                text.extend_from_slice(shown.to_string().as_bytes());
            }
        }
    }
    text.extend_from_slice(format!(") = {}", k.ret).as_bytes());
    text
}

#[cfg(test)]
mod tests;

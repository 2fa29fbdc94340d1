//! Turns strace's output (`-f -ttt -T -y -X raw -s 0`) into trace calls, one line at a time:
//! an unfinished call waits for its `resumed` half, paths are made absolute (from the
//! descriptors' and `AT_FDCWD`'s decoded paths, or each process's working directory) and
//! kept relative to the root. Each process's descriptors are followed (from opens, dups,
//! forks and every decoded argument), so that a `/proc/self/fd/N` path is the file of its
//! descriptor N; a file outside the root that a call takes into it (a copy's source, a
//! link's or rename's old name) becomes part of the initial state. Every other call is
//! counted by why it was not recorded.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

mod build;
mod cost;
mod kernel;
mod links;
mod named;
mod syntax;
mod xattr;

pub use cost::StopCost;

use super::trace::{Call, Entry, Kind, OUTSIDE};
use syntax::{Arg, Line, Outcome, parse_call, split_line};

/// strace's arguments, before the command (`-o FILE` comes after): every thread and child,
/// absolute start times and durations, descriptors' paths, flags as numbers, no data, and
/// only the calls fsbench records or follows processes by (a seccomp filter lets every
/// other call run unstopped).
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
     ?mkdirat,?rmdir,?unlink,?unlinkat,?rename,?renameat,?renameat2,?link,?linkat,?symlink,\
     ?symlinkat,?readlink,?readlinkat,?stat,?lstat,?fstat,?newfstatat,?statx,?getdents64,\
     ?chmod,?fchmod,?fchmodat,?chown,?fchown,?lchown,?fchownat,?utimensat,?dup,?dup2,?dup3,\
     ?fcntl,?mmap,?chdir,?fchdir,?clone,?clone3,?fork,?vfork,?wait4,?fchmodat2,?cachestat,\
     ?setxattrat,?getxattrat,?listxattrat,?removexattrat,?file_getattr,?file_setattr",
];

/// Why a call strace showed is not in the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    Outside,
    NotAFile,
    Fcntl,
    UnknownFd,
    Unfinished,
    Unreadable,
    PathUnread,
    EmptyPath,
    /// A call counted by its name (see `named.rs`): the reason names it.
    Named(&'static str),
}

impl Skip {
    pub fn reason(self) -> &'static str {
        match self {
            Skip::Outside => "outside the root",
            Skip::NotAFile => "on pipes, sockets, devices or anonymous memory",
            Skip::Fcntl => "fcntl other than a dup (locks, flags)",
            Skip::UnknownFd => "on a /proc/self/fd descriptor whose file is unknown",
            Skip::Unfinished => "cut short by the end of their process",
            Skip::Unreadable => "lines of strace's that fsbench could not read",
            Skip::PathUnread => "whose arguments the bpf tracer could not read",
            Skip::EmptyPath => "with an empty path and no AT_EMPTY_PATH (ENOENT: no file)",
            Skip::Named(why) => why,
        }
    }
}

/// A file outside the root that the program's calls take into it.
#[derive(Debug, Default)]
struct Source {
    /// At least this long (a copy read up to there).
    size: u64,
    /// Where it went inside the root, if it is gone from where it was (renamed in).
    moved_to: Option<Vec<u8>>,
}

/// The parser's state across lines.
pub struct Parser {
    /// The root, absolute and without a trailing slash.
    root: Vec<u8>,
    /// Where relative paths start, per task that has its own (a chdir of a thread moves its
    /// process's others too: tasks cloned with CLONE_FS share their parent's, see `fs_of`).
    cwd: HashMap<u32, Vec<u8>>,
    /// The task whose working directory each task cloned with CLONE_FS shares.
    fs_of: HashMap<u32, u32>,
    /// The first half of each thread's unfinished call, with its start.
    unfinished: HashMap<u32, (u64, Vec<u8>)>,
    /// The first timestamp, which trace times are relative to.
    epoch: Option<u64>,
    start_cwd: Vec<u8>,
    /// Each thread's descriptor table (threads and CLONE_FILES children share one), and
    /// each table's descriptors' absolute paths.
    table_of: HashMap<u32, u32>,
    tables: HashMap<u32, HashMap<i32, Vec<u8>>>,
    /// Each table's close-on-exec descriptors, where the parser follows descriptors from the
    /// calls themselves (the bpf tracer's records, which carry no decoded paths).
    cloexec: HashMap<u32, BTreeSet<i32>>,
    /// The descriptor each task is closing, and its path (see [`Parser::kernel_closing`]).
    closing: HashMap<u32, (i32, Option<Vec<u8>>)>,
    follows_fds: bool,
    /// Calls strace stopped on each thread's way so far: its own, its parent's before it
    /// was forked, its children's it waited for. Each cost the program strace's time.
    stops: HashMap<u32, u64>,
    strace_ns: u64,
    /// Calls not recorded, by reason, with the first one's text.
    pub skipped: BTreeMap<Skip, (u64, Vec<u8>)>,
    sources: BTreeMap<Vec<u8>, Source>,
    /// Directories outside the root that calls rename or link something out to.
    out_dirs: BTreeSet<Vec<u8>>,
    /// The recorded calls' durations, added up.
    pub calls_us: u64,
    /// The first thread: the program; its stops at the end are all those it waited for.
    first_tid: Option<u32>,
    /// The most the bpf tracer had cost any task of the program by one of its calls, ns.
    program_cost_ns: u64,
    /// The process of each task forked (a thread's is its parent's, a child process's its
    /// own); a task not here is a process of its own, as strace's first is.
    process: HashMap<u32, u32>,
    /// The tasks that made a recorded call.
    recorded: BTreeSet<u32>,
    total: u64,
    abs: Vec<u8>,
    /// A path joined to its directory, before `abs` is made of it (reused).
    joined: Vec<u8>,
    /// The symlinks beneath the root: paths through them are resolved as the kernel did.
    links: links::Symlinks,
}

impl Parser {
    /// A parser for a capture of `root` started in `cwd`, strace costing `strace_ns` a call.
    pub fn new(root: &Path, cwd: &Path, strace_ns: u64) -> Parser {
        let bytes = |p: &Path| p.as_os_str().as_encoded_bytes().to_vec();
        let mut root = bytes(root);
        while root.len() > 1 && root.ends_with(b"/") {
            root.pop();
        }
        Parser {
            root,
            cwd: HashMap::new(),
            fs_of: HashMap::new(),
            unfinished: HashMap::new(),
            epoch: None,
            start_cwd: bytes(cwd),
            table_of: HashMap::new(),
            tables: HashMap::new(),
            cloexec: HashMap::new(),
            closing: HashMap::new(),
            follows_fds: false,
            stops: HashMap::new(),
            strace_ns,
            skipped: BTreeMap::new(),
            sources: BTreeMap::new(),
            out_dirs: BTreeSet::new(),
            calls_us: 0,
            first_tid: None,
            program_cost_ns: 0,
            process: HashMap::new(),
            recorded: BTreeSet::new(),
            total: 0,
            abs: Vec::new(),
            joined: Vec::new(),
            links: links::Symlinks::default(),
        }
    }

    /// Calls not recorded, all reasons together.
    pub fn dropped(&self) -> u64 {
        self.skipped.values().map(|(n, _)| n).sum()
    }

    /// Calls strace stopped on the program's way: what its own time is estimated without.
    pub fn program_stops(&self) -> u64 {
        self.first_tid
            .and_then(|t| self.stops.get(&t))
            .copied()
            .unwrap_or(0)
    }

    /// Every call strace stopped, recorded or not.
    pub fn stops_total(&self) -> u64 {
        self.total
    }

    fn skip(&mut self, why: Skip, text: &[u8]) {
        self.skip_with(why, || text.to_vec());
    }

    /// Counts a call not recorded; `text` (made only for a reason's first) is its example.
    fn skip_with(&mut self, why: Skip, text: impl FnOnce() -> Vec<u8>) {
        self.skipped.entry(why).or_insert_with(|| (0, text())).0 += 1;
    }

    /// Parses one line; `Some` with the call when it is one to record.
    pub fn line(&mut self, line: &[u8], call: &mut Call) -> Option<()> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let Some((tid, time, what)) = split_line(line) else {
            if !line.is_empty() {
                self.skip(Skip::Unreadable, line);
            }
            return None;
        };
        let epoch = *self.epoch.get_or_insert(time);
        self.first_tid.get_or_insert(tid);
        let (start, text) = match what {
            Line::Notice => return None,
            Line::Unfinished { body } => {
                self.unfinished.insert(tid, (time, body.to_vec()));
                return None;
            }
            Line::Resumed { rest, .. } => match self.unfinished.remove(&tid) {
                Some((start, mut first)) => {
                    first.extend_from_slice(rest);
                    (start, Cow::Owned(first))
                }
                None => {
                    self.skip(Skip::Unreadable, line);
                    return None;
                }
            },
            Line::Call { body, .. } => (time, Cow::Borrowed(body)),
        };
        let Some((args, outcome)) = parse_call(&text) else {
            self.skip(Skip::Unreadable, &text);
            return None;
        };
        let stops = self.stops.entry(tid).or_default();
        let before = *stops;
        *stops += 1;
        self.total += 1;
        let name = &text[..text.iter().position(|&c| c == b'(').unwrap_or(0)];
        let name = std::str::from_utf8(name).unwrap_or_default();
        let result = self.call(tid, name, &args, &outcome, call);
        self.outcome(
            tid,
            start.saturating_sub(epoch),
            before.saturating_mul(self.strace_ns) / 1000,
            result,
            call,
            || text.to_vec(),
        )
    }

    /// What a parsed call of thread `tid` becomes: recorded into `call`, `since` its start
    /// on the capture's clock, `traced_us` of it what tracing had added, or counted by why
    /// not (`text`: the call as the user would read it).
    fn outcome(
        &mut self,
        tid: u32,
        since: u64,
        traced_us: u64,
        result: Result<bool, Skip>,
        call: &mut Call,
        text: impl FnOnce() -> Vec<u8>,
    ) -> Option<()> {
        match result {
            Ok(true) => {
                call.tid = tid;
                call.start_us = since;
                // What tracing added to this thread's earlier calls is not the program's.
                call.at_us = since.saturating_sub(traced_us);
                self.calls_us = self.calls_us.saturating_add(call.dur_us);
                self.recorded.insert(tid);
                Some(())
            }
            Ok(false) => None,
            Err(why) => {
                self.skip_with(why, text);
                None
            }
        }
    }

    /// Each task that made a recorded call, with its process, by task.
    pub fn tasks(&self) -> Vec<(u32, u32)> {
        (self.recorded.iter())
            .map(|&tid| (tid, self.process_of(tid)))
            .collect()
    }

    fn process_of(&self, tid: u32) -> u32 {
        self.process.get(&tid).copied().unwrap_or(tid)
    }

    /// Counts the calls cut short (an unfinished half never resumed).
    pub fn finish(&mut self) {
        let cut: Vec<_> = self.unfinished.drain().map(|(_, (_, t))| t).collect();
        for text in cut {
            self.skip(Skip::Unfinished, &text);
        }
    }

    /// Records the call into `call`: `Ok(true)` when it is one to record, `Ok(false)` for
    /// the calls that only follow processes, `Err` with why it is not recorded.
    fn call(
        &mut self,
        tid: u32,
        name: &str,
        args: &[Arg],
        out: &Outcome,
        call: &mut Call,
    ) -> Result<bool, Skip> {
        let ret = out.value;
        match name {
            "clone" | "clone3" | "fork" | "vfork" => {
                if ret > 0 {
                    // clone's `flags=` argument, clone3's structure's field.
                    let flags = args.iter().find_map(|a| match a {
                        Arg::Fields(f) => f.iter().find(|(k, _)| k == b"flags").map(|(_, v)| *v),
                        _ => None,
                    });
                    let flags = flags.unwrap_or(0);
                    self.forked(tid, ret as u32, flags);
                }
                return Ok(false);
            }
            // The parent goes on after what its child cost.
            "wait4" => {
                if ret > 0 {
                    let child = self.stops.get(&(ret as u32)).copied().unwrap_or(0);
                    let me = self.stops.entry(tid).or_default();
                    *me = (*me).max(child);
                }
                return Ok(false);
            }
            "chdir" | "fchdir" => {
                if ret == 0 {
                    self.changed_dir(tid, args);
                }
                return Ok(false);
            }
            _ => {}
        }
        // `AT_FDCWD</dir>`: the thread's working directory, whatever call shows it.
        if let Some(Arg::Num(-100, Some(dir))) = args.first() {
            self.cwd.insert(self.fs(tid), dir.path.clone());
        }
        self.learn(tid, name, args, out);
        if let Some(named) = self.named_call(tid, name, args) {
            return named;
        }
        *call = Call {
            result: ret,
            errno: if ret < 0 { out.errno } else { 0 },
            dur_us: out.dur_us,
            fd: -1,
            fd2: -1,
            b: -1,
            path: std::mem::take(&mut call.path),
            path2: std::mem::take(&mut call.path2),
            ..Call::default()
        };
        call.path.clear();
        call.path2.clear();
        self.build(tid, name, args, call)?;
        if call.errno == 0 {
            match call.kind() {
                Kind::Symlink => self.links.made(&self.abs, &call.path2),
                Kind::Unlink => self.links.removed(&self.abs),
                _ => {}
            }
        }
        Ok(true)
    }

    /// A chdir or fchdir that succeeded: the thread's working directory is the directory
    /// itself, a symlink to it followed.
    fn changed_dir(&mut self, tid: u32, args: &[Arg]) {
        let dir = match args.first() {
            Some(Arg::Str(p)) => {
                self.absolute(tid, None, p);
                Some(self.abs.clone())
            }
            Some(a) => a.path().map(<[u8]>::to_vec),
            None => None,
        };
        if let Some(dir) = dir {
            let mut resolved = Vec::with_capacity(dir.len());
            self.links.resolve(&dir, true, &mut resolved);
            self.cwd.insert(self.fs(tid), resolved);
        }
    }

    /// A new thread or process: it starts where its parent is, with its parent's
    /// descriptors (the same table with CLONE_FILES, a copy without), after its stops; a
    /// thread (CLONE_THREAD) is of its parent's process, any other task a process of its own.
    fn forked(&mut self, parent: u32, child: u32, flags: i64) {
        const CLONE_FS: i64 = 0x200;
        const CLONE_FILES: i64 = 0x400;
        const CLONE_THREAD: i64 = 0x10000;
        let process = match flags & CLONE_THREAD {
            0 => child,
            _ => self.process_of(parent),
        };
        self.process.insert(child, process);
        if flags & CLONE_FS != 0 {
            self.fs_of.insert(child, self.fs(parent));
        } else {
            let cwd = self.cwd_of(parent).to_vec();
            self.cwd.insert(child, cwd);
        }
        let stops = self.stops.get(&parent).copied().unwrap_or(0);
        self.stops.insert(child, stops);
        let table = self.table(parent);
        if flags & CLONE_FILES != 0 {
            self.table_of.insert(child, table);
        } else {
            let new = self.copy_table(table);
            self.table_of.insert(child, new);
        }
    }

    /// A new table, a copy of `table` with its close-on-exec marks.
    fn copy_table(&mut self, table: u32) -> u32 {
        let copy = self.tables.get(&table).cloned().unwrap_or_default();
        let new = self.tables.len() as u32 + 1;
        self.tables.insert(new, copy);
        if let Some(marks) = self.cloexec.get(&table).cloned() {
            self.cloexec.insert(new, marks);
        }
        new
    }

    fn table(&mut self, tid: u32) -> u32 {
        let next = self.tables.len() as u32 + 1;
        let table = *self.table_of.entry(tid).or_insert(next);
        self.tables.entry(table).or_default();
        table
    }

    /// What the call tells of the thread's descriptors: each argument's decoded path, a
    /// new descriptor's, a closed one gone.
    fn learn(&mut self, tid: u32, name: &str, args: &[Arg], out: &Outcome) {
        // The bpf tracer's calls decode nothing: the parser follows them (kernel.rs).
        if self.follows_fds {
            return;
        }
        let table = self.table(tid);
        let fds = self.tables.entry(table).or_default();
        for arg in args {
            if let Arg::Num(fd, Some(d)) = arg
                && *fd >= 0
                && fds.get(&(*fd as i32)) != Some(&d.path)
            {
                fds.insert(*fd as i32, d.path.clone());
            }
        }
        if let (Some(d), true) = (&out.decoded, out.value >= 0) {
            fds.insert(out.value as i32, d.path.clone());
        }
        if name == "close"
            && out.value == 0
            && let Some(Arg::Num(fd, _)) = args.first()
        {
            fds.remove(&(*fd as i32));
        }
    }

    /// The path of descriptor `fd` in `tid`'s table.
    fn fd_path(&self, tid: u32, fd: i32) -> Option<&[u8]> {
        let table = self.table_of.get(&tid)?;
        self.tables.get(table)?.get(&fd).map(Vec::as_slice)
    }

    fn cwd_of(&self, tid: u32) -> &[u8] {
        self.cwd.get(&self.fs(tid)).unwrap_or(&self.start_cwd)
    }

    /// The task whose working directory `tid` has.
    fn fs(&self, tid: u32) -> u32 {
        self.fs_of.get(&tid).copied().unwrap_or(tid)
    }

    /// Makes `self.abs` the normalized absolute form of `path`, relative to `dir` (or the
    /// thread's working directory): lexically, but for the symlinks the parser knows of
    /// before its last component.
    fn absolute(&mut self, tid: u32, dir: Option<&[u8]>, path: &[u8]) {
        let mut joined = std::mem::take(&mut self.joined);
        joined.clear();
        if path.first() != Some(&b'/') {
            joined.extend_from_slice(dir.unwrap_or_else(|| self.cwd_of(tid)));
            joined.push(b'/');
        }
        joined.extend_from_slice(path);
        self.links.resolve(&joined, false, &mut self.abs);
        self.joined = joined;
    }

    /// `self.abs` relative to the root (`.` for the root), or `None` when outside it.
    fn relative(&self) -> Option<Vec<u8>> {
        self.relative_of(&self.abs)
    }

    /// Absolute path `abs` relative to the root (`.` for the root), `None` when outside it.
    fn relative_of(&self, abs: &[u8]) -> Option<Vec<u8>> {
        let rest = abs.strip_prefix(self.root.as_slice())?;
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

    /// Notes that `abs` (outside the root) must exist before the replay: a file of at
    /// least `size` bytes (`moved_to`: renamed into the root there).
    fn need_source(&mut self, abs: &[u8], size: u64, moved_to: Option<Vec<u8>>) {
        let s = self.sources.entry(abs.to_vec()).or_default();
        s.size = s.size.max(size);
        if moved_to.is_some() {
            s.moved_to = moved_to;
        }
    }

    /// Notes that the directory of `abs` (outside the root) must exist before the replay:
    /// something is renamed or linked out to it.
    fn need_dir(&mut self, abs: &[u8]) {
        let cut = abs.iter().rposition(|&c| c == b'/').unwrap_or(0);
        self.out_dirs.insert(abs[..cut].to_vec());
    }

    /// The files outside the root that the calls took into it, as initial entries below
    /// [`OUTSIDE`], each directory before what it holds: sizes and modes as they are now
    /// (or where they were renamed to), never less than the calls read.
    pub fn sources(&self) -> Vec<Entry> {
        use std::os::unix::fs::MetadataExt;
        let mut out: BTreeMap<Vec<u8>, Entry> = BTreeMap::new();
        let dirs_to = |path: &[u8], out: &mut BTreeMap<Vec<u8>, Entry>| {
            let mut prefix = OUTSIDE.to_vec();
            out.insert(prefix.clone(), Entry::Dir(prefix.clone(), 0o755));
            for part in path.split(|&c| c == b'/').filter(|p| !p.is_empty()) {
                prefix.push(b'/');
                prefix.extend_from_slice(part);
                out.entry(prefix.clone())
                    .or_insert_with(|| Entry::Dir(prefix.clone(), 0o755));
            }
        };
        for dir in &self.out_dirs {
            dirs_to(dir, &mut out);
        }
        let os = |p: &[u8]| Path::new(std::ffi::OsStr::from_bytes(p)).to_path_buf();
        for (path, source) in &self.sources {
            let cut = path.iter().rposition(|&c| c == b'/').unwrap_or(0);
            dirs_to(&path[..cut], &mut out);
            let now = std::fs::symlink_metadata(os(path))
                .or_else(|e| match &source.moved_to {
                    Some(to) => std::fs::symlink_metadata(os(to)),
                    None => Err(e),
                })
                .ok();
            let mut name = OUTSIDE.to_vec();
            name.extend_from_slice(path);
            let entry = match now {
                Some(m) if m.is_dir() => Entry::Dir(name.clone(), m.mode() & 0o7777),
                Some(m) => Entry::File(name.clone(), m.len().max(source.size), m.mode() & 0o7777),
                None => Entry::File(name.clone(), source.size, 0o644),
            };
            out.insert(name, entry);
        }
        out.into_values().collect()
    }
}

#[cfg(test)]
mod tests;

//! A trace read for replay: the calls of each traced thread in its order, their paths in one
//! buffer per thread, and the orderings between threads that a result depends on, as ARTC
//! finds them (Weiss et al., FAST'13): per path, a call that changes it waits for the other
//! threads' earlier calls on it, and a call that reads it waits for the last change.

use std::collections::HashMap;
use std::path::Path;

use super::trace::{Call, Kind, Program, TraceReader};

/// `O_CREAT | O_TRUNC`: an open that changes its path.
const CHANGING_OPEN: u64 = 0o100 | 0o1000;

/// One call as a replay thread makes it.
#[derive(Debug, Clone)]
pub(crate) struct Op {
    pub kind: Kind,
    pub errno: i32,
    pub fd: i32,
    pub fd2: i32,
    pub a: u64,
    pub b: i64,
    pub path: (u32, u32),
    pub path2: (u32, u32),
    /// When it started on the program's own clock, in µs from the first call (think mode).
    pub at_us: u64,
    /// The trace's flags ([`super::trace::BY_FD_NAME`]).
    pub flags: u32,
    /// The range of the thread's `deps` this call waits for.
    pub deps: (u32, u32),
}

/// "Wait until thread `thread` has done its call `index`."
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dep {
    pub thread: u32,
    pub index: u32,
}

/// One traced thread's calls.
#[derive(Debug, Default)]
pub(crate) struct ThreadCalls {
    pub ops: Vec<Op>,
    pub deps: Vec<Dep>,
    pub paths: Vec<u8>,
    /// The longest read or write, for the thread's buffer.
    pub max_len: u64,
}

impl ThreadCalls {
    pub(super) fn path(&self, span: (u32, u32)) -> &[u8] {
        &self.paths[span.0 as usize..span.1 as usize]
    }

    /// The value a setxattr set, where the trace recorded it (a POSIX ACL's): right after
    /// its name, A bytes.
    pub(super) fn value(&self, op: &Op) -> Option<&[u8]> {
        let start = op.path2.1 as usize;
        (op.flags & VALUE_AFTER_NAME != 0).then(|| &self.paths[start..start + op.a as usize])
    }
}

/// An op's flag of the replay's own (never a trace's): its value follows its name.
const VALUE_AFTER_NAME: u32 = 1 << 31;

/// Who last changed a path, and the first thread to read it since (its latest read).
#[derive(Default)]
struct PathUse {
    writer: Option<Dep>,
    reader: Option<Dep>,
}

/// What each path's calls so far mean for the next: a few bytes a path, its key a hash
/// (see [`path_key`]). A path read by several threads since its last change — rare — keeps
/// the other threads' latest reads apart.
#[derive(Default)]
struct Resources {
    uses: HashMap<u64, PathUse>,
    more_readers: HashMap<u64, Vec<Dep>>,
}

impl Resources {
    /// The other threads' calls that `call` (call `me`) waits for, one per thread (its
    /// latest), into `wanted`. Its resources: the path, its parent (read), the second path
    /// of a rename or link.
    fn waits(&mut self, call: &Call, me: Dep, wanted: &mut Vec<Dep>) {
        let kind = call.kind();
        wanted.clear();
        let changes = kind.modifies() || (kind == Kind::Open && call.a & CHANGING_OPEN != 0);
        self.touch(&call.path, me, changes, wanted);
        if let Some(i) = call.path.iter().rposition(|&c| c == b'/') {
            self.touch(&call.path[..i], me, false, wanted);
        }
        if matches!(
            kind,
            Kind::Rename | Kind::Link | Kind::Copy | Kind::Sendfile
        ) {
            self.touch(&call.path2, me, true, wanted);
        }
        wanted.sort_by_key(|d| (d.thread, std::cmp::Reverse(d.index)));
        wanted.dedup_by_key(|d| d.thread);
    }

    /// Call `me` uses `path` (changes it when `write`): the other threads' calls it must
    /// wait for go into `wanted`.
    fn touch(&mut self, path: &[u8], me: Dep, write: bool, wanted: &mut Vec<Dep>) {
        let key = path_key(path);
        let u = self.uses.entry(key).or_default();
        let other = |d: &Dep| d.thread != me.thread;
        wanted.extend(u.writer.filter(other));
        if write {
            wanted.extend(u.reader.take().filter(other));
            if let Some(more) = self.more_readers.remove(&key) {
                wanted.extend(more.into_iter().filter(other));
            }
            u.writer = Some(me);
            return;
        }
        match &mut u.reader {
            Some(r) if r.thread != me.thread => {
                let more = self.more_readers.entry(key).or_default();
                match more.iter_mut().find(|r| r.thread == me.thread) {
                    Some(r) => *r = me,
                    None => more.push(me),
                }
            }
            reader => *reader = Some(me),
        }
    }
}

/// A trace's calls, ready to replay (its initial state and the tree the program left are
/// read again as streams, never held).
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub threads: Vec<ThreadCalls>,
    /// Calls of each replayed kind the capture recorded.
    pub captured: [u64; Kind::ALL.len()],
    /// Calls the capture counted but did not record (outside the root, pipes...).
    pub dropped: u64,
    /// The same by reason: how many, one of them.
    pub skipped: Vec<(String, u64, Vec<u8>)>,
    /// Entries of the tree the program left (none in version 1 traces).
    pub left_entries: u64,
    pub program: Option<Program>,
    /// The traced processes, each its traced threads (their places in `threads`), in the
    /// order they first made a call; one holding every thread where the trace records no
    /// processes (before version 3).
    pub processes: Vec<Vec<u32>>,
    /// The trace's format version.
    pub version: u32,
    /// Whether some directory of the replay may let other users move names in it: one the
    /// trace makes or changes to such a mode, or one of the initial state's (set after it
    /// is made).
    pub others_may_move: bool,
}

impl Loaded {
    pub(super) fn read(path: Option<&Path>) -> anyhow::Result<Loaded> {
        let mut reader = TraceReader::open(path)?;
        let mut loaded = Loaded {
            program: reader.program.clone(),
            ..Loaded::default()
        };
        let mut index: HashMap<u32, usize> = HashMap::new();
        let mut tids = Vec::new();
        let mut resources = Resources::default();
        let mut call = Call::default();
        let mut wanted: Vec<Dep> = Vec::new();
        let umask = reader.program.as_ref().map_or(0, |p| p.umask);
        while reader.call(&mut call)? {
            let kind = call.kind();
            loaded.captured[kind as usize] += 1;
            // A chmod's file may be a directory; a mkdir's mode is cut by the umask.
            loaded.others_may_move |= match kind {
                Kind::Mkdir => open_to_others(call.a as u32 & !umask),
                Kind::Chmod => open_to_others(call.a as u32),
                _ => false,
            };
            let t = *index.entry(call.tid).or_insert_with(|| {
                loaded.threads.push(ThreadCalls::default());
                tids.push(call.tid);
                loaded.threads.len() - 1
            });
            let me = Dep {
                thread: t as u32,
                index: loaded.threads[t].ops.len() as u32,
            };
            resources.waits(&call, me, &mut wanted);
            let th = &mut loaded.threads[t];
            let dep_start = th.deps.len() as u32;
            th.deps.extend_from_slice(&wanted);
            let span = |p: &[u8], paths: &mut Vec<u8>| {
                let start = paths.len() as u32;
                paths.extend_from_slice(p);
                (start, paths.len() as u32)
            };
            let path = span(&call.path, &mut th.paths);
            let path2 = span(&call.path2, &mut th.paths);
            // The reader gave a value only of A bytes, to a setxattr.
            th.paths.extend_from_slice(&call.value);
            let valued = if call.value.is_empty() {
                0
            } else {
                VALUE_AFTER_NAME
            };
            if kind.uses_buffer() {
                th.max_len = th.max_len.max(call.a);
            }
            th.ops.push(Op {
                kind,
                errno: call.errno,
                fd: call.fd,
                fd2: call.fd2,
                a: call.a,
                b: call.b,
                path,
                path2,
                at_us: call.at_us,
                flags: (call.flags & !VALUE_AFTER_NAME) | valued,
                deps: (dep_start, th.deps.len() as u32),
            });
        }
        loaded.dropped = reader.totals.map_or(0, |t| t.1);
        loaded.skipped = std::mem::take(&mut reader.skipped);
        loaded.left_entries = reader.left_entries;
        loaded.version = reader.version;
        let mut process_index: HashMap<u32, usize> = HashMap::new();
        for (t, tid) in tids.iter().enumerate() {
            let p = *(process_index.entry(reader.process_of(*tid))).or_insert_with(|| {
                loaded.processes.push(Vec::new());
                loaded.processes.len() - 1
            });
            loaded.processes[p].push(t as u32);
        }
        Ok(loaded)
    }

    /// Calls that a replay makes.
    pub(super) fn replayed_calls(&self) -> u64 {
        self.threads.iter().map(|t| t.ops.len() as u64).sum()
    }
}

/// Whether a directory of `mode` lets users other than its owner rename the names in it:
/// writable by its group or by all, without the sticky bit.
pub(super) fn open_to_others(mode: u32) -> bool {
    mode & 0o022 != 0 && mode & 0o1000 == 0
}

/// A path's key among the resources: a 64-bit hash, not the path, so that the per-path
/// state takes the same memory whatever the paths' lengths. Two paths of one key (about one
/// chance in 2^64 a pair) are only ordered as if they were one.
pub(super) fn path_key(path: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(path)
}

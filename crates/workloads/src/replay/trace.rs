//! fsbench's trace format, version 5: zstd-compressed text, one record a line, fields
//! separated by tabs, paths relative to the captured root with `%XX` escapes for bytes that
//! are not printable ASCII (and `%`, tab, space). It is read and written as a stream: a trace
//! of any length takes a few buffers of memory. Versions 1 to 4 (without the fields marked
//! `v2` to `v5`) are still read.
//!
//! ```text
//! fsbench-trace 5
//! root  /abs/path/of/the/root           (where it was captured, for --show)
//! program WALL-US OWN-US CALLS-US STRACE-NS UMASK TRACED   (v2: the program's times)
//! d PATH MODE | f PATH SIZE MODE | l PATH TARGET | h PATH FIRST-PATH  (the initial state)
//! x PATH NAME SIZE [VALUE]              (v4: an attribute of the entry before, by name)
//! calls
//! TID START-US DUR-US KIND RESULT ERRNO FD FD2 A B PATH PATH2 AT-US FLAGS [VALUE]
//!                                       (one per call; v5: a POSIX ACL's setxattr's value)
//! skipped REASON COUNT EXAMPLE          (v2: calls not recorded, by reason)
//! task TID PID                          (v3: each traced thread's process)
//! final d PATH MODE | f PATH SIZE MODE NLINK | l PATH TARGET   (v2: the tree left)
//! final x PATH NAME SIZE                (v4: an attribute of the entry before)
//! end CALLS DROPPED                     (a trace without it is damaged)
//! ```

use std::io::{BufRead, Write};
use std::path::Path;

mod kind;
mod read;

pub use kind::Kind;
pub(crate) use read::TraceReader;

pub(crate) const MAGIC: &str = "fsbench-trace";
/// The version written; versions from 1 on are read.
pub(crate) const VERSION: u32 = 5;
/// The first version that records each traced thread's process.
pub(crate) const PROCESSES_SINCE: u32 = 3;
/// The first version that records the entries' extended attributes (an older trace's tree
/// is compared without them).
pub(crate) const XATTRS_SINCE: u32 = 4;
/// The version from which a setxattr call of a POSIX ACL carries the value it set.
pub(crate) const CALL_VALUES_SINCE: u32 = 5;
/// The longest attribute name the kernel takes (`XATTR_NAME_MAX`).
pub const XATTR_NAME_MAX: usize = 255;
/// The largest attribute value the kernel takes (`XATTR_SIZE_MAX`).
pub const XATTR_SIZE_MAX: u64 = 64 << 10;
/// The most bytes of names (each with its NUL) one file's list of attributes holds
/// (`XATTR_LIST_MAX`): what a trace may list for one entry, so that an entry's attributes
/// are held in bounded memory whatever the trace.
pub const XATTR_LIST_MAX: usize = 64 << 10;
/// The attributes whose value the kernel reads (POSIX ACLs: user and group ids and
/// permissions, nothing secret), recorded with their value: a pattern would be refused.
pub const VALUED_XATTRS: [&[u8]; 2] = [b"system.posix_acl_access", b"system.posix_acl_default"];
/// The longest value recorded (16 KiB in hex fits a line beside a path of PATH_MAX): an ACL
/// of 2,000 entries. A longer one is listed without it and not made again.
pub const XATTR_VALUE_MAX: usize = 16 << 10;
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// A call's flag: made on descriptor FD's file by its `/proc/self/fd/FD` name (a path of
/// that form, or `AT_EMPTY_PATH`), PATH being what that descriptor was opened on.
pub const BY_FD_NAME: u32 = 1;
/// Where the files a program took from outside the root (the source of a copy, a link, a
/// rename into the root) are made, below the replay's directory, under their absolute path.
pub const OUTSIDE: &[u8] = b".fsbench-outside";
/// The longest line read: a call's two paths of PATH_MAX bytes, every byte escaped, and its
/// numbers fit three times over. A longer one is damage, not a call.
pub const LINE_MAX: usize = 64 << 10;
/// The most calls a trace may hold: a replay holds them in memory (about 100 bytes a call,
/// with its paths), so this bounds its memory whatever the trace. The entries of its initial
/// state and of the tree the program left are read as a stream, any number of them.
pub const RECORDS_MAX: u64 = 1 << 19;
/// The most bytes of the calls' paths a trace may hold, for the same reason.
pub const PATH_BYTES_MAX: u64 = 32 << 20;
/// The largest zstd window a trace may need (8 MiB; `fsbench capture` writes 2 MiB ones):
/// the decoder allocates the window a frame asks for.
const WINDOW_LOG_MAX: u32 = 23;
/// The replay workload's `demo` preset: `sh -c` making, copying, renaming and removing small
/// files, captured by `fsbench capture` (see the README).
const DEMO: &[u8] = include_bytes!("demo.trace");

/// One entry of the root's initial state; directories and files with their mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir(Vec<u8>, u32),
    File(Vec<u8>, u64, u32),
    Symlink(Vec<u8>, Vec<u8>),
    /// A further name of a file listed before (the first path).
    HardLink(Vec<u8>, Vec<u8>),
}

impl Entry {
    pub fn path(&self) -> &[u8] {
        match self {
            Entry::Dir(p, _)
            | Entry::File(p, ..)
            | Entry::Symlink(p, _)
            | Entry::HardLink(p, _) => p,
        }
    }
}

/// One extended attribute of an entry: its name, its value's length and, for
/// [`VALUED_XATTRS`] in the initial state, its value.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Xattr {
    pub name: Vec<u8>,
    pub size: u64,
    pub value: Option<Vec<u8>>,
}

impl Xattr {
    /// Whether the attribute is recorded with its value (see [`VALUED_XATTRS`]).
    pub fn valued(name: &[u8]) -> bool {
        VALUED_XATTRS.contains(&name)
    }
}

/// One entry of the tree a program left: what a replay's tree is compared with.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Left {
    pub path: Vec<u8>,
    /// `d`, `f` or `l`.
    pub kind: u8,
    /// A file's size, a symlink's target's length; 0 for a directory.
    pub size: u64,
    /// The permission bits (with setuid, setgid, sticky).
    pub mode: u32,
    /// A file's link count; 1 for the others (a directory's differs between filesystems).
    pub nlink: u64,
    /// A symlink's target.
    pub target: Vec<u8>,
    /// Its extended attributes, by name (their values left out).
    pub xattrs: Vec<Xattr>,
}

/// What capture measured of the program as a whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Program {
    /// Its wall time under capture.
    pub wall_us: u64,
    /// Its wall time on its own: under capture less strace's cost (estimated).
    pub own_us: u64,
    /// The time its recorded calls took (their durations under strace, added up).
    pub calls_us: u64,
    /// What strace added to each call, calibrated at capture.
    pub strace_ns: u64,
    pub umask: u32,
    /// Every call strace stopped (or the bpf tracer recorded), recorded or not.
    pub traced: u64,
    /// What recorded the calls.
    pub tracer: Tracer,
}

/// What recorded a trace's calls (a trace that does not say: strace).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Tracer {
    #[default]
    Strace,
    /// eBPF: the calls recorded in the kernel, the program never stopped.
    Bpf,
}

impl Tracer {
    pub fn name(self) -> &'static str {
        match self {
            Tracer::Strace => "strace",
            Tracer::Bpf => "bpf",
        }
    }

    pub fn named(name: &[u8]) -> Option<Tracer> {
        [Tracer::Strace, Tracer::Bpf]
            .into_iter()
            .find(|t| t.name().as_bytes() == name)
    }
}

/// One recorded call; which fields mean what depends on `kind` (see the README).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Call {
    pub tid: u32,
    pub start_us: u64,
    pub dur_us: u64,
    pub kind: Option<Kind>,
    /// The call's return value (a descriptor for open and dup, a length for reads).
    pub result: i64,
    /// The errno it failed with; 0 when it succeeded.
    pub errno: i32,
    /// The descriptor it works on, -1 for a call by path.
    pub fd: i32,
    /// The second descriptor (copy's output, dup's new one); -1 when none.
    pub fd2: i32,
    /// Flags, a length, a mode, `whence`: see the kind.
    pub a: u64,
    /// An offset (-1: the descriptor's), a mode.
    pub b: i64,
    /// Relative to the root; `.` is the root; what `fd` was opened on for calls by
    /// descriptor.
    pub path: Vec<u8>,
    /// The second path (rename's and link's new name, a symlink's target text).
    pub path2: Vec<u8>,
    /// The start on the program's own clock: START-US less what strace added before it.
    pub at_us: u64,
    /// [`BY_FD_NAME`].
    pub flags: u32,
    /// The value a setxattr of a POSIX ACL set ([`Xattr::valued`]), as the kernel read it;
    /// empty for every other call (a replay sets its pattern there).
    pub value: Vec<u8>,
}

impl Call {
    pub fn kind(&self) -> Kind {
        self.kind.expect("a call read from a trace has a kind")
    }
}

/// Writes a trace: the header and state first, then calls, then [`TraceWriter::finish`].
pub struct TraceWriter<W: Write> {
    out: zstd::Encoder<'static, W>,
    line: Vec<u8>,
    in_calls: bool,
    pub calls: u64,
}

impl<W: Write> TraceWriter<W> {
    pub fn new(out: W, root: &Path, program: &Program) -> std::io::Result<TraceWriter<W>> {
        let mut out = zstd::Encoder::new(out, 3)?;
        out.include_checksum(true)?;
        let mut w = TraceWriter {
            out,
            line: Vec::with_capacity(4096),
            in_calls: false,
            calls: 0,
        };
        writeln!(w.out, "{MAGIC} {VERSION}")?;
        w.line.extend_from_slice(b"root\t");
        escape(root.as_os_str().as_encoded_bytes(), &mut w.line);
        w.flush_line()?;
        let p = program;
        writeln!(
            w.out,
            "program\t{}\t{}\t{}\t{}\t{:o}\t{}\t{}",
            p.wall_us,
            p.own_us,
            p.calls_us,
            p.strace_ns,
            p.umask,
            p.traced,
            p.tracer.name()
        )?;
        Ok(w)
    }

    fn flush_line(&mut self) -> std::io::Result<()> {
        self.line.push(b'\n');
        self.out.write_all(&self.line)?;
        self.line.clear();
        Ok(())
    }

    pub fn entry(&mut self, e: &Entry) -> std::io::Result<()> {
        entry_line(e, &mut self.line)?;
        self.flush_line()
    }

    /// An attribute of the entry just written (`path`): its name, size, and value where
    /// it is one the kernel reads and short enough to record.
    pub fn xattr(&mut self, path: &[u8], x: &Xattr) -> std::io::Result<()> {
        xattr_line(b"x", path, x, true, &mut self.line)?;
        self.flush_line()
    }

    /// Copies initial entries and their attributes that [`entry_line`] and [`xattr_line`]
    /// wrote (a capture's initial state, listed before the program ran, when the header's
    /// figures were not yet known).
    pub fn copy_initial(&mut self, input: &mut impl BufRead) -> std::io::Result<()> {
        debug_assert!(!self.in_calls, "the initial state comes before the calls");
        std::io::copy(input, &mut self.out)?;
        Ok(())
    }

    fn begin_calls(&mut self) -> std::io::Result<()> {
        if !self.in_calls {
            self.out.write_all(b"calls\n")?;
            self.in_calls = true;
        }
        Ok(())
    }

    pub fn call(&mut self, c: &Call) -> std::io::Result<()> {
        self.begin_calls()?;
        call_line(c, &mut self.line)?;
        self.calls += 1;
        self.flush_line()
    }

    /// Copies `calls` lines that [`call_line`] wrote (a capture's calls, parsed before its
    /// initial state was complete).
    pub fn copy_calls(&mut self, input: &mut impl BufRead, calls: u64) -> std::io::Result<()> {
        self.begin_calls()?;
        std::io::copy(input, &mut self.out)?;
        self.calls += calls;
        Ok(())
    }

    /// `count` calls not recorded for `reason`, one of them described.
    pub fn skipped(&mut self, reason: &str, count: u64, example: &[u8]) -> std::io::Result<()> {
        self.begin_calls()?;
        write!(self.line, "skipped\t{reason}\t{count}\t")?;
        escape(example, &mut self.line);
        self.flush_line()
    }

    /// Traced thread `tid` belongs to process `process` (its thread group's leader).
    pub fn task(&mut self, tid: u32, process: u32) -> std::io::Result<()> {
        self.begin_calls()?;
        writeln!(self.out, "task\t{tid}\t{process}")
    }

    /// One entry of the tree the program left.
    pub fn left(&mut self, e: &Left) -> std::io::Result<()> {
        self.begin_calls()?;
        write!(self.line, "final\t{}\t", e.kind as char)?;
        escape(&e.path, &mut self.line);
        match e.kind {
            b'd' => write!(self.line, "\t{:o}", e.mode)?,
            b'l' => {
                self.line.push(b'\t');
                escape(&e.target, &mut self.line);
            }
            _ => write!(self.line, "\t{}\t{:o}\t{}", e.size, e.mode, e.nlink)?,
        }
        self.flush_line()?;
        for x in &e.xattrs {
            xattr_line(b"final\tx", &e.path, x, false, &mut self.line)?;
            self.flush_line()?;
        }
        Ok(())
    }

    /// Ends the trace with its totals (a reader refuses a trace without them).
    pub fn finish(mut self, dropped: u64) -> std::io::Result<W> {
        self.begin_calls()?;
        writeln!(self.out, "end\t{}\t{dropped}", self.calls)?;
        self.out.finish()
    }
}

/// A call's line, without its newline, appended to `line`.
pub fn call_line(c: &Call, line: &mut Vec<u8>) -> std::io::Result<()> {
    write!(
        line,
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t",
        c.tid,
        c.start_us,
        c.dur_us,
        c.kind().name(),
        c.result,
        c.errno,
        c.fd,
        c.fd2,
        c.a,
        c.b
    )?;
    escape(&c.path, line);
    line.push(b'\t');
    escape(&c.path2, line);
    write!(line, "\t{}\t{}", c.at_us, c.flags)?;
    if !c.value.is_empty() {
        line.push(b'\t');
        write_hex(&c.value, line)?;
    }
    Ok(())
}

/// Bytes as pairs of hex digits.
fn write_hex(bytes: &[u8], line: &mut Vec<u8>) -> std::io::Result<()> {
    for b in bytes {
        write!(line, "{b:02x}")?;
    }
    Ok(())
}

/// An initial entry's line, without its newline, appended to `line`.
pub(crate) fn entry_line(e: &Entry, line: &mut Vec<u8>) -> std::io::Result<()> {
    let (tag, path, rest): (&[u8], &[u8], Option<&[u8]>) = match e {
        Entry::Dir(p, _) => (b"d", p, None),
        Entry::File(p, ..) => (b"f", p, None),
        Entry::Symlink(p, t) => (b"l", p, Some(t)),
        Entry::HardLink(p, t) => (b"h", p, Some(t)),
    };
    line.extend_from_slice(tag);
    line.push(b'\t');
    escape(path, line);
    match e {
        Entry::File(_, size, mode) => write!(line, "\t{size}\t{mode:o}")?,
        Entry::Dir(_, mode) => write!(line, "\t{mode:o}")?,
        _ => {}
    }
    if let Some(rest) = rest {
        line.push(b'\t');
        escape(rest, line);
    }
    Ok(())
}

/// An attribute's line (`tag` `x` for the initial state's, `final\tx` for the tree left's),
/// without its newline, appended to `line`: the entry's `path`, the attribute's name, size
/// and, `with_value`, its value where it has one short enough to record.
pub(crate) fn xattr_line(
    tag: &[u8],
    path: &[u8],
    x: &Xattr,
    with_value: bool,
    line: &mut Vec<u8>,
) -> std::io::Result<()> {
    line.extend_from_slice(tag);
    line.push(b'\t');
    escape(path, line);
    line.push(b'\t');
    escape(&x.name, line);
    write!(line, "\t{}", x.size)?;
    let value = x
        .value
        .as_ref()
        .filter(|v| with_value && v.len() <= XATTR_VALUE_MAX);
    if let Some(value) = value {
        line.push(b'\t');
        write_hex(value, line)?;
    }
    Ok(())
}

/// `%XX` for bytes outside printable ASCII, `%`, tab and space; `-`, alone, for empty, and
/// `%2D` for a name that is `-` (a file `./-`, which `-` would read back as none).
pub(crate) fn escape(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    match bytes {
        b"" => out.push(b'-'),
        b"-" => out.extend_from_slice(b"%2D"),
        _ => {
            for &b in bytes {
                if b.is_ascii_graphic() && b != b'%' {
                    out.push(b);
                } else {
                    out.extend_from_slice(&[
                        b'%',
                        HEX[usize::from(b >> 4)],
                        HEX[usize::from(b & 15)],
                    ]);
                }
            }
        }
    }
}

fn unescape(field: &[u8], out: &mut Vec<u8>) -> Option<()> {
    out.clear();
    if field == b"-" {
        return Some(());
    }
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'%' {
            let hex = std::str::from_utf8(field.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(field[i]);
            i += 1;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests;

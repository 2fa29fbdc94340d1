//! fsbench's trace format, version 1: zstd-compressed text, one record a line, fields
//! separated by tabs, paths relative to the captured root with `%XX` escapes for bytes that
//! are not printable ASCII (and `%`, tab, space). It is read and written as a stream: a trace
//! of any length takes a few buffers of memory.
//!
//! ```text
//! fsbench-trace 1
//! root  /abs/path/of/the/root           (where it was captured, for --show)
//! d PATH | f PATH SIZE | l PATH TARGET | h PATH FIRST-PATH     (the root's initial state)
//! calls
//! TID START-US DUR-US KIND RESULT ERRNO FD FD2 A B PATH PATH2   (one per call)
//! end CALLS DROPPED                     (a trace without it is damaged)
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use fsbench_measure::error::invalid;

pub(crate) const MAGIC: &str = "fsbench-trace";
pub(crate) const VERSION: u32 = 1;
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// The replay workload's `demo` preset: `sh -c` making, copying, renaming and removing small
/// files, captured by `fsbench capture` (see the README).
const DEMO: &[u8] = include_bytes!("demo.trace");

/// The replayed kinds of call; each a family of system calls (`read` is read, pread64,
/// readv, preadv and preadv2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Kind {
    Open,
    Close,
    Read,
    Write,
    Copy,
    Sendfile,
    Lseek,
    Fsync,
    Fdatasync,
    SyncRange,
    Truncate,
    Fallocate,
    Mkdir,
    Rmdir,
    Unlink,
    Rename,
    Link,
    Symlink,
    Readlink,
    Stat,
    Getdents,
    Chmod,
    Chown,
    Utimens,
    Dup,
    /// Recorded, never replayed: a mapping's accesses are page faults, not calls.
    Mmap,
}

impl Kind {
    pub const ALL: [Kind; 26] = [
        Kind::Open,
        Kind::Close,
        Kind::Read,
        Kind::Write,
        Kind::Copy,
        Kind::Sendfile,
        Kind::Lseek,
        Kind::Fsync,
        Kind::Fdatasync,
        Kind::SyncRange,
        Kind::Truncate,
        Kind::Fallocate,
        Kind::Mkdir,
        Kind::Rmdir,
        Kind::Unlink,
        Kind::Rename,
        Kind::Link,
        Kind::Symlink,
        Kind::Readlink,
        Kind::Stat,
        Kind::Getdents,
        Kind::Chmod,
        Kind::Chown,
        Kind::Utimens,
        Kind::Dup,
        Kind::Mmap,
    ];

    pub fn name(self) -> &'static str {
        [
            "open",
            "close",
            "read",
            "write",
            "copy",
            "sendfile",
            "lseek",
            "fsync",
            "fdatasync",
            "sync-range",
            "truncate",
            "fallocate",
            "mkdir",
            "rmdir",
            "unlink",
            "rename",
            "link",
            "symlink",
            "readlink",
            "stat",
            "getdents",
            "chmod",
            "chown",
            "utimens",
            "dup",
            "mmap",
        ][self as usize]
    }

    fn named(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn replayed(self) -> bool {
        self != Kind::Mmap
    }

    /// Whether the call changes the names or the data of what it touches (for ordering
    /// calls of different threads on one path).
    pub(crate) fn modifies(self) -> bool {
        matches!(
            self,
            Kind::Write
                | Kind::Copy
                | Kind::Sendfile
                | Kind::Truncate
                | Kind::Fallocate
                | Kind::Mkdir
                | Kind::Rmdir
                | Kind::Unlink
                | Kind::Rename
                | Kind::Link
                | Kind::Symlink
                | Kind::Chmod
                | Kind::Chown
                | Kind::Utimens
        )
    }
}

/// One entry of the root's initial state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir(Vec<u8>),
    File(Vec<u8>, u64),
    Symlink(Vec<u8>, Vec<u8>),
    /// A further name of a file listed before (the first path).
    HardLink(Vec<u8>, Vec<u8>),
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
    pub fn new(out: W, root: &Path) -> std::io::Result<TraceWriter<W>> {
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
        Ok(w)
    }

    fn flush_line(&mut self) -> std::io::Result<()> {
        self.line.push(b'\n');
        self.out.write_all(&self.line)?;
        self.line.clear();
        Ok(())
    }

    pub fn entry(&mut self, e: &Entry) -> std::io::Result<()> {
        let (tag, path, rest): (&[u8], &[u8], Option<&[u8]>) = match e {
            Entry::Dir(p) => (b"d", p, None),
            Entry::File(p, _) => (b"f", p, None),
            Entry::Symlink(p, t) => (b"l", p, Some(t)),
            Entry::HardLink(p, t) => (b"h", p, Some(t)),
        };
        self.line.extend_from_slice(tag);
        self.line.push(b'\t');
        escape(path, &mut self.line);
        if let Entry::File(_, size) = e {
            write!(self.line, "\t{size}")?;
        }
        if let Some(rest) = rest {
            self.line.push(b'\t');
            escape(rest, &mut self.line);
        }
        self.flush_line()
    }

    pub fn call(&mut self, c: &Call) -> std::io::Result<()> {
        if !self.in_calls {
            self.out.write_all(b"calls\n")?;
            self.in_calls = true;
        }
        write!(
            self.line,
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
        escape(&c.path, &mut self.line);
        self.line.push(b'\t');
        escape(&c.path2, &mut self.line);
        self.calls += 1;
        self.flush_line()
    }

    /// Ends the trace with its totals (a reader refuses a trace without them).
    pub fn finish(mut self, dropped: u64) -> std::io::Result<W> {
        if !self.in_calls {
            self.out.write_all(b"calls\n")?;
        }
        writeln!(self.out, "end\t{}\t{dropped}", self.calls)?;
        self.out.finish()
    }
}

/// `%XX` for bytes outside printable ASCII, `%`, tab and space; `-`, alone, for empty.
fn escape(bytes: &[u8], out: &mut Vec<u8>) {
    if bytes.is_empty() {
        out.push(b'-');
    }
    for &b in bytes {
        if b.is_ascii_graphic() && b != b'%' {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
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

/// Reads a trace: [`TraceReader::open`] checks the header, then entries, then calls.
pub(crate) struct TraceReader {
    input: BufReader<Box<dyn Read + Send>>,
    path: PathBuf,
    line: Vec<u8>,
    line_no: u64,
    pub root: PathBuf,
    /// The totals of the last line, once the calls are read.
    pub totals: Option<(u64, u64)>,
    in_calls: bool,
}

impl TraceReader {
    /// The trace in file `path`, or the built-in demo for `None`.
    pub(crate) fn open(path: Option<&Path>) -> anyhow::Result<TraceReader> {
        let Some(path) = path else {
            let demo = Box::new(std::io::Cursor::new(DEMO));
            return TraceReader::read(demo, Path::new("the built-in demo trace"), true);
        };
        let file = std::fs::File::open(path)
            .map_err(|e| invalid(format!("trace {}: {e}", path.display())))?;
        // A zstd frame that does not decode is a damaged trace; anything else is no trace.
        let mut magic = [0u8; 4];
        let compressed = std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok_and(|()| magic == ZSTD_MAGIC);
        TraceReader::read(Box::new(file), path, compressed)
    }

    fn read(
        input: Box<dyn Read + Send>,
        path: &Path,
        compressed: bool,
    ) -> anyhow::Result<TraceReader> {
        let decoder = zstd::Decoder::new(input)
            .map_err(|e| invalid(format!("trace {}: {e}", path.display())))?;
        let mut r = TraceReader {
            input: BufReader::with_capacity(1 << 16, Box::new(decoder)),
            path: path.to_path_buf(),
            line: Vec::with_capacity(4096),
            line_no: 0,
            root: PathBuf::new(),
            totals: None,
            in_calls: false,
        };
        let not_trace = || {
            invalid(format!(
                "{}: not an fsbench trace (made by `fsbench capture`)",
                path.display()
            ))
        };
        match r.next_line() {
            Ok(true) => {}
            Err(e) if compressed => return Err(e),
            Ok(false) if compressed => return Err(r.damaged("empty")),
            _ => return Err(not_trace()),
        }
        let head = String::from_utf8_lossy(&r.line).into_owned();
        let version = head
            .strip_prefix(MAGIC)
            .and_then(|v| v.trim().parse::<u32>().ok())
            .ok_or_else(not_trace)?;
        if version != VERSION {
            return Err(invalid(format!(
                "{}: trace format version {version}; this fsbench reads version {VERSION} \
                 (capture it again with this fsbench)",
                path.display()
            )));
        }
        if !r.next_line()? || !r.line.starts_with(b"root\t") {
            return Err(r.damaged("no root line"));
        }
        let mut root = Vec::new();
        unescape(&r.line[5..], &mut root).ok_or_else(|| r.damaged("bad root"))?;
        r.root = PathBuf::from(std::ffi::OsString::from_vec(root));
        Ok(r)
    }

    fn damaged(&self, why: &str) -> anyhow::Error {
        invalid(format!(
            "{}: damaged trace at line {}: {why}",
            self.path.display(),
            self.line_no
        ))
    }

    /// The next line into `self.line`, without its newline; false at the end.
    fn next_line(&mut self) -> anyhow::Result<bool> {
        self.line.clear();
        let n = self
            .input
            .read_until(b'\n', &mut self.line)
            .map_err(|e| invalid(format!("{}: damaged trace: {e}", self.path.display())))?;
        self.line_no += 1;
        if n == 0 {
            return Ok(false);
        }
        if self.line.pop() != Some(b'\n') {
            return Err(self.damaged("cut short"));
        }
        Ok(true)
    }

    /// The next entry of the initial state, `None` after the last.
    pub(crate) fn entry(&mut self) -> anyhow::Result<Option<Entry>> {
        if self.in_calls {
            return Ok(None);
        }
        if !self.next_line()? {
            return Err(self.damaged("cut short in the initial state"));
        }
        if self.line == b"calls" {
            self.in_calls = true;
            return Ok(None);
        }
        let fields: Vec<&[u8]> = self.line.split(|&b| b == b'\t').collect();
        let path = |i: usize| -> Option<Vec<u8>> {
            let mut p = Vec::new();
            unescape(fields.get(i)?, &mut p)?;
            (!p.is_empty()).then_some(p)
        };
        let entry = match (fields[0], fields.len()) {
            (b"d", 2) => path(1).map(Entry::Dir),
            (b"f", 3) => path(1)
                .zip(number(fields[2]))
                .map(|(p, s)| Entry::File(p, s)),
            (b"l", 3) => path(1).zip(path(2)).map(|(p, t)| Entry::Symlink(p, t)),
            (b"h", 3) => path(1).zip(path(2)).map(|(p, t)| Entry::HardLink(p, t)),
            _ => None,
        };
        entry
            .map(Some)
            .ok_or_else(|| self.damaged("not an entry of the initial state"))
    }

    /// Reads the next call into `call` (its buffers reused); false after the last, with
    /// [`TraceReader::totals`] set.
    pub(crate) fn call(&mut self, call: &mut Call) -> anyhow::Result<bool> {
        while !self.in_calls {
            self.entry()?;
        }
        if !self.next_line()? {
            return Err(self.damaged("cut short: no `end` line"));
        }
        let fields: Vec<&[u8]> = self.line.split(|&b| b == b'\t').collect();
        if fields[0] == b"end" && fields.len() == 3 {
            let totals = number(fields[1]).zip(number(fields[2]));
            self.totals = Some(totals.ok_or_else(|| self.damaged("bad `end` line"))?);
            return Ok(false);
        }
        let parsed = (|| {
            if fields.len() != 12 {
                return None;
            }
            call.tid = number(fields[0])?;
            call.start_us = number(fields[1])?;
            call.dur_us = number(fields[2])?;
            call.kind = Some(Kind::named(std::str::from_utf8(fields[3]).ok()?)?);
            call.result = number(fields[4])?;
            call.errno = number(fields[5])?;
            call.fd = number(fields[6])?;
            call.fd2 = number(fields[7])?;
            call.a = number(fields[8])?;
            call.b = number(fields[9])?;
            unescape(fields[10], &mut call.path)?;
            unescape(fields[11], &mut call.path2)
        })();
        parsed.ok_or_else(|| self.damaged("not a call"))?;
        Ok(true)
    }
}

fn number<T: std::str::FromStr>(field: &[u8]) -> Option<T> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_reads_back_as_written_and_a_cut_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t");
        let mut w =
            TraceWriter::new(std::fs::File::create(&file).unwrap(), Path::new("/r 1")).unwrap();
        let entries = [
            Entry::Dir(b"a".to_vec()),
            Entry::File(b"a/f %\tx".to_vec(), 12),
            Entry::Symlink(b"s".to_vec(), b"../../etc".to_vec()),
            Entry::HardLink(b"g".to_vec(), b"a/f %\tx".to_vec()),
        ];
        for e in &entries {
            w.entry(e).unwrap();
        }
        let call = Call {
            tid: 7,
            start_us: 5,
            dur_us: 2,
            kind: Some(Kind::Rename),
            result: -1,
            errno: libc::ENOENT,
            fd: -1,
            fd2: -1,
            a: 0,
            b: -1,
            path: b"a/\xff".to_vec(),
            path2: b"b".to_vec(),
        };
        w.call(&call).unwrap();
        w.finish(3).unwrap();
        let mut r = TraceReader::open(Some(&file)).unwrap();
        assert_eq!(r.root, Path::new("/r 1"));
        for e in &entries {
            assert_eq!(r.entry().unwrap().as_ref(), Some(e));
        }
        let mut back = Call::default();
        assert!(r.call(&mut back).unwrap());
        assert_eq!(back, call);
        assert!(!r.call(&mut back).unwrap());
        assert_eq!(r.totals, Some((1, 3)));

        // Cut in the middle of the compressed stream: a clear error, never a panic.
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() - 12]).unwrap();
        let outcome = TraceReader::open(Some(&file)).and_then(|mut r| {
            while r.call(&mut back)? {}
            Ok(())
        });
        assert!(format!("{:#}", outcome.unwrap_err()).contains("damaged"));
        std::fs::write(&file, b"fsbench-trace 1\n").unwrap();
        let e = TraceReader::open(Some(&file)).err().unwrap();
        assert!(e.to_string().contains("not an fsbench trace"), "{e}");
    }
}

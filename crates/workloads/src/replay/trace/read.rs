//! Reading a trace as a stream: the header, the initial state, the calls, then what
//! follows them (calls skipped by reason, the tree the program left) and the totals.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::{
    CALL_VALUES_SINCE, Call, DEMO, Entry, Kind, LINE_MAX, Left, MAGIC, PATH_BYTES_MAX,
    PROCESSES_SINCE, Program, RECORDS_MAX, Tracer, VERSION, WINDOW_LOG_MAX, XATTR_LIST_MAX,
    XATTR_NAME_MAX, XATTR_SIZE_MAX, XATTR_VALUE_MAX, XATTRS_SINCE, Xattr, ZSTD_MAGIC, unescape,
};
use fsbench_measure::error::invalid;
use fsbench_measure::units::shown;
use fsbench_model::units::{format_bytes, group_thousands};

/// Reads a trace: [`TraceReader::open`] checks the header, then entries, then calls.
pub(crate) struct TraceReader {
    input: BufReader<Box<dyn Read + Send>>,
    path: PathBuf,
    line: Vec<u8>,
    line_no: u64,
    /// Calls (and lines of calls not recorded) read, and the bytes of their paths: what a
    /// replay holds (see [`RECORDS_MAX`]).
    records: u64,
    path_bytes: u64,
    pub root: PathBuf,
    pub version: u32,
    /// Each traced thread's process, once the calls are read (version 3 on).
    tasks: HashMap<u32, u32>,
    /// What capture measured of the program (version 1 traces: nothing).
    pub program: Option<Program>,
    /// The totals of the last line, once the calls are read.
    pub totals: Option<(u64, u64)>,
    /// Calls not recorded, by reason (count, an example), once the calls are read.
    pub skipped: Vec<(String, u64, Vec<u8>)>,
    /// Entries of the tree the program left, counted once the calls are read (version 1
    /// traces: none); [`TraceReader::left`] reads them.
    pub left_entries: u64,
    /// Where a `final` line met among the calls is read, to be checked and counted.
    passed_left: Left,
    /// The attributes of the initial state's entry last read.
    xattrs: Vec<Xattr>,
    in_calls: bool,
    /// The last line read is the next one to look at.
    pending: bool,
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
            .and_then(|mut d| d.window_log_max(WINDOW_LOG_MAX).map(|()| d))
            .map_err(|e| invalid(format!("trace {}: {e}", path.display())))?;
        let mut r = TraceReader {
            input: BufReader::with_capacity(1 << 16, Box::new(decoder)),
            path: path.to_path_buf(),
            line: Vec::with_capacity(4096),
            line_no: 0,
            records: 0,
            path_bytes: 0,
            root: PathBuf::new(),
            version: 0,
            tasks: HashMap::new(),
            program: None,
            totals: None,
            skipped: Vec::new(),
            left_entries: 0,
            passed_left: Left::default(),
            xattrs: Vec::new(),
            in_calls: false,
            pending: false,
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
        if !(1..=VERSION).contains(&version) {
            return Err(invalid(format!(
                "{}: trace format version {version}; this fsbench reads versions 1 to \
                 {VERSION} (capture it again with this fsbench)",
                path.display()
            )));
        }
        r.version = version;
        if !r.next_line()? || !r.line.starts_with(b"root\t") {
            return Err(r.damaged("no root line"));
        }
        let mut root = Vec::new();
        unescape(&r.line[5..], &mut root).ok_or_else(|| r.damaged("bad root"))?;
        r.root = PathBuf::from(std::ffi::OsString::from_vec(root));
        if !r.next_line()? {
            return Err(r.damaged("cut short after the root"));
        }
        if r.line.starts_with(b"program\t") {
            r.program = Some(r.program_line()?);
        } else {
            r.pending = true;
        }
        Ok(r)
    }

    /// The `program` line read (a trace made before the tracer was recorded has no eighth
    /// field: strace's).
    fn program_line(&self) -> anyhow::Result<Program> {
        let mut fields = [&b"strace"[..]; 8];
        let n = split_fields(&self.line, &mut fields);
        let program = matches!(n, Some(7 | 8))
            .then(|| {
                Some(Program {
                    wall_us: number(fields[1])?,
                    own_us: number(fields[2])?,
                    calls_us: number(fields[3])?,
                    strace_ns: number(fields[4])?,
                    umask: octal(fields[5])?,
                    traced: number(fields[6])?,
                    tracer: Tracer::named(fields[7])?,
                })
            })
            .flatten();
        program.ok_or_else(|| self.damaged("bad `program` line"))
    }

    fn damaged(&self, why: &str) -> anyhow::Error {
        invalid(format!(
            "{}: damaged trace at line {}: {why}",
            self.path.display(),
            self.line_no
        ))
    }

    /// The next line into `self.line`, without its newline; false at the end. A line is
    /// read up to [`LINE_MAX`] bytes, never further.
    fn next_line(&mut self) -> anyhow::Result<bool> {
        if std::mem::take(&mut self.pending) {
            return Ok(true);
        }
        self.line.clear();
        let n = (&mut self.input)
            .take(LINE_MAX as u64 + 1)
            .read_until(b'\n', &mut self.line)
            .map_err(|e| invalid(format!("{}: damaged trace: {e}", self.path.display())))?;
        self.line_no += 1;
        if n == 0 {
            return Ok(false);
        }
        if self.line.last() != Some(&b'\n') {
            if self.line.len() > LINE_MAX {
                return Err(self.damaged(&format!(
                    "a line longer than {} bytes",
                    group_thousands(LINE_MAX as u64)
                )));
            }
            return Err(self.damaged("cut short"));
        }
        self.line.pop();
        Ok(true)
    }

    /// Counts one more call (or line of calls not recorded) with `path_bytes` bytes of
    /// paths: an error past the limits on what a replay holds. The entries of the initial
    /// state and of the tree left are not counted: a replay reads them as a stream.
    fn count(&mut self, path_bytes: usize) -> anyhow::Result<()> {
        self.records += 1;
        self.path_bytes = self.path_bytes.saturating_add(path_bytes as u64);
        if self.records > RECORDS_MAX || self.path_bytes > PATH_BYTES_MAX {
            return Err(invalid(format!(
                "{}: too large to replay at line {}: fsbench replays traces of up to {} \
                 calls and {} of their paths (it holds them in memory); capture a shorter \
                 run",
                self.path.display(),
                self.line_no,
                group_thousands(RECORDS_MAX),
                format_bytes(PATH_BYTES_MAX)
            )));
        }
        Ok(())
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
            self.xattrs.clear();
            return Ok(None);
        }
        let mut fields = [&[][..]; 4];
        let count = split_fields(&self.line, &mut fields);
        let path = |i: usize| -> Option<Vec<u8>> {
            let mut p = Vec::new();
            unescape(fields.get(i)?, &mut p)?;
            (!p.is_empty()).then_some(p)
        };
        // Version 1 has no modes: a directory's and a file's usual ones.
        let mode = |i: usize, usual: u32| match count {
            Some(n) if n > i => octal(fields[i]),
            _ => Some(usual),
        };
        if fields[0] == b"x" {
            return Err(self.damaged("an attribute (`x` line) before any entry"));
        }
        let entry = match (fields[0], count.unwrap_or(0)) {
            (b"d", 2 | 3) => path(1).zip(mode(2, 0o755)).map(|(p, m)| Entry::Dir(p, m)),
            (b"f", 3 | 4) => path(1)
                .zip(number(fields[2]))
                .zip(mode(3, 0o644))
                .map(|((p, s), m)| Entry::File(p, s, m)),
            (b"l", 3) => path(1).zip(path(2)).map(|(p, t)| Entry::Symlink(p, t)),
            (b"h", 3) => path(1).zip(path(2)).map(|(p, t)| Entry::HardLink(p, t)),
            _ => None,
        };
        let entry = entry.ok_or_else(|| self.damaged("not an entry of the initial state"))?;
        let mut xattrs = std::mem::take(&mut self.xattrs);
        let read = self.xattr_lines(b"x\t", entry.path(), &mut xattrs, true);
        self.xattrs = xattrs;
        read.map(|()| Some(entry))
    }

    /// The attributes of the entry [`TraceReader::entry`] returned last, by name.
    pub(crate) fn xattrs(&self) -> &[Xattr] {
        &self.xattrs
    }

    /// Whether the trace lists the entries' attributes (version 4 on).
    pub(crate) fn records_xattrs(&self) -> bool {
        self.version >= XATTRS_SINCE
    }

    /// The attribute lines (`TAG PATH NAME SIZE [VALUE]`) after the entry of `path`, into
    /// `into`; the first other line is left to be read next. What one entry may list is
    /// bounded as the kernel bounds a file's: names of at most 255 bytes, in order, once
    /// each, 64 KiB of them; values of at most 64 KiB, and only those of
    /// [`super::VALUED_XATTRS`] with their bytes.
    fn xattr_lines(
        &mut self,
        tag: &[u8],
        path: &[u8],
        into: &mut Vec<Xattr>,
        values: bool,
    ) -> anyhow::Result<()> {
        into.clear();
        let (mut listed, mut of) = (0, Vec::new());
        // At the end the caller finds the trace cut short.
        while self.next_line()? {
            let Some(rest) = self.line.strip_prefix(tag) else {
                self.pending = true;
                break;
            };
            let mut fields = [&[][..]; 4];
            let count = split_fields(rest, &mut fields).unwrap_or(0);
            let mut x = Xattr::default();
            let parsed = (count == 3 || (values && count == 4))
                .then(|| unescape(fields[0], &mut of).zip(unescape(fields[1], &mut x.name)))
                .flatten()
                .zip(number::<u64>(fields[2]));
            let Some((_, size)) = parsed else {
                return Err(self.damaged("bad attribute line"));
            };
            x.size = size;
            if of != path {
                return Err(self.damaged(&format!(
                    "an attribute of {}, which is not the entry before it",
                    shown(&of)
                )));
            }
            listed += x.name.len() + 1;
            let why = xattr_refused(&x, into.last(), listed);
            if let Some(why) = why {
                return Err(self.damaged(&why));
            }
            if count == 4 {
                x.value = hex(fields[3]).filter(|v| {
                    Xattr::valued(&x.name) && v.len() as u64 == x.size && v.len() <= XATTR_VALUE_MAX
                });
                if x.value.is_none() {
                    return Err(self.damaged("bad attribute value"));
                }
            }
            into.push(x);
        }
        Ok(())
    }

    /// Reads the next call into `call` (its buffers reused); false after the last, with
    /// [`TraceReader::totals`] set.
    pub(crate) fn call(&mut self, call: &mut Call) -> anyhow::Result<bool> {
        loop {
            match self.next_record()? {
                Record::End => return Ok(false),
                Record::Skipped => self.skipped_line()?,
                Record::Task => self.task_line()?,
                Record::Final => {
                    let mut left = std::mem::take(&mut self.passed_left);
                    let read = self.left_line(&mut left);
                    self.passed_left = left;
                    read?;
                    self.left_entries += 1;
                }
                Record::Call => break,
            }
        }
        let mut fields = [&[][..]; 15];
        let count = split_fields(&self.line, &mut fields);
        let valued = self.version >= CALL_VALUES_SINCE && count == Some(15);
        let parsed = (|| {
            if count != Some(12) && count != Some(14) && !valued {
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
            unescape(fields[11], &mut call.path2)?;
            // Version 1: the capture's clock is the program's, no flags.
            (call.at_us, call.flags) = if count >= Some(14) {
                (number(fields[12])?, number(fields[13])?)
            } else {
                (call.start_us, 0)
            };
            Some(())
        })();
        parsed.ok_or_else(|| self.damaged("not a call"))?;
        call.value.clear();
        if valued {
            // A POSIX ACL's value that setxattr set: of its length, at most the initial
            // state's values' bound.
            let value = hex(fields[14]).filter(|v| {
                call.kind == Some(Kind::SetXattr)
                    && Xattr::valued(&call.path2)
                    && v.len() as u64 == call.a
                    && !v.is_empty()
                    && v.len() <= XATTR_VALUE_MAX
            });
            let Some(value) = value else {
                return Err(self.damaged("bad value of a setxattr call"));
            };
            call.value = value;
        }
        if call.start_us.checked_add(call.dur_us).is_none() {
            return Err(self.damaged("a call that ends after 2^64 µs"));
        }
        self.count(call.path.len() + call.path2.len() + call.value.len())?;
        Ok(true)
    }

    /// The next entry of the tree the program left into `left` (its buffers reused), the
    /// initial state and the calls before it passed over; false after the last. A pass of
    /// its own, on a reader that has read no call: a replay compares its tree with this one
    /// entry by entry, holding none.
    pub(crate) fn left(&mut self, left: &mut Left) -> anyhow::Result<bool> {
        loop {
            match self.next_record()? {
                Record::End => return Ok(false),
                Record::Final => return self.left_line(left).map(|()| true),
                // Read by the calls' pass.
                Record::Call | Record::Skipped | Record::Task => {}
            }
        }
    }

    /// The next line after the initial state (the state passed over), and what it is; the
    /// totals read at the end.
    fn next_record(&mut self) -> anyhow::Result<Record> {
        while !self.in_calls {
            self.entry()?;
        }
        if !self.next_line()? {
            return Err(self.damaged("cut short: no `end` line"));
        }
        Ok(match self.line.split(|&b| b == b'\t').next() {
            Some(b"end") => {
                self.end_line()?;
                Record::End
            }
            Some(b"skipped") => Record::Skipped,
            Some(b"task") => Record::Task,
            Some(b"final") => Record::Final,
            _ => Record::Call,
        })
    }

    fn end_line(&mut self) -> anyhow::Result<()> {
        let mut fields = [&[][..]; 3];
        let totals = (split_fields(&self.line, &mut fields) == Some(3))
            .then(|| number(fields[1]).zip(number(fields[2])))
            .flatten();
        self.totals = Some(totals.ok_or_else(|| self.damaged("bad `end` line"))?);
        Ok(())
    }

    fn skipped_line(&mut self) -> anyhow::Result<()> {
        let mut fields = [&[][..]; 4];
        let parsed = (split_fields(&self.line, &mut fields) == Some(4))
            .then(|| {
                let mut example = Vec::new();
                unescape(fields[3], &mut example)?;
                let reason = std::str::from_utf8(fields[1]).ok()?.to_string();
                Some((reason, number(fields[2])?, example))
            })
            .flatten();
        let skipped = parsed.ok_or_else(|| self.damaged("bad `skipped` line"))?;
        self.count(skipped.0.len() + skipped.2.len())?;
        self.skipped.push(skipped);
        Ok(())
    }

    /// `task TID PID`: traced thread TID is of process PID.
    fn task_line(&mut self) -> anyhow::Result<()> {
        let mut fields = [&[][..]; 3];
        let parsed = (split_fields(&self.line, &mut fields) == Some(3))
            .then(|| number::<u32>(fields[1]).zip(number::<u32>(fields[2])))
            .flatten();
        let (tid, process) = parsed.ok_or_else(|| self.damaged("bad `task` line"))?;
        self.count(0)?;
        self.tasks.insert(tid, process);
        Ok(())
    }

    /// Whether the trace says which process each traced thread was of (version 3 on).
    pub(crate) fn records_processes(&self) -> bool {
        self.version >= PROCESSES_SINCE
    }

    /// The process of traced thread `tid`, once the calls are read: the one its `task` line
    /// names, or its own (a task the capture saw no fork of is a process of its own); 0 for
    /// every thread of a trace that records no processes, which are replayed as one.
    pub(crate) fn process_of(&self, tid: u32) -> u32 {
        match self.records_processes() {
            true => self.tasks.get(&tid).copied().unwrap_or(tid),
            false => 0,
        }
    }

    /// `final TYPE PATH ...`: one entry of the tree the program left, into `left`.
    fn left_line(&mut self, left: &mut Left) -> anyhow::Result<()> {
        let mut fields = [&[][..]; 6];
        let count = split_fields(&self.line, &mut fields);
        if fields.get(1) == Some(&&b"x"[..]) {
            return Err(self.damaged("an attribute (`final x` line) not after its entry"));
        }
        let parsed = (|| {
            left.kind = *fields[1].first()?;
            (left.size, left.mode, left.nlink) = (0, 0o777, 1);
            left.target.clear();
            unescape(fields[2], &mut left.path)?;
            match (left.kind, count?) {
                (b'd', 4) => left.mode = octal(fields[3])?,
                (b'l', 4) => {
                    unescape(fields[3], &mut left.target)?;
                    left.size = left.target.len() as u64;
                }
                (b'f', 6) => {
                    left.size = number(fields[3])?;
                    left.mode = octal(fields[4])?;
                    left.nlink = number(fields[5])?;
                }
                _ => return None,
            }
            (!left.path.is_empty()).then_some(())
        })();
        parsed.ok_or_else(|| self.damaged("bad `final` line"))?;
        self.xattr_lines(b"final\tx\t", &left.path, &mut left.xattrs, false)
    }
}

/// What a line after the initial state is.
enum Record {
    Call,
    /// Calls not recorded, by reason.
    Skipped,
    /// A traced thread's process.
    Task,
    /// An entry of the tree the program left.
    Final,
    /// The totals: the trace's last line.
    End,
}

/// Splits `line` at tabs into `out`; the number of fields, `None` when there are more than
/// `out` holds (nothing is allocated, whatever the line).
fn split_fields<'l, const N: usize>(line: &'l [u8], out: &mut [&'l [u8]; N]) -> Option<usize> {
    let mut n = 0;
    for field in line.split(|&b| b == b'\t') {
        *out.get_mut(n)? = field;
        n += 1;
    }
    Some(n)
}

/// Why an attribute `x` (after `before`, with `listed` bytes of names so far) is no
/// attribute a filesystem could hold; `None` when it could be.
fn xattr_refused(x: &Xattr, before: Option<&Xattr>, listed: usize) -> Option<String> {
    let why = if x.name.is_empty() || x.name.len() > XATTR_NAME_MAX || x.name.contains(&0) {
        format!(
            "an attribute name longer than {XATTR_NAME_MAX} bytes (XATTR_NAME_MAX), empty or \
             holding NUL"
        )
    } else if x.size > XATTR_SIZE_MAX {
        format!(
            "an attribute value larger than {} bytes (XATTR_SIZE_MAX)",
            group_thousands(XATTR_SIZE_MAX)
        )
    } else if before.is_some_and(|b| b.name >= x.name) {
        "attributes not in name order, or one listed twice".to_string()
    } else if listed > XATTR_LIST_MAX {
        format!(
            "more than {} bytes of attribute names on one entry (XATTR_LIST_MAX)",
            group_thousands(XATTR_LIST_MAX as u64)
        )
    } else {
        return None;
    };
    Some(why)
}

/// Bytes written as pairs of hex digits.
fn hex(field: &[u8]) -> Option<Vec<u8>> {
    field.len().is_multiple_of(2).then_some(())?;
    let digits = std::str::from_utf8(field).ok()?;
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(digits.get(i..i + 2)?, 16).ok())
        .collect()
}

fn number<T: std::str::FromStr>(field: &[u8]) -> Option<T> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

fn octal(field: &[u8]) -> Option<u32> {
    u32::from_str_radix(std::str::from_utf8(field).ok()?, 8).ok()
}

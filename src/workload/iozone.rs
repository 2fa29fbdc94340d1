//! An IOzone-style throughput matrix (seed 002): for every file size × record size cell, the
//! IOzone tests in IOzone's order — write, rewrite, read, reread, random read and write,
//! backward read, record rewrite, stride read, fwrite/fread (optional), pwrite, pread — each on
//! N threads with a file each. One phase, `matrix`, holds the cells; each cell's throughput is
//! a figure of its own.

use std::io::{BufWriter, Write};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Barrier;
use std::time::Instant;

use rustix::fs::{AtFlags, Mode, OFlags};
use serde::{Deserialize, Serialize};

use super::options::{OptKind, OptionDef, Parsed, Preset, WorkloadKind};
use super::{Aligned, PhaseInfo, SpaceNeed, Workload, WorkloadSpec};
use crate::error::{FsbenchError, invalid};
use crate::measure::{CpuTimes, PhaseRecorder};
use crate::units::{compact_size, format_bytes};

pub const PHASES: &[PhaseInfo] = &[PhaseInfo::fixed(
    "matrix",
    "Throughput matrix",
    "records",
    true,
)];

/// IOzone's tests: (name, IOzone group number `-i`, the `-R` report title).
pub const TESTS: &[(&str, u8, &str)] = &[
    ("write", 0, "Writer report"),
    ("rewrite", 0, "Re-writer report"),
    ("read", 1, "Reader report"),
    ("reread", 1, "Re-Reader report"),
    ("random-read", 2, "Random read report"),
    ("random-write", 2, "Random write report"),
    ("backward-read", 3, "Backward read report"),
    ("record-rewrite", 4, "Record rewrite report"),
    ("stride-read", 5, "Stride read report"),
    ("fwrite", 6, "Fwrite report"),
    ("refwrite", 6, "Re-Fwrite report"),
    ("fread", 7, "Fread report"),
    ("refread", 7, "Re-Fread report"),
    ("pwrite", 9, "Pwrite report"),
    ("repwrite", 9, "Re-Pwrite report"),
    ("pread", 10, "Pread report"),
    ("repread", 10, "Re-Pread report"),
];

/// Groups run by default: everything but buffered stdio (`stdio` adds 6 and 7).
const DEFAULT_GROUPS: [u8; 8] = [0, 1, 2, 3, 4, 5, 9, 10];

/// IOzone's stride: read a record, skip 17.
const STRIDE: u64 = 17;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IozoneParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// File sizes in bytes.
    pub file_sizes: Vec<u64>,
    /// Record sizes in bytes; a cell exists where record ≤ file (and, without `all_records`,
    /// record ≥ 64 KiB for files over 16 MiB, as IOzone's auto mode does).
    pub record_sizes: Vec<u64>,
    #[serde(default)]
    pub all_records: bool,
    /// IOzone test groups (`-i`).
    pub groups: Vec<u8>,
    /// O_DIRECT with aligned buffers.
    #[serde(default)]
    pub direct: bool,
    /// O_SYNC.
    #[serde(default)]
    pub sync: bool,
    /// fsync included in the timing of writes (IOzone -e).
    #[serde(default)]
    pub fsync: bool,
    /// close included in the timing (IOzone -c).
    #[serde(default)]
    pub close: bool,
    /// Threads, each on a file of its own (IOzone's throughput mode).
    pub threads: u32,
    /// Sync and drop caches before each read test (root only).
    pub drop_caches: bool,
}

fn doubling(from: u64, to: u64) -> Vec<u64> {
    std::iter::successors(Some(from), |v| v.checked_mul(2))
        .take_while(|v| *v <= to)
        .collect()
}

const OPTIONS: &[OptionDef] = &[
    OptionDef {
        min: 1,
        max: 1 << 40,
        ..OptionDef::new("sizes", OptKind::List(&OptKind::Size), "file sizes")
    },
    OptionDef {
        min: 64 << 10,
        max: 1 << 40,
        ..OptionDef::new(
            "max",
            OptKind::Size,
            "largest file of auto mode (files 64 KiB doubling)",
        )
    },
    OptionDef {
        min: 1,
        max: 1 << 30,
        default: Some("4k+8k+16k+32k+64k+128k+256k+512k+1m+2m+4m+8m+16m"),
        ..OptionDef::new("records", OptKind::List(&OptKind::Size), "record sizes")
    },
    OptionDef {
        default: Some("0+1+2+3+4+5+9+10"),
        ..OptionDef::new(
            "tests",
            OptKind::List(&OptKind::Choice(&[
                "0", "1", "2", "3", "4", "5", "6", "7", "9", "10",
            ])),
            "IOzone test groups (-i)",
        )
    },
    OptionDef {
        min: 1,
        max: 1024,
        default: Some("1"),
        ..OptionDef::new(
            "threads",
            OptKind::Count,
            "threads, each on a file of its own",
        )
    },
    OptionDef::new("direct", OptKind::Flag, "O_DIRECT"),
    OptionDef::new("sync", OptKind::Flag, "O_SYNC"),
    OptionDef::new("fsync", OptKind::Flag, "fsync timed with writes (-e)"),
    OptionDef::new("close", OptKind::Flag, "close timed (-c)"),
    OptionDef::new("stdio", OptKind::Flag, "add fwrite/fread (groups 6 and 7)"),
    OptionDef::new(
        "all-records",
        OptKind::Flag,
        "every record size for files over 16 MiB",
    ),
    OptionDef::new("no-drop", OptKind::Flag, "keep caches before reads"),
];

const PRESETS: &[Preset] = &[
    Preset {
        name: "auto",
        values: &[("max", "512m")],
        help: "IOzone's auto mode",
    },
    Preset {
        name: "quick",
        values: &[("max", "16m")],
        help: "auto mode up to 16 MiB files",
    },
    Preset {
        name: "seq-1m",
        values: &[("sizes", "1g"), ("records", "1m"), ("tests", "0+1")],
        help: "sequential 1 MiB records on a 1 GiB file",
    },
];

/// The iozone workload's row in the registry.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "iozone",
    summary: "IOzone-style throughput matrix of file sizes × record sizes",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "quick",
    aliases: &[],
    build: |p| build(p).map(WorkloadSpec::Iozone),
};

fn build(p: &Parsed) -> anyhow::Result<IozoneParams> {
    if p.explicit("sizes") && p.explicit("max") {
        return Err(invalid("iozone: give `sizes` or `max`, not both"));
    }
    // Explicit `max` beats a preset's `sizes`; explicit `sizes` beats a preset's `max`.
    let file_sizes = match (p.explicit("max"), p.nums("sizes"), p.num("max")) {
        (false, Some(sizes), _) => sizes,
        (_, _, Some(max)) => doubling(64 << 10, max),
        (true, _, None) | (false, None, None) => unreachable!("presets give sizes or max"),
    };
    let mut groups: Vec<u8> = p
        .texts("tests")
        .expect("tests has a default")
        .iter()
        .map(|g| g.parse().expect("choices are numbers"))
        .collect();
    if p.flag("stdio") {
        groups.extend([6, 7]);
        groups.sort();
        groups.dedup();
    }
    let custom = p.first_explicit(&[
        "sizes",
        "max",
        "records",
        "tests",
        "threads",
        "all-records",
        "stdio",
    ]);
    Ok(IozoneParams {
        preset: custom.is_none().then(|| p.preset.name.to_string()),
        file_sizes,
        record_sizes: p.nums("records").expect("records has a default"),
        all_records: p.flag("all-records"),
        groups,
        direct: p.flag("direct"),
        sync: p.flag("sync"),
        fsync: p.flag("fsync"),
        close: p.flag("close"),
        threads: p.small("threads").expect("threads has a default"),
        drop_caches: !p.flag("no-drop"),
    })
}

impl IozoneParams {
    /// IOzone's auto mode up to `max_file`: files 64 KiB doubling, records 4 KiB to 16 MiB.
    pub fn auto(max_file: u64) -> IozoneParams {
        IozoneParams {
            preset: Some("auto".into()),
            file_sizes: doubling(64 << 10, max_file),
            record_sizes: doubling(4 << 10, 16 << 20),
            all_records: false,
            groups: DEFAULT_GROUPS.to_vec(),
            direct: false,
            sync: false,
            fsync: false,
            close: false,
            threads: 1,
            drop_caches: true,
        }
    }

    pub fn preset(name: &str) -> anyhow::Result<IozoneParams> {
        build(&KIND.parse_cli(&format!("preset={name}"))?)
    }

    /// Parses the part after `iozone:`: a preset and settings; lists use `+`:
    /// `sizes=64k+1m`, `records=4k+64k`, `max=SIZE` (auto mode's largest file), `tests=0+1+2`,
    /// `threads=N`, and flags `direct`, `sync`, `fsync`, `close`, `stdio`, `all-records`,
    /// `no-drop`.
    pub fn parse(args: &str) -> anyhow::Result<IozoneParams> {
        build(&KIND.parse_cli(args)?)
    }

    /// The matrix's cells, in IOzone's order: file sizes, then records.
    pub fn cells(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for &f in &self.file_sizes {
            for &r in &self.record_sizes {
                if r <= f && (self.all_records || f <= 16 << 20 || r >= 64 << 10) {
                    out.push((f, r));
                }
            }
        }
        out
    }

    pub fn tests(&self) -> impl Iterator<Item = &'static (&'static str, u8, &'static str)> + '_ {
        TESTS.iter().filter(|t| self.groups.contains(&t.1))
    }

    pub fn name(&self) -> String {
        let mut name = self.preset.clone().unwrap_or_else(|| {
            let list = |v: &[u64]| {
                v.iter()
                    .map(|s| compact_size(*s))
                    .collect::<Vec<_>>()
                    .join("+")
            };
            format!(
                "sizes={},records={}",
                list(&self.file_sizes),
                list(&self.record_sizes)
            )
        });
        for (flag, on) in [
            ("direct", self.direct),
            ("sync", self.sync),
            ("fsync", self.fsync),
            ("close", self.close),
        ] {
            if on {
                name.push(',');
                name.push_str(flag);
            }
        }
        if self.threads > 1 {
            name.push_str(&format!(",threads={}", self.threads));
        }
        name
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        if self.threads == 0 || self.threads > 1024 {
            return Err(invalid("iozone: threads must be between 1 and 1024"));
        }
        if self.groups.is_empty() {
            return Err(invalid("iozone: no tests selected"));
        }
        if self.cells().is_empty() {
            return Err(invalid(
                "iozone: no cell has a record size no larger than its file size",
            ));
        }
        if self.record_sizes.contains(&0) || self.file_sizes.contains(&0) {
            return Err(invalid("iozone: sizes must be larger than 0"));
        }
        if self.direct && self.groups.iter().any(|g| [6, 7].contains(g)) {
            return Err(invalid(
                "iozone: buffered stdio tests (fwrite, fread) cannot use O_DIRECT",
            ));
        }
        if self.record_sizes.iter().any(|r| *r > 1 << 30)
            || self.file_sizes.iter().any(|f| *f > 1 << 40)
        {
            return Err(invalid(
                "iozone: records over 1 GiB or files over 1 TiB are absurd",
            ));
        }
        Ok(())
    }

    pub fn describe(&self) -> String {
        let tests: Vec<&str> = self.tests().map(|t| t.0).collect();
        let largest = self.file_sizes.iter().max().copied().unwrap_or(0);
        format!(
            "IOzone-style matrix: {} cells (files up to {}, records {}–{}), {} thread(s); tests: {}{}",
            self.cells().len(),
            format_bytes(largest),
            format_bytes(self.record_sizes.iter().min().copied().unwrap_or(0)),
            format_bytes(self.record_sizes.iter().max().copied().unwrap_or(0)),
            self.threads,
            tests.join(", "),
            if self.drop_caches {
                "; caches dropped before reads"
            } else {
                "; caches kept"
            }
        )
    }

    /// The smallest file must fit; larger ones that do not are skipped at run time.
    /// Bytes of I/O buffers the workload allocates: one record (aligned) per thread.
    pub fn buffer_bytes(&self) -> u64 {
        let record = self.record_sizes.iter().copied().max().unwrap_or(0);
        record
            .saturating_add(4096)
            .saturating_mul(u64::from(self.threads))
    }

    /// `None` when the sizes overflow.
    pub fn space_needed(&self) -> Option<SpaceNeed> {
        let per_file = |size: u64| Some(size.checked_mul(self.threads as u64)?.checked_mul(5)? / 4);
        Some(SpaceNeed {
            bytes: per_file(self.file_sizes.iter().min().copied().unwrap_or(0))?,
            inodes: self.threads as u64 + 8,
            ideal_bytes: per_file(self.file_sizes.iter().max().copied().unwrap_or(0))?,
        })
    }
}

workload_params!(IozoneParams, |p| phases: std::borrow::Cow::Borrowed(PHASES),
    instantiate: Iozone::new(p.clone()),
    buffers: IozoneParams::buffer_bytes(p));

/// One cell of one test: every thread's file, aggregated.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MatrixCell {
    pub test: String,
    pub file_size: u64,
    pub record_size: u64,
    pub threads: u32,
    pub bytes: u64,
    /// From the start barrier to the last thread's end.
    pub elapsed_ns: u64,
    pub cpu_ns: u64,
    /// Total bytes over the elapsed time, KiB/s.
    pub kib_per_sec: f64,
    pub thread_min_kib_per_sec: f64,
    pub thread_max_kib_per_sec: f64,
    pub thread_avg_kib_per_sec: f64,
    pub caches_dropped: bool,
}

impl MatrixCell {
    pub fn cpu_percent(&self) -> f64 {
        self.cpu_ns as f64 / self.elapsed_ns.max(1) as f64 * 100.0
    }

    /// The figure's name: `write 64K/4K`.
    pub fn metric(&self) -> String {
        matrix_metric(&self.test, self.file_size, self.record_size)
    }
}

/// The name of one cell's throughput figure: `<test> <file size>/<record size>`.
pub fn matrix_metric(test: &str, file_size: u64, record_size: u64) -> String {
    format!(
        "{test} {}/{}",
        compact_size(file_size),
        compact_size(record_size)
    )
}

/// The matrix a suite's runs measured for `workload`: (tests in IOzone order, file sizes,
/// record sizes), each sorted.
pub fn matrix_axes(
    runs: &[crate::results::RunRecord],
    workload: &str,
) -> (Vec<&'static str>, Vec<u64>, Vec<u64>) {
    let cells = runs
        .iter()
        .filter(|r| r.workload == workload)
        .flat_map(|r| &r.phases)
        .flat_map(|p| &p.cells);
    let (mut files, mut records, mut tests) = (Vec::new(), Vec::new(), Vec::new());
    for c in cells {
        files.push(c.file_size);
        records.push(c.record_size);
        if let Some(t) = TESTS.iter().find(|t| t.0 == c.test) {
            tests.push(t);
        }
    }
    for v in [&mut files, &mut records] {
        v.sort();
        v.dedup();
    }
    let order = |t: &&(&str, u8, &str)| TESTS.iter().position(|x| x.0 == t.0);
    tests.sort_by_key(order);
    tests.dedup();
    (tests.into_iter().map(|t| t.0).collect(), files, records)
}

/// The order records are visited in, as record indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Sequential,
    Backward,
    /// Every record once, in a pseudo-random order.
    Random,
    /// Record i·stride mod n: every record once when the stride is coprime to n.
    Stride,
    /// The same record every time.
    Same,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The i-th record index of `pattern` over `n` records, without a table: random uses a
/// full-period LCG over the next power of two, skipping values ≥ n (cycle walking).
pub struct Offsets {
    pattern: Pattern,
    n: u64,
    i: u64,
    state: u64,
    mask: u64,
    stride: u64,
}

impl Offsets {
    pub fn new(pattern: Pattern, n: u64) -> Offsets {
        let mut stride = STRIDE;
        while n > 1 && gcd(stride, n) != 1 {
            stride += 1;
        }
        Offsets {
            pattern,
            n,
            i: 0,
            state: 0x2545_f491,
            mask: n.next_power_of_two().max(2) - 1,
            stride,
        }
    }
}

impl Iterator for Offsets {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.i >= self.n {
            return None;
        }
        let i = self.i;
        self.i += 1;
        Some(match self.pattern {
            Pattern::Sequential => i,
            Pattern::Backward => self.n - 1 - i,
            Pattern::Same => 0,
            Pattern::Stride => i * self.stride % self.n,
            Pattern::Random => loop {
                // a ≡ 1 (mod 4), c odd: full period modulo a power of two.
                self.state = (self
                    .state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407))
                    & self.mask;
                if self.state < self.n {
                    break self.state;
                }
            },
        })
    }
}

/// What a test does with each record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Io {
    Write,
    Read,
    /// Positioned (pread/pwrite) in the given pattern.
    PWrite(Pattern),
    PRead(Pattern),
    StdioWrite,
    StdioRead,
}

fn io_of(test: &str) -> Io {
    match test {
        "write" | "rewrite" => Io::Write,
        "read" | "reread" => Io::Read,
        "random-read" => Io::PRead(Pattern::Random),
        "random-write" => Io::PWrite(Pattern::Random),
        "backward-read" => Io::PRead(Pattern::Backward),
        "record-rewrite" => Io::PWrite(Pattern::Same),
        "stride-read" => Io::PRead(Pattern::Stride),
        "fwrite" | "refwrite" => Io::StdioWrite,
        "fread" | "refread" => Io::StdioRead,
        "pwrite" | "repwrite" => Io::PWrite(Pattern::Sequential),
        _ => Io::PRead(Pattern::Sequential),
    }
}

pub struct Iozone {
    params: IozoneParams,
    cells: Vec<MatrixCell>,
    /// Which cells were skipped, and why.
    notes: Vec<String>,
}

impl Iozone {
    pub fn new(params: IozoneParams) -> Iozone {
        Iozone {
            params,
            cells: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn cells(&self) -> &[MatrixCell] {
        &self.cells
    }

    fn flags(&self, write: bool) -> OFlags {
        let mut f = if write {
            OFlags::RDWR | OFlags::CREATE
        } else {
            OFlags::RDONLY
        } | OFlags::CLOEXEC;
        if self.params.direct {
            f |= OFlags::DIRECT;
        }
        if self.params.sync && write {
            f |= OFlags::SYNC;
        }
        f
    }

    /// Refuses O_DIRECT on a filesystem without it, or records it cannot align, before any I/O.
    fn check_direct(&self, dir: BorrowedFd<'_>) -> Result<(), FsbenchError> {
        if !self.params.direct {
            return Ok(());
        }
        let fs = filesystem_name(dir);
        let probe = ".fsbench-direct-probe";
        let opened = rustix::fs::openat(
            dir,
            probe,
            OFlags::RDWR | OFlags::CREATE | OFlags::DIRECT | OFlags::CLOEXEC,
            Mode::from(0o600),
        );
        let _ = rustix::fs::unlinkat(dir, probe, AtFlags::empty());
        let file = opened.map_err(|e| {
            FsbenchError::InvalidInput(format!("{fs} refuses O_DIRECT ({e}); run without `direct`"))
        })?;
        let align = rustix::fs::statx(
            &file,
            "",
            AtFlags::EMPTY_PATH,
            rustix::fs::StatxFlags::DIOALIGN,
        )
        .ok()
        .map(|s| s.stx_dio_offset_align as u64)
        .filter(|a| *a > 0)
        .unwrap_or(4096);
        if let Some(bad) = self
            .params
            .record_sizes
            .iter()
            .chain(&self.params.file_sizes)
            .find(|r| *r % align != 0)
        {
            return Err(FsbenchError::InvalidInput(format!(
                "O_DIRECT on {fs} needs sizes that are multiples of {align} bytes (its logical block size); {bad} is not"
            )));
        }
        Ok(())
    }

    /// One test of one cell on every thread's file.
    fn run_test(
        &self,
        dir: BorrowedFd<'_>,
        test: &str,
        file_size: u64,
        record: u64,
    ) -> Result<MatrixCell, FsbenchError> {
        let io = io_of(test);
        let writes = matches!(io, Io::Write | Io::PWrite(_) | Io::StdioWrite);
        let caches_dropped =
            !writes && self.params.drop_caches && crate::target::sync_and_drop_caches(dir);
        let threads = self.params.threads as usize;
        let barrier = Barrier::new(threads);
        let cpu = CpuTimes::now();
        let start = Instant::now();
        let results: Vec<Result<(u64, f64), FsbenchError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let barrier = &barrier;
                    s.spawn(move || self.thread_io(dir, t, io, writes, file_size, record, barrier))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(FsbenchError::Failed("I/O thread panicked".into())))
                })
                .collect()
        });
        let elapsed = start.elapsed();
        let cpu = CpuTimes::now().since(&cpu);
        let mut bytes = 0;
        let mut rates = Vec::with_capacity(threads);
        for r in results {
            let (b, secs) = r?;
            if b != file_size {
                return Err(FsbenchError::Failed(format!(
                    "{test}: moved {b} bytes of a {file_size}-byte file"
                )));
            }
            bytes += b;
            rates.push(b as f64 / 1024.0 / secs.max(1e-9));
        }
        Ok(MatrixCell {
            test: test.to_string(),
            file_size,
            record_size: record,
            threads: self.params.threads,
            bytes,
            elapsed_ns: elapsed.as_nanos() as u64,
            cpu_ns: (cpu.user + cpu.system).as_nanos() as u64,
            kib_per_sec: bytes as f64 / 1024.0 / elapsed.as_secs_f64().max(1e-9),
            thread_min_kib_per_sec: rates.iter().copied().fold(f64::INFINITY, f64::min),
            thread_max_kib_per_sec: rates.iter().copied().fold(0.0, f64::max),
            thread_avg_kib_per_sec: rates.iter().sum::<f64>() / rates.len() as f64,
            caches_dropped,
        })
    }

    /// One thread's part: open (untimed), the I/O, fsync and close as asked; (bytes, seconds).
    #[allow(clippy::too_many_arguments)]
    fn thread_io(
        &self,
        dir: BorrowedFd<'_>,
        t: usize,
        io: Io,
        writes: bool,
        size: u64,
        record: u64,
        barrier: &Barrier,
    ) -> Result<(u64, f64), FsbenchError> {
        let name = thread_file(t);
        let name = std::ffi::CStr::from_bytes_with_nul(&name).expect("NUL-terminated");
        let file: OwnedFd = rustix::fs::openat(dir, name, self.flags(writes), Mode::from(0o644))
            .map_err(|e| FsbenchError::Failed(format!("open {name:?}: {e}")))?;
        let mut buf = Aligned::new(record as usize);
        let n = size / record;
        barrier.wait();
        let start = Instant::now();
        let mut moved = 0u64;
        match io {
            Io::Write | Io::Read => {
                for _ in 0..n {
                    moved += if writes {
                        write_all(&file, buf.buf())?
                    } else {
                        read_full(&file, buf.buf())?
                    };
                }
            }
            Io::PWrite(pattern) | Io::PRead(pattern) => {
                for i in Offsets::new(pattern, n) {
                    let off = i * record;
                    moved += if writes {
                        pwrite_all(&file, buf.buf(), off)?
                    } else {
                        pread_full(&file, buf.buf(), off)?
                    };
                }
            }
            Io::StdioWrite => {
                let mut out =
                    BufWriter::new(std::fs::File::from(file.try_clone().map_err(io_err)?));
                for _ in 0..n {
                    out.write_all(buf.buf())
                        .map_err(|e| FsbenchError::Failed(format!("fwrite: {e}")))?;
                    moved += record;
                }
                out.flush()
                    .map_err(|e| FsbenchError::Failed(format!("fflush: {e}")))?;
            }
            Io::StdioRead => {
                let mut input =
                    std::io::BufReader::new(std::fs::File::from(file.try_clone().map_err(io_err)?));
                for _ in 0..n {
                    std::io::Read::read_exact(&mut input, buf.buf())
                        .map_err(|e| FsbenchError::Failed(format!("fread: {e}")))?;
                    moved += record;
                }
            }
        }
        if writes && self.params.fsync {
            rustix::fs::fsync(&file).map_err(io_err)?;
        }
        let secs_before_checks = start.elapsed().as_secs_f64();
        if writes {
            // Not timed: the file must have exactly the cell's size after every write test.
            let st = rustix::fs::fstat(&file).map_err(io_err)?;
            if st.st_size as u64 != size {
                return Err(FsbenchError::Failed(format!(
                    "file {name:?} is {} bytes after writing, not {size}",
                    st.st_size
                )));
            }
        }
        if self.params.close {
            let before_close = Instant::now();
            drop(file);
            return Ok((
                moved,
                secs_before_checks + before_close.elapsed().as_secs_f64(),
            ));
        }
        drop(file);
        Ok((moved, secs_before_checks))
    }

    /// Creates every thread's file at its full size (untimed), for cells without a write test.
    fn prepare_files(
        &self,
        dir: BorrowedFd<'_>,
        size: u64,
        record: u64,
    ) -> Result<(), FsbenchError> {
        let barrier = Barrier::new(1);
        for t in 0..self.params.threads as usize {
            self.thread_io(dir, t, Io::Write, true, size, record, &barrier)?;
        }
        Ok(())
    }
}

/// Thread `t`'s file, `iozone.tmp.NNNN\0`: one name for creating and removing it (threads
/// are at most 1024, so four digits suffice).
fn thread_file(t: usize) -> [u8; 16] {
    let mut name = *b"iozone.tmp.0000\0";
    let mut v = t;
    for digit in name[11..15].iter_mut().rev() {
        *digit = b'0' + (v % 10) as u8;
        v /= 10;
    }
    name
}

fn io_err(e: impl std::fmt::Display) -> FsbenchError {
    FsbenchError::Failed(format!("I/O: {e}"))
}

fn check_disk_full(e: rustix::io::Errno) -> FsbenchError {
    crate::measure::fatal_error(e, "matrix", 0).unwrap_or_else(|| io_err(e))
}

fn write_all(file: &OwnedFd, buf: &[u8]) -> Result<u64, FsbenchError> {
    super::write_all(file, buf)
        .map(|n| n as u64)
        .map_err(check_disk_full)
}

fn pwrite_all(file: &OwnedFd, buf: &[u8], off: u64) -> Result<u64, FsbenchError> {
    super::pwrite_all(file, buf, off)
        .map(|n| n as u64)
        .map_err(check_disk_full)
}

fn read_full(file: &OwnedFd, buf: &mut [u8]) -> Result<u64, FsbenchError> {
    super::read_full(file, buf)
        .map(|n| n as u64)
        .map_err(io_err)
}

fn pread_full(file: &OwnedFd, buf: &mut [u8], off: u64) -> Result<u64, FsbenchError> {
    super::pread_full(file, buf, off)
        .map(|n| n as u64)
        .map_err(io_err)
}

/// The filesystem type of `dir`, for messages (from fstatfs's magic number).
fn filesystem_name(dir: BorrowedFd<'_>) -> String {
    let magic = rustix::fs::fstatfs(dir)
        .map(|s| s.f_type as u64)
        .unwrap_or(0);
    match magic {
        0xef53 => "ext2/3/4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683e => "btrfs".into(),
        0x0102_1994 => "tmpfs".into(),
        other => format!("the filesystem (magic {other:#x})"),
    }
}

impl Workload for Iozone {
    fn phases(&self) -> std::borrow::Cow<'static, [PhaseInfo]> {
        std::borrow::Cow::Borrowed(PHASES)
    }

    fn expected_units(&self, _: usize) -> u64 {
        let tests = self.params.tests().count() as u64;
        self.params
            .cells()
            .iter()
            .map(|(f, r)| f / r * tests * self.params.threads as u64)
            .sum()
    }

    fn run_phase(
        &mut self,
        _: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        self.check_direct(dir)?;
        let has_write = self.params.groups.contains(&0);
        // The largest file whose threads' copies fit the target (the workloads' one rule).
        let threads = self.params.threads as u64;
        let wanted = self.params.file_sizes.iter().copied().max().unwrap_or(0);
        let (largest, free) = super::fit_size(dir, wanted, threads, 1)?;
        let (cells, skipped): (Vec<_>, Vec<_>) = self
            .params
            .cells()
            .into_iter()
            .partition(|(f, _)| *f <= largest);
        if let Some(free) = free
            && !skipped.is_empty()
        {
            let mut sizes: Vec<u64> = skipped.iter().map(|(f, _)| *f).collect();
            sizes.sort_unstable();
            sizes.dedup();
            self.notes.push(format!(
                "skipping files of {} and larger ({} of {} cells, file sizes {}): {threads} thread(s)' files of that size do not fit in 80% of the {} free",
                format_bytes(sizes[0]),
                skipped.len(),
                skipped.len() + cells.len(),
                sizes.iter().map(|s| compact_size(*s)).collect::<Vec<_>>().join("+"),
                format_bytes(free)
            ));
        }
        for (file_size, record) in cells {
            if !has_write {
                self.prepare_files(dir, file_size, record)?;
            }
            for (test, _, _) in self.params.tests() {
                let cell = self.run_test(dir, test, file_size, record)?;
                rec.units_done(
                    (file_size / record) * self.params.threads as u64,
                    cell.bytes,
                )?;
                self.cells.push(cell);
            }
            for t in 0..self.params.threads as usize {
                let _ = rustix::fs::unlinkat(dir, &thread_file(t)[..15], AtFlags::empty());
            }
        }
        Ok(())
    }

    fn after_phase(
        &mut self,
        _: usize,
        _: BorrowedFd<'_>,
    ) -> Result<super::PhaseOutput, FsbenchError> {
        Ok(super::PhaseOutput {
            cells: std::mem::take(&mut self.cells),
            notes: std::mem::take(&mut self.notes),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_visit_every_record_once() {
        for n in [1u64, 2, 7, 17, 48, 64, 1000, 4096] {
            for pattern in [
                Pattern::Sequential,
                Pattern::Backward,
                Pattern::Random,
                Pattern::Stride,
            ] {
                let mut seen: Vec<u64> = Offsets::new(pattern, n).collect();
                assert_eq!(seen.len() as u64, n, "{pattern:?} n={n}");
                seen.sort();
                seen.dedup();
                assert_eq!(
                    seen,
                    (0..n).collect::<Vec<_>>(),
                    "{pattern:?} n={n}: distinct offsets"
                );
            }
            assert!(Offsets::new(Pattern::Same, n).all(|i| i == 0));
        }
        let back: Vec<u64> = Offsets::new(Pattern::Backward, 4).collect();
        assert_eq!(back, [3, 2, 1, 0]);
        let random: Vec<u64> = Offsets::new(Pattern::Random, 64).collect();
        assert_ne!(
            random,
            (0..64).collect::<Vec<_>>(),
            "random is not sequential"
        );
        let stride: Vec<u64> = Offsets::new(Pattern::Stride, 64).take(3).collect();
        assert_eq!(stride, [0, 17, 34]);
    }

    #[test]
    fn thread_files_are_zero_padded() {
        assert_eq!(&thread_file(0), b"iozone.tmp.0000\0");
        assert_eq!(&thread_file(12), b"iozone.tmp.0012\0");
        assert_eq!(&thread_file(1023), b"iozone.tmp.1023\0");
    }

    #[test]
    fn auto_mode_cells_follow_iozone() {
        let p = IozoneParams::auto(512 << 20);
        let cells = p.cells();
        assert_eq!(p.file_sizes.first(), Some(&(64 << 10)));
        assert_eq!(p.file_sizes.last(), Some(&(512 << 20)));
        assert!(cells.contains(&(64 << 10, 4 << 10)));
        assert!(cells.iter().all(|(f, r)| r <= f));
        // Files over 16 MiB start at 64 KiB records.
        assert!(!cells.contains(&(32 << 20, 32 << 10)));
        assert!(cells.contains(&(32 << 20, 64 << 10)));
        assert!(cells.contains(&(512 << 20, 16 << 20)));
        let all = IozoneParams::parse("auto,all-records").unwrap();
        assert!(all.cells().contains(&(32 << 20, 4 << 10)));
    }

    #[test]
    fn parses_settings() {
        let p =
            IozoneParams::parse("sizes=1m+4m,records=4k+64k,tests=0+1+2,direct,threads=2").unwrap();
        assert_eq!(p.file_sizes, [1 << 20, 4 << 20]);
        assert_eq!(p.groups, [0, 1, 2]);
        assert!(p.direct && p.threads == 2 && p.preset.is_none());
        let names: Vec<&str> = p.tests().map(|t| t.0).collect();
        assert_eq!(
            names,
            [
                "write",
                "rewrite",
                "read",
                "reread",
                "random-read",
                "random-write"
            ]
        );
        assert!(IozoneParams::parse("tests=8").is_err());
        assert!(IozoneParams::parse("bogus=1").is_err());
        assert!(
            IozoneParams::parse("threads=0")
                .and_then(|p| p.validate())
                .is_err()
        );
        assert!(
            IozoneParams::parse("sizes=4k,records=64k")
                .unwrap()
                .validate()
                .is_err()
        );
    }
}

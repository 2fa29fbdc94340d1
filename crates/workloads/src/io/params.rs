//! The io workload's parameters: fio's job options, one table, and what they imply.

use serde::{Deserialize, Serialize};

use std::borrow::Cow;

use crate::options::{Parsed, WorkloadKind};
use crate::{Need, PhaseInfo, SpaceNeed, Workload, WorkloadParams};
use fsbench_measure::error::invalid;
use fsbench_model::filesystem::Capability;
use fsbench_model::units::{compact_size, format_bytes};

/// fio's `rw=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    ReadWrite,
    RandRw,
}

impl Rw {
    pub(super) const NAMES: &'static [&'static str] = &[
        "read",
        "write",
        "randread",
        "randwrite",
        "readwrite",
        "randrw",
    ];

    fn parse(text: &str) -> Rw {
        match text {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "readwrite" => Rw::ReadWrite,
            _ => Rw::RandRw,
        }
    }

    pub fn name(self) -> &'static str {
        Rw::NAMES[self as usize]
    }

    pub fn random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }

    /// The share of reads in percent, given `rwmixread` for the mixed ones.
    pub(crate) fn read_percent(self, rwmixread: u32) -> u32 {
        match self {
            Rw::Read | Rw::RandRead => 100,
            Rw::Write | Rw::RandWrite => 0,
            Rw::ReadWrite | Rw::RandRw => rwmixread,
        }
    }
}

/// fio's `ioengine=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Psync,
    /// `lseek` (when the offset is not where the last I/O ended) then `read`/`write`.
    Sync,
    /// As `sync`, with `readv`/`writev`.
    Vsync,
    /// `preadv`/`pwritev`.
    Pvsync,
    Pvsync2,
    IoUring,
    /// The kernel's native AIO (io_submit), as fio's libaio engine.
    Libaio,
    /// No I/O at all (and no files), as fio's `null` engine: the harness's own cost.
    Null,
    /// fio's file and directory operation engines: each of the job's files (or
    /// directories) created, stat'ed or deleted once, each operation timed.
    FileCreate,
    FileStat,
    FileDelete,
    DirCreate,
    DirStat,
    DirDelete,
}

impl Engine {
    /// fio's names, in [`Engine`]'s order.
    pub(super) const NAMES: &'static [&'static str] = &[
        "psync",
        "sync",
        "vsync",
        "pvsync",
        "pvsync2",
        "io_uring",
        "libaio",
        "null",
        "filecreate",
        "filestat",
        "filedelete",
        "dircreate",
        "dirstat",
        "dirdelete",
    ];

    fn parse(text: &str) -> Engine {
        match text {
            "sync" => Engine::Sync,
            "vsync" => Engine::Vsync,
            "pvsync" => Engine::Pvsync,
            "pvsync2" => Engine::Pvsync2,
            "io_uring" => Engine::IoUring,
            "libaio" => Engine::Libaio,
            "null" => Engine::Null,
            "filecreate" => Engine::FileCreate,
            "filestat" => Engine::FileStat,
            "filedelete" => Engine::FileDelete,
            "dircreate" => Engine::DirCreate,
            "dirstat" => Engine::DirStat,
            "dirdelete" => Engine::DirDelete,
            _ => Engine::Psync,
        }
    }

    /// One of fio's file and directory operation engines (no data I/O).
    pub fn file_op(self) -> bool {
        matches!(
            self,
            Engine::FileCreate
                | Engine::FileStat
                | Engine::FileDelete
                | Engine::DirCreate
                | Engine::DirStat
                | Engine::DirDelete
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Engine::Psync => "psync",
            Engine::Sync => "sync",
            Engine::Vsync => "vsync",
            Engine::Pvsync => "pvsync",
            Engine::Null => "null",
            Engine::FileCreate => "filecreate",
            Engine::FileStat => "filestat",
            Engine::FileDelete => "filedelete",
            Engine::DirCreate => "dircreate",
            Engine::DirStat => "dirstat",
            Engine::DirDelete => "dirdelete",
            Engine::Pvsync2 => "pvsync2",
            Engine::IoUring => "io_uring",
            Engine::Libaio => "libaio",
        }
    }
}

/// fio's `fallocate=`: how the layout allocates a file that is only written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fallocate {
    /// `fallocate(2)` (fio's `native` and `posix` on Linux, `1`).
    #[default]
    Native,
    /// `fallocate(FALLOC_FL_KEEP_SIZE)`, then the size set by `ftruncate`.
    Keep,
    /// The size set by `ftruncate` alone (fio's `truncate`, `none`, `0`).
    None,
}

impl Fallocate {
    fn parse(text: &str) -> Fallocate {
        match text {
            "keep" => Fallocate::Keep,
            "none" | "truncate" | "0" => Fallocate::None,
            _ => Fallocate::Native,
        }
    }
}

/// fio's `random_distribution=`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "value")]
pub enum Distribution {
    Random,
    Zipf(f64),
    Pareto(f64),
    /// Standard deviation in percent of the file's blocks.
    Normal(f64),
}

impl Distribution {
    fn parse(text: &str) -> anyhow::Result<Distribution> {
        let (kind, value) = text.split_once(':').unwrap_or((text, ""));
        let number = |what: &str, ok: fn(f64) -> bool| -> anyhow::Result<f64> {
            value
                .parse::<f64>()
                .ok()
                .filter(|v| ok(*v))
                .ok_or_else(|| invalid(format!("io: `random-distribution={text}`: {what}")))
        };
        Ok(match kind {
            "random" if value.is_empty() => Distribution::Random,
            "zipf" => Distribution::Zipf(number("zipf:θ needs θ > 0 and θ ≠ 1", |v| {
                v > 0.0 && v != 1.0 && v.is_finite()
            })?),
            "pareto" => {
                Distribution::Pareto(number("pareto:h needs 0 < h < 1", |v| v > 0.0 && v < 1.0)?)
            }
            "normal" => {
                Distribution::Normal(number("normal:σ needs 0 < σ ≤ 100 (percent)", |v| {
                    v > 0.0 && v <= 100.0
                })?)
            }
            _ => {
                return Err(invalid(format!(
                    "io: `random-distribution` is random, zipf:θ, pareto:h or normal:σ; got `{text}`"
                )));
            }
        })
    }

    fn text(self) -> String {
        match self {
            Distribution::Random => "random".into(),
            Distribution::Zipf(v) => format!("zipf:{v}"),
            Distribution::Pareto(v) => format!("pareto:{v}"),
            Distribution::Normal(v) => format!("normal:{v}"),
        }
    }
}

/// One job description; `numjobs` copies of it run at once, each on files of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The job's name in a fio job file (`[name]`), which names it in labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    pub rw: Rw,
    /// `rw=read:GAP`: bytes skipped after each sequential I/O (negative: backwards).
    #[serde(default)]
    pub seq_gap: i64,
    /// `rw=randread:N`: I/Os at each random offset and after it, in sequence (0 or 1: one).
    #[serde(default)]
    pub seq_nr: u32,
    pub rwmixread: u32,
    /// Block sizes and their percentages (`bs` alone: one at 100%).
    pub bssplit: Vec<(u64, u32)>,
    /// Bytes of I/O per job and pass, over its files.
    pub size: u64,
    /// Each file's size.
    pub filesize: u64,
    pub nrfiles: u32,
    /// fio's `filename`: the job's files by name, relative to the run's directory, shared
    /// by every copy and every job that names them (none: fsbench names them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filename: Vec<String>,
    /// fio's `directory`: where the job's files are, under the run's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<String>,
    /// At most this many files open at once (0: all); fsbench takes only all.
    #[serde(default)]
    pub openfiles: u32,
    #[serde(default)]
    pub create_on_open: bool,
    /// fio's `fallocate`: how the layout allocates files that are only written.
    #[serde(default)]
    pub fallocate: Fallocate,
    /// The job's files removed when it ends, untimed.
    #[serde(default)]
    pub unlink: bool,
    /// How long after the others the job starts: fio's `startdelay`, a range drawn from.
    #[serde(default)]
    pub startdelay_ms: (u64, u64),
    /// Bytes per second below which the job fails (fio's `ratemin`, over its whole time).
    #[serde(default)]
    pub ratemin: u64,
    /// fio's `verify`: how written blocks are stamped and checked once the writes end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<super::verify::Algorithm>,
    /// fio's `do_verify`: the check itself (off: the blocks are stamped only).
    #[serde(default)]
    pub do_verify: bool,
    /// Bytes per header (fio's `verify_interval`; 0: the smallest block size).
    #[serde(default)]
    pub verify_interval: u64,
    /// fio's `verify_pattern` (with `verify=pattern`) or `buffer_pattern`: what written
    /// blocks hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pattern: Vec<u8>,
    pub numjobs: u32,
    /// Where I/O starts in each file.
    pub offset: u64,
    pub direct: bool,
    pub invalidate: bool,
    pub engine: Engine,
    pub iodepth: u32,
    pub iodepth_batch_submit: u32,
    pub iodepth_batch_complete_min: u32,
    pub sqpoll: bool,
    pub hipri: bool,
    pub fixedbufs: bool,
    pub registerfiles: bool,
    pub fsync: u32,
    pub fdatasync: u32,
    pub end_fsync: bool,
    pub fsync_on_close: bool,
    pub runtime_ms: u64,
    pub time_based: bool,
    pub ramp_ms: u64,
    pub number_ios: u64,
    pub loops: u32,
    pub rate_iops: u64,
    /// Bytes per second.
    pub rate: u64,
    pub randrepeat: bool,
    pub randseed: u64,
    pub distribution: Distribution,
    pub norandommap: bool,
    /// The jobs of a fio job file that run at the same time as this one (no `stonewall`
    /// between them, fio's default), each on files of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beside: Vec<IoParams>,
}

/// fio's time values: a number with an optional unit, seconds when bare; in milliseconds.
pub(super) fn parse_time(key: &str, text: &str) -> anyhow::Result<u64> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits.parse().map_err(|_| {
        invalid(format!(
            "io: `{key}={text}` is not a time (e.g. 30, 500ms, 2m)"
        ))
    })?;
    let ms = match unit {
        "us" => Some(n / 1000),
        "ms" => Some(n),
        "" | "s" => n.checked_mul(1000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        _ => None,
    };
    ms.ok_or_else(|| invalid(format!("io: `{key}={text}`: units are us, ms, s, m, h")))
}

/// A `filename` or `directory` as fsbench takes it: relative, within the run's directory
/// (no `..`), since fsbench writes nowhere else.
fn inside_name(key: &str, name: &str) -> anyhow::Result<String> {
    let path = std::path::Path::new(name);
    if name.is_empty() || name.contains('\0') {
        return Err(invalid(format!("io: `{key}` needs a name")));
    }
    if path.is_absolute() {
        return Err(invalid(format!(
            "io: `{key}={name}` is outside the run's directory: fsbench writes only in the directory it was given (--dir) or the filesystem it made (--fs); give a name relative to it"
        )));
    }
    if path.components().any(|c| {
        !matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    }) {
        return Err(invalid(format!(
            "io: `{key}={name}` leaves the run's directory (`..`)"
        )));
    }
    Ok(name.trim_end_matches('/').to_string())
}

/// fio's `rw=PATTERN:MODIFIER`: for a sequential pattern a gap in bytes after each I/O
/// (negative: backwards), for a random one the number of I/Os per random offset.
fn rw_modifier(rw: Rw, text: &str) -> anyhow::Result<(i64, u32)> {
    let bad = |what: &str| invalid(format!("io: `rw={}:{text}`: {what}", rw.name()));
    if rw.random() {
        let n: u32 = text
            .parse()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| bad("a random pattern takes a count of I/Os per offset"))?;
        return Ok((0, n));
    }
    let (sign, size) = match text.strip_prefix('-') {
        Some(size) => (-1, size),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let size = fsbench_measure::units::parse_size(size)
        .ok()
        .and_then(|s| i64::try_from(s).ok())
        .ok_or_else(|| bad("a sequential pattern takes a size, e.g. 8k or -8k"))?;
    Ok((sign * size, 0))
}

/// fio's `TIME` or `MIN-MAX` (a delay drawn from the range at each run).
fn time_range(key: &str, text: &str) -> anyhow::Result<(u64, u64)> {
    let (lo, hi) = text.split_once('-').unwrap_or((text, text));
    let (lo, hi) = (parse_time(key, lo)?, parse_time(key, hi)?);
    if lo > hi {
        return Err(invalid(format!(
            "io: `{key}={text}`: MIN-MAX with MIN ≤ MAX"
        )));
    }
    Ok((lo, hi))
}

/// fio's `bssplit=4k/80:64k/20`: sizes and percentages; the percentages add up to 100.
fn parse_bssplit(text: &str) -> anyhow::Result<Vec<(u64, u32)>> {
    let bad = || {
        invalid(format!(
            "io: `bssplit={text}` is SIZE/PCT:SIZE/PCT..., percentages adding up to 100"
        ))
    };
    let split: Vec<(u64, u32)> = text
        .split(':')
        .map(|part| {
            let (size, pct) = part.split_once('/').ok_or_else(bad)?;
            let size = fsbench_measure::units::parse_size(size).map_err(|_| bad())?;
            let pct: u32 = pct.parse().map_err(|_| bad())?;
            if size == 0 || size > 256 << 20 {
                return Err(bad());
            }
            Ok((size, pct))
        })
        .collect::<anyhow::Result<_>>()?;
    if split.iter().map(|s| s.1).sum::<u32>() != 100 {
        return Err(bad());
    }
    Ok(split)
}

pub(super) fn build(p: &Parsed) -> anyhow::Result<IoParams> {
    let nrfiles = p.small("nrfiles").expect("nrfiles has a default");
    let offset = p.num("offset").expect("offset has a default");
    let filename = match p.text("filename") {
        Some(names) => names
            .split(':')
            .map(|n| inside_name("filename", n))
            .collect::<anyhow::Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    let directory = p
        .text("directory")
        .map(|d| inside_name("directory", d))
        .transpose()?;
    // As fio: `filename=a:b` is the job's files, however many `nrfiles` says.
    let nrfiles = match filename.len() {
        0 => nrfiles,
        n => u32::try_from(n).map_err(|_| invalid("io: too many `filename`s"))?,
    };
    // As fio: `size` alone is split over the files, each `offset` longer; `filesize` alone
    // makes `size` the files' sum.
    let size = p
        .num("size")
        .filter(|_| p.explicit("size") || !p.explicit("filesize"));
    let (size, filesize) = match (size, p.num("filesize")) {
        (Some(size), Some(filesize)) => (size, filesize),
        (Some(size), None) => (size, offset.saturating_add(size / u64::from(nrfiles))),
        (None, Some(filesize)) => (filesize.saturating_mul(u64::from(nrfiles)), filesize),
        (None, None) => return Err(invalid("io: `size` or `filesize` is needed")),
    };
    let bssplit = match p.text("bssplit") {
        Some(text) if p.explicit("bs") => {
            return Err(invalid(format!(
                "io: give `bs` or `bssplit={text}`, not both"
            )));
        }
        Some(text) => parse_bssplit(text)?,
        None => vec![(p.num("bs").expect("bs has a default"), 100)],
    };
    let time = |key| p.text(key).map_or(Ok(0), |t| parse_time(key, t));
    let rw = Rw::parse(p.text("rw").expect("rw has a default"));
    let verify_pattern = p
        .text("verify-pattern")
        .map(|t| super::verify::parse_pattern("verify_pattern", t))
        .transpose()?;
    // As fio: a `verify_pattern` alone verifies by the pattern.
    let verify = match p.text("verify") {
        Some("0" | "none") => None,
        Some(name) => Some(super::verify::Algorithm::parse(name)),
        None => verify_pattern
            .as_ref()
            .map(|_| super::verify::Algorithm::Pattern),
    };
    let pattern = match (verify_pattern, p.text("buffer-pattern")) {
        (Some(v), _) => v,
        (None, Some(b)) => super::verify::parse_pattern("buffer_pattern", b)?,
        (None, None) => Vec::new(),
    };
    let (seq_gap, seq_nr) = match p.text("rw-modifier") {
        None => (0, 0),
        Some(m) => rw_modifier(rw, m)?,
    };
    let custom = p.first_explicit(&["rw", "bs", "bssplit", "size"]);
    let iodepth = p.small("iodepth").expect("iodepth has a default");
    let engine = Engine::parse(p.text("ioengine").expect("ioengine has a default"));
    Ok(IoParams {
        preset: custom.is_none().then(|| p.preset.name.to_string()),
        job: None,
        rw,
        seq_gap,
        seq_nr,
        rwmixread: p.small("rwmixread").expect("has a default"),
        bssplit,
        size,
        filesize,
        nrfiles,
        filename,
        directory,
        openfiles: p.small("openfiles").expect("has a default"),
        create_on_open: p.flag("create-on-open"),
        fallocate: Fallocate::parse(p.text("fallocate").expect("has a default")),
        unlink: p.flag("unlink"),
        startdelay_ms: p
            .text("startdelay")
            .map_or(Ok((0, 0)), |t| time_range("startdelay", t))?,
        ratemin: p.num("ratemin").expect("has a default"),
        verify,
        do_verify: p.flag("do-verify"),
        verify_interval: p.num("verify-interval").unwrap_or(0),
        pattern,
        numjobs: p.small("numjobs").expect("has a default"),
        offset,
        direct: p.flag("direct"),
        invalidate: p.flag("invalidate"),
        engine,
        iodepth,
        iodepth_batch_submit: p.small("iodepth-batch-submit").unwrap_or(1),
        iodepth_batch_complete_min: p.small("iodepth-batch-complete-min").expect("default"),
        sqpoll: p.flag("sqpoll"),
        hipri: p.flag("hipri"),
        fixedbufs: p.flag("fixedbufs"),
        registerfiles: p.flag("registerfiles"),
        fsync: p.small("fsync").expect("default"),
        fdatasync: p.small("fdatasync").expect("default"),
        end_fsync: p.flag("end-fsync"),
        fsync_on_close: p.flag("fsync-on-close"),
        runtime_ms: time("runtime")?,
        time_based: p.flag("time-based"),
        ramp_ms: time("ramp-time")?,
        number_ios: p.num("number-ios").expect("default"),
        loops: p.small("loops").expect("default"),
        rate_iops: p.num("rate-iops").expect("default"),
        rate: p.num("rate").expect("default"),
        randrepeat: p.flag("randrepeat"),
        randseed: p.num("randseed").expect("default"),
        distribution: Distribution::parse(p.text("random-distribution").expect("default"))?,
        norandommap: p.flag("norandommap"),
        beside: Vec::new(),
    })
}

impl IoParams {
    #[cfg(test)]
    pub(crate) fn parse(args: &str) -> anyhow::Result<IoParams> {
        build(&super::KIND.parse_cli(args)?)
    }

    /// This job and the jobs beside it, in the job file's order.
    pub fn jobs(&self) -> impl Iterator<Item = &IoParams> {
        std::iter::once(self).chain(&self.beside)
    }

    pub fn max_bs(&self) -> u64 {
        self.bssplit.iter().map(|b| b.0).max().unwrap_or(0)
    }

    pub fn min_bs(&self) -> u64 {
        self.bssplit.iter().map(|b| b.0).min().unwrap_or(0)
    }

    /// I/Os in flight per job: the engine's depth (the synchronous ones have one).
    pub fn depth(&self) -> u32 {
        match self.engine {
            Engine::IoUring | Engine::Libaio => self.iodepth,
            _ => 1,
        }
    }

    /// The bytes one file's I/O covers: from `offset` to its end.
    pub(crate) fn region(&self) -> u64 {
        self.filesize.saturating_sub(self.offset)
    }
}

// Under MPI each rank has files of its own (in its own directory), aggregated as IOR does:
// no refusal.
impl IoParams {
    /// One job's I/O buffers: one block per slot in flight, aligned, for each of its copies.
    fn job_buffer_bytes(&self) -> u64 {
        (self.max_bs() + 4096)
            .saturating_mul(u64::from(self.depth()))
            .saturating_mul(u64::from(self.numjobs))
    }
}

impl IoParams {
    /// Bytes per verification header: `verify_interval`, or the smallest block.
    pub(crate) fn interval(&self) -> u64 {
        match self.verify_interval {
            0 => self.min_bs(),
            n => n,
        }
    }

    fn validate_verify(&self) -> anyhow::Result<()> {
        use super::verify::Algorithm;
        let Some(a) = self.verify else {
            return Ok(());
        };
        let no = |msg: String| Err(invalid(format!("io: `verify={}`: {msg}", a.name())));
        if self.rw.read_percent(self.rwmixread) == 100 {
            return no("a job that only reads has no written blocks to check (fsbench's files are fresh: fio's `verify_only` is not implemented)".into());
        }
        if !matches!(
            self.engine,
            Engine::Psync | Engine::Sync | Engine::Vsync | Engine::Pvsync | Engine::Pvsync2
        ) {
            return no(format!(
                "with ioengine={} is not implemented (the synchronous engines verify)",
                self.engine.name()
            ));
        }
        if a == Algorithm::Pattern && self.pattern.is_empty() {
            return no("needs `verify_pattern`".into());
        }
        let interval = self.interval();
        if self.bssplit.iter().any(|(bs, _)| bs % interval != 0)
            || interval <= a.overhead() as u64
            || self.offset % interval != 0
        {
            return no(format!(
                "`verify_interval` ({interval}) must divide every block size and the offset, and exceed the header's {} bytes",
                a.overhead()
            ));
        }
        Ok(())
    }
}

impl WorkloadParams for IoParams {
    const KIND: &'static WorkloadKind = &super::KIND;
    const REPORTS: &'static [&'static str] = &["fio", "fio-json"];

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    fn name(&self) -> String {
        let mut name = self
            .job
            .clone()
            .or_else(|| self.preset.clone())
            .unwrap_or_else(|| {
                let bs = if self.bssplit.len() == 1 {
                    compact_size(self.bssplit[0].0)
                } else {
                    let parts: Vec<String> = self
                        .bssplit
                        .iter()
                        .map(|(s, p)| format!("{}/{p}", compact_size(*s)))
                        .collect();
                    parts.join(":")
                };
                format!(
                    "{},bs={bs},size={}",
                    self.rw.name(),
                    compact_size(self.size)
                )
            });
        if self.engine != Engine::Psync {
            name.push_str(&format!(",{}", self.engine.name()));
        }
        if self.depth() > 1 {
            name.push_str(&format!(",iodepth={}", self.iodepth));
        }
        if self.direct {
            name.push_str(",direct");
        }
        if self.numjobs > 1 {
            name.push_str(&format!(",numjobs={}", self.numjobs));
        }
        if self.rate_iops > 0 {
            name.push_str(&format!(",rate_iops={}", self.rate_iops));
        }
        if self.rate > 0 {
            name.push_str(&format!(",rate={}", compact_size(self.rate)));
        }
        if self.time_based {
            name.push_str(&format!(",runtime={}ms", self.runtime_ms));
        }
        if !self.beside.is_empty() {
            name.push_str(&format!("+{} beside", self.beside.len()));
        }
        name
    }

    fn validate(&self) -> anyhow::Result<()> {
        self.beside.iter().try_for_each(WorkloadParams::validate)?;
        let no = |msg: String| Err(invalid(format!("io: {msg}")));
        if self.offset >= self.filesize {
            return no(format!(
                "`offset` ({}) leaves nothing of a {} file",
                format_bytes(self.offset),
                format_bytes(self.filesize)
            ));
        }
        if self.region() < self.max_bs() {
            return no(format!(
                "each file's I/O region ({}) is smaller than a block ({})",
                format_bytes(self.region()),
                format_bytes(self.max_bs())
            ));
        }
        if self.openfiles > 0 && self.openfiles < self.nrfiles && !self.engine.file_op() {
            return no(format!(
                "`openfiles={}` below nrfiles ({}): opening and closing files during a job is not implemented",
                self.openfiles, self.nrfiles
            ));
        }
        if self.create_on_open && !self.engine.file_op() {
            return no(
                "`create-on-open` with a data engine is not implemented: fsbench lays the files out before the job".into(),
            );
        }
        if self.engine.file_op() && self.ramp_ms > 0 {
            return no(format!(
                "`ramp-time` with ioengine={} would make its files untimed",
                self.engine.name()
            ));
        }
        self.validate_verify()?;
        if self.time_based && self.runtime_ms == 0 {
            return no("`time-based` needs a `runtime`".into());
        }
        if self.rate > 0 && self.rate_iops > 0 {
            return no("give `rate` or `rate-iops`, not both".into());
        }
        if self.fsync > 0 && self.fdatasync > 0 {
            return no("give `fsync` or `fdatasync`, not both".into());
        }
        // `iodepth` above 1 with a synchronous engine is taken as fio takes it: one I/O in
        // flight ([`IoParams::depth`]).
        if self.engine != Engine::IoUring && self.sqpoll {
            return no("`sqpoll` needs ioengine=io_uring".into());
        }
        if !matches!(self.engine, Engine::Pvsync2 | Engine::IoUring) && self.hipri {
            return no("`hipri` needs ioengine=pvsync2 or io_uring".into());
        }
        if self.hipri && !self.direct {
            return no("`hipri` (polled completions) needs `direct`".into());
        }
        if self.iodepth_batch_submit > self.depth()
            || self.iodepth_batch_complete_min > self.depth()
        {
            return no(format!(
                "`iodepth-batch-submit` and `iodepth-batch-complete-min` are at most iodepth ({})",
                self.depth()
            ));
        }
        if self
            .filesize
            .checked_mul(u64::from(self.nrfiles) * u64::from(self.numjobs))
            .is_none()
        {
            return no("files × size overflow 64 bits".into());
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let limit = if self.time_based {
            format!("for {} s", self.runtime_ms as f64 / 1000.0)
        } else {
            format!("{} pass(es) of {}", self.loops, format_bytes(self.size))
        };
        let skew = match self.distribution {
            Distribution::Random => String::new(),
            d => format!(", {}", d.text()),
        };
        format!(
            "fio-style {}{skew}: {} job(s) × {} file(s) of {}, {} at depth {}, {limit}",
            self.rw.name(),
            self.numjobs,
            self.nrfiles,
            format_bytes(self.filesize),
            self.engine.name(),
            self.depth(),
        ) + &match self.beside.len() {
            0 => String::new(),
            n => format!("; {n} more job(s) at the same time"),
        }
    }

    /// Every job's I/O buffers, of the jobs that run at the same time too.
    fn buffer_bytes(&self) -> u64 {
        self.jobs().map(IoParams::job_buffer_bytes).sum()
    }

    fn space_needed(&self) -> Option<SpaceNeed> {
        let mut need = SpaceNeed::exactly(0, 8);
        for job in self.jobs() {
            let files = u64::from(job.nrfiles).checked_mul(u64::from(job.numjobs))?;
            let bytes = job.filesize.checked_mul(files)?.checked_mul(21)? / 20;
            need.bytes = need.bytes.checked_add(bytes)?;
            need.inodes = need.inodes.checked_add(files)?;
        }
        need.ideal_bytes = need.bytes;
        Some(need)
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        Cow::Borrowed(super::PHASES)
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(super::Io::new(self.clone()))
    }

    fn threads(&self) -> u32 {
        self.jobs().map(|j| j.numjobs).sum()
    }

    fn needs(&self) -> Option<Need> {
        self.jobs().any(|j| j.direct).then_some(Need {
            capability: Capability::Direct,
            option: "`direct`",
        })
    }
}

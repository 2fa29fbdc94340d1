//! Workloads: each a re-implementation of one seed benchmark behind the [`Workload`] trait.
//!
//! A workload is a sequence of phases. The runner (or, later, an MPI coordinator) calls
//! [`Workload::run_phase`] for each phase in turn, with caches dropped and barriers in between,
//! so phases must not depend on anything but the workload's own state and the directory.

pub mod alloc;
pub mod archive;
pub mod atomic;
pub mod ffsb;
pub mod iozone;
pub mod rmtree;
pub mod tree;

use std::borrow::Cow;
use std::os::fd::{AsFd, BorrowedFd};

use rustix::io::Errno;

use serde::{Deserialize, Serialize};

use crate::error::{FsbenchError, invalid};
use crate::measure::{Figure, PhaseRecorder};

/// Description of one phase. Most workloads have a fixed list; `alloc` has one phase per
/// allocation method it was asked for.
#[derive(Debug, Clone)]
pub struct PhaseInfo {
    /// Machine name, e.g. `dir-create`.
    pub name: Cow<'static, str>,
    /// Column title in tables, e.g. `Directory create`.
    pub title: Cow<'static, str>,
    /// What one unit of the phase is, e.g. `dirs`: rates are printed as `dirs/s`.
    pub unit: &'static str,
    /// Whether the phase writes or reads data, so KiB/s is meaningful.
    pub moves_data: bool,
}

impl PhaseInfo {
    pub const fn fixed(
        name: &'static str,
        title: &'static str,
        unit: &'static str,
        moves_data: bool,
    ) -> PhaseInfo {
        PhaseInfo {
            name: Cow::Borrowed(name),
            title: Cow::Borrowed(title),
            unit,
            moves_data,
        }
    }
}

/// What a phase reports besides its measurement, gathered untimed after it (and its sync).
#[derive(Debug, Default)]
pub struct PhaseOutput {
    /// Throughput-matrix cells (the iozone workload).
    pub cells: Vec<iozone::MatrixCell>,
    /// Figures of the workload's own: extents per file, transactions per operation...
    pub figures: Vec<Figure>,
    /// What a reader must know about the figures.
    pub notes: Vec<String>,
    /// Why the phase measured nothing (a method the filesystem lacks): it has no figures.
    pub unsupported: Option<String>,
}

/// What happens to the filesystem between a phase and the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// Nothing: the next phase runs on the same mount.
    Keep,
    /// Unmount (timed), fsck (timed) and mount again: data durable, the check done with the
    /// phase's files in place (FFSB's e2fsck time), caches cold.
    Remount,
    /// Unmount and fsck as for `Remount`, then a freshly made filesystem for the next phase.
    Remake,
}

/// Space and inodes a workload needs on the filesystem under test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpaceNeed {
    /// Bytes the workload cannot run without: a target with less is refused.
    pub bytes: u64,
    pub inodes: u64,
    /// Bytes it would use in full, for sizing loop images (the iozone matrix skips files
    /// that do not fit, so it needs less than it can use); never below `bytes`.
    pub ideal_bytes: u64,
}

impl SpaceNeed {
    /// A need that is the same at minimum and in full.
    pub fn exactly(bytes: u64, inodes: u64) -> SpaceNeed {
        SpaceNeed {
            bytes,
            inodes,
            ideal_bytes: bytes,
        }
    }

    /// The larger of two needs, field by field (a suite needs what its largest workload needs).
    pub fn max(self, other: SpaceNeed) -> SpaceNeed {
        SpaceNeed {
            bytes: self.bytes.max(other.bytes),
            inodes: self.inodes.max(other.inodes),
            ideal_bytes: self.ideal_bytes.max(other.ideal_bytes),
        }
    }
}

/// One workload instance, holding its state between phases.
pub trait Workload: Send {
    /// Phases in the order they run.
    fn phases(&self) -> Cow<'static, [PhaseInfo]>;
    /// Units phase `phase` will complete, for progress bars and checks.
    fn expected_units(&self, phase: usize) -> u64;
    /// Runs one phase in `dir`, recording into `rec`.
    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError>;
    /// Untimed work after phase `phase` and its sync (counting extents, removing a method's
    /// file), and what the phase reports besides its measurement.
    fn after_phase(
        &mut self,
        _phase: usize,
        _dir: BorrowedFd<'_>,
    ) -> Result<PhaseOutput, FsbenchError> {
        Ok(PhaseOutput::default())
    }
    /// What the runner does to the filesystem after phase `phase`.
    fn boundary_after(&self, _phase: usize) -> Boundary {
        Boundary::Keep
    }
}

/// A buffer aligned for O_DIRECT (4 KiB covers every device's logical block).
pub struct Aligned {
    raw: Vec<u8>,
    offset: usize,
    len: usize,
}

impl Aligned {
    pub fn new(len: usize) -> Aligned {
        let raw = vec![0x5a; len + 4096];
        let offset = raw.as_ptr().align_offset(4096);
        Aligned { raw, offset, len }
    }

    pub fn buf(&mut self) -> &mut [u8] {
        &mut self.raw[self.offset..self.offset + self.len]
    }
}

/// Bytes free for the caller on the filesystem of `fd` (unknown: unlimited).
pub fn free_bytes(fd: impl AsFd) -> u64 {
    rustix::fs::fstatvfs(fd).map_or(u64::MAX, |s| s.f_bavail.saturating_mul(s.f_frsize))
}

/// The size of each of `files` files that makes them fit the filesystem of `dir`: `wanted`,
/// or less so that together they take at most 80% of the free space, rounded down to a
/// multiple of `align` (never below it). The second value is the free space, when the size
/// had to shrink, for saying so.
pub fn fit_size(dir: BorrowedFd<'_>, wanted: u64, files: u64, align: u64) -> (u64, Option<u64>) {
    let free = free_bytes(dir);
    let fits = ((free as f64 * 0.8) as u64 / files.max(1)) / align * align;
    if fits < wanted {
        (fits.max(align), Some(free))
    } else {
        (wanted, None)
    }
}

/// Writes all of `buf` (short writes continue); the bytes written.
pub fn write_all(file: impl AsFd, buf: &[u8]) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        done += rustix::io::write(&file, &buf[done..])?;
    }
    Ok(done)
}

/// Writes all of `buf` at `off`; the bytes written.
pub fn pwrite_all(file: impl AsFd, buf: &[u8], off: u64) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        done += rustix::io::pwrite(&file, &buf[done..], off + done as u64)?;
    }
    Ok(done)
}

/// Reads until `buf` is full or the file ends; the bytes read.
pub fn read_full(file: impl AsFd, buf: &mut [u8]) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        match rustix::io::read(&file, &mut buf[done..])? {
            0 => break,
            n => done += n,
        }
    }
    Ok(done)
}

/// Reads at `off` until `buf` is full or the file ends; the bytes read.
pub fn pread_full(file: impl AsFd, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        match rustix::io::pread(&file, &mut buf[done..], off + done as u64)? {
            0 => break,
            n => done += n,
        }
    }
    Ok(done)
}

/// Writes `value`'s decimal digits into `buf` at `at`; returns the index after them. Names in
/// hot loops are built this way, without allocating.
pub fn push_decimal(buf: &mut [u8], mut at: usize, value: u64) -> usize {
    let mut digits = [0u8; 20];
    let mut len = 0;
    let mut v = value;
    loop {
        digits[len] = b'0' + (v % 10) as u8;
        len += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for d in digits[..len].iter().rev() {
        buf[at] = *d;
        at += 1;
    }
    at
}

/// What a suite asks to run: parsed from `--workload` or a suite file, validated, serializable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum WorkloadSpec {
    Tree(tree::TreeParams),
    Archive(archive::ArchiveParams),
    Atomic(atomic::AtomicParams),
    Iozone(iozone::IozoneParams),
    Alloc(alloc::AllocParams),
    Ffsb(ffsb::FfsbParams),
}

impl WorkloadSpec {
    /// Parses `KIND[:ARGS]`, e.g. `tree:small-shallow` or `tree:dirs=3,files=4,size=1,levels=10`.
    pub fn parse(text: &str) -> anyhow::Result<WorkloadSpec> {
        let (kind, args) = text.split_once(':').unwrap_or((text, ""));
        match kind.trim() {
            "tree" => Ok(WorkloadSpec::Tree(tree::TreeParams::parse(args)?)),
            "archive" => Ok(WorkloadSpec::Archive(archive::ArchiveParams::parse(args)?)),
            "atomic" => Ok(WorkloadSpec::Atomic(atomic::AtomicParams::parse(args)?)),
            "iozone" => Ok(WorkloadSpec::Iozone(iozone::IozoneParams::parse(args)?)),
            "alloc" => Ok(WorkloadSpec::Alloc(alloc::AllocParams::parse(args)?)),
            "ffsb" => Ok(WorkloadSpec::Ffsb(ffsb::FfsbParams::parse(args)?)),
            // The and the seed's name for the preset.
            "ffsb-large-write" => Ok(WorkloadSpec::Ffsb(ffsb::FfsbParams::parse(&format!(
                "large-write,{args}"
            ))?)),
            other => Err(invalid(format!(
                "unknown workload `{other}`: available workloads are: tree, archive, atomic, iozone, alloc, ffsb, ffsb-large-write"
            ))),
        }
    }

    /// Short label used in tables, e.g. `tree:small-shallow`.
    pub fn label(&self) -> String {
        match self {
            WorkloadSpec::Tree(p) => format!("tree:{}", p.name()),
            WorkloadSpec::Archive(p) => format!("archive:{}", p.name()),
            WorkloadSpec::Atomic(p) => format!("atomic:{}", p.name()),
            WorkloadSpec::Iozone(p) => format!("iozone:{}", p.name()),
            WorkloadSpec::Alloc(p) => format!("alloc:{}", p.name()),
            WorkloadSpec::Ffsb(p) => format!("ffsb:{}", p.name()),
        }
    }

    /// One line describing what the workload does, with its totals.
    pub fn describe(&self) -> String {
        match self {
            WorkloadSpec::Tree(p) => p.describe(),
            WorkloadSpec::Archive(p) => p.describe(),
            WorkloadSpec::Atomic(p) => p.describe(),
            WorkloadSpec::Iozone(p) => p.describe(),
            WorkloadSpec::Alloc(p) => p.describe(),
            WorkloadSpec::Ffsb(p) => p.describe(),
        }
    }

    pub fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        match self {
            WorkloadSpec::Tree(_) => Cow::Borrowed(tree::PHASES),
            WorkloadSpec::Archive(_) => Cow::Borrowed(archive::PHASES),
            WorkloadSpec::Atomic(_) => Cow::Borrowed(atomic::PHASES),
            WorkloadSpec::Iozone(_) => Cow::Borrowed(iozone::PHASES),
            WorkloadSpec::Alloc(p) => Cow::Owned(p.phases()),
            WorkloadSpec::Ffsb(_) => Cow::Borrowed(ffsb::PHASES),
        }
    }

    pub fn space_needed(&self) -> SpaceNeed {
        match self {
            WorkloadSpec::Tree(p) => p.space_needed(),
            WorkloadSpec::Archive(p) => p.space_needed(),
            WorkloadSpec::Atomic(p) => p.space_needed(),
            WorkloadSpec::Iozone(p) => p.space_needed(),
            WorkloadSpec::Alloc(p) => p.space_needed(),
            WorkloadSpec::Ffsb(p) => p.space_needed(),
        }
    }

    /// A fresh instance, ready for its first phase.
    pub fn instantiate(&self) -> Box<dyn Workload> {
        match self {
            WorkloadSpec::Tree(p) => {
                Box::new(tree::Tree::new(p.clone(), tree::default_base_name()))
            }
            WorkloadSpec::Archive(p) => Box::new(archive::Archive::new(p.clone())),
            WorkloadSpec::Atomic(p) => Box::new(atomic::Atomic::new(p.clone())),
            WorkloadSpec::Iozone(p) => Box::new(iozone::Iozone::new(p.clone())),
            WorkloadSpec::Alloc(p) => Box::new(alloc::Alloc::new(p.clone())),
            WorkloadSpec::Ffsb(p) => Box::new(ffsb::Ffsb::new(p.clone())),
        }
    }

    /// Checks parameters; the runner calls it before anything is created.
    pub fn validate(&self) -> anyhow::Result<()> {
        match self {
            WorkloadSpec::Tree(p) => p.validate(),
            WorkloadSpec::Archive(p) => p.validate(),
            WorkloadSpec::Atomic(p) => p.validate(),
            WorkloadSpec::Iozone(p) => p.validate(),
            WorkloadSpec::Alloc(p) => p.validate(),
            WorkloadSpec::Ffsb(p) => p.validate(),
        }
    }
}

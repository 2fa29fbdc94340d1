//! Workloads: each a re-implementation of one seed benchmark behind the [`Workload`] trait.
//!
//! A workload is a sequence of phases. The runner (or, later, an MPI coordinator) calls
//! [`Workload::run_phase`] for each phase in turn, with caches dropped and barriers in between,
//! so phases must not depend on anything but the workload's own state and the directory.

pub mod archive;
pub mod atomic;
pub mod iozone;
pub mod tree;

use std::os::fd::BorrowedFd;

use serde::{Deserialize, Serialize};

use crate::error::{FsbenchError, invalid};
use crate::measure::PhaseRecorder;

/// Static description of one phase.
#[derive(Debug)]
pub struct PhaseInfo {
    /// Machine name, e.g. `dir-create`.
    pub name: &'static str,
    /// Column title in tables, e.g. `Directory create`.
    pub title: &'static str,
    /// What one unit of the phase is, e.g. `dirs`: rates are printed as `dirs/s`.
    pub unit: &'static str,
    /// Whether the phase writes or reads data, so KiB/s is meaningful.
    pub moves_data: bool,
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
    fn phases(&self) -> &'static [PhaseInfo];
    /// Units phase `phase` will complete, for progress bars and checks.
    fn expected_units(&self, phase: usize) -> u64;
    /// Runs one phase in `dir`, recording into `rec`.
    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError>;
    /// The throughput-matrix cells the last phase measured (matrix workloads only).
    fn take_cells(&mut self) -> Vec<iozone::MatrixCell> {
        Vec::new()
    }
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
            other => Err(invalid(format!(
                "unknown workload `{other}`: available workloads are: tree, archive, atomic, iozone"
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
        }
    }

    /// One line describing what the workload does, with its totals.
    pub fn describe(&self) -> String {
        match self {
            WorkloadSpec::Tree(p) => p.describe(),
            WorkloadSpec::Archive(p) => p.describe(),
            WorkloadSpec::Atomic(p) => p.describe(),
            WorkloadSpec::Iozone(p) => p.describe(),
        }
    }

    pub fn phases(&self) -> &'static [PhaseInfo] {
        match self {
            WorkloadSpec::Tree(_) => tree::PHASES,
            WorkloadSpec::Archive(_) => archive::PHASES,
            WorkloadSpec::Atomic(_) => atomic::PHASES,
            WorkloadSpec::Iozone(_) => iozone::PHASES,
        }
    }

    pub fn space_needed(&self) -> SpaceNeed {
        match self {
            WorkloadSpec::Tree(p) => p.space_needed(),
            WorkloadSpec::Archive(p) => p.space_needed(),
            WorkloadSpec::Atomic(p) => p.space_needed(),
            WorkloadSpec::Iozone(p) => p.space_needed(),
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
        }
    }

    /// Checks parameters; the runner calls it before anything is created.
    pub fn validate(&self) -> anyhow::Result<()> {
        match self {
            WorkloadSpec::Tree(p) => p.validate(),
            WorkloadSpec::Archive(p) => p.validate(),
            WorkloadSpec::Atomic(p) => p.validate(),
            WorkloadSpec::Iozone(p) => p.validate(),
        }
    }
}

//! What a suite asks a workload to run, as kept (its kind and parameters), and what a run
//! records of a workload: its phases and its commands' output.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// What a suite asks to run, as it is kept: the workload's registered name and its
/// parameters. Suite files give options (`preset = "quick"`), databases the parameters' own
/// fields; the workloads' `Params::of` reads either.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    pub kind: String,
    #[serde(flatten)]
    pub params: serde_json::Map<String, serde_json::Value>,
}

/// Description of one phase. Most workloads have a fixed list; `alloc` has one phase per
/// allocation method it was asked for. Recorded with the suite (see
/// [`crate::results::WorkloadRecord`]), so reports read it from there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseInfo {
    /// The phase's one name in every output (tables, JSON, CSV, the report), e.g.
    /// `dir-create`.
    pub name: Cow<'static, str>,
    /// What one unit of the phase is, e.g. `dirs`: rates are printed as `dirs/s`.
    pub unit: Cow<'static, str>,
    /// Whether the phase writes or reads data, so KiB/s is meaningful.
    pub moves_data: bool,
    /// Whether one rate sums the phase up; a matrix (IOzone's cells) measures many things,
    /// and one overall rate would mix them all.
    pub has_rate: bool,
    /// Whether the phase is compared: an untimed one (io's file layout, set-up the user
    /// should see) is recorded and shown, but left out of verdicts, ranks and answers.
    pub timed: bool,
}

impl PhaseInfo {
    pub const fn fixed(name: &'static str, unit: &'static str, moves_data: bool) -> PhaseInfo {
        PhaseInfo {
            name: Cow::Borrowed(name),
            unit: Cow::Borrowed(unit),
            moves_data,
            has_rate: true,
            timed: true,
        }
    }

    /// A phase recorded and shown but never compared (set-up, as io's file layout).
    pub const fn untimed(name: &'static str, unit: &'static str, moves_data: bool) -> PhaseInfo {
        PhaseInfo {
            name: Cow::Borrowed(name),
            unit: Cow::Borrowed(unit),
            moves_data,
            has_rate: true,
            timed: false,
        }
    }

    /// A phase whose figures are a matrix of cells, with no overall rate.
    pub const fn matrix(name: &'static str, unit: &'static str) -> PhaseInfo {
        PhaseInfo {
            name: Cow::Borrowed(name),
            unit: Cow::Borrowed(unit),
            moves_data: true,
            has_rate: false,
            timed: true,
        }
    }
}

/// The end of what one command of a run wrote (at most 64 KiB of each stream).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct KeptOutput {
    /// `setup`, `phase `NAME``, `NAME items` or `cleanup`.
    pub step: String,
    pub stdout: String,
    pub stderr: String,
}

/// What a parallel phase's workers are: processes (forked before the phase, as fio's jobs
/// and MPI's ranks are), or threads of fsbench's process, each with a descriptor table of its
/// own. Processes share nothing the kernel keeps per process (an address space and its
/// locks, a signal table, an allocator); threads do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerMode {
    #[default]
    Processes,
    Threads,
}

impl WorkerMode {
    /// The option values, `workers=processes|threads`.
    pub const NAMES: &'static [&'static str] = &["processes", "threads"];

    pub fn name(self) -> &'static str {
        match self {
            WorkerMode::Processes => "processes",
            WorkerMode::Threads => "threads",
        }
    }

    /// The mode an option value names.
    pub fn named(name: &str) -> Option<WorkerMode> {
        match name {
            "processes" => Some(WorkerMode::Processes),
            "threads" => Some(WorkerMode::Threads),
            _ => None,
        }
    }
}

/// How a run's parallel phases ran: this many workers, of this kind (a run records it; a
/// workload of one worker has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workers {
    pub mode: WorkerMode,
    pub count: u32,
}

impl std::fmt::Display for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.count, self.mode.name())
    }
}

//! Workloads: each a re-implementation of one seed benchmark (or the user's own commands and
//! captured calls), one folder each. A workload's parameter type says everything about it in
//! one place, its [`WorkloadParams`] implementation (its option table, phases, needs, MPI
//! rules, reports, advice); [`Params`] holds any one of them, and the registry lists them.
//!
//! A workload is a sequence of phases. The runner (or an MPI rank) calls
//! [`Workload::run_phase`] for each phase in turn, with caches dropped and barriers in between,
//! so phases must not depend on anything but the workload's own state and the directory.

pub(crate) mod alloc;
pub mod archive;
pub(crate) mod atomic;
pub mod command;
pub mod ffsb;
pub mod filebench;
pub mod io;
pub mod iozone;
mod options;
pub mod oracle;
pub(crate) mod parallel;
mod registry;
pub use parallel::strays;
pub mod replay;
pub mod tree;
pub(crate) mod xattr;

use std::borrow::Cow;
use std::os::fd::BorrowedFd;

use serde::Serialize;
use serde::de::DeserializeOwned;

use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::PhaseRecorder;
use fsbench_model::aging::AgeProfile;
use fsbench_model::filesystem::Capability;
use fsbench_model::measurement::Figure;
use fsbench_model::workload::{KeptOutput, PhaseInfo};
pub use options::{Parsed, WorkloadKind};
pub use registry::{Params, Registered, WORKLOADS, more_work_advice, record_workloads, registered};

/// What a phase reports besides its measurement, gathered untimed after it (and its sync).
#[derive(Debug, Default)]
pub struct PhaseOutput {
    /// Figures of the workload's own: extents per file, transactions per operation, the cells
    /// of a throughput matrix (figures with dimensions)...
    pub figures: Vec<Figure>,
    /// What a reader must know about the figures.
    pub notes: Vec<String>,
    /// Why the phase measured nothing (a method the filesystem lacks): it has no figures.
    pub unsupported: Option<String>,
    /// Why the phase had nothing to do (`no files`: an empty file set): it has no figures, so
    /// no rate of 0 that would read as a measurement.
    pub idle: Option<String>,
    /// Units of work known only after the phase (a user's command that prints a count):
    /// they replace the phase's count.
    pub units: Option<u64>,
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
    /// Untimed work before the first phase, on the run's fresh filesystem (the user's setup
    /// command); `round` is the run's, `cancel` the flag Ctrl-C sets.
    fn setup(
        &mut self,
        _dir: BorrowedFd<'_>,
        _round: u32,
        _cancel: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<(), FsbenchError> {
        Ok(())
    }
    /// What the filesystem under test is declared to lack (a user driver's flags), told
    /// before setup: a workload that counts extents says "unsupported" without FIEMAP.
    fn filesystem_lacks(&mut self, _lacks: &[fsbench_model::filesystem::Capability]) {}
    /// Untimed work just before phase `phase` starts its clock (decompressing an archive).
    fn before_phase(&mut self, _phase: usize) -> Result<(), FsbenchError> {
        Ok(())
    }
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
    /// The output of the commands the run ran (the tails kept), failed ones included.
    fn kept_output(&mut self) -> Vec<KeptOutput> {
        Vec::new()
    }
    /// A crash-recorded run: the workload notes what its durability calls covered into
    /// `oracle` (those that know their calls keep it; the others are checked only for
    /// consistency).
    fn record_durability(&mut self, _oracle: oracle::Oracle) {}
}

/// Everything a workload says about itself, implemented by its parameter type: the registry
/// reads it, [`Params`] hands it on, and nothing outside the workload's folder asks which
/// workload it is. A method left out takes its default, which is what most workloads say.
pub trait WorkloadParams:
    Clone + std::fmt::Debug + PartialEq + Serialize + DeserializeOwned + 'static
{
    /// Its option table: the stable name stored in databases (never change it), its options,
    /// presets and aliases.
    const KIND: &'static WorkloadKind;
    /// The report formats of its own (`fsbench export --format NAME`, by name in fsbench's
    /// report registry): a text report among them also leads the terminal's tables.
    const REPORTS: &'static [&'static str] = &[];

    /// The parameters that parsed options give.
    fn build(options: &Parsed) -> anyhow::Result<Self>;
    /// The label's part after `KIND:` (a preset's name, or the settings).
    fn name(&self) -> String;
    /// One line describing what the workload does, with its totals.
    fn describe(&self) -> String;
    /// Checks parameters; the runner calls it before anything is created.
    fn validate(&self) -> anyhow::Result<()>;
    /// Space and inodes it needs; `None` when its sizes and counts overflow 64 bits.
    fn space_needed(&self) -> Option<SpaceNeed>;
    /// Its phases, in the order they run.
    fn phases(&self) -> Cow<'static, [PhaseInfo]>;
    /// A fresh instance, ready for its first phase.
    fn instantiate(&self) -> Box<dyn Workload>;

    /// Bytes of I/O buffers it allocates up front (checked against the machine's memory).
    fn buffer_bytes(&self) -> u64 {
        0
    }
    /// Threads that make its calls at once (the harness ceiling is measured at this count).
    fn threads(&self) -> u32 {
        1
    }
    /// Whether its parallel workers are processes or threads (where the workload has them).
    fn worker_mode(&self) -> Option<fsbench_model::workload::WorkerMode> {
        None
    }
    /// What these settings need of the filesystem: a user driver that declares it lacks one
    /// is refused before anything is made.
    fn needs(&self) -> Option<Need> {
        None
    }
    /// The aging it asks for itself before its phases (FFSB's `agefs=1`).
    fn age_profile(&self) -> Option<AgeProfile> {
        None
    }
    /// How to give it more work, in the settings it has: by default its option table's
    /// (a larger preset, the options that grow the work).
    fn more_work_advice(&self) -> String {
        Self::KIND.more_work_advice()
    }
    /// Whether its phases are the user's commands, which fsbench's own harness ceiling says
    /// nothing about.
    fn runs_user_commands(&self) -> bool {
        false
    }

    /// Why it cannot run under MPI; `None`: each rank runs it in a directory of its own and
    /// rank 0 aggregates their phases.
    fn mpi_refusal(&self) -> Option<&'static str> {
        None
    }
    /// Whether its ranks can share one directory (`--shared-dir`), each naming its files
    /// with its rank.
    fn mpi_shares_directory(&self) -> bool {
        false
    }
    /// The phase that `--stonewall` stops at its deadline, or why it cannot stop this one.
    /// Refused rather than only counted: a count taken from the progress series while every
    /// rank still did all its work would be a different figure under mdtest's name.
    fn stonewall_phase(&self) -> Result<&'static str, &'static str> {
        Err(
            "only tree's file create stops at the deadline (mdtest -W stops file creation); \
             this workload's phases are of fixed sizes that its later phases need whole",
        )
    }
    /// The phases in which a rank acts on another rank's files when the ranks shift (mdtest
    /// `-N`); `shared_dir`: the ranks share one directory.
    fn shifted_phases(&self, _shared_dir: bool) -> &'static [&'static str] {
        &[]
    }
    /// The instance that an MPI rank runs; by default the workload's own, in the rank's own
    /// directory.
    fn rank_instance(&self, _rank: &RankShare<'_>) -> Box<dyn Workload> {
        self.instantiate()
    }
}

/// A capability the settings of a workload need, and the setting that needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub capability: Capability,
    /// The setting, as the refusal names it: "`direct`".
    pub option: &'static str,
}

/// Who an MPI rank is among the ranks that run a workload together.
pub struct RankShare<'a> {
    pub rank: usize,
    /// The directory all ranks share (`--shared-dir`), by its name in the run's directory;
    /// `None`: each rank works in a directory of its own.
    pub shared_dir: Option<&'a str>,
    /// The deadline of the ranks' stonewall (`--stonewall`).
    pub stonewall: Option<&'a tree::Stonewall>,
}

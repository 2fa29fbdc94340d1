//! The results of a suite — runs, phases, summaries, warnings — as the terminal tables, the
//! JSON document and the results database read them.

use serde::{Deserialize, Serialize};

use crate::config::FsConfig;
use crate::measurement::{Dim, Figure, PhaseMeasurement, PhaseShape};
use crate::suite::Suite;
use crate::system::SystemInfo;
use crate::testbed::{BlockInfo, FsckOutcome, LoopInfo, RunTestbed, SuiteTestbed};
use crate::workload::{KeptOutput, PhaseInfo};

pub mod ceiling;
pub mod crash;
mod summary;

use ceiling::Ceiling;
pub use summary::{CiMethod, Summary};

/// Version of the JSON document; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SuiteStatus {
    /// Still running (as seen from the results database).
    Running,
    Completed,
    Interrupted,
    Failed,
    /// Its process died without saying how it ended (SIGKILL, power loss): resumable.
    Incomplete,
}

/// The status as stored and printed: `completed`, `interrupted`, …
impl std::fmt::Display for SuiteStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = serde_json::to_value(self).map_err(|_| std::fmt::Error)?;
        f.write_str(name.as_str().unwrap_or_default())
    }
}

/// Everything one `fsbench run` produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SuiteResult {
    pub schema_version: u32,
    /// ID in the results database, when saved there.
    pub id: Option<i64>,
    pub started_at: String,
    pub finished_at: String,
    pub status: SuiteStatus,
    pub error: Option<String>,
    pub suite: Suite,
    pub system: SystemInfo,
    pub target: TargetInfo,
    pub configurations: Vec<ConfigInfo>,
    pub skipped: Vec<Skipped>,
    pub runs: Vec<RunRecord>,
    pub summaries: Vec<MetricSummary>,
    pub warnings: Vec<Warning>,
    /// The storage stack under the suite, its hash and the load average at start and end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub testbed: Option<SuiteTestbed>,
    /// The harness ceilings of the suite's workloads on this machine (their phases on tmpfs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ceilings: Vec<Ceiling>,
    /// The suite's workloads as they ran, by workload key: statistics and reports read
    /// these, never today's workload code. Empty in a suite stored by an older fsbench until
    /// The workloads' code fills it when the suite is made, and once on load for a suite
    /// stored before the record.
    #[serde(default)]
    pub workload_records: Vec<WorkloadRecord>,
}

/// What statistics and reports need of a workload, recorded when the suite is made: its
/// label, description and phases (names, units, directions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadRecord {
    pub label: String,
    pub description: String,
    pub phases: Vec<PhaseInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetInfo {
    pub description: String,
    pub image_size: Option<u64>,
    /// The device written to: the block device, or the one holding the images or directory.
    pub device: Option<BlockInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfigInfo {
    #[serde(flatten)]
    pub config: FsConfig,
    pub mkfs_version: Option<String>,
    pub fsck_version: Option<String>,
    /// The full mkfs command line of the first run.
    pub mkfs_command: Option<String>,
    /// Mount options as /proc/self/mounts showed them in the first run.
    pub mount_options: Option<String>,
    /// What its crash states showed (`crash=N`), one check a workload, beside its speed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crash: Vec<crash::CrashSummary>,
}

/// A configuration that did not run, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Skipped {
    pub label: String,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    Ok,
    /// fsck found the filesystem inconsistent after the run.
    FsckFailed,
    Failed,
    Interrupted,
}

/// Which configuration of its suite a run belongs to: its position in
/// [`SuiteResult::configurations`]. Stored with every run, so that resume and reports find a
/// run's configuration without matching label text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ConfigKey(pub u32);

/// Which workload of its suite a run belongs to: its position in the suite's `workloads`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WorkloadKey(pub u32);

/// One run of one workload on one freshly made configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// Round, from 1; every configuration runs once per round.
    pub run: u32,
    /// Position within the round (configurations are rotated every round).
    pub position: u32,
    pub config_key: ConfigKey,
    pub workload_key: WorkloadKey,
    /// The configuration's label and the workload's, for people and tables.
    pub config: String,
    pub workload: String,
    pub started_at: String,
    pub status: RunStatus,
    pub error: Option<String>,
    pub source: String,
    pub mkfs_secs: Option<f64>,
    pub mount_options: String,
    pub phases: Vec<PhaseRecord>,
    pub unmount_secs: Option<f64>,
    pub fsck: Option<FsckOutcome>,
    /// Set when calls failed or members were refused: the run completed, but the tree it made is
    /// not the whole tree (as btrfs "fails the test" on hard links in the BackupPC tar report to
    /// the kernel mailing list).
    #[serde(default)]
    pub incomplete: Option<String>,
    /// The run's loop device as sysfs showed it while mounted (direct I/O or buffered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_device: Option<LoopInfo>,
    /// The stack as this run saw it (its hash, what changed since the suite started) and the
    /// load average around it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub testbed: Option<RunTestbed>,
    /// How its filesystem was aged and filled before the phases (none: fresh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preparation: Option<crate::aging::Preparation>,
    /// The free-space probe after the run's phases (`probe_after`), before the last unmount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_after: Option<crate::aging::Probe>,
    /// What the user's commands wrote (the command workload), step by step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output: Vec<KeptOutput>,
    /// How many workers its parallel phases ran on, processes or threads (none: one; runs
    /// recorded before fsbench had the choice say nothing, and ran threads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<crate::workload::Workers>,
}

impl RunRecord {
    /// What failed, phase by phase, e.g. `extract: EMLINK ×1,001`.
    pub fn failure_summary(&self) -> Option<String> {
        let parts: Vec<String> = self
            .phases
            .iter()
            .filter_map(|p| Some(format!("{}: {}", p.name, p.measurement.failure_summary()?)))
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// One phase of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseRecord {
    pub name: String,
    #[serde(flatten)]
    pub measurement: PhaseMeasurement,
    /// Whether caches were synced and dropped right before the phase.
    pub caches_dropped: bool,
    /// Time the sync right after the phase took: deferred work the phase left behind.
    pub sync_after_ns: Option<u64>,
    /// Units completed, sampled every 100 ms: [milliseconds since start, units].
    pub progress: Vec<[u64; 2]>,
    /// Under MPI, each rank's own series (by rank), its times from the earliest rank's start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_progress: Vec<Vec<[u64; 2]>>,
    /// The workload's own figures (extents, transactions per operation, fsck after the phase,
    /// the cells of a throughput matrix as figures with dimensions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<Figure>,
    /// What a reader must know about this phase's figures (e.g. a method not supported).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Why the phase measured nothing: an operation the filesystem does not support (native
    /// fallocate on ext2). Such a phase has no figures, rather than a meaningless time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<String>,
    /// Why the phase had nothing to do (`no files`): no figures, only this in the outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<String>,
    /// Steady state after warm-up (MSER-5) and first-done / last-done of several threads.
    #[serde(default, skip_serializing_if = "PhaseShape::is_empty")]
    pub shape: PhaseShape,
}

/// The statistics of one figure of one configuration across its successful runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricSummary {
    pub config: String,
    pub workload: String,
    /// A phase name, or `lifecycle` for mkfs, unmount and fsck.
    pub phase: String,
    pub metric: String,
    /// The figure's place in a breakdown (an IOzone cell's test, file and record size).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dims: Vec<Dim>,
    pub unit: String,
    pub higher_is_better: bool,
    #[serde(flatten)]
    pub summary: Summary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WarningKind {
    FewRuns,
    ShortPhase,
    HighVariation,
    CachesNotDropped,
    IncompleteTree,
    FsckFailed,
    /// The storage stack (tunables, queue settings, kernel) changed while the suite ran.
    StackChanged,
    /// A phase's rate never settled within its time (MSER-5's warm-up past half the phase).
    NoSteadyState,
    /// A phase's rate is over 80% of the harness ceiling: mostly fsbench's and the VFS's cost.
    HarnessBound,
    /// Phases that ran faster than their round's harness ceiling: not comparable, never bound.
    CeilingOutrun,
    /// Loop devices buffered in the host's page cache: figures partly the host's memory.
    LoopBuffered,
    /// The load average was above the CPUs, or other fsbench runs ran, when the suite began.
    BusyMachine,
    /// An aged configuration whose free space the aging left no more fragmented than fresh.
    NotAged,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Warning {
    pub kind: WarningKind,
    pub config: Option<String>,
    pub workload: Option<String>,
    pub phase: Option<String>,
    pub message: String,
}

impl SuiteResult {
    /// The suite's name, or what it runs on what (its recorded workloads' and its
    /// configurations' labels).
    pub fn display_name(&self) -> String {
        let workloads: Vec<String> = self
            .workload_records
            .iter()
            .map(|w| w.label.clone())
            .collect();
        let configurations: Vec<String> = (self.configurations.iter())
            .map(|c| c.config.label.clone())
            .collect();
        self.suite.display_name(&workloads, &configurations)
    }

    /// The recorded phases of the workload a run ran (by its key); none when unrecorded.
    pub fn phases_of(&self, run: &RunRecord) -> &[PhaseInfo] {
        (self.workload_records.get(run.workload_key.0 as usize)).map_or(&[], |w| &w.phases)
    }

    /// The record of the workload labelled `workload`.
    pub fn workload_record(&self, workload: &str) -> Option<&WorkloadRecord> {
        self.workload_records.iter().find(|w| w.label == workload)
    }

    /// A suite's result as it starts: what it runs, on what, and nothing run yet.
    pub fn new(
        suite: Suite,
        system: SystemInfo,
        target: TargetInfo,
        configurations: Vec<ConfigInfo>,
        skipped: Vec<Skipped>,
        started_at: String,
    ) -> SuiteResult {
        SuiteResult {
            schema_version: SCHEMA_VERSION,
            id: None,
            started_at,
            finished_at: String::new(),
            status: SuiteStatus::Running,
            error: None,
            suite,
            system,
            target,
            configurations,
            skipped,
            runs: Vec::new(),
            summaries: Vec::new(),
            warnings: Vec::new(),
            testbed: None,
            ceilings: Vec::new(),
            workload_records: Vec::new(),
        }
    }

    /// An empty, completed result of the default suite on a made-up machine, for unit tests
    /// of what consumes results (statistics, store and reports test against it from their
    /// own crates).
    #[doc(hidden)]
    pub fn for_tests() -> SuiteResult {
        let system = SystemInfo {
            hostname: "test".into(),
            kernel_release: String::new(),
            kernel_version: String::new(),
            arch: std::env::consts::ARCH.into(),
            cpu_model: String::new(),
            cpus: 1,
            memory_bytes: 0,
            fsbench_version: env!("CARGO_PKG_VERSION").into(),
            root: false,
        };
        let target = TargetInfo {
            description: "test".into(),
            image_size: None,
            device: None,
        };
        let mut r = SuiteResult::new(
            Suite::default(),
            system,
            target,
            Vec::new(),
            Vec::new(),
            String::new(),
        );
        r.status = SuiteStatus::Completed;
        r
    }

    /// The (workload label, phase) pairs its workloads mark untimed (io's layout): shown,
    /// never compared nor warned about.
    pub fn untimed_phases(&self) -> Vec<(String, String)> {
        let phases = (self.workload_records.iter()).flat_map(|w| {
            (w.phases.iter())
                .filter(|p| !p.timed)
                .map(|p| (w.label.clone(), p.name.to_string()))
        });
        phases.collect()
    }

    /// The summary of one figure without dimensions, if any run produced it.
    pub fn summary(
        &self,
        config: &str,
        workload: &str,
        phase: &str,
        metric: &str,
    ) -> Option<&MetricSummary> {
        self.summaries.iter().find(|s| {
            s.config == config
                && s.workload == workload
                && s.phase == phase
                && s.metric == metric
                && s.dims.is_empty()
        })
    }
}

//! The result data model — runs, phases, summaries, warnings — shared by the terminal tables,
//! the JSON document and (later) the results database.

use serde::{Deserialize, Serialize};

use crate::measure::{Figure, PhaseMeasurement};
use crate::runner::ceiling::Ceiling;
use crate::shape::PhaseShape;
use crate::stats::Summary;
use crate::suite::{FsConfig, Suite};
use crate::sysinfo::SystemInfo;
use crate::testbed::FsckOutcome;
use crate::testbed::device::BlockInfo;
use crate::testbed::loopdev::LoopInfo;

mod testbed;
use crate::testbed::stack::{RunTestbed, SuiteTestbed};

/// Version of the JSON document; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

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
    /// Set when calls failed or members were refused: the run completed, but the tree it
    /// made is not the whole tree (as btrfs "fails the test" on hard links in seed 003).
    #[serde(default)]
    pub incomplete: Option<String>,
    /// The run's loop device as sysfs showed it while mounted (direct I/O or buffered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_device: Option<LoopInfo>,
    /// The stack as this run saw it (its hash, what changed since the suite started) and the
    /// load average around it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub testbed: Option<RunTestbed>,
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
    /// Throughput-matrix cells (the iozone workload).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<crate::workload::iozone::MatrixCell>,
    /// The workload's own figures (extents, transactions per operation, fsck after the phase).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<Figure>,
    /// What a reader must know about this phase's figures (e.g. a method not supported).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Why the phase measured nothing: an operation the filesystem does not support (native
    /// fallocate on ext2). Such a phase has no figures, rather than a meaningless time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<String>,
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
    /// Loop devices buffered in the host's page cache: figures partly the host's memory.
    LoopBuffered,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Warning {
    pub kind: WarningKind,
    pub config: Option<String>,
    pub workload: Option<String>,
    pub phase: Option<String>,
    pub message: String,
}

/// A figure extracted from a phase: (metric, unit, higher is better, value).
pub fn phase_metrics(
    p: &PhaseRecord,
    unit: &str,
    moves_data: bool,
) -> Vec<(String, String, bool, f64)> {
    if p.unsupported.is_some() {
        return Vec::new();
    }
    let m = &p.measurement;
    let figure = |name: &str, unit: &str, higher: bool, v: f64| {
        (name.to_string(), unit.to_string(), higher, v)
    };
    let mut out = vec![figure("time", "s", false, m.elapsed_secs())];
    // A matrix phase's figures are its cells; its overall rate would mix them all.
    if p.cells.is_empty() {
        out.push(figure("rate", &format!("{unit}/s"), true, m.ops_per_sec()));
        if moves_data {
            out.push(figure("throughput", "KiB/s", true, m.kib_per_sec()));
        }
    }
    if p.cells.is_empty() {
        if let Some(steady) = p.shape.steady.as_ref().filter(|s| s.reached) {
            out.push(figure(
                "steady rate",
                &format!("{unit}/s"),
                true,
                steady.rate,
            ));
        }
        if let Some(t) = &p.shape.threads {
            out.push(figure(
                "first-done rate",
                &format!("{unit}/s"),
                true,
                t.first_done_rate,
            ));
        }
        if let Some(percent) = p.shape.harness_percent {
            out.push(figure("harness %", "%", false, percent));
        }
    }
    out.push(figure("cpu", "%", false, m.cpu_percent()));
    if let Some(ns) = p.sync_after_ns {
        out.push(figure("sync-after", "s", false, ns as f64 / 1e9));
    }
    for f in &p.figures {
        out.push(figure(&f.name, &f.unit, f.higher_is_better, f.value));
    }
    for c in &p.cells {
        out.push(figure(&c.metric(), "KiB/s", true, c.kib_per_sec));
        out.push(figure(
            &format!("{} cpu", c.metric()),
            "%",
            false,
            c.cpu_percent(),
        ));
    }
    out
}

impl SuiteResult {
    /// The workload a run ran (by its stored key, not its label).
    pub fn workload_of(&self, run: &RunRecord) -> Option<&crate::workload::WorkloadSpec> {
        self.suite.workloads.get(run.workload_key.0 as usize)
    }

    /// An empty result on this machine, for unit tests of what consumes results.
    #[cfg(test)]
    pub(crate) fn for_tests() -> SuiteResult {
        SuiteResult {
            schema_version: SCHEMA_VERSION,
            id: None,
            started_at: String::new(),
            finished_at: String::new(),
            status: SuiteStatus::Completed,
            error: None,
            suite: Suite::default(),
            system: SystemInfo::collect(),
            target: TargetInfo {
                description: "test".into(),
                image_size: None,
                device: None,
            },
            configurations: Vec::new(),
            skipped: Vec::new(),
            runs: Vec::new(),
            summaries: Vec::new(),
            warnings: Vec::new(),
            testbed: None,
            ceilings: Vec::new(),
        }
    }

    /// Summaries of every figure of the successful runs, in suite order.
    pub fn summarize(&mut self) {
        // (config, workload, phase, metric, unit, higher is better) and the per-run values,
        // in the order first seen; sorted by configuration and workload afterwards.
        type Figure = (String, String, String, String, String, bool);
        let mut figures: Vec<(Figure, Vec<f64>)> = Vec::new();
        let mut index: std::collections::HashMap<(String, String, String, String), usize> =
            std::collections::HashMap::new();
        for run in self.runs.iter().filter(|r| r.status == RunStatus::Ok) {
            let Some(spec) = self.workload_of(run) else {
                continue;
            };
            let mut values = Vec::new();
            for (p, info) in run.phases.iter().zip(spec.phases().iter()) {
                for (metric, unit, hib, v) in phase_metrics(p, info.unit, info.moves_data) {
                    values.push((p.name.clone(), metric, unit, hib, v));
                }
            }
            let lifecycle = [
                ("mkfs", run.mkfs_secs),
                ("unmount", run.unmount_secs),
                ("fsck", run.fsck.as_ref().map(|f| f.secs)),
            ];
            for (metric, v) in lifecycle {
                if let Some(v) = v {
                    values.push((
                        "lifecycle".to_string(),
                        metric.to_string(),
                        "s".to_string(),
                        false,
                        v,
                    ));
                }
            }
            for (phase, metric, unit, hib, v) in values {
                let figure = (
                    run.config.clone(),
                    run.workload.clone(),
                    phase,
                    metric,
                    unit,
                    hib,
                );
                // An index by (config, workload, phase, metric): a matrix has thousands of figures.
                let key = (
                    figure.0.clone(),
                    figure.1.clone(),
                    figure.2.clone(),
                    figure.3.clone(),
                );
                match index.get(&key) {
                    Some(&i) => figures[i].1.push(v),
                    None => {
                        index.insert(key, figures.len());
                        figures.push((figure, vec![v]));
                    }
                }
            }
        }
        let config_pos = |label: &str| {
            self.configurations
                .iter()
                .position(|c| c.config.label == label)
        };
        let workload_pos =
            |label: &str| self.suite.workloads.iter().position(|w| w.label() == label);
        figures.sort_by_key(|(f, _)| (config_pos(&f.0), workload_pos(&f.1)));
        self.summaries = figures
            .into_iter()
            .filter_map(
                |((config, workload, phase, metric, unit, higher_is_better), v)| {
                    Some(MetricSummary {
                        config,
                        workload,
                        phase,
                        metric: metric.to_string(),
                        unit,
                        higher_is_better,
                        summary: Summary::of(&v)?,
                    })
                },
            )
            .collect();
    }

    /// The summary of one figure, if any run produced it.
    pub fn summary(
        &self,
        config: &str,
        workload: &str,
        phase: &str,
        metric: &str,
    ) -> Option<&MetricSummary> {
        self.summaries.iter().find(|s| {
            s.config == config && s.workload == workload && s.phase == phase && s.metric == metric
        })
    }

    /// Warnings that say what to do: short phases, noisy figures, few runs, errors, fsck.
    pub fn analyze(&mut self) {
        let mut warnings = Vec::new();
        let ok_runs = self
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::Ok)
            .count();
        if ok_runs > 0 && self.suite.runs < 3 {
            warnings.push(Warning {
                kind: WarningKind::FewRuns,
                config: None,
                workload: None,
                phase: None,
                message: format!(
                    "only {} run(s) per configuration: too few for a spread or a confidence interval; use --runs 3 or more (10 as the fdtree article did)",
                    self.suite.runs
                ),
            });
        }
        for s in &self.summaries {
            let scope = |kind, message| Warning {
                kind,
                config: Some(s.config.clone()),
                workload: Some(s.workload.clone()),
                phase: Some(s.phase.clone()),
                message,
            };
            if s.metric == "time" && s.summary.mean < self.suite.min_phase_secs {
                warnings.push(scope(
                    WarningKind::ShortPhase,
                    format!(
                        "{} / {} / {}: {:.3} s is too short to measure (under {} s); use a larger preset",
                        s.config, s.workload, s.phase, s.summary.mean, self.suite.min_phase_secs
                    ),
                ));
            }
            if s.metric == "rate"
                && let Some(cv) = s.summary.cv_percent
                && cv > self.suite.max_cv_percent
            {
                warnings.push(scope(
                    WarningKind::HighVariation,
                    format!(
                        "{} / {} / {}: rate varies by {cv:.1}% (CV) across runs, over {}%; add runs or quiet the machine",
                        s.config, s.workload, s.phase, self.suite.max_cv_percent
                    ),
                ));
            }
        }
        let undropped = self
            .runs
            .iter()
            .flat_map(|r| &r.phases)
            .filter(|p| !p.caches_dropped)
            .count();
        if self.suite.drop_caches && undropped > 0 {
            warnings.push(Warning {
                kind: WarningKind::CachesNotDropped,
                config: None,
                workload: None,
                phase: None,
                message: format!(
                    "caches were not dropped before {undropped} phase(s) (needs root): later phases may read from memory"
                ),
            });
        }
        warnings.extend(self.loop_warning());
        warnings.extend(self.stack_warning());
        warnings.extend(self.steady_state_warnings());
        warnings.extend(self.harness_warnings());
        for r in &self.runs {
            if let Some(what) = &r.incomplete {
                warnings.push(Warning {
                    kind: WarningKind::IncompleteTree,
                    config: Some(r.config.clone()),
                    workload: Some(r.workload.clone()),
                    phase: None,
                    message: format!(
                        "{} / {} run {}: incomplete tree ({what})",
                        r.config, r.workload, r.run
                    ),
                });
            }
            if r.status == RunStatus::FsckFailed {
                warnings.push(Warning {
                    kind: WarningKind::FsckFailed,
                    config: Some(r.config.clone()),
                    workload: Some(r.workload.clone()),
                    phase: None,
                    message: format!(
                        "{} / {} run {}: fsck found the filesystem inconsistent; the run is excluded from the statistics",
                        r.config, r.workload, r.run
                    ),
                });
            }
        }
        self.warnings = warnings;
    }
}

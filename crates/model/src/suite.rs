//! What to run: purpose, target, filesystem configurations, workloads and runs, as a suite
//! file, the command line, or both (the command line wins) ask; kept with the results.

use serde::{Deserialize, Serialize};

use crate::config::{ExtraDevice, FsConfig};
use crate::filesystem::UserDriver;
use crate::testbed::TargetSpec;
use crate::workload::WorkloadSpec;

/// A complete, validated description of a benchmark.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    #[serde(default = "default_name")]
    pub name: String,
    /// Why the benchmark is run: the fdtree article's first rule.
    #[serde(default)]
    pub purpose: String,
    /// Runs per configuration and workload; with `auto_runs`, the most runs.
    #[serde(default = "default_runs")]
    pub runs: u32,
    /// `runs = "auto"` (`--runs auto`): rounds continue until the figures are precise enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_runs: Option<AutoRuns>,
    #[serde(default = "default_target")]
    pub target: TargetSpec,
    #[serde(default, rename = "config")]
    pub configs: Vec<FsConfig>,
    #[serde(default, rename = "workload")]
    pub workloads: Vec<WorkloadSpec>,
    /// Sync and drop caches before every phase (needs root).
    #[serde(default = "yes")]
    pub drop_caches: bool,
    /// Phases shorter than this (mean, seconds) are flagged as too short to measure.
    #[serde(default = "default_min_phase")]
    pub min_phase_secs: f64,
    /// Figures whose coefficient of variation exceeds this (percent) are flagged as noisy.
    #[serde(default = "default_max_cv")]
    pub max_cv_percent: f64,
    /// Aging profile of every configuration that names none (`--age`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age: Option<String>,
    /// Fill levels (percent, `--fill 0,50,90`): each configuration is measured at each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fill: Vec<u8>,
    /// I/O schedulers (`--sched mq-deadline,bfq`): each configuration runs under each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sched: Vec<String>,
    /// Set each scheduler on a loop image's backing disk too (`--sched-backing`): it is the
    /// whole machine's, so only with this consent; put back after every run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sched_backing: bool,
    /// Seconds the raw device is written and then read before the first mkfs
    /// (`--baseline 3s`): its own speed, a baseline for the filesystems' figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<f64>,
    /// Background loads (`--background none,cpu:2`): each configuration runs under each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<String>,
    /// The free-space probe again after each run's phases (`--probe-after-run`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probe_after: bool,
    /// Devices besides the target that mkfs or mount options may name (`--extra-device`):
    /// fsbench writes to no other.
    #[serde(
        default,
        rename = "extra_device",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extra_devices: Vec<ExtraDevice>,
    /// How crash states are checked where a configuration asks for them (`crash=N`).
    #[serde(default, skip_serializing_if = "CrashOptions::is_default")]
    pub crash: CrashOptions,
    /// Filesystems the suite file defines (`[[driver]]`), usable in `--fs` by name.
    #[serde(default, rename = "driver", skip_serializing_if = "Vec::is_empty")]
    pub drivers: Vec<UserDriver>,
}

/// When `--runs auto` stops: after at least [`AutoRuns::MIN_RUNS`] rounds, once every primary
/// figure's 95% CI half-width is below `target_ci_percent` of its mean, or after `max_runs`
/// rounds, whichever comes first; and before any run that the runs before it say would end
/// past `max_secs`, however few rounds are done.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AutoRuns {
    #[serde(default = "default_target_ci")]
    pub target_ci_percent: f64,
    #[serde(default = "default_max_runs")]
    pub max_runs: u32,
    #[serde(default)]
    pub max_secs: Option<f64>,
}

impl AutoRuns {
    pub const MIN_RUNS: u32 = 3;
}

impl Default for AutoRuns {
    fn default() -> AutoRuns {
        AutoRuns {
            target_ci_percent: default_target_ci(),
            max_runs: default_max_runs(),
            max_secs: None,
        }
    }
}

fn default_target_ci() -> f64 {
    5.0
}
fn default_max_runs() -> u32 {
    30
}

fn default_name() -> String {
    "fsbench".into()
}
fn default_runs() -> u32 {
    3
}
fn default_target() -> TargetSpec {
    TargetSpec::Image {
        dir: crate::testbed::default_image_dir(),
        size: None,
        loop_cache: false,
    }
}
fn yes() -> bool {
    true
}
fn default_min_phase() -> f64 {
    1.0
}
fn default_max_cv() -> f64 {
    10.0
}

/// The time budget of the default suite (no workload, no suite file, no --runs): its
/// `--runs auto` rounds end within it. Three rounds of `tree:default` on three filesystems
/// take about 4.5 minutes on a quiet 2-CPU VM.
pub const DEFAULT_MAX_SECS: f64 = 300.0;

/// The purpose of the default suite, stated as the article asks.
pub const DEFAULT_PURPOSE: &str = "Quick look at metadata performance (fdtree trees of small \
     files) of the filesystems installed here, each freshly made for every run.";

impl Default for Suite {
    fn default() -> Suite {
        Suite {
            name: default_name(),
            purpose: String::new(),
            runs: default_runs(),
            auto_runs: None,
            target: default_target(),
            configs: Vec::new(),
            workloads: Vec::new(),
            drop_caches: true,
            min_phase_secs: default_min_phase(),
            max_cv_percent: default_max_cv(),
            age: None,
            fill: Vec::new(),
            sched: Vec::new(),
            sched_backing: false,
            baseline: None,
            background: Vec::new(),
            probe_after: false,
            extra_devices: Vec::new(),
            crash: CrashOptions::default(),
            drivers: Vec::new(),
        }
    }
}

/// A suite's name where none was given: `tree:quick-shallow on ext4, xfs, btrfs`.
pub fn what_on_what(workloads: &[String], configurations: &[String]) -> String {
    format!("{} on {}", workloads.join(", "), configurations.join(", "))
}

impl Suite {
    /// The suite's name, or where none was given, what it runs on what:
    /// `tree:quick-shallow on ext4, xfs, btrfs` (the workloads' and configurations' labels).
    pub fn display_name(&self, workloads: &[String], configurations: &[String]) -> String {
        if self.name != default_name() {
            return self.name.clone();
        }
        what_on_what(workloads, configurations)
    }

    /// Runs rounds until the figures are precise enough, at most `auto.max_runs`.
    pub fn set_auto_runs(&mut self, auto: AutoRuns) {
        self.runs = auto.max_runs;
        self.auto_runs = Some(auto);
    }
}

/// How crash states are checked (`--crash-*`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashOptions {
    /// Crash states of every configuration that names no `crash=N` (`--crash-states`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<u32>,
    /// Seconds of checking a configuration's states at most (`--crash-time`); states not
    /// started by then are not checked, and the count checked says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_secs: Option<f64>,
    /// Torn writes among the states (`--crash-torn`): some 512-byte sectors of one write.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub torn: bool,
    /// The seed states are chosen with (`--crash-seed`; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Where each configuration's recording is kept for `fsbench crash show`
    /// (`--crash-keep DIR`); otherwise it goes with the suite's scratch directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<std::path::PathBuf>,
}

impl CrashOptions {
    pub fn is_default(&self) -> bool {
        *self == CrashOptions::default()
    }

    /// The crash states to check of `config`: its own `crash=N`, or the suite's.
    pub fn states_of(&self, config: &FsConfig) -> Option<u32> {
        config.crash.or(self.states)
    }
}

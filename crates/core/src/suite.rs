//! What to run: purpose, target, filesystem configurations, workloads and runs — from a TOML
//! suite file, the command line, or both (the command line wins).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::drivers::UserDriverExt;
use crate::error::invalid;
use crate::workload::{Params, WorkloadSpec};
use fsbench_model::filesystem::{FsType, UserDriver};
use fsbench_model::testbed::TargetSpec;

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
    /// Filesystems the suite file defines (`[[driver]]`), usable in `--fs` by name.
    #[serde(default, rename = "driver", skip_serializing_if = "Vec::is_empty")]
    pub drivers: Vec<UserDriver>,
}

/// Gives each `[[config]]` whose `fs` names a `[[driver]]` that driver's table (`fs` becomes
/// `"user"`), so that the configuration carries its driver.
fn user_drivers_into_configs(table: &mut toml::Table) {
    let Some(toml::Value::Array(drivers)) = table.get("driver").cloned() else {
        return;
    };
    let Some(toml::Value::Array(configs)) = table.get_mut("config") else {
        return;
    };
    for config in configs.iter_mut().filter_map(|c| c.as_table_mut()) {
        let fs = config
            .get("fs")
            .and_then(|f| f.as_str())
            .map(str::to_string);
        let named = |d: &&toml::Value| d.get("name").and_then(|n| n.as_str()) == fs.as_deref();
        if let Some(driver) = drivers.iter().find(named) {
            config.insert("fs".into(), FsType::User.name().into());
            config.insert("driver".into(), driver.clone());
        }
    }
}

/// When `--runs auto` stops: after at least [`AutoRuns::MIN_RUNS`] rounds, once every primary
/// figure's 95% CI half-width is below `target_ci_percent` of its mean, or after `max_runs`
/// rounds, or once `max_secs` have passed, whichever comes first.
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
        dir: fsbench_model::testbed::default_image_dir(),
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

/// How long the default suite (no workload, no suite file, no --runs) starts new rounds of
/// `--runs auto`.
pub const DEFAULT_MAX_SECS: f64 = 180.0;

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
            drivers: Vec::new(),
        }
    }
}

impl Suite {
    /// The suite's name, or where none was given, what it runs on what:
    /// `tree:quick-shallow on ext4, xfs, btrfs`.
    pub fn display_name(&self, configurations: &[String]) -> String {
        if self.name != default_name() {
            return self.name.clone();
        }
        let workloads: Vec<String> = self.workloads.iter().map(Params::label_of).collect();
        format!("{} on {}", workloads.join(", "), configurations.join(", "))
    }

    /// Reads a suite file; its name defaults to the file's stem.
    pub fn from_file(path: &Path) -> anyhow::Result<Suite> {
        let text = crate::calls::read_text_file(path, "suite file")?;
        let bad =
            |e: &dyn std::fmt::Display| invalid(format!("suite file {}: {e}", path.display()));
        let mut table: toml::Table = toml::from_str(&text).map_err(|e| bad(&e))?;
        // `runs = "auto"`: the runs become the cap of `[auto_runs]` (its defaults without one).
        let auto = table.get("runs").and_then(|r| r.as_str()) == Some("auto");
        if auto {
            table.remove("runs");
            table
                .entry("auto_runs")
                .or_insert_with(|| toml::Table::new().into());
        }
        user_drivers_into_configs(&mut table);
        // The table has lost where each value was; parsing the text again names the line and key.
        let mut suite: Suite =
            table
                .try_into()
                .map_err(|e| match toml::from_str::<Suite>(&text) {
                    Err(located) if located.span().is_some() => bad(&located),
                    _ => bad(&e),
                })?;
        // Options become the parameters' own fields, as a database keeps them.
        for (i, w) in suite.workloads.iter_mut().enumerate() {
            *w = Params::of(w)
                .map_err(|e| bad(&format!("[[workload]] {}: {e:#}", i + 1)))?
                .spec();
        }
        if let Some(a) = suite.auto_runs.clone() {
            suite.set_auto_runs(a);
        }
        if suite.name == default_name()
            && let Some(stem) = path.file_stem()
        {
            suite.name = stem.to_string_lossy().into_owned();
        }
        Ok(suite)
    }

    /// The workloads every default `fsbench run` uses.
    pub fn default_workloads() -> Vec<WorkloadSpec> {
        ["tree:default"]
            .iter()
            .map(|w| Params::parse(w).expect("built-in presets parse").spec())
            .collect()
    }

    /// Runs rounds until the figures are precise enough, at most `auto.max_runs`.
    pub fn set_auto_runs(&mut self, auto: AutoRuns) {
        self.runs = auto.max_runs;
        self.auto_runs = Some(auto);
    }

    /// Checks everything that can be checked before anything is created.
    pub fn validate(&self) -> anyhow::Result<()> {
        for (i, d) in self.drivers.iter().enumerate() {
            d.validate()?;
            if self.drivers[..i].iter().any(|e| e.name == d.name) {
                return Err(invalid(format!("[[driver]] `{}` is defined twice", d.name)));
            }
        }
        if let Some(a) = &self.auto_runs {
            if !(a.target_ci_percent > 0.0 && a.target_ci_percent.is_finite()) {
                return Err(invalid("--target-ci must be a positive percentage"));
            }
            if a.max_runs < AutoRuns::MIN_RUNS {
                return Err(invalid(format!(
                    "--max-runs must be at least {} with --runs auto",
                    AutoRuns::MIN_RUNS
                )));
            }
            if a.max_secs.is_some_and(|s| !(s > 0.0 && s.is_finite())) {
                return Err(invalid("--max-time must be a positive duration"));
            }
        }
        if self.runs == 0 {
            return Err(invalid("--runs must be at least 1"));
        }
        if self.runs > 10_000 {
            return Err(invalid(format!(
                "--runs {} is absurd; use at most 10000",
                self.runs
            )));
        }
        if self.workloads.is_empty() {
            return Err(invalid("the suite has no workloads"));
        }
        let no_queue = |c: &&FsConfig| {
            !self.target.makes_filesystems()
                || c.fs == Some(fsbench_model::filesystem::FsType::Tmpfs)
        };
        if !self.sched.is_empty() && !self.target.makes_filesystems() {
            return Err(invalid(
                "--sched needs a block device (a loop image or --device); --dir has no I/O queue",
            ));
        }
        if let Some(secs) = self.baseline {
            if !self.target.makes_filesystems() {
                return Err(invalid(
                    "--baseline needs a block device (a loop image or --device); --dir has none",
                ));
            }
            if !(0.1..=60.0).contains(&secs) {
                return Err(invalid(format!(
                    "--baseline {secs} s: give 0.1 to 60 s (a few seconds is enough; Ctrl-C waits for it)"
                )));
            }
        }
        if let Some(c) = self.configs.iter().find(|c| c.wcache.is_some()) {
            let refusal = match &self.target {
                _ if c.fs == Some(fsbench_model::filesystem::FsType::Tmpfs) => {
                    Some("wcache= needs --device: tmpfs has no device".to_string())
                }
                TargetSpec::Image { dir, .. } => Some(crate::testbed::queue::loop_refusal(dir)),
                TargetSpec::Device { path, .. } if path.is_file() => {
                    Some(crate::testbed::queue::loop_refusal(path))
                }
                TargetSpec::Device { .. } => None,
                TargetSpec::Dir { .. } => {
                    Some("wcache= needs --device: --dir has no device".to_string())
                }
            };
            if let Some(why) = refusal {
                return Err(invalid(format!("`{}`: {why}", c.label)));
            }
        }
        if self.sched_backing {
            let loop_image = match &self.target {
                TargetSpec::Image { .. } => true,
                TargetSpec::Device { path, .. } => path.is_file(),
                TargetSpec::Dir { .. } => false,
            };
            if !loop_image {
                return Err(invalid(
                    "--sched-backing needs a loop image (--image-dir, or --device naming an image file): only a loop device has a backing disk",
                ));
            }
            if self.sched.is_empty() && self.configs.iter().all(|c| c.sched.is_none()) {
                return Err(invalid(
                    "--sched-backing sets the backing disk to each run's I/O scheduler: give --sched or FS:sched=NAME",
                ));
            }
        }
        if let Some(c) = self
            .configs
            .iter()
            .filter(|c| c.sched.is_some())
            .find(no_queue)
        {
            return Err(invalid(format!(
                "`{}`: sched= needs a block device (a loop image or --device); tmpfs and --dir have no I/O queue",
                c.label
            )));
        }
        // Disk workers write beside the run's filesystem, which a directory target lacks.
        let loads = (self.background.iter())
            .chain(self.configs.iter().filter_map(|c| c.background.as_ref()));
        for text in loads {
            let load = crate::config::Load::parse(text).map_err(invalid)?;
            if load.is_some_and(|l| l.io > 0) && !self.target.makes_filesystems() {
                return Err(invalid(format!(
                    "background `{text}`: io load needs a filesystem fsbench makes (its files go beside the image); with --dir they would land in the measured directory"
                )));
            }
        }
        if !self.extra_devices.is_empty() && !self.target.makes_filesystems() {
            return Err(invalid(
                "--extra-device applies only where fsbench makes filesystems, not to --dir",
            ));
        }
        for w in &self.workloads {
            let w = Params::of(w)?;
            w.validate()?;
            for driver in self.configs.iter().filter_map(|c| c.driver.as_ref()) {
                w.check_needs(driver)?;
            }
        }
        if !(self.min_phase_secs >= 0.0 && self.min_phase_secs.is_finite()) {
            return Err(invalid("min_phase_secs must be a non-negative number"));
        }
        if !(self.max_cv_percent > 0.0 && self.max_cv_percent.is_finite()) {
            return Err(invalid("max_cv_percent must be a positive number"));
        }
        self.validate_aging()?;
        let mut labels = std::collections::HashSet::new();
        for c in &self.configs {
            if !labels.insert(&c.label) {
                return Err(invalid(format!(
                    "two configurations are labelled `{}`; give each a distinct label=",
                    c.label
                )));
            }
            if c.fs.is_none() && self.target.makes_filesystems() {
                return Err(invalid(format!(
                    "configuration `{}` names no filesystem (fs = ...)",
                    c.label
                )));
            }
            if c.fs.is_some() && !self.target.makes_filesystems() {
                return Err(invalid(
                    "--fs makes filesystems, but --dir runs on an existing one: use one or the other",
                ));
            }
        }
        Ok(())
    }
}

impl Suite {
    /// Aging profiles resolve, fill levels are percentages, and neither is asked of an
    /// existing directory, which fsbench must not fill.
    fn validate_aging(&self) -> anyhow::Result<()> {
        let ages = self.configs.iter().filter_map(|c| c.age.as_deref());
        for age in self.age.as_deref().into_iter().chain(ages) {
            crate::aging::profile::resolve(age)?;
        }
        let fills = self.configs.iter().filter_map(|c| c.fill);
        for level in self.fill.iter().copied().chain(fills) {
            crate::aging::parse_fill(&level.to_string())?;
        }
        let asks = self.age.as_deref().is_some_and(|a| a != "none")
            || self.fill.iter().any(|f| *f > 0)
            || self
                .configs
                .iter()
                .any(|c| c.age.is_some() || c.fill.is_some());
        if asks && !self.target.makes_filesystems() {
            return Err(invalid(
                "aging and fill levels fill the filesystem: they need a filesystem fsbench makes (not --dir)",
            ));
        }
        if self.probe_after && !self.target.makes_filesystems() {
            return Err(invalid(
                "the free-space probe allocates half the free space: it needs a filesystem fsbench makes (not --dir)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

pub use crate::config::{ExtraDevice, FsConfig};

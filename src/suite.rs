//! What to run: purpose, target, filesystem configurations, workloads and runs — from a TOML
//! suite file, the command line, or both (the command line wins).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::drivers::FsType;
use crate::error::invalid;
use crate::testbed::TargetSpec;
use crate::workload::WorkloadSpec;

/// One filesystem configuration: a filesystem and how it is made and mounted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(try_from = "RawFsConfig")]
pub struct FsConfig {
    pub label: String,
    /// `None` for an existing directory (`--dir`): no mkfs, no mount.
    pub fs: Option<FsType>,
    /// Extra mkfs arguments, after fsbench's defaults.
    pub mkfs: Vec<String>,
    /// Mount options as requested (what the kernel applied is recorded per run).
    pub mount: String,
    /// Aging profile (`light`, `geriatrix-like`, a TOML file) run before the phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age: Option<String>,
    /// Percent of the space filled before the phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<u8>,
    /// The I/O scheduler set on the device's queue for each run (`bfq`, `mq-deadline`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFsConfig {
    /// Absent only for an existing directory's configuration, as saved with its results.
    fs: Option<FsType>,
    label: Option<String>,
    #[serde(default)]
    mkfs: MkfsArgs,
    #[serde(default)]
    mount: String,
    /// zfs's pool properties (`ashift=12,autoexpand=on`), in place of `mkfs`.
    pool: Option<String>,
    /// zfs's dataset properties (`recordsize=16k,atime=off`), in place of `mount`.
    dataset: Option<String>,
    age: Option<String>,
    fill: Option<u8>,
    sched: Option<String>,
}

/// mkfs arguments as one shell-quoted string or as a list.
#[derive(Deserialize, Default)]
#[serde(untagged, expecting = "`mkfs`: a string or a list of strings")]
enum MkfsArgs {
    #[default]
    None,
    Line(String),
    List(Vec<String>),
}

impl TryFrom<RawFsConfig> for FsConfig {
    type Error = anyhow::Error;

    fn try_from(mut raw: RawFsConfig) -> anyhow::Result<FsConfig> {
        check_label(raw.label.as_deref())?;
        let mut mkfs = match std::mem::take(&mut raw.mkfs) {
            MkfsArgs::None => Vec::new(),
            MkfsArgs::Line(line) => split_words(&line)?,
            MkfsArgs::List(list) => list,
        };
        // A saved zfs configuration keeps its properties in `mkfs` and `mount`, so those are
        // read for zfs too, but not beside `pool` and `dataset`.
        if let Some(pool) = raw.pool.take() {
            pool_or_dataset(raw.fs, "pool", mkfs.is_empty())?;
            mkfs = pool_words(&pool);
        }
        if let Some(dataset) = raw.dataset.take() {
            pool_or_dataset(raw.fs, "dataset", raw.mount.is_empty())?;
            raw.mount = dataset;
        }
        if raw.fs == Some(FsType::Zfs) {
            crate::testbed::zfs::check_properties(&mkfs, &raw.mount)?;
        }
        let mut config = match raw.fs {
            Some(fs) => FsConfig::new(fs, mkfs, raw.mount, raw.label.clone()),
            None => FsConfig {
                label: raw.label.clone().unwrap_or_else(|| "existing dir".into()),
                fs: None,
                mkfs,
                mount: raw.mount,
                age: None,
                fill: None,
                sched: None,
            },
        };
        config.prepared(raw.age, raw.fill, raw.label.is_some());
        config.scheduled(raw.sched, raw.label.is_some());
        Ok(config)
    }
}

/// A label names a configuration in every table and finds its results again: never blank.
fn check_label(label: Option<&str>) -> anyhow::Result<()> {
    match label {
        Some(l) if l.trim().is_empty() => Err(invalid(
            "an empty configuration label: give `label=NAME` a name or leave it out",
        )),
        _ => Ok(()),
    }
}

fn split_words(line: &str) -> anyhow::Result<Vec<String>> {
    shlex::split(line).ok_or_else(|| invalid(format!("unbalanced quotes in mkfs options `{line}`")))
}

impl FsConfig {
    pub fn new(fs: FsType, mkfs: Vec<String>, mount: String, label: Option<String>) -> FsConfig {
        let label = label.unwrap_or_else(|| {
            let mut parts = vec![fs.name().to_string()];
            match fs {
                FsType::Zfs if !mkfs.is_empty() => parts.push(format!("pool={}", mkfs.join(","))),
                _ if !mkfs.is_empty() => parts.push(mkfs.join(" ")),
                _ => {}
            }
            match fs {
                FsType::Zfs if !mount.is_empty() => parts.push(format!("dataset={mount}")),
                _ if !mount.is_empty() => parts.push(format!("-o {mount}")),
                _ => {}
            }
            parts.join(" ")
        });
        FsConfig {
            label,
            fs: Some(fs),
            mkfs,
            mount,
            age: None,
            fill: None,
            sched: None,
        }
    }

    /// Sets the I/O scheduler; a label fsbench made says it.
    pub fn scheduled(&mut self, sched: Option<String>, labelled: bool) {
        if let (Some(s), false) = (&sched, labelled) {
            self.label.push_str(&format!(" sched={s}"));
        }
        self.sched = sched;
    }

    /// Sets the aging profile and fill level; a label fsbench made says them, so that an aged
    /// and a fresh configuration of one filesystem are told apart.
    fn prepared(&mut self, age: Option<String>, fill: Option<u8>, labelled: bool) {
        if !labelled {
            if let Some(a) = &age {
                self.label.push_str(&format!(" age={a}"));
            }
            if let Some(f) = fill {
                self.label.push_str(&format!(" @ {f}%"));
            }
        }
        self.age = age;
        self.fill = fill;
    }

    /// The configuration of an existing directory, labelled with its filesystem type.
    pub fn existing(fstype: &str) -> FsConfig {
        FsConfig {
            label: format!("{fstype} (existing dir)"),
            fs: None,
            mkfs: Vec::new(),
            mount: String::new(),
            age: None,
            fill: None,
            sched: None,
        }
    }

    /// Parses one `--fs` value: `ext4,xfs` (several plain filesystems) or
    /// `FS:mkfs=ARGS:mount=OPTS:age=PROFILE:fill=PERCENT:sched=NAME:label=NAME` (one
    /// configuration; any key may be left out).
    pub fn parse_cli(text: &str) -> anyhow::Result<Vec<FsConfig>> {
        let Some((fs, rest)) = text.split_once(':') else {
            return text
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|name| {
                    Ok(FsConfig::new(
                        name.parse()?,
                        Vec::new(),
                        String::new(),
                        None,
                    ))
                })
                .collect();
        };
        let fs: FsType = fs.parse()?;
        let (mut mkfs, mut mount, mut label) = (None, None, None);
        let (mut age, mut fill, mut sched) = (None, None, None);
        for (key, value) in split_keyed(rest)? {
            zfs_keys(fs, key)?;
            let slot = match key {
                "mkfs" | "pool" => &mut mkfs,
                "mount" | "dataset" => &mut mount,
                "age" => &mut age,
                "fill" => &mut fill,
                "sched" => &mut sched,
                _ => &mut label,
            };
            if slot.replace(value.to_string()).is_some() {
                return Err(invalid(format!("`{key}=` given twice in --fs `{text}`")));
            }
        }
        let mkfs = match fs {
            FsType::Zfs => pool_words(mkfs.as_deref().unwrap_or("")),
            _ => split_words(mkfs.as_deref().unwrap_or(""))?,
        };
        if fs == FsType::Zfs {
            crate::testbed::zfs::check_properties(&mkfs, mount.as_deref().unwrap_or(""))?;
        }
        check_label(label.as_deref())?;
        let fill = fill.map(|f| crate::aging::parse_fill(&f)).transpose()?;
        let labelled = label.is_some();
        let mut config = FsConfig::new(fs, mkfs, mount.unwrap_or_default(), label);
        config.prepared(age, fill, labelled);
        config.scheduled(sched, labelled);
        Ok(vec![config])
    }
}

/// zfs takes `pool=` and `dataset=` properties where other filesystems take `mkfs=` and
/// `mount=` options.
fn zfs_keys(fs: FsType, key: &str) -> anyhow::Result<()> {
    let (zfs, other) = (["pool", "dataset"], ["mkfs", "mount"]);
    match (
        fs == FsType::Zfs,
        zfs.iter().position(|k| *k == key),
        other.iter().position(|k| *k == key),
    ) {
        (true, _, Some(i)) => Err(invalid(format!(
            "zfs takes `{}=` properties, not `{key}=` (e.g. zfs:pool=ashift=12:dataset=recordsize=16k)",
            zfs[i]
        ))),
        (false, Some(_), _) => Err(invalid(format!(
            "`{key}=` is for zfs; {fs} takes mkfs= and mount="
        ))),
        _ => Ok(()),
    }
}

/// `pool` or `dataset` in a suite file: for zfs only, and not beside `mkfs` or `mount`.
fn pool_or_dataset(fs: Option<FsType>, key: &str, alone: bool) -> anyhow::Result<()> {
    if fs != Some(FsType::Zfs) {
        return Err(invalid(format!(
            "`{key}` is for zfs; give mkfs and mount instead"
        )));
    }
    if !alone {
        return Err(invalid(format!(
            "zfs's `{key}` properties are given twice (also as `{}`)",
            if key == "pool" { "mkfs" } else { "mount" }
        )));
    }
    Ok(())
}

/// zfs pool properties `ashift=12,autoexpand=on` as words.
fn pool_words(text: &str) -> Vec<String> {
    text.split(',')
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

/// Splits `mkfs=-O ^has_journal:mount=data=writeback` at the colons that start a known key,
/// so values may contain `=`, `,` and other colons.
fn split_keyed(text: &str) -> anyhow::Result<Vec<(&str, &str)>> {
    const KEYS: [&str; 8] = [
        "mkfs=", "mount=", "pool=", "dataset=", "label=", "age=", "fill=", "sched=",
    ];
    let starts_key = |s: &str| KEYS.iter().find(|k| s.starts_with(*k)).copied();
    let Some(first) = starts_key(text) else {
        return Err(invalid(format!(
            "in --fs, expected mkfs=, mount=, pool=, dataset=, age=, fill=, sched= or label= after the filesystem, found `{text}`"
        )));
    };
    let mut out = Vec::new();
    let mut key = first;
    let mut value_start = first.len();
    let mut i = value_start;
    while i <= text.len() {
        let at_end = i == text.len();
        let next = (!at_end && text.as_bytes()[i] == b':')
            .then(|| starts_key(&text[i + 1..]))
            .flatten();
        if at_end || next.is_some() {
            out.push((key.trim_end_matches('='), &text[value_start..i]));
            if let Some(k) = next {
                key = k;
                value_start = i + 1 + k.len();
                i = value_start;
                continue;
            }
        }
        i += 1;
    }
    Ok(out)
}

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
}

/// A device the user consented to, besides the target: an external log or journal, a further
/// btrfs device. It is checked as the target is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExtraDevice {
    pub path: std::path::PathBuf,
    /// Overwrite it even when it carries a filesystem or partition table (`--force-extra-device`).
    #[serde(default)]
    pub force: bool,
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
            probe_after: false,
            extra_devices: Vec::new(),
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
        let workloads: Vec<String> = self.workloads.iter().map(|w| w.label()).collect();
        format!("{} on {}", workloads.join(", "), configurations.join(", "))
    }

    /// Reads a suite file; its name defaults to the file's stem.
    pub fn from_file(path: &Path) -> anyhow::Result<Suite> {
        let text = crate::workload::read_text_file(path, "suite file")?;
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
        // The table has lost where each value was; parsing the text again names the line and key.
        let mut suite: Suite =
            table
                .try_into()
                .map_err(|e| match toml::from_str::<Suite>(&text) {
                    Err(located) if located.span().is_some() => bad(&located),
                    _ => bad(&e),
                })?;
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
        ["tree:quick"]
            .iter()
            .map(|w| WorkloadSpec::parse(w).expect("built-in presets parse"))
            .collect()
    }

    /// Runs rounds until the figures are precise enough, at most `auto.max_runs`.
    pub fn set_auto_runs(&mut self, auto: AutoRuns) {
        self.runs = auto.max_runs;
        self.auto_runs = Some(auto);
    }

    /// Checks everything that can be checked before anything is created.
    pub fn validate(&self) -> anyhow::Result<()> {
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
            !self.target.makes_filesystems() || c.fs == Some(crate::drivers::FsType::Tmpfs)
        };
        if !self.sched.is_empty() && !self.target.makes_filesystems() {
            return Err(invalid(
                "--sched needs a block device (a loop image or --device); --dir has no I/O queue",
            ));
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
        if !self.extra_devices.is_empty() && !self.target.makes_filesystems() {
            return Err(invalid(
                "--extra-device applies only where fsbench makes filesystems, not to --dir",
            ));
        }
        for w in &self.workloads {
            w.validate()?;
        }
        if !(self.min_phase_secs >= 0.0 && self.min_phase_secs.is_finite()) {
            return Err(invalid("min_phase_secs must be a non-negative number"));
        }
        if !(self.max_cv_percent > 0.0 && self.max_cv_percent.is_finite()) {
            return Err(invalid("max_cv_percent must be a positive number"));
        }
        crate::aging::validate(self)?;
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

/// Serde helper: an optional byte size written as `"8G"` or as a number of bytes.
pub mod opt_size {
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Size {
        Bytes(u64),
        Text(String),
    }

    pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(b) => s.serialize_u64(*b),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        match Option::<Size>::deserialize(d)? {
            None => Ok(None),
            Some(Size::Bytes(b)) => Ok(Some(b)),
            Some(Size::Text(t)) => crate::units::parse_size(&t)
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests;

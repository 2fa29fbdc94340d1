//! A suite checked before anything is made: every setting it can say is wrong is said.

use crate::drivers::UserDriverExt;
use fsbench_measure::error::invalid;
use fsbench_model::config::FsConfig;
use fsbench_model::filesystem::FsType;
use fsbench_model::suite::{AutoRuns, Suite};
use fsbench_model::testbed::TargetSpec;
use fsbench_workloads::Params;

/// Checks everything that can be checked before anything is created.
pub fn validate(suite: &Suite) -> anyhow::Result<()> {
    validate_drivers(suite)?;
    validate_runs(suite)?;
    validate_device_settings(suite)?;
    validate_loads(suite)?;
    check_crash(suite)?;
    for w in &suite.workloads {
        let w = Params::of(w)?;
        w.validate()?;
        for driver in suite.configs.iter().filter_map(|c| c.driver.as_ref()) {
            w.check_needs(driver)?;
        }
    }
    if !(suite.min_phase_secs >= 0.0 && suite.min_phase_secs.is_finite()) {
        return Err(invalid("min_phase_secs must be a non-negative number"));
    }
    if !(suite.max_cv_percent > 0.0 && suite.max_cv_percent.is_finite()) {
        return Err(invalid("max_cv_percent must be a positive number"));
    }
    validate_aging(suite)?;
    validate_configs(suite)
}

/// Each user driver is valid and defined once.
fn validate_drivers(suite: &Suite) -> anyhow::Result<()> {
    for (i, d) in suite.drivers.iter().enumerate() {
        d.validate()?;
        if suite.drivers[..i].iter().any(|e| e.name == d.name) {
            return Err(invalid(format!("[[driver]] `{}` is defined twice", d.name)));
        }
    }
    Ok(())
}

/// The runs (a count, or auto's target, limit and time) and that there is a workload.
fn validate_runs(suite: &Suite) -> anyhow::Result<()> {
    if let Some(a) = &suite.auto_runs {
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
    if suite.runs == 0 {
        return Err(invalid("--runs must be at least 1"));
    }
    if suite.runs > 10_000 {
        return Err(invalid(format!(
            "--runs {} is absurd; use at most 10000",
            suite.runs
        )));
    }
    if suite.workloads.is_empty() {
        return Err(invalid("the suite has no workloads"));
    }
    Ok(())
}

/// What only a block device has (a scheduler, a baseline, a write cache, a backing disk)
/// is asked only of a target that has one.
fn validate_device_settings(suite: &Suite) -> anyhow::Result<()> {
    let makes_filesystems = suite.target.makes_filesystems();
    let tmpfs = |c: &FsConfig| c.fs == Some(FsType::Tmpfs);
    if !suite.sched.is_empty() && !makes_filesystems {
        return Err(invalid(
            "--sched needs a block device (a loop image or --device); --dir has no I/O queue",
        ));
    }
    if let Some(secs) = suite.baseline {
        if !makes_filesystems {
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
    if let Some(c) = suite.configs.iter().find(|c| c.wcache.is_some()) {
        let refusal = match &suite.target {
            _ if tmpfs(c) => Some("wcache= needs --device: tmpfs has no device".to_string()),
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
    if suite.sched_backing {
        let loop_image = match &suite.target {
            TargetSpec::Image { .. } => true,
            TargetSpec::Device { path, .. } => path.is_file(),
            TargetSpec::Dir { .. } => false,
        };
        if !loop_image {
            return Err(invalid(
                "--sched-backing needs a loop image (--image-dir, or --device naming an image file): only a loop device has a backing disk",
            ));
        }
        if suite.sched.is_empty() && suite.configs.iter().all(|c| c.sched.is_none()) {
            return Err(invalid(
                "--sched-backing sets the backing disk to each run's I/O scheduler: give --sched or FS:sched=NAME",
            ));
        }
    }
    let no_queue = |c: &&FsConfig| !makes_filesystems || tmpfs(c);
    if let Some(c) = suite
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
    Ok(())
}

/// Background loads parse, and disk workers (which write beside the run's filesystem) and
/// extra devices are asked only where fsbench makes the filesystem.
fn validate_loads(suite: &Suite) -> anyhow::Result<()> {
    let loads =
        (suite.background.iter()).chain(suite.configs.iter().filter_map(|c| c.background.as_ref()));
    for text in loads {
        let load = super::fs_option::Load::parse(text).map_err(invalid)?;
        if load.is_some_and(|l| l.io > 0) && !suite.target.makes_filesystems() {
            return Err(invalid(format!(
                "background `{text}`: io load needs a filesystem fsbench makes (its files go beside the image); with --dir they would land in the measured directory"
            )));
        }
    }
    if !suite.extra_devices.is_empty() && !suite.target.makes_filesystems() {
        return Err(invalid(
            "--extra-device applies only where fsbench makes filesystems, not to --dir",
        ));
    }
    Ok(())
}

/// Configurations have distinct labels, and name a filesystem exactly where the target
/// makes one.
fn validate_configs(suite: &Suite) -> anyhow::Result<()> {
    let mut labels = std::collections::HashSet::new();
    for c in &suite.configs {
        if !labels.insert(&c.label) {
            return Err(invalid(format!(
                "two configurations are labelled `{}`; give each a distinct label=",
                c.label
            )));
        }
        if c.fs.is_none() && suite.target.makes_filesystems() {
            return Err(invalid(format!(
                "configuration `{}` names no filesystem (fs = ...)",
                c.label
            )));
        }
        if c.fs.is_some() && !suite.target.makes_filesystems() {
            return Err(invalid(
                "--fs makes filesystems, but --dir runs on an existing one: use one or the other",
            ));
        }
    }
    Ok(())
}

/// Aging profiles resolve, fill levels are percentages, and neither is asked of an
/// existing directory, which fsbench must not fill.
fn validate_aging(suite: &Suite) -> anyhow::Result<()> {
    let ages = suite.configs.iter().filter_map(|c| c.age.as_deref());
    for age in suite.age.as_deref().into_iter().chain(ages) {
        crate::aging::profile::resolve(age)?;
    }
    let fills = suite.configs.iter().filter_map(|c| c.fill);
    for level in suite.fill.iter().copied().chain(fills) {
        crate::aging::parse_fill(&level.to_string())?;
    }
    let asks = suite.age.as_deref().is_some_and(|a| a != "none")
        || suite.fill.iter().any(|f| *f > 0)
        || suite
            .configs
            .iter()
            .any(|c| c.age.is_some() || c.fill.is_some());
    if asks && !suite.target.makes_filesystems() {
        return Err(invalid(
            "aging and fill levels fill the filesystem: they need a filesystem fsbench makes (not --dir)",
        ));
    }
    if suite.probe_after && !suite.target.makes_filesystems() {
        return Err(invalid(
            "the free-space probe allocates half the free space: it needs a filesystem fsbench makes (not --dir)",
        ));
    }
    Ok(())
}

/// Crash states are rebuilt from a loop image's recorded writes: loop images and
/// filesystems the kernel mounts from a block device only.
fn check_crash(suite: &Suite) -> anyhow::Result<()> {
    use fsbench_model::filesystem::FsType;
    use fsbench_model::testbed::TargetSpec;
    let crashed = |c: &&FsConfig| suite.crash.states_of(c).is_some();
    if suite.crash.states.is_none() && !suite.configs.iter().any(|c| c.crash.is_some()) {
        return Ok(());
    }
    match &suite.target {
        TargetSpec::Image { .. } => {}
        TargetSpec::Dir { .. } => {
            return Err(invalid(
                "crash= (--crash-states) needs loop images: a --dir target has no device whose \
                 writes can be recorded",
            ));
        }
        TargetSpec::Device { .. } => {
            return Err(invalid(
                "crash= (--crash-states) needs loop images: fsbench records the writes of a \
                 loop image it makes, not of a --device",
            ));
        }
    }
    if suite.crash.states == Some(0) {
        return Err(invalid("--crash-states 0 checks nothing: give at least 1"));
    }
    for c in suite.configs.iter().filter(crashed) {
        if matches!(
            c.fs,
            Some(FsType::Tmpfs | FsType::Zfs | FsType::User) | None
        ) {
            return Err(invalid(format!(
                "`{}`: crash states are checked for filesystems the kernel mounts from a block \
                 device (not tmpfs, zfs or a user driver)",
                c.label
            )));
        }
    }
    if let Some(s) = suite
        .crash
        .time_secs
        .filter(|s| !(*s > 0.0 && s.is_finite()))
    {
        return Err(invalid(format!(
            "--crash-time {s}: give a positive duration"
        )));
    }
    Ok(())
}

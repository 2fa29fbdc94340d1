//! The configurations a suite runs: its own or the default filesystems whose tools are
//! here, each multiplied by the suite's background loads and I/O schedulers.

use fsbench_testbed::define;
use fsbench_testbed::drivers::{FsTypeExt, Toolset, UserDriverExt};

use fsbench_measure::error::invalid;
use fsbench_model::config::FsConfig;
use fsbench_model::filesystem::FsType;
use fsbench_model::results::Skipped;
use fsbench_model::suite::Suite;
use fsbench_model::testbed::TargetSpec;
use fsbench_testbed::testbed::mounts;

/// A configuration with its installed tools.
pub(super) type Resolved = (FsConfig, Toolset);

/// Resolves the configurations to run: the suite's own (their tools must exist), or the
/// default filesystems whose tools are installed, listing the others as skipped.
pub(super) fn resolve_configs(suite: &Suite) -> anyhow::Result<(Vec<Resolved>, Vec<Skipped>)> {
    let (configs, skipped) = suite_configs(suite)?;
    let configs = under_each_load(configs, &suite.background)?;
    if suite.sched.is_empty() {
        return Ok((configs, skipped));
    }
    // `--sched a,b`: every configuration under each scheduler (tmpfs has no queue).
    let mut each = Vec::new();
    for (config, tools) in configs {
        if config.fs == Some(FsType::Tmpfs) || config.sched.is_some() {
            each.push((config, tools));
            continue;
        }
        for name in &suite.sched {
            let mut scheduled = config.clone();
            scheduled.scheduled(Some(name.clone()), false);
            each.push((scheduled, tools.clone()));
        }
    }
    Ok((each, skipped))
}

/// `--background none,cpu:2`: every configuration under each load (one that names its own
/// keeps it).
fn under_each_load(configs: Vec<Resolved>, loads: &[String]) -> anyhow::Result<Vec<Resolved>> {
    if loads.is_empty() {
        return Ok(configs);
    }
    let mut each = Vec::new();
    for (config, tools) in configs {
        if config.background.is_some() {
            each.push((config, tools));
            continue;
        }
        for load in loads {
            let mut loaded = config.clone();
            define::load(&mut loaded, Some(load.clone()), false)?;
            each.push((loaded, tools.clone()));
        }
    }
    Ok(each)
}

/// The suite's configurations, or the default ones whose tools are here.
fn suite_configs(suite: &Suite) -> anyhow::Result<(Vec<Resolved>, Vec<Skipped>)> {
    if let TargetSpec::Dir { path } = &suite.target {
        let fstype = mounts::mount_containing(path).map_or("unknown".to_string(), |m| m.fstype);
        return Ok((
            vec![(FsConfig::existing(&fstype), Toolset::default())],
            Vec::new(),
        ));
    }
    if !suite.configs.is_empty() {
        let resolved = suite
            .configs
            .iter()
            .map(|c| {
                let fs =
                    c.fs.expect("configurations of a filesystem target name a filesystem");
                let tools = match &c.driver {
                    Some(driver) => driver.toolset()?,
                    None => fs.driver().toolset()?,
                };
                Ok((c.clone(), tools))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        return Ok((resolved, Vec::new()));
    }
    let mut configs = Vec::new();
    let mut skipped = Vec::new();
    for fs in FsType::DEFAULTS {
        let config = FsConfig::new(fs, Vec::new(), String::new(), None);
        match fs.driver().toolset() {
            Ok(tools) => configs.push((config, tools)),
            Err(e) => skipped.push(Skipped {
                label: config.label,
                reason: e.to_string(),
            }),
        }
    }
    if configs.is_empty() {
        return Err(invalid(format!(
            "none of the default filesystems can be made here: {}",
            skipped
                .iter()
                .map(|s| s.reason.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    Ok((configs, skipped))
}

//! A suite's record as it starts (its configurations, its target in words, the system) or
//! resumes, and a run's before it runs.

use super::configs::Resolved;
use super::prepare::RunSpec;
use fsbench_measure::error::invalid;
use fsbench_measure::sysinfo::SystemInfoExt;
use fsbench_model::config::FsConfig;
use fsbench_model::filesystem::FsType;
use fsbench_model::results::{
    ConfigInfo, ConfigKey, RunRecord, RunStatus, Skipped, SuiteResult, SuiteStatus, TargetInfo,
};
use fsbench_model::suite::Suite;
use fsbench_model::system::SystemInfo;
use fsbench_model::testbed::{SuiteTestbed, TargetSpec};
use fsbench_model::units::format_bytes;
use fsbench_testbed::testbed::stack::SuiteTestbedExt;
use fsbench_testbed::testbed::{Target, device};

/// The time now, as records keep it (RFC 3339, local time, whole seconds).
pub(crate) fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn describe_target(target: &Target, configs: &[FsConfig]) -> TargetInfo {
    // tmpfs has no image, loop device or disk: each run mounts a fresh one in memory.
    let is_tmpfs = |c: &FsConfig| c.fs == Some(FsType::Tmpfs);
    if !configs.is_empty()
        && configs.iter().all(is_tmpfs)
        && !matches!(target.spec(), TargetSpec::Dir { .. })
    {
        return TargetInfo {
            description: "a fresh tmpfs mount per run (in memory: no image, loop device or disk)"
                .into(),
            image_size: None,
            device: None,
        };
    }
    let mut info = describe_image_or_device(target);
    if configs.iter().any(is_tmpfs) {
        info.description
            .push_str("; tmpfs configurations mount a fresh tmpfs instead (in memory)");
    }
    info
}

fn describe_image_or_device(target: &Target) -> TargetInfo {
    match target.spec() {
        TargetSpec::Image { dir, .. } => TargetInfo {
            description: format!(
                "fresh sparse loop image of {} per run in {}, {}",
                format_bytes(target.image_size()),
                dir.display(),
                loop_mode(target.spec())
            ),
            image_size: Some(target.image_size()),
            device: device::block_info_of_path(dir),
        },
        TargetSpec::Device { path, .. } => {
            use std::os::unix::fs::MetadataExt;
            let info = path.metadata().ok().and_then(|m| {
                if m.file_type().is_file() {
                    device::block_info_of_path(path)
                } else {
                    device::block_info(rustix::fs::major(m.rdev()), rustix::fs::minor(m.rdev()))
                }
            });
            TargetInfo {
                description: format!(
                    "{} ({}), re-made for every run{}",
                    path.display(),
                    format_bytes(target.image_size()),
                    if path.metadata().is_ok_and(|m| m.is_file()) {
                        format!(", {}", loop_mode(target.spec()))
                    } else {
                        String::new()
                    }
                ),
                image_size: Some(target.image_size()),
                device: info,
            }
        }
        TargetSpec::Dir { path } => TargetInfo {
            description: format!(
                "fresh subdirectory of {} per run (no mkfs, unmount or fsck)",
                path.display()
            ),
            image_size: None,
            device: device::block_info_of_path(path),
        },
    }
}

/// How the target's loop devices are asked to cache (what they did is recorded per run).
fn loop_mode(spec: &TargetSpec) -> &'static str {
    if spec.loop_direct_io() {
        "loop devices asked for direct I/O"
    } else {
        "loop devices BUFFERED in the host page cache (loop_cache asked for)"
    }
}

/// An interrupted suite, running again.
pub(super) fn resumed(mut previous: SuiteResult) -> SuiteResult {
    previous.status = SuiteStatus::Running;
    previous.error = None;
    previous
}

/// A new suite's record: its configurations with their tools' versions, the target and the
/// system it runs on.
pub(super) fn new_result(
    suite: &Suite,
    configs: &[Resolved],
    skipped: Vec<Skipped>,
    target: &Target,
) -> SuiteResult {
    let configurations = (configs.iter())
        .map(|(c, t)| ConfigInfo {
            config: c.clone(),
            mkfs_version: t.version.clone(),
            fsck_version: t.fsck_version.clone(),
            mkfs_command: None,
            mount_options: None,
            crash: Vec::new(),
        })
        .collect();
    let made: Vec<FsConfig> = configs.iter().map(|(c, _)| c.clone()).collect();
    let target = describe_target(target, &made);
    let system = SystemInfo::collect();
    SuiteResult::new(
        suite.clone(),
        system,
        target,
        configurations,
        skipped,
        now(),
    )
}

/// Each configuration's key: its place in the suite's configurations (a resumed suite's
/// own, found by the configuration itself, not its label).
pub(super) fn config_keys(
    configs: &[Resolved],
    result: &SuiteResult,
) -> anyhow::Result<Vec<ConfigKey>> {
    (configs.iter())
        .map(|(c, _)| {
            let place = result.configurations.iter().position(|i| i.config == *c);
            place.map(|p| ConfigKey(p as u32)).ok_or_else(|| {
                invalid(format!(
                    "configuration `{}` is not one of the suite's: cannot resume it",
                    c.label
                ))
            })
        })
        .collect()
}

/// A run's record before it starts.
pub(super) fn new_record(
    run: &RunSpec<'_>,
    round: u32,
    position: usize,
    testbed: &SuiteTestbed,
    target: &TargetSpec,
) -> RunRecord {
    RunRecord {
        run: round,
        position: position as u32 + 1,
        testbed: Some(testbed.run_start(target)),
        ..blank_record(run.keys, &run.resolved.0.label, run.spec)
    }
}

/// The record of a run of `spec` on configuration `config` that has not started: no round,
/// place or testbed yet.
pub(super) fn blank_record(
    keys: (ConfigKey, fsbench_model::results::WorkloadKey),
    config: &str,
    spec: &fsbench_workloads::Params,
) -> RunRecord {
    RunRecord {
        run: 0,
        position: 0,
        config_key: keys.0,
        workload_key: keys.1,
        config: config.to_string(),
        workload: spec.label(),
        started_at: now(),
        status: RunStatus::Ok,
        error: None,
        source: String::new(),
        mkfs_secs: None,
        mount_options: String::new(),
        phases: Vec::new(),
        unmount_secs: None,
        fsck: None,
        incomplete: None,
        loop_device: None,
        testbed: None,
        preparation: None,
        probe_after: None,
        output: Vec::new(),
        workers: spec.workers(),
    }
}

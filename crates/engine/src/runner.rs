//! The suite runner: runs × configurations × workloads, configurations interleaved and
//! rotated round by round so drift hits all of them alike, each run on a fresh filesystem.

pub mod auto;
pub mod ceiling;
mod configs;
mod lifecycle;
pub mod observer;
pub mod phases;
mod prepare;

use std::collections::HashSet;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use configs::resolve_configs;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::Progress;
use fsbench_measure::sysinfo::SystemInfoExt;
use fsbench_model::config::FsConfig;
use fsbench_model::filesystem::FsType;
use fsbench_model::results::{
    ConfigInfo, ConfigKey, RunRecord, RunStatus, Skipped, SuiteResult, SuiteStatus, TargetInfo,
    WorkloadKey,
};
use fsbench_model::suite::Suite;
use fsbench_model::system::SystemInfo;
use fsbench_model::testbed::{SuiteTestbed, TargetSpec};
use fsbench_model::units::format_bytes;
use fsbench_testbed::define;
use fsbench_testbed::testbed::stack::{self, SuiteTestbedExt};
use fsbench_testbed::testbed::{Target, device, named};
use fsbench_workloads::{Boundary, Params, SpaceNeed};
pub(crate) use lifecycle::{finish_run, fresh_for_run};
use lifecycle::{fresh_fs, record_checkpoint};
use lifecycle::{undo_failed_run, with_remedy};
use observer::{Diagnostic, Observer, SuitePlan};
use phases::{PhaseSettings, run_phase};

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

/// How to run a suite.
pub struct RunOptions<'a> {
    pub progress: Arc<Progress>,
    /// Runs each run in place of [`run_once`]: under MPI, every rank's share of it.
    pub executor: Option<&'a dyn RunExecutor>,
}

/// One run (fresh filesystem, every phase, teardown) done some other way than [`run_once`];
/// returns the mkfs command line used.
pub trait RunExecutor {
    fn run(
        &self,
        run: RunContext<'_>,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<Option<String>>;
    /// Processes that each run every phase (MPI ranks): the space they need adds up, and
    /// one process's harness ceiling does not apply to their sum.
    fn processes(&self) -> u64;
}

/// What a run is given: the target, the preparer of aged and filled filesystems, what the run
/// is (configuration, workload, label) and the record to fill.
pub struct RunContext<'a> {
    pub(crate) target: &'a mut Target,
    pub(crate) preparer: &'a mut prepare::Preparer,
    pub(crate) what: &'a prepare::RunSpec<'a>,
    pub(crate) record: &'a mut RunRecord,
}

/// What a suite's records say, worked out: its workloads' record where an older fsbench
/// stored it without one, the summaries and the warnings. The runner does it when a suite
/// ends; whoever loads a stored suite does it too.
pub fn summarize(result: &mut SuiteResult) -> anyhow::Result<()> {
    fsbench_workloads::record_workloads(result)?;
    fsbench_stats::summary::summarize_runs(result);
    fsbench_stats::warnings::analyze(result, &fsbench_workloads::more_work_advice);
    Ok(())
}

/// Runs `suite`, or with `previous` the runs of that earlier, interrupted suite that did not
/// complete. Errors before the first run (bad input, refused target) are returned as `Err`; an
/// error during the runs ends the suite early and is returned beside the result of the runs
/// that completed. `observer` is told everything as it happens.
pub fn run_suite(
    suite: &Suite,
    previous: Option<SuiteResult>,
    options: &RunOptions,
    observer: &mut dyn Observer,
) -> anyhow::Result<(SuiteResult, Option<anyhow::Error>)> {
    define::validate(suite)?;
    let workloads = (suite.workloads.iter())
        .map(Params::of)
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (configs, skipped) = resolve_configs(suite)?;
    let configs = prepare::expand(configs, suite);
    named::check(
        configs.iter().map(|(c, _)| c),
        &suite.target,
        &suite.extra_devices,
    )?;
    for s in &skipped {
        observer.config_skipped(s);
    }
    let need = (workloads.iter())
        .map(Params::space_needed)
        .try_fold(SpaceNeed::default(), |need, w| anyhow::Ok(need.max(w?)))?;
    let processes = options.executor.map_or(1, |e| e.processes());
    let need = SpaceNeed {
        bytes: need.bytes.saturating_mul(processes),
        inodes: need.inodes.saturating_mul(processes),
        ideal_bytes: need.ideal_bytes.saturating_mul(processes),
    };
    let need = prepare::sizing_need(need, &configs)?;
    let fs_types: Vec<FsType> = configs.iter().filter_map(|(c, _)| c.fs).collect();
    let mut target = Target::open(&suite.target, need, &fs_types)?;
    let mut preparer = match &previous {
        Some(previous) => prepare::Preparer::resuming(previous, &workloads),
        None => prepare::Preparer::default(),
    };
    let mut result = match previous {
        Some(mut previous) => {
            previous.status = SuiteStatus::Running;
            previous.error = None;
            previous
        }
        None => {
            let configurations = (configs.iter())
                .map(|(c, t)| ConfigInfo {
                    config: c.clone(),
                    mkfs_version: t.version.clone(),
                    fsck_version: t.fsck_version.clone(),
                    mkfs_command: None,
                    mount_options: None,
                })
                .collect();
            let made: Vec<FsConfig> = configs.iter().map(|(c, _)| c.clone()).collect();
            let target = describe_target(&target, &made);
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
    };
    fsbench_workloads::record_workloads(&mut result)?;
    // A resumed suite keeps the stack it started on; its new runs say what changed since.
    let testbed = result
        .testbed
        .get_or_insert_with(|| SuiteTestbed::collect(&suite.target))
        .clone();
    for line in testbed.busy(result.system.cpus) {
        observer.diagnostic(&Diagnostic::BusyMachine(&line));
    }
    // Each configuration's key: its place in the suite's configurations (a resumed suite's
    // own, found by the configuration itself, not its label).
    let keys = configs
        .iter()
        .map(|(c, _)| {
            let place = result.configurations.iter().position(|i| i.config == *c);
            place.map(|p| ConfigKey(p as u32)).ok_or_else(|| {
                invalid(format!(
                    "configuration `{}` is not one of the suite's: cannot resume it",
                    c.label
                ))
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    // Runs that count as done: a resumed suite repeats only failed and missing ones.
    let done: HashSet<(u32, ConfigKey, WorkloadKey)> = result
        .runs
        .iter()
        .filter(|r| matches!(r.status, RunStatus::Ok | RunStatus::FsckFailed))
        .map(|r| (r.run, r.config_key, r.workload_key))
        .collect();
    let settings = PhaseSettings {
        settle: suite.drop_caches,
        progress: options.progress.clone(),
    };
    // One process's ceiling says nothing of several ranks' sum: MPI runs go without.
    let single = processes == 1;
    // A write-cache change the device refuses is an error before any run.
    let mut caches: Vec<bool> = configs.iter().filter_map(|(c, _)| c.wcache).collect();
    caches.sort();
    caches.dedup();
    for on in caches {
        target.try_write_cache(on)?;
    }
    // The raw device before its first mkfs (a resumed suite keeps the one it measured).
    if let (Some(secs), Some(t)) = (suite.baseline, result.testbed.as_mut())
        && t.baseline.is_none()
    {
        let limit = std::time::Duration::from_secs_f64(secs);
        let measured = (target.baseline(limit, &settings.progress.cancel))
            .map_err(|e| e.context("raw-device baseline"));
        t.baseline = Some(measured?);
    }
    observer.suite_started(&SuitePlan {
        result: &result,
        configurations: configs.len(),
        workloads: suite.workloads.len(),
        runs: suite.runs,
        already_done: done.len(),
    })?;
    let mut error = None;
    let started = std::time::Instant::now();
    'rounds: for round in 0..suite.runs {
        let to_do = |key, w| !done.contains(&(round + 1, key, WorkloadKey(w as u32)));
        let open = keys
            .iter()
            .any(|&k| (0..suite.workloads.len()).any(|w| to_do(k, w)));
        // The ceiling sees the machine as this round's runs will (a resumed suite's rounds
        // that are done keep theirs). An error here ends the suite like a run's.
        if single && open {
            let first = !result.ceilings.iter().any(|c| c.round > 0);
            let measured = ceiling::measure_round(
                &mut target,
                &workloads,
                &settings,
                observer,
                (round + 1, first),
                &result.ceilings,
            );
            match measured {
                Ok(found) => {
                    result.ceilings.retain(|c| c.round != round + 1);
                    result.ceilings.extend(found);
                }
                Err(e) => {
                    result.status = SuiteStatus::Interrupted;
                    result.error = Some(format!("{e:#}"));
                    error = Some(e);
                    break 'rounds;
                }
            }
        }
        for position in 0..configs.len() {
            let index = (round as usize + position) % configs.len();
            let (resolved, config_key) = (&configs[index], keys[index]);
            let config = &resolved.0;
            for (w, spec) in workloads.iter().enumerate() {
                let workload_key = WorkloadKey(w as u32);
                if done.contains(&(round + 1, config_key, workload_key)) {
                    continue;
                }
                let label = format!(
                    "[{}/{}] {} {}",
                    round + 1,
                    suite.runs,
                    config.label,
                    spec.label()
                );
                let run = prepare::RunSpec {
                    resolved,
                    keys: (config_key, workload_key),
                    spec,
                    settings: &settings,
                    label: &label,
                    probe_after: suite.probe_after,
                    sched_backing: suite.sched_backing,
                };
                // A failure to prepare is the run's: run_once meets it again and records it.
                if let Ok(Some(reason)) = preparer.refusal(&mut target, &run, observer) {
                    let label = format!("{} {}", config.label, spec.label());
                    if !result.skipped.iter().any(|s| s.label == label) {
                        let skipped = Skipped { label, reason };
                        observer.config_skipped(&skipped);
                        result.skipped.push(skipped);
                    }
                    continue;
                }
                let mut record = RunRecord {
                    run: round + 1,
                    position: position as u32 + 1,
                    config_key,
                    workload_key,
                    config: config.label.clone(),
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
                    testbed: Some(testbed.run_start(&suite.target)),
                    preparation: None,
                    probe_after: None,
                    output: Vec::new(),
                };
                observer.run_started(&label, &record);
                let context = RunContext {
                    target: &mut target,
                    preparer: &mut preparer,
                    what: &run,
                    record: &mut record,
                };
                let outcome = match options.executor {
                    Some(executor) => executor.run(context, observer),
                    None => run_once(context, observer),
                };
                if let Some(t) = record.testbed.as_mut() {
                    t.load_end = stack::load_average();
                }
                let ceiling = fsbench_model::results::ceiling::for_run(
                    &result.ceilings,
                    &spec.label(),
                    round + 1,
                );
                for phase in &mut record.phases {
                    phase.shape.harness_percent = ceiling.and_then(|c| c.percent_of(phase));
                    let cells = ceiling.map(|c| c.cell_percents(phase)).unwrap_or_default();
                    phase.figures.extend(cells);
                }
                let info = result.configurations.get_mut(config_key.0 as usize);
                if let Some(info) = info
                    && info.mount_options.is_none()
                    && !record.mount_options.is_empty()
                {
                    info.mount_options = Some(record.mount_options.clone());
                }
                let failure = match outcome {
                    Ok(mkfs_command) => {
                        if let Some(info) = result.configurations.get_mut(config_key.0 as usize) {
                            info.mkfs_command = info.mkfs_command.take().or(mkfs_command.clone());
                        }
                        observer
                            .run_finished(&record, mkfs_command.as_deref())
                            .err()
                    }
                    Err(e) => {
                        let e = with_remedy(e, &suite.target);
                        let interrupted =
                            matches!(e.downcast_ref(), Some(FsbenchError::Interrupted));
                        record.status = if interrupted {
                            RunStatus::Interrupted
                        } else {
                            RunStatus::Failed
                        };
                        record.error = Some(format!("{e:#}"));
                        observer.diagnostic(&Diagnostic::RunFailed {
                            label: &label,
                            error: &e,
                        });
                        // The failed run is kept too: what failed, and how far it got.
                        if let Err(store_error) = observer.run_finished(&record, None) {
                            observer.diagnostic(&Diagnostic::FailedRunNotSaved(&store_error));
                        }
                        // A run that lost its daemon failed alone; the suite goes on.
                        let lost = matches!(e.downcast_ref(), Some(FsbenchError::RunLost(_)));
                        (!lost).then_some(e)
                    }
                };
                result.runs.push(record);
                if let Some(e) = failure {
                    let interrupted = matches!(e.downcast_ref(), Some(FsbenchError::Interrupted));
                    result.status = if interrupted {
                        SuiteStatus::Interrupted
                    } else {
                        SuiteStatus::Failed
                    };
                    result.error = Some(format!("{e:#}"));
                    error = Some(e);
                    break 'rounds;
                }
            }
        }
        if let Some(auto) = &suite.auto_runs {
            fsbench_stats::summary::summarize_runs(&mut result);
            let widest = fsbench_stats::summary::widest_primary_ci_percent(&result);
            if let Some(stop) = auto::stop_after(auto, round + 1, widest, started.elapsed()) {
                observer.diagnostic(&Diagnostic::AutoRunsStopped(&stop));
                break;
            }
        }
    }
    preparer.adopt_unused(&mut target);
    // An interrupted or failed suite can be resumed (not under MPI): its templates stay for it.
    if error.is_some() && options.executor.is_none() {
        let kept = target.keep_templates();
        if !kept.is_empty() {
            observer.diagnostic(&Diagnostic::TemplatesKept(&kept));
        }
    }
    drop(target);
    if let Some(t) = result.testbed.as_mut() {
        t.load_end = stack::load_average();
    }
    if error.is_none() {
        result.status = SuiteStatus::Completed;
    }
    result.finished_at = now();
    summarize(&mut result)?;
    if let Err(e) = observer.suite_finished(&result) {
        observer.diagnostic(&Diagnostic::SuiteEndNotSaved(&e));
        error.get_or_insert(e);
    }
    Ok((result, error))
}

/// One run: fresh filesystem, every phase, teardown. Returns the mkfs command line used.
fn run_once(run: RunContext<'_>, observer: &mut dyn Observer) -> anyhow::Result<Option<String>> {
    let RunContext {
        target,
        preparer,
        what,
        record,
    } = run;
    let (spec, settings, label) = (what.spec, what.settings, what.label);
    if settings.progress.cancel.load(Ordering::Relaxed) {
        return Err(FsbenchError::Interrupted.into());
    }
    let mut fresh = fresh_for_run(target, preparer, what, record, observer)?;
    let mkfs_command = fresh.mkfs_command.clone();
    let mut workload = spec.instantiate();
    workload.filesystem_lacks(&what.resolved.0.lacks());
    let phases = || -> anyhow::Result<_> {
        workload.setup(fresh.dir().as_fd(), record.run, &settings.progress.cancel)?;
        let phase_count = workload.phases().len();
        for index in 0..phase_count {
            let outcome = run_phase(
                workload.as_mut(),
                index,
                fresh.dir(),
                settings,
                label,
                observer,
            );
            let mut phase = match outcome {
                Ok(phase) => phase,
                Err(e) => {
                    let mut e = with_remedy(e.into(), target.spec());
                    if let Some(lost) = fresh.lost_daemon() {
                        e = FsbenchError::RunLost(format!("{lost} during the run: {e:#}")).into();
                    }
                    return Err(undo_failed_run(fresh, label, e, observer));
                }
            };
            let boundary = workload.boundary_after(index);
            let checkpoint = match boundary {
                Boundary::Keep => None,
                // The last phase needs no fresh filesystem after it, only the check.
                Boundary::Remount | Boundary::Remake if index + 1 == phase_count => {
                    fresh.remount()?
                }
                Boundary::Remount => fresh.remount()?,
                Boundary::Remake => {
                    let teardown = fresh.finish()?;
                    fresh = fresh_fs(target, preparer, what, observer)?.0;
                    Some(teardown)
                }
            };
            match checkpoint {
                Some(teardown) => record_checkpoint(&mut phase, &teardown, record, label, observer),
                None if boundary != Boundary::Keep => phase.notes.push(
                    "not unmounted and checked after this phase: the target cannot be remounted (tmpfs or a directory)".into(),
                ),
                None => {}
            }
            record.phases.push(phase);
        }
        Ok(fresh)
    };
    let outcome = phases();
    // Kept whether the run failed or not: a failed command's output says why.
    record.output = workload.kept_output();
    let fresh = outcome?;
    finish_run(fresh, what, record, observer)?;
    Ok(mkfs_command)
}

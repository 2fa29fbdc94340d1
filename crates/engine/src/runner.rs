//! The suite runner: runs × configurations × workloads, configurations interleaved and
//! rotated round by round so drift hits all of them alike, each run on a fresh filesystem.

pub mod auto;
pub mod ceiling;
mod configs;
mod crash;
mod lifecycle;
pub mod observer;
pub mod phases;
mod prepare;
mod records;
mod trial;

use std::collections::HashSet;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use configs::resolve_configs;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::Progress;
use fsbench_model::filesystem::FsType;
use fsbench_model::results::ceiling::Ceiling;
use fsbench_model::results::{
    ConfigKey, RunRecord, RunStatus, Skipped, SuiteResult, SuiteStatus, WorkloadKey,
};
use fsbench_model::suite::Suite;
use fsbench_model::testbed::{SuiteTestbed, TargetSpec};
use fsbench_testbed::define;
use fsbench_testbed::testbed::stack::{self, SuiteTestbedExt};
use fsbench_testbed::testbed::{Target, named};
use fsbench_workloads::{Boundary, Params, SpaceNeed};
use lifecycle::undo_failed_run;
use lifecycle::{cross_boundary, record_checkpoint};
pub(crate) use lifecycle::{finish_run, fresh_for_run, with_remedy};
use observer::{Diagnostic, Observer, SuitePlan};
use phases::{PhaseSettings, run_phase};
use records::now;

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
    let mut run = SuiteRun::plan(suite, previous, options, observer)?;
    let error = run.rounds(observer);
    run.finish(error, observer)
}

/// How a round ended: every run made, or `--runs auto`'s time budget before the next one.
enum Round {
    Done,
    OutOfTime,
}

/// A suite under way: what its runs share, from the plan to the end.
struct SuiteRun<'a> {
    suite: &'a Suite,
    options: &'a RunOptions<'a>,
    workloads: Vec<Params>,
    configs: Vec<configs::Resolved>,
    /// Each configuration's key: its place in the suite's configurations.
    keys: Vec<ConfigKey>,
    /// Runs that count as done: a resumed suite repeats only failed and missing ones.
    done: HashSet<(u32, ConfigKey, WorkloadKey)>,
    settings: PhaseSettings,
    /// The stack under the suite, as it started.
    testbed: SuiteTestbed,
    target: Target,
    preparer: prepare::Preparer,
    result: SuiteResult,
    /// `--runs auto`'s time: no run starts that the earlier ones say would end past it.
    budget: auto::Budget,
}

impl<'a> SuiteRun<'a> {
    /// Everything checked and made before the first run: the workloads and configurations,
    /// the target sized for them, the suite's record (new, or the resumed one's), the
    /// device's write cache and baseline.
    fn plan(
        suite: &'a Suite,
        previous: Option<SuiteResult>,
        options: &'a RunOptions<'a>,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<SuiteRun<'a>> {
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
        let need = space_needed(&workloads, options)?;
        let need = prepare::sizing_need(need, &configs)?;
        let fs_types: Vec<FsType> = configs.iter().filter_map(|(c, _)| c.fs).collect();
        let mut target = Target::open(&suite.target, need, &fs_types)?;
        // Mount options the kernel refuses end the suite before anything is measured.
        if previous.is_none() {
            trial::try_options(&mut target, &configs)?;
        }
        let preparer = match &previous {
            Some(previous) => prepare::Preparer::resuming(previous, &workloads),
            None => prepare::Preparer::default(),
        };
        let mut result = match previous {
            Some(previous) => records::resumed(previous),
            None => records::new_result(suite, &configs, skipped, &target),
        };
        fsbench_workloads::record_workloads(&mut result)?;
        // A resumed suite keeps the stack it started on; its new runs say what changed since.
        let testbed = (result.testbed)
            .get_or_insert_with(|| SuiteTestbed::collect(&suite.target))
            .clone();
        for line in testbed.busy(result.system.cpus) {
            observer.diagnostic(&Diagnostic::BusyMachine(&line));
        }
        let keys = records::config_keys(&configs, &result)?;
        let done = (result.runs.iter())
            .filter(|r| matches!(r.status, RunStatus::Ok | RunStatus::FsckFailed))
            .map(|r| (r.run, r.config_key, r.workload_key))
            .collect();
        let settings = PhaseSettings {
            settle: suite.drop_caches,
            progress: options.progress.clone(),
        };
        let mut run = SuiteRun {
            suite,
            options,
            workloads,
            configs,
            keys,
            done,
            settings,
            testbed,
            target,
            preparer,
            result,
            budget: auto::Budget::new(suite.auto_runs.as_ref()),
        };
        run.set_up_device()?;
        observer.suite_started(&SuitePlan {
            result: &run.result,
            configurations: run.configs.len(),
            workloads: suite.workloads.len(),
            runs: suite.runs,
            already_done: run.done.len(),
        })?;
        Ok(run)
    }

    /// The device's write caches as the configurations ask (a change the device refuses is
    /// an error before any run), and the raw device's baseline before its first mkfs (a
    /// resumed suite keeps the one it measured).
    fn set_up_device(&mut self) -> anyhow::Result<()> {
        let mut caches: Vec<bool> = self.configs.iter().filter_map(|(c, _)| c.wcache).collect();
        caches.sort();
        caches.dedup();
        for on in caches {
            self.target.try_write_cache(on)?;
        }
        if let (Some(secs), Some(t)) = (self.suite.baseline, self.result.testbed.as_mut())
            && t.baseline.is_none()
        {
            let limit = std::time::Duration::from_secs_f64(secs);
            let measured = (self.target.baseline(limit, &self.settings.progress.cancel))
                .map_err(|e| e.context("raw-device baseline"));
            t.baseline = Some(measured?);
        }
        Ok(())
    }

    /// Every round in turn, until the last, an error (returned) or auto-runs' stop.
    fn rounds(&mut self, observer: &mut dyn Observer) -> Option<anyhow::Error> {
        let started = std::time::Instant::now();
        for round in 1..=self.suite.runs {
            match self.round(round, observer) {
                Err(e) => return Some(e),
                Ok(Round::OutOfTime) => {
                    self.stop_out_of_time(round, observer);
                    break;
                }
                Ok(Round::Done) => {}
            }
            if let Some(auto) = &self.suite.auto_runs {
                fsbench_stats::summary::summarize_runs(&mut self.result);
                let widest = fsbench_stats::summary::widest_primary_ci_percent(&self.result);
                if let Some(stop) = auto::stop_after(auto, round, widest, started.elapsed()) {
                    observer.diagnostic(&Diagnostic::AutoRunsStopped(&stop));
                    break;
                }
            }
        }
        None
    }

    /// Round `round` (from 1): its harness ceiling, then every configuration (rotated by the
    /// round, so that drift hits all alike) with every workload not done yet.
    fn round(&mut self, round: u32, observer: &mut dyn Observer) -> anyhow::Result<Round> {
        let open = (self.keys.iter())
            .any(|&k| (0..self.workloads.len()).any(|w| !self.is_done(round, k, w)));
        if open && self.budget.would_overrun(None) {
            return Ok(Round::OutOfTime);
        }
        let ceiling_started = std::time::Instant::now();
        if open && let Err(e) = self.measure_ceiling(round, observer) {
            return Err(self.stopped(SuiteStatus::Interrupted, e));
        }
        self.budget.ceiling_took(ceiling_started.elapsed());
        for position in 0..self.configs.len() {
            let index = (round as usize - 1 + position) % self.configs.len();
            for w in 0..self.workloads.len() {
                if self.is_done(round, self.keys[index], w) {
                    continue;
                }
                if self.budget.would_overrun(Some((index, w))) {
                    return Ok(Round::OutOfTime);
                }
                let run_started = std::time::Instant::now();
                self.run_one(round, position, index, w, observer)?;
                self.budget.run_took((index, w), run_started.elapsed());
            }
        }
        Ok(Round::Done)
    }

    /// Says that `--max-time` ends the suite before the next run of round `round` (from 1).
    fn stop_out_of_time(&mut self, round: u32, observer: &mut dyn Observer) {
        let Some(auto) = &self.suite.auto_runs else {
            return;
        };
        fsbench_stats::summary::summarize_runs(&mut self.result);
        let widest = fsbench_stats::summary::widest_primary_ci_percent(&self.result);
        let partial = (self.result.runs.iter()).filter(|r| r.run == round).count();
        let stop = auto::out_of_time(auto, (round - 1, partial), widest);
        observer.diagnostic(&Diagnostic::AutoRunsStopped(&stop));
    }

    fn is_done(&self, round: u32, config: ConfigKey, workload: usize) -> bool {
        (self.done).contains(&(round, config, WorkloadKey(workload as u32)))
    }

    /// The harness ceiling as this round's runs will see the machine (a resumed suite's
    /// rounds that are done keep theirs). One process's ceiling says nothing of several
    /// ranks' sum: MPI runs go without.
    fn measure_ceiling(&mut self, round: u32, observer: &mut dyn Observer) -> anyhow::Result<()> {
        if self.options.executor.is_some_and(|e| e.processes() > 1) {
            return Ok(());
        }
        let first = !self.result.ceilings.iter().any(|c| c.round > 0);
        let measured = ceiling::measure_round(
            &mut self.target,
            &self.workloads,
            &self.settings,
            observer,
            (round, first),
            &self.result.ceilings,
        );
        self.result.ceilings.retain(|c| c.round != round);
        self.result.ceilings.extend(measured?);
        Ok(())
    }

    /// The suite ends here, `status`, with error `e` (returned).
    fn stopped(&mut self, status: SuiteStatus, e: anyhow::Error) -> anyhow::Error {
        self.result.status = status;
        self.result.error = Some(format!("{e:#}"));
        e
    }

    /// Workload `w` on configuration `index` (at `position` in this round): skipped where
    /// its preparation is refused, else run and recorded. An error that ends the suite is
    /// returned (a run that lost its daemon failed alone).
    fn run_one(
        &mut self,
        round: u32,
        position: usize,
        index: usize,
        w: usize,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<()> {
        let (resolved, config_key) = (&self.configs[index], self.keys[index]);
        let (config, spec) = (&resolved.0, &self.workloads[w]);
        let label = format!(
            "[{round}/{}] {} {}",
            self.suite.runs,
            config.label,
            spec.label()
        );
        let run = prepare::RunSpec {
            resolved,
            keys: (config_key, WorkloadKey(w as u32)),
            spec,
            settings: &self.settings,
            label: &label,
            probe_after: self.suite.probe_after,
            sched_backing: self.suite.sched_backing,
        };
        // A failure to prepare is the run's: run_once meets it again and records it.
        if let Ok(Some(reason)) = self.preparer.refusal(&mut self.target, &run, observer) {
            let label = format!("{} {}", config.label, spec.label());
            if !self.result.skipped.iter().any(|s| s.label == label) {
                let skipped = Skipped { label, reason };
                observer.config_skipped(&skipped);
                self.result.skipped.push(skipped);
            }
            return Ok(());
        }
        let mut record =
            records::new_record(&run, round, position, &self.testbed, &self.suite.target);
        observer.run_started(&label, &record);
        let context = RunContext {
            target: &mut self.target,
            preparer: &mut self.preparer,
            what: &run,
            record: &mut record,
        };
        let outcome = match self.options.executor {
            Some(executor) => executor.run(context, observer),
            None => run_once(context, observer),
        };
        if let Some(t) = record.testbed.as_mut() {
            t.load_end = stack::load_average();
        }
        add_ceiling_shares(&self.result.ceilings, &mut record, round);
        let info = self.result.configurations.get_mut(config_key.0 as usize);
        if let Some(info) = info
            && info.mount_options.is_none()
            && !record.mount_options.is_empty()
        {
            info.mount_options = Some(record.mount_options.clone());
        }
        let failure = match outcome {
            Ok(mkfs_command) => {
                if let Some(info) = self.result.configurations.get_mut(config_key.0 as usize) {
                    info.mkfs_command = info.mkfs_command.take().or(mkfs_command.clone());
                }
                (observer.run_finished(&record, mkfs_command.as_deref())).err()
            }
            Err(e) => run_failed(e, &mut record, &label, &self.suite.target, observer),
        };
        self.result.runs.push(record);
        match failure {
            Some(e) => {
                let status = match e.downcast_ref() {
                    Some(FsbenchError::Interrupted) => SuiteStatus::Interrupted,
                    _ => SuiteStatus::Failed,
                };
                Err(self.stopped(status, e))
            }
            None => Ok(()),
        }
    }

    /// After the last run: unused templates adopted, kept for a resume where the suite
    /// stopped early, the suite's status and statistics, and its end told.
    fn finish(
        mut self,
        mut error: Option<anyhow::Error>,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<(SuiteResult, Option<anyhow::Error>)> {
        // Crash states after the speed rounds, never among them (not under MPI).
        if error.is_none() && self.options.executor.is_none() {
            let mut checks = crash::CrashChecks {
                suite: self.suite,
                target: &mut self.target,
                preparer: &mut self.preparer,
                configs: &self.configs,
                keys: &self.keys,
                workloads: &self.workloads,
                settings: &self.settings,
            };
            if let Err(e) = checks.run(&mut self.result, observer) {
                self.result.status = SuiteStatus::Interrupted;
                self.result.error = Some(format!("{e:#}"));
                error = Some(e);
            }
        }
        self.preparer.adopt_unused(&mut self.target);
        // An interrupted or failed suite can be resumed (not under MPI): its templates stay.
        if error.is_some() && self.options.executor.is_none() {
            let kept = self.target.keep_templates();
            if !kept.is_empty() {
                observer.diagnostic(&Diagnostic::TemplatesKept(&kept));
            }
        }
        drop(self.target);
        let mut result = self.result;
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
}

/// The space and inodes the suite's largest workload needs, times the processes that each
/// run it (MPI ranks).
fn space_needed(workloads: &[Params], options: &RunOptions) -> anyhow::Result<SpaceNeed> {
    let need = (workloads.iter())
        .map(Params::space_needed)
        .try_fold(SpaceNeed::default(), |need, w| anyhow::Ok(need.max(w?)))?;
    let processes = options.executor.map_or(1, |e| e.processes());
    Ok(SpaceNeed {
        bytes: need.bytes.saturating_mul(processes),
        inodes: need.inodes.saturating_mul(processes),
        ideal_bytes: need.ideal_bytes.saturating_mul(processes),
    })
}

/// Each phase's share of the harness ceiling of its round (and each matrix cell's).
fn add_ceiling_shares(ceilings: &[Ceiling], record: &mut RunRecord, round: u32) {
    let ceiling = fsbench_model::results::ceiling::for_run(ceilings, &record.workload, round);
    for phase in &mut record.phases {
        phase.shape.harness_percent = ceiling.and_then(|c| c.percent_of(phase));
        let cells = ceiling.map(|c| c.cell_percents(phase)).unwrap_or_default();
        phase.figures.extend(cells);
    }
}

/// A run that failed with `e`: recorded, told and kept (what failed, and how far it got).
/// Returns the error where it ends the suite: not for a run that lost its daemon.
fn run_failed(
    e: anyhow::Error,
    record: &mut RunRecord,
    label: &str,
    target: &TargetSpec,
    observer: &mut dyn Observer,
) -> Option<anyhow::Error> {
    let e = with_remedy(e, target);
    record.status = match e.downcast_ref() {
        Some(FsbenchError::Interrupted) => RunStatus::Interrupted,
        _ => RunStatus::Failed,
    };
    record.error = Some(format!("{e:#}"));
    observer.diagnostic(&Diagnostic::RunFailed { label, error: &e });
    if let Err(store_error) = observer.run_finished(record, None) {
        observer.diagnostic(&Diagnostic::FailedRunNotSaved(&store_error));
    }
    let lost = matches!(e.downcast_ref(), Some(FsbenchError::RunLost(_)));
    (!lost).then_some(e)
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
    // A crash-recorded run: what its durability calls promise is noted from here.
    let oracle = (fresh.recording())
        .map(|dir| crash::oracle_for(dir, fresh.path()))
        .transpose()?;
    if let Some(oracle) = &oracle {
        workload.record_durability(oracle.clone());
    }
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
                Err(failure) => {
                    // What the failed phase did is kept with the run (a fio group's jobs).
                    record.phases.extend(failure.partial.map(|p| *p));
                    let mut e = with_remedy(failure.error.into(), target.spec());
                    if let Some(lost) = fresh.lost_daemon() {
                        e = FsbenchError::RunLost(format!("{lost} during the run: {e:#}")).into();
                    }
                    return Err(undo_failed_run(fresh, label, e, observer));
                }
            };
            let boundary = workload.boundary_after(index);
            let last = index + 1 == phase_count;
            let checkpoint;
            (fresh, checkpoint) =
                cross_boundary(fresh, boundary, last, (target, preparer, what), observer)?;
            if let Some(teardown) = &checkpoint {
                lifecycle::fsck_not_interrupted(teardown, settings)?;
            }
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
    if let Some(oracle) = oracle {
        oracle.finish()?;
    }
    Ok(mkfs_command)
}

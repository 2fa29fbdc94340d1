//! Warnings that say what to do about a suite's results: short phases, noisy figures, few
//! runs, errors and fsck, what the runs ran under (buffered loop devices, a stack that
//! changed, a busy machine), phases that never settled or were harness-bound, and aging that
//! did not age.

use fsbench_model::results::ceiling::{
    HARNESS_BOUND_PERCENT, HARNESS_PERCENT, harness_bound, outran,
};
use fsbench_model::results::{
    MetricSummary, RunRecord, RunStatus, SuiteResult, Warning, WarningKind,
};
use fsbench_model::suite::Suite;
use fsbench_model::testbed::LoopInfo;

mod aged;
mod runs;

use aged::aging_warnings;
pub use runs::loop_summary;
use runs::{harness_warnings, loop_warning, stack_warning, steady_state_warnings};

/// Warnings that say what to do: short phases, noisy figures, few runs, errors, fsck.
/// `more_work` says how to give a suite's workload (by label) more work, in its own settings:
/// the workloads' code knows them.
pub fn analyze(r: &mut SuiteResult, more_work: &dyn Fn(&Suite, &str) -> String) {
    let mut warnings: Vec<Warning> = few_runs(r).into_iter().collect();
    warnings.extend(figure_warnings(r, more_work));
    warnings.extend(caches_not_dropped(r));
    let busy = r.testbed.iter().flat_map(|t| t.busy(r.system.cpus));
    warnings.extend(busy.map(|message| suite_warning(WarningKind::BusyMachine, message)));
    warnings.extend(loop_warning(r));
    warnings.extend(stack_warning(r));
    warnings.extend(steady_state_warnings(r));
    warnings.extend(harness_warnings(r));
    warnings.extend(aging_warnings(r));
    warnings.extend(run_warnings(r));
    r.warnings = warnings;
}

/// A warning about the whole suite.
fn suite_warning(kind: WarningKind, message: String) -> Warning {
    Warning {
        kind,
        config: None,
        workload: None,
        phase: None,
        message,
    }
}

/// Fewer than 3 runs made per configuration: no spread, or a rough one.
fn few_runs(r: &SuiteResult) -> Option<Warning> {
    // The runs made, not those planned: `--runs auto` plans at most so many and may stop at
    // its time budget after one round.
    let runs = fewest_runs(r)?;
    (runs < 3).then(|| {
        suite_warning(
            WarningKind::FewRuns,
            format!(
                "only {runs} run(s) per configuration: {}; {}",
                if runs < 2 {
                    "no spread, no confidence interval and no verdict"
                } else {
                    "the spreads are rough and the 95% intervals very wide (Student's t with 1 degree of freedom is 12.7), so most verdicts will be undecided"
                },
                // `--runs auto` stopped by its time budget: the budget is what to change.
                match &r.suite.auto_runs {
                    Some(_) => "give --runs auto more time (--max-time), a smaller workload, or a quieter machine",
                    None => "use --runs 3 or more (10 as the fdtree article did)",
                }
            ),
        )
    })
}

/// Timed phases too short to measure, and rates that vary too much across runs.
fn figure_warnings(r: &SuiteResult, more_work: &dyn Fn(&Suite, &str) -> String) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let untimed = r.untimed_phases();
    let timed =
        |s: &&MetricSummary| !(untimed.iter()).any(|(w, p)| *w == s.workload && *p == s.phase);
    for s in r.summaries.iter().filter(timed) {
        let scope = |kind, message| Warning {
            kind,
            config: Some(s.config.clone()),
            workload: Some(s.workload.clone()),
            phase: Some(s.phase.clone()),
            message,
        };
        if s.metric == "time" && s.summary.mean < r.suite.min_phase_secs {
            warnings.push(scope(
                WarningKind::ShortPhase,
                format!(
                    "{} / {} / {}: {:.3} s is too short to measure (under {} s); give it more work: {}",
                    s.config,
                    s.workload,
                    s.phase,
                    s.summary.mean,
                    r.suite.min_phase_secs,
                    more_work(&r.suite, &s.workload)
                ),
            ));
        }
        if s.metric == "rate"
            && let Some(cv) = s.summary.cv_percent
            && cv > r.suite.max_cv_percent
        {
            warnings.push(scope(
                WarningKind::HighVariation,
                format!(
                    "{} / {} / {}: rate varies by {cv:.1}% (CV) across runs, over {}%; add runs or quiet the machine",
                    s.config, s.workload, s.phase, r.suite.max_cv_percent
                ),
            ));
        }
    }
    warnings
}

/// Phases run without their caches dropped where the suite asked for it.
fn caches_not_dropped(r: &SuiteResult) -> Option<Warning> {
    let phases = r.runs.iter().flat_map(|r| &r.phases);
    let undropped = phases.filter(|p| !p.caches_dropped).count();
    (r.suite.drop_caches && undropped > 0).then(|| {
        suite_warning(
            WarningKind::CachesNotDropped,
            format!(
                "caches were not dropped before {undropped} phase(s) (needs root): later phases may read from memory"
            ),
        )
    })
}

/// Runs that made an incomplete tree, and runs whose fsck failed.
fn run_warnings(r: &SuiteResult) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for run in &r.runs {
        let scope = |kind, message| Warning {
            kind,
            config: Some(run.config.clone()),
            workload: Some(run.workload.clone()),
            phase: None,
            message,
        };
        if let Some(what) = &run.incomplete {
            warnings.push(scope(
                WarningKind::IncompleteTree,
                format!(
                    "{} / {} run {}: incomplete tree ({what})",
                    run.config, run.workload, run.run
                ),
            ));
        }
        if run.status == RunStatus::FsckFailed {
            warnings.push(scope(
                WarningKind::FsckFailed,
                format!(
                    "{} / {} run {}: fsck found the filesystem inconsistent; the run is excluded from the statistics",
                    run.config, run.workload, run.run
                ),
            ));
        }
    }
    warnings
}

/// The fewest successful runs any configuration had of any workload (`None`: none at all).
fn fewest_runs(r: &SuiteResult) -> Option<usize> {
    let mut counts: Vec<((&str, &str), usize)> = Vec::new();
    for run in r.runs.iter().filter(|r| r.status == RunStatus::Ok) {
        let key = (run.config.as_str(), run.workload.as_str());
        match counts.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => counts.push((key, 1)),
        }
    }
    counts.into_iter().map(|(_, n)| n).min()
}

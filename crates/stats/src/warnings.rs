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
    let mut warnings = Vec::new();
    let ok_runs = r.runs.iter().filter(|r| r.status == RunStatus::Ok).count();
    if ok_runs > 0 && r.suite.runs < 3 {
        warnings.push(Warning {
            kind: WarningKind::FewRuns,
            config: None,
            workload: None,
            phase: None,
            message: format!(
                "only {} run(s) per configuration: {}; use --runs 3 or more (10 as the fdtree article did)",
                r.suite.runs,
                if r.suite.runs < 2 {
                    "no spread, no confidence interval and no verdict"
                } else {
                    "the spreads are rough and the 95% intervals very wide (Student's t with 1 degree of freedom is 12.7), so most verdicts will be undecided"
                }
            ),
        });
    }
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
    let undropped = r
        .runs
        .iter()
        .flat_map(|r| &r.phases)
        .filter(|p| !p.caches_dropped)
        .count();
    if r.suite.drop_caches && undropped > 0 {
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
    let busy = r.testbed.iter().flat_map(|t| t.busy(r.system.cpus));
    warnings.extend(busy.map(|message| Warning {
        kind: WarningKind::BusyMachine,
        config: None,
        workload: None,
        phase: None,
        message,
    }));
    warnings.extend(loop_warning(r));
    warnings.extend(stack_warning(r));
    warnings.extend(steady_state_warnings(r));
    warnings.extend(harness_warnings(r));
    warnings.extend(aging_warnings(r));
    for r in &r.runs {
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
    r.warnings = warnings;
}

//! Crash states after the speed rounds: for each configuration that asks (`crash=N`), one
//! more run of each workload behind the crash recorder, its states checked. The recorded run
//! is not one of the speed runs: its figures are only compared with theirs, as the
//! recording's cost.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::observer::{Diagnostic, Observer};
use super::phases::PhaseSettings;
use super::prepare::{Preparer, RunSpec};
use super::records::blank_record;
use super::{RunContext, run_once};
use fsbench_measure::error::FsbenchError;
use fsbench_model::results::crash::CrashSummary;
use fsbench_model::results::{ConfigKey, RunRecord, RunStatus, SuiteResult, WorkloadKey};
use fsbench_model::suite::Suite;
use fsbench_testbed::crash::{self as recording, Plan, check::Inspector, recorder};
use fsbench_testbed::testbed::Target;
use fsbench_workloads::Params;
use fsbench_workloads::oracle::Oracle;

/// How long a configuration's states are checked at most, by default.
const DEFAULT_TIME: Duration = Duration::from_secs(30 * 60);

/// The oracle of a recorded run whose recording is in `dir` and root at `root`.
pub(super) fn oracle_for(dir: &Path, root: &Path) -> anyhow::Result<Oracle> {
    Oracle::create(&recorder::log_path(dir), root, &recorder::facts_path(dir))
}

/// Everything the crash checks of a suite need.
pub(super) struct CrashChecks<'a> {
    pub suite: &'a Suite,
    pub target: &'a mut Target,
    pub preparer: &'a mut Preparer,
    pub configs: &'a [super::configs::Resolved],
    pub keys: &'a [ConfigKey],
    pub workloads: &'a [Params],
    pub settings: &'a PhaseSettings,
}

impl CrashChecks<'_> {
    /// Records and checks every configuration that asks; an interruption ends it with an
    /// error, anything else is the configuration's (said in its summary).
    pub(super) fn run(
        &mut self,
        result: &mut SuiteResult,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<()> {
        for (index, resolved) in self.configs.iter().enumerate() {
            let Some(limit) = self.suite.crash.states_of(&resolved.0) else {
                continue;
            };
            let key = self.keys[index];
            for (w, spec) in self.workloads.iter().enumerate() {
                let label = format!("[crash] {} {}", resolved.0.label, spec.label());
                let keys = (key, WorkloadKey(w as u32));
                let plain = plain_secs(&result.runs, keys);
                let checked = self.one(resolved, keys, spec, &label, limit, observer);
                let mut summary = match checked {
                    Ok(summary) => summary,
                    Err(e) if matches!(e.downcast_ref(), Some(FsbenchError::Interrupted)) => {
                        return Err(e);
                    }
                    Err(e) => CrashSummary {
                        error: Some(format!("{e:#}")),
                        ..CrashSummary::default()
                    },
                };
                summary.workload = spec.label();
                summary.cost = summary
                    .cost
                    .zip(plain)
                    .map(|(recorded, plain)| recorded / plain);
                let what = describe(&summary);
                observer.diagnostic(&Diagnostic::Crash {
                    label: &label,
                    what: &what,
                });
                if let Some(info) = result.configurations.get_mut(key.0 as usize) {
                    info.crash.push(summary);
                }
            }
        }
        Ok(())
    }

    /// One recorded run of `spec` on `resolved`, and its states checked.
    fn one(
        &mut self,
        resolved: &super::configs::Resolved,
        keys: (ConfigKey, WorkloadKey),
        spec: &Params,
        label: &str,
        limit: u32,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<CrashSummary> {
        let dir = self.target.record_next_run()?;
        let run = RunSpec {
            resolved,
            keys,
            spec,
            settings: self.settings,
            label,
            probe_after: false,
            sched_backing: self.suite.sched_backing,
        };
        let mut record = blank_record(keys, &resolved.0.label, spec);
        observer.run_started(label, &record);
        let context = RunContext {
            target: self.target,
            preparer: self.preparer,
            what: &run,
            record: &mut record,
        };
        run_once(context, observer)?;
        let recorded_secs: f64 = record
            .phases
            .iter()
            .map(|p| p.measurement.elapsed_secs())
            .sum();
        let config = &resolved.0;
        let cancel = &self.settings.progress.cancel;
        let plan = Plan {
            inspector: Inspector::for_config(config, &dir.join("states"))?,
            limit: limit as usize,
            seed: self.suite.crash.seed.unwrap_or(1),
            torn: self.suite.crash.torn,
            time_limit: (self.suite.crash.time_secs).map_or(DEFAULT_TIME, Duration::from_secs_f64),
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cancel,
        };
        let what = format!("checking up to {limit} states");
        observer.diagnostic(&Diagnostic::Crash { label, what: &what });
        let mut summary = recording::check_recording(&dir, &plan)?;
        // The recorded run's own seconds: divided by the plain runs' once returned.
        summary.cost = Some(recorded_secs);
        if let Some(keep) = &self.suite.crash.keep {
            let name = format!("{}-{}", config.label, spec.label());
            summary.kept = Some(keep_recording(&dir, keep, &name)?.display().to_string());
        }
        let _ = std::fs::remove_dir_all(&dir);
        if cancel.load(Ordering::Relaxed) {
            return Err(FsbenchError::Interrupted.into());
        }
        Ok(summary)
    }
}

/// The mean of the phases' seconds over the completed speed runs of `keys`.
fn plain_secs(runs: &[RunRecord], keys: (ConfigKey, WorkloadKey)) -> Option<f64> {
    let secs: Vec<f64> = runs
        .iter()
        .filter(|r| (r.config_key, r.workload_key) == keys && r.status == RunStatus::Ok)
        .map(|r| r.phases.iter().map(|p| p.measurement.elapsed_secs()).sum())
        .collect();
    let mean = secs.iter().sum::<f64>() / secs.len() as f64;
    (!secs.is_empty() && mean > 0.0).then_some(mean)
}

/// What the checks showed, in a line.
fn describe(s: &CrashSummary) -> String {
    if let Some(e) = &s.error {
        return format!("not checked: {e}");
    }
    let mut text = format!(
        "{} states checked ({} crash points, {} flushes): {} did not mount, {} inconsistent \
         after recovery, {} lost promised data",
        s.states, s.points, s.flushes, s.unmountable, s.inconsistent, s.lost
    );
    if s.promises == 0 {
        text.push_str(" (the workload promised nothing: consistency only)");
    }
    if s.time_limited {
        text.push_str(&format!(
            " (time bound: {} of {} planned)",
            s.states, s.planned
        ));
    }
    if !s.lost_files.is_empty() {
        text.push_str(&format!("; lost: {}", s.lost_files.join(", ")));
    }
    text
}

/// Keeps the recording in `dir` as `<keep>/<name>` (made safe as a file name) for
/// `fsbench crash show`; says where.
fn keep_recording(dir: &Path, keep: &Path, name: &str) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let to = keep.join(safe);
    std::fs::create_dir_all(&to).with_context(|| format!("cannot create {}", to.display()))?;
    for file in ["log", "facts.jsonl", "states.json", "base.img", "final.img"] {
        let from = dir.join(file);
        if !from.exists() {
            continue;
        }
        let dest = to.join(file);
        let _ = std::fs::remove_file(&dest);
        // Another filesystem: a copy, reflinked or sparse like the images are.
        if std::fs::rename(&from, &dest).is_err() {
            fsbench_testbed::aging::image::copy(&from, &dest)
                .with_context(|| format!("cannot keep {} in {}", from.display(), to.display()))?;
        }
    }
    Ok(to)
}

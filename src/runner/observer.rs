//! What a suite run tells the world, as events. The runner and the workloads print nothing:
//! the console, the progress bars and the results database are observers (criterion's
//! `Report` is the model), and so can be a reducer of several machines' runs later.

use std::fmt;
use std::sync::Arc;

use crate::measure::Progress;
use crate::results::{PhaseRecord, RunRecord, Skipped, SuiteResult};

/// The suite about to run.
pub(crate) struct SuitePlan<'a> {
    /// Everything but the runs filled in (a resumed suite: with its earlier runs).
    pub(crate) result: &'a SuiteResult,
    pub(crate) configurations: usize,
    pub(crate) workloads: usize,
    pub(crate) runs: u32,
    /// Runs of a resumed suite that are not repeated.
    pub(crate) already_done: usize,
}

/// A phase about to be measured.
pub(crate) struct PhaseStart<'a> {
    /// The run's label (`[1/3] ext4 tree:quick-shallow`) or the command's name.
    pub(crate) label: &'a str,
    pub(crate) phase: &'a str,
    /// Units the phase will complete; 0 when unknown (a time-based phase).
    pub(crate) expected_units: u64,
    /// The phase's counters: its progress is `done`, which the hot loop stores and observers
    /// read on a thread of their own (an event per unit would cost the loop).
    pub(crate) progress: &'a Arc<Progress>,
}

/// Something a person watching must be told.
pub(crate) enum Diagnostic<'a> {
    /// Operations failed: the tree the run left is not the one asked for.
    IncompleteTree { label: &'a str, what: &'a str },
    /// fsck found the filesystem inconsistent after a phase, or at the end of the run.
    FsckInconsistent {
        label: &'a str,
        after_phase: Option<&'a str>,
        output: &'a str,
    },
    /// The run failed (or was interrupted); the suite ends.
    RunFailed {
        label: &'a str,
        error: &'a anyhow::Error,
    },
    /// The failed run could not be saved (the failure itself ends the suite).
    FailedRunNotSaved(&'a anyhow::Error),
    /// How the suite ended could not be saved.
    SuiteEndNotSaved(&'a anyhow::Error),
}

impl fmt::Display for Diagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diagnostic::IncompleteTree { label, what } => {
                write!(f, "{label}: incomplete tree: {what}")
            }
            Diagnostic::FsckInconsistent {
                label,
                after_phase,
                output,
            } => {
                let when = after_phase.map_or(String::new(), |p| format!(" after phase {p}"));
                write!(
                    f,
                    "{label}: FSCK FOUND THE FILESYSTEM INCONSISTENT{when}; the run is excluded from the statistics. fsck said:\n{}",
                    output.trim_end()
                )
            }
            Diagnostic::RunFailed { label, error } => write!(f, "{label}: {error:#}"),
            Diagnostic::FailedRunNotSaved(e) => write!(f, "cannot save the failed run: {e:#}"),
            Diagnostic::SuiteEndNotSaved(e) => {
                write!(f, "cannot save how the suite ended: {e:#}")
            }
        }
    }
}

/// Receives a suite's events; every method does nothing unless implemented. The events that
/// save results can fail: the runner ends the suite when a finished run or the suite's start
/// cannot be saved, and only reports a failed run or the suite's end that could not be.
pub(crate) trait Observer {
    /// Before the first run.
    fn suite_started(&mut self, _plan: &SuitePlan) -> anyhow::Result<()> {
        Ok(())
    }
    /// A configuration left out (its tools are missing), before the suite starts.
    fn config_skipped(&mut self, _skipped: &Skipped) {}
    /// A run about to make its filesystem; `run` has only its identity filled in.
    fn run_started(&mut self, _label: &str, _run: &RunRecord) {}
    fn phase_started(&mut self, _start: &PhaseStart) {}
    /// The phase ended, with its record, or without one when it failed.
    fn phase_finished(&mut self, _label: &str, _phase: Option<&PhaseRecord>) {}
    /// After each run, finished or failed, with the mkfs command line it used.
    fn run_finished(
        &mut self,
        _run: &RunRecord,
        _mkfs_command: Option<&str>,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    fn diagnostic(&mut self, _diagnostic: &Diagnostic) {}
    /// After the last run, with summaries and warnings.
    fn suite_finished(&mut self, _result: &SuiteResult) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Several observers, each told every event in turn; of failures, the first is returned
/// after all were told (a console still prints the run a database could not save).
pub(crate) struct Observers<'a>(pub(crate) Vec<&'a mut dyn Observer>);

impl Observers<'_> {
    fn each(
        &mut self,
        mut event: impl FnMut(&mut dyn Observer) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut first = Ok(());
        for o in &mut self.0 {
            let outcome = event(&mut **o);
            if first.is_ok() {
                first = outcome;
            }
        }
        first
    }
}

impl Observer for Observers<'_> {
    fn suite_started(&mut self, plan: &SuitePlan) -> anyhow::Result<()> {
        self.each(|o| o.suite_started(plan))
    }
    fn config_skipped(&mut self, skipped: &Skipped) {
        self.0.iter_mut().for_each(|o| o.config_skipped(skipped));
    }
    fn run_started(&mut self, label: &str, run: &RunRecord) {
        self.0.iter_mut().for_each(|o| o.run_started(label, run));
    }
    fn phase_started(&mut self, start: &PhaseStart) {
        self.0.iter_mut().for_each(|o| o.phase_started(start));
    }
    fn phase_finished(&mut self, label: &str, phase: Option<&PhaseRecord>) {
        self.0
            .iter_mut()
            .for_each(|o| o.phase_finished(label, phase));
    }
    fn run_finished(&mut self, run: &RunRecord, mkfs_command: Option<&str>) -> anyhow::Result<()> {
        self.each(|o| o.run_finished(run, mkfs_command))
    }
    fn diagnostic(&mut self, diagnostic: &Diagnostic) {
        self.0.iter_mut().for_each(|o| o.diagnostic(diagnostic));
    }
    fn suite_finished(&mut self, result: &SuiteResult) -> anyhow::Result<()> {
        self.each(|o| o.suite_finished(result))
    }
}

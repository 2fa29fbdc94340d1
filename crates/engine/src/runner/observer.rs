//! What a suite run tells the world, as events. The runner and the workloads print nothing:
//! the console, the progress bars and the results database are observers (criterion's
//! `Report` is the model), and so can be a reducer of several machines' runs later.

use std::fmt;
use std::sync::Arc;

use fsbench_measure::measure::Progress;
use fsbench_model::aging::Preparation;
use fsbench_model::results::{PhaseRecord, RunRecord, Skipped, SuiteResult};

/// The suite about to run.
pub struct SuitePlan<'a> {
    /// Everything but the runs filled in (a resumed suite: with its earlier runs).
    pub result: &'a SuiteResult,
    pub configurations: usize,
    pub workloads: usize,
    pub runs: u32,
    /// Runs of a resumed suite that are not repeated.
    pub already_done: usize,
}

/// A phase about to be measured.
pub struct PhaseStart<'a> {
    /// The run's label (`[1/3] ext4 tree:quick-shallow`) or the command's name.
    pub label: &'a str,
    pub phase: &'a str,
    /// Units the phase will complete; 0 when unknown (a time-based phase).
    pub expected_units: u64,
    /// The phase's counters: its progress is `done`, which the hot loop stores and observers
    /// read on a thread of their own (an event per unit would cost the loop).
    pub progress: &'a Arc<Progress>,
}

/// A run's filesystem about to be aged or filled.
pub struct PreparationStart<'a> {
    pub label: &'a str,
    /// What is done and how often: `aging (light) once for every run of ext4 (template image)`.
    pub what: &'a str,
    /// MiB it will write, about; `progress.done` counts them.
    pub expected_mib: u64,
    pub progress: &'a Arc<Progress>,
}

/// Something a person watching must be told.
pub enum Diagnostic<'a> {
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
    /// The run failed (or was interrupted) on a directory target; what it made is being
    /// removed, file by file, before the failure is reported.
    CleaningUp {
        label: &'a str,
        error: &'a anyhow::Error,
        dir: &'a std::path::Path,
        /// Under MPI, which ranks remove what (`each of the 4 ranks its own rank.<r>`).
        ranks: Option<&'a str>,
    },
    /// The failed run could not be saved (the failure itself ends the suite).
    FailedRunNotSaved(&'a anyhow::Error),
    /// How the suite ended could not be saved.
    SuiteEndNotSaved(&'a anyhow::Error),
    /// `--runs auto` ended the rounds.
    AutoRunsStopped(&'a super::auto::AutoStop),
    /// A workload's harness ceiling is being measured on tmpfs (said in the first round).
    MeasuringCeiling { workload: &'a str },
    /// The workload could not run on tmpfs: its phases get no harness %.
    NoCeiling {
        workload: &'a str,
        error: &'a anyhow::Error,
    },
    /// A resumed suite's template of configuration `label`, kept by its earlier attempt:
    /// reused (`what` is where, with its checksum) or made again (`what` says why).
    Template {
        label: &'a str,
        reused: bool,
        what: &'a str,
    },
    /// An interrupted suite's template images are kept for a resume, in `dirs`.
    TemplatesKept(&'a [std::path::PathBuf]),
    /// The machine is busy as the suite starts (a sentence of [`SuiteTestbed::busy`]).
    ///
    /// [`SuiteTestbed::busy`]: fsbench_model::testbed::SuiteTestbed::busy
    BusyMachine(&'a str),
    /// The queues a run set its I/O scheduler on, and a loop image's backing disk's, set
    /// or not.
    Scheduler {
        label: &'a str,
        set: &'a str,
        backing: Option<&'a str>,
    },
    /// A configuration's crash states: being checked, or what they showed.
    Crash { label: &'a str, what: &'a str },
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
            Diagnostic::CleaningUp {
                label,
                error,
                dir,
                ranks,
            } => write!(
                f,
                "{label}: {error:#}; cleaning up: removing what the run made in {}{} …",
                dir.display(),
                ranks.map_or(String::new(), |r| format!(" ({r})"))
            ),
            Diagnostic::FailedRunNotSaved(e) => write!(f, "cannot save the failed run: {e:#}"),
            Diagnostic::SuiteEndNotSaved(e) => {
                write!(f, "cannot save how the suite ended: {e:#}")
            }
            Diagnostic::AutoRunsStopped(stop) => write!(f, "{stop}"),
            Diagnostic::BusyMachine(what) => write!(f, "warning: {what}"),
            Diagnostic::MeasuringCeiling { workload } => write!(
                f,
                "measuring the harness ceiling of {workload} on tmpfs (before each round)"
            ),
            Diagnostic::NoCeiling { workload, error } => write!(
                f,
                "no harness ceiling for {workload} (it cannot run on tmpfs: {error:#}); its phases get no harness %"
            ),
            Diagnostic::Template {
                label,
                reused: true,
                what,
            } => write!(
                f,
                "{label}: reusing the template image the interrupted attempt kept, {what}: no mkfs, aging or filling"
            ),
            Diagnostic::Template { label, what, .. } => write!(
                f,
                "{label}: making the template image again: the one the interrupted attempt kept cannot be used ({what})"
            ),
            Diagnostic::Scheduler {
                label,
                set,
                backing,
            } => {
                write!(f, "{label}: I/O scheduler {set}")?;
                match backing {
                    Some(b) => write!(f, "; backing disk: {b}"),
                    None => Ok(()),
                }
            }
            Diagnostic::Crash { label, what } => write!(f, "{label}: crash states: {what}"),
            Diagnostic::TemplatesKept(dirs) => write!(
                f,
                "kept the template images in {} for a resume of this suite (--resume), which starts from them instead of aging again; `fsbench clean` removes them",
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Receives a suite's events; every method does nothing unless implemented. The events that
/// save results can fail: the runner ends the suite when a finished run or the suite's start
/// cannot be saved, and only reports a failed run or the suite's end that could not be.
pub trait Observer {
    /// Before the first run.
    fn suite_started(&mut self, _plan: &SuitePlan) -> anyhow::Result<()> {
        Ok(())
    }
    /// A configuration left out (its tools are missing), before the suite starts.
    fn config_skipped(&mut self, _skipped: &Skipped) {}
    /// A run about to make its filesystem; `run` has only its identity filled in.
    fn run_started(&mut self, _label: &str, _run: &RunRecord) {}
    fn phase_started(&mut self, _start: &PhaseStart) {}
    /// The run's filesystem is being aged or filled (once per configuration, or per run).
    fn preparation_started(&mut self, _start: &PreparationStart) {}
    /// The run's filesystem is prepared (`None`: it failed).
    fn preparation_finished(&mut self, _label: &str, _prep: Option<&Preparation>) {}
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
pub struct Observers<'a>(pub Vec<&'a mut dyn Observer>);

/// Tells no one: the ceiling's phases are not the suite's, and MPI ranks other than 0 report
/// through rank 0.
pub(crate) struct Silent;
impl Observer for Silent {}

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
    fn preparation_started(&mut self, start: &PreparationStart) {
        self.0.iter_mut().for_each(|o| o.preparation_started(start));
    }
    fn preparation_finished(&mut self, label: &str, prep: Option<&Preparation>) {
        self.0
            .iter_mut()
            .for_each(|o| o.preparation_finished(label, prep));
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

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::os::fd::BorrowedFd;

    use super::*;
    use crate::runner::phases::{PhaseFailure, PhaseSettings, run_phase};
    use fsbench_measure::error::FsbenchError;
    use fsbench_measure::measure::PhaseRecorder;
    use fsbench_model::workload::PhaseInfo;
    use fsbench_workloads::{PhaseOutput, Workload};

    /// Every event as a line, in order.
    #[derive(Default)]
    struct Recorder {
        events: Vec<String>,
        fail_saves: bool,
    }

    impl Observer for Recorder {
        fn phase_started(&mut self, s: &PhaseStart) {
            let done = s.progress.done.load(std::sync::atomic::Ordering::Relaxed);
            self.events.push(format!(
                "phase started {} {} of {} from {done}",
                s.label, s.phase, s.expected_units
            ));
        }
        fn phase_finished(&mut self, label: &str, phase: Option<&PhaseRecord>) {
            self.events.push(match phase {
                Some(p) => format!("phase finished {label} {} {:?}", p.name, p.notes),
                None => format!("phase failed {label}"),
            });
        }
        fn run_finished(&mut self, run: &RunRecord, _: Option<&str>) -> anyhow::Result<()> {
            self.events.push(format!("run finished {}", run.run));
            if self.fail_saves {
                anyhow::bail!("disk full")
            }
            Ok(())
        }
        fn diagnostic(&mut self, d: &Diagnostic) {
            self.events.push(format!("diagnostic {d}"));
        }
    }

    /// Two phases of 5 units; the second fails when asked to.
    struct Counting {
        fail_second: bool,
    }

    const PHASES: &[PhaseInfo] = &[
        PhaseInfo::fixed("first", "units", false),
        PhaseInfo::fixed("second", "units", false),
    ];

    impl Workload for Counting {
        fn phases(&self) -> Cow<'static, [PhaseInfo]> {
            Cow::Borrowed(PHASES)
        }
        fn expected_units(&self, _: usize) -> u64 {
            5
        }
        fn run_phase(
            &mut self,
            phase: usize,
            _: BorrowedFd<'_>,
            rec: &mut PhaseRecorder,
        ) -> Result<(), FsbenchError> {
            if phase == 1 && self.fail_second {
                return Err(FsbenchError::Failed("broken".into()));
            }
            rec.units_done(5, 0)
        }
        fn after_phase(
            &mut self,
            phase: usize,
            _: BorrowedFd<'_>,
        ) -> Result<PhaseOutput, FsbenchError> {
            Ok(PhaseOutput {
                notes: vec![format!("note of {phase}")],
                ..Default::default()
            })
        }
    }

    fn run_phases(fail_second: bool) -> (Vec<String>, Vec<Result<PhaseRecord, PhaseFailure>>) {
        let dir = tempfile::tempdir().unwrap();
        let fd = rustix::fs::open(
            dir.path(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        let settings = PhaseSettings {
            settle: false,
            progress: Arc::new(Progress::default()),
        };
        let mut workload = Counting { fail_second };
        let mut recorder = Recorder::default();
        let outcomes = (0..2)
            .map(|i| run_phase(&mut workload, i, &fd, &settings, "[1/1] x", &mut recorder))
            .collect();
        (recorder.events, outcomes)
    }

    #[test]
    fn phases_are_announced_before_and_after_with_their_notes() {
        let (events, outcomes) = run_phases(false);
        assert!(outcomes.iter().all(Result::is_ok));
        assert_eq!(
            events,
            [
                "phase started [1/1] x first of 5 from 0",
                "phase finished [1/1] x first [\"note of 0\"]",
                // The counter was reset before the second phase was announced.
                "phase started [1/1] x second of 5 from 0",
                "phase finished [1/1] x second [\"note of 1\"]",
            ]
        );
    }

    #[test]
    fn a_failed_phase_is_finished_without_a_record() {
        let (events, outcomes) = run_phases(true);
        // The observer has no record, nor has the failure: the phase recorded no jobs (a
        // failed fio group's is kept: tests/it/fio_fidelity.rs).
        let failure = outcomes[1].as_ref().unwrap_err();
        assert!(failure.partial.is_none());
        assert_eq!(
            events[2..],
            [
                "phase started [1/1] x second of 5 from 0",
                "phase failed [1/1] x"
            ]
        );
    }

    #[test]
    fn every_observer_is_told_and_the_first_failure_returned() {
        let mut failing = Recorder {
            fail_saves: true,
            ..Default::default()
        };
        let mut console = Recorder::default();
        let run: RunRecord = serde_json::from_value(serde_json::json!({
            "run": 2, "position": 1, "config_key": 0, "workload_key": 0, "config": "ext4", "workload": "w", "started_at": "",
            "status": "ok", "source": "", "mount_options": "", "phases": []
        }))
        .unwrap();
        let error = anyhow::anyhow!("boom");
        let mut all = Observers(vec![&mut failing, &mut console]);
        let saved = all.run_finished(&run, None);
        all.diagnostic(&Diagnostic::FailedRunNotSaved(&error));
        assert_eq!(saved.unwrap_err().to_string(), "disk full");
        assert_eq!(failing.events, console.events);
        assert_eq!(
            console.events,
            [
                "run finished 2",
                "diagnostic cannot save the failed run: boom"
            ]
        );
    }
}

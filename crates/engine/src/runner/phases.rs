//! Running a workload's phases on a prepared directory. This is the unit a coordinator calls
//! between barriers: caches are settled before each phase, the phase is measured, and the
//! deferred work it left is timed by a sync right after it.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

use crate::runner::observer::{Observer, PhaseStart};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::sync_and_drop_caches;
use fsbench_measure::measure::{PhaseRecorder, Progress};
use fsbench_measure::phase_progress::PhaseProgress;
use fsbench_measure::shape;
use fsbench_model::measurement::{PhaseMeasurement, PhaseShape, ThreadsDone};
use fsbench_model::results::PhaseRecord;

use fsbench_workloads::Workload;

/// How phases are run.
#[derive(Debug, Clone)]
pub struct PhaseSettings {
    /// Sync and drop caches before each phase and time a sync after it (suites). fdtree
    /// compatibility mode does neither, as fdtree.bash did not.
    pub settle: bool,
    pub progress: Arc<Progress>,
}

/// A phase that failed: why, and what it measured up to its failure where its work ran (a
/// fio job whose read failed its verify: every job's figures, the failing one flagged).
#[derive(Debug)]
pub struct PhaseFailure {
    pub error: FsbenchError,
    pub partial: Option<Box<PhaseRecord>>,
}

impl From<FsbenchError> for PhaseFailure {
    fn from(error: FsbenchError) -> PhaseFailure {
        PhaseFailure {
            error,
            partial: None,
        }
    }
}

impl From<PhaseFailure> for FsbenchError {
    fn from(failure: PhaseFailure) -> FsbenchError {
        failure.error
    }
}

/// Runs phase `index` of `workload` in `dir`, telling `observer` when it starts and ends;
/// `label` names the run in those events.
pub fn run_phase(
    workload: &mut dyn Workload,
    index: usize,
    dir: &OwnedFd,
    settings: &PhaseSettings,
    label: &str,
    observer: &mut dyn Observer,
) -> Result<PhaseRecord, PhaseFailure> {
    let caches_dropped = settings.settle && sync_and_drop_caches(dir);
    if settings
        .progress
        .cancel
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return Err(FsbenchError::Interrupted.into());
    }
    // The sampler's first sample must not see the previous phase's count.
    settings
        .progress
        .done
        .store(0, std::sync::atomic::Ordering::Relaxed);
    let phases = workload.phases();
    observer.phase_started(&PhaseStart {
        label,
        phase: &phases[index].name,
        expected_units: workload.expected_units(index),
        progress: &settings.progress,
    });
    let outcome = measure_phase(workload, index, dir, settings, caches_dropped);
    observer.phase_finished(label, outcome.as_ref().ok());
    outcome
}

/// The measured part of [`run_phase`], from its start to the workload's own figures.
fn measure_phase(
    workload: &mut dyn Workload,
    index: usize,
    dir: &OwnedFd,
    settings: &PhaseSettings,
    caches_dropped: bool,
) -> Result<PhaseRecord, PhaseFailure> {
    let phases = workload.phases();
    let info = &phases[index];
    workload.before_phase(index)?;
    settings.progress.reset_threads();
    let sampler = PhaseProgress::start(settings.progress.clone());
    let mut recorder = PhaseRecorder::start(&info.name, settings.progress.clone());
    let outcome = workload.run_phase(index, dir.as_fd(), &mut recorder);
    // Where workers were started first, the work began when they were released.
    let started = recorder.began();
    if let Ok(mut span) = settings.progress.work_span.lock() {
        *span = Some((started, recorder.ended()));
    }
    let measurement = recorder.finish();
    let progress = sampler.finish();
    if let Err(error) = outcome {
        // Kept where the phase recorded its jobs (fio's outputs print a failed group);
        // any other failed phase leaves the run as before, its earlier phases alone.
        let partial = (!measurement.jobs.is_empty()).then(|| PhaseRecord {
            caches_dropped,
            progress,
            ..failed_record(&info.name, measurement, &error)
        });
        return Err(PhaseFailure {
            error,
            partial: partial.map(Box::new),
        });
    }
    let sync_after_ns = settings.settle.then(|| {
        let start = Instant::now();
        let _ = rustix::fs::syncfs(dir);
        start.elapsed().as_nanos() as u64
    });
    let output = workload.after_phase(index, dir.as_fd())?;
    let mut measurement = measurement;
    if let Some(units) = output.units {
        measurement.ops = units;
    }
    let threads = match settings.progress.threads() {
        (n, Some((first, first_units))) if n >= 2 => Some(ThreadsDone::new(
            n,
            (
                first.saturating_duration_since(started).as_secs_f64(),
                first_units,
            ),
            (measurement.elapsed_secs(), measurement.ops),
        )),
        _ => None,
    };
    let shape = PhaseShape {
        steady: shape::steady_state(&progress),
        threads,
        harness_percent: None,
    };
    Ok(PhaseRecord {
        name: info.name.to_string(),
        measurement,
        caches_dropped,
        sync_after_ns,
        progress,
        rank_progress: Vec::new(),
        figures: output.figures,
        notes: output.notes,
        unsupported: output.unsupported,
        idle: output.idle,
        shape,
    })
}

/// What a phase that failed with `error` did up to its failure: its measurement, no
/// figures (the workload's own are made after it), a note that it failed.
fn failed_record(name: &str, measurement: PhaseMeasurement, error: &FsbenchError) -> PhaseRecord {
    PhaseRecord {
        name: name.to_string(),
        measurement,
        caches_dropped: false,
        sync_after_ns: None,
        progress: Vec::new(),
        rank_progress: Vec::new(),
        figures: Vec::new(),
        notes: vec![format!(
            "the phase failed: {error}; what it did up to its failure"
        )],
        unsupported: None,
        idle: None,
        shape: PhaseShape::default(),
    }
}

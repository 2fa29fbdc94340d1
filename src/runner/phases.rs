//! Running a workload's phases on a prepared directory. This is the unit a coordinator calls
//! between barriers: caches are settled before each phase, the phase is measured, and the
//! deferred work it left is timed by a sync right after it.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

use crate::error::FsbenchError;
use crate::measure::{PhaseRecorder, Progress};
use crate::progress::PhaseProgress;
use crate::results::PhaseRecord;
use crate::target::sync_and_drop_caches;
use crate::workload::Workload;

/// How phases are run.
#[derive(Debug, Clone)]
pub struct PhaseSettings {
    /// Sync and drop caches before each phase and time a sync after it (suites). fdtree
    /// compatibility mode does neither, as fdtree.bash did not.
    pub settle: bool,
    pub show_progress: bool,
    pub progress: Arc<Progress>,
}

/// Runs phase `index` of `workload` in `dir`; `label` prefixes the progress bar.
pub fn run_phase(
    workload: &mut dyn Workload,
    index: usize,
    dir: &OwnedFd,
    settings: &PhaseSettings,
    label: &str,
) -> Result<PhaseRecord, FsbenchError> {
    let phases = workload.phases();
    let info = &phases[index];
    let caches_dropped = settings.settle && sync_and_drop_caches(dir);
    if settings
        .progress
        .cancel
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return Err(FsbenchError::Interrupted);
    }
    // The sampler's first sample must not see the previous phase's count.
    settings
        .progress
        .done
        .store(0, std::sync::atomic::Ordering::Relaxed);
    let sampler = PhaseProgress::start(
        format!("{label} {}", info.name),
        workload.expected_units(index),
        settings.progress.clone(),
        settings.show_progress,
    );
    let mut recorder = PhaseRecorder::start(&info.name, settings.progress.clone());
    let outcome = workload.run_phase(index, dir.as_fd(), &mut recorder);
    let measurement = recorder.finish();
    let progress = sampler.finish();
    outcome?;
    let sync_after_ns = settings.settle.then(|| {
        let start = Instant::now();
        let _ = rustix::fs::syncfs(dir);
        start.elapsed().as_nanos() as u64
    });
    let output = workload.after_phase(index, dir.as_fd())?;
    Ok(PhaseRecord {
        name: info.name.to_string(),
        measurement,
        caches_dropped,
        sync_after_ns,
        progress,
        cells: output.cells,
        figures: output.figures,
        notes: output.notes,
        unsupported: output.unsupported,
    })
}

//! The harness's own ceiling: each workload's phases run once on a fresh tmpfs, where the
//! filesystem costs next to nothing, give the rate fsbench and the kernel's VFS reach on
//! their own. A phase measured elsewhere at more than [`HARNESS_BOUND_PERCENT`] of that rate
//! says more about fsbench than about the filesystem. A workload's ceiling is measured at its
//! own thread count (a run at N threads is compared with how far fsbench goes at N), right
//! before each round, so that it sees the machine as that round's runs do: a ceiling from a
//! quiet hour was outrun by the phases of a loaded one. Nothing is cached for that reason.

use std::os::fd::AsFd;

use anyhow::Context;

use super::observer::{Diagnostic, Observer, Silent};
use super::phases::{PhaseSettings, run_phase};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::sysinfo::SystemInfoExt;
use fsbench_model::config::FsConfig;
use fsbench_model::filesystem::FsType;
use fsbench_model::results::ceiling::{CELL_FIGURE, Ceiling, PhaseCeiling};
use fsbench_model::system::SystemInfo;
use fsbench_testbed::drivers::FsTypeExt;
use fsbench_testbed::testbed::Target;
use fsbench_workloads::Params;

/// Every phase of `spec` once on a fresh tmpfs of `target`.
fn measure(
    target: &mut Target,
    spec: &Params,
    settings: &PhaseSettings,
    system: &SystemInfo,
    round: u32,
) -> anyhow::Result<Ceiling> {
    let config = FsConfig::new(FsType::Tmpfs, Vec::new(), String::new(), None);
    let tools = FsType::Tmpfs.driver().toolset()?;
    let fresh = target
        .fresh(&config, &tools)
        .context("cannot mount a tmpfs for the harness ceiling")?;
    let mut workload = spec.instantiate();
    // The phases start from what the runs start from: a replay's trace loaded and its root
    // made, say (without it the ceiling pass failed with "the trace was not loaded").
    workload.filesystem_lacks(&config.lacks());
    workload.setup(fresh.dir().as_fd(), round, &settings.progress.cancel)?;
    let label = format!("harness ceiling {}", spec.label());
    let mut phases = Vec::new();
    for index in 0..workload.phases().len() {
        let p = run_phase(
            workload.as_mut(),
            index,
            fresh.dir(),
            settings,
            &label,
            &mut Silent,
        )
        .map_err(FsbenchError::from)?;
        // A phase with nothing to do has no rate to be a ceiling.
        if p.idle.is_some() {
            continue;
        }
        let cells = (p.figures.into_iter())
            .filter(|f| f.name == CELL_FIGURE && !f.dims.is_empty())
            .collect();
        phases.push(PhaseCeiling {
            phase: p.name,
            rate: p.measurement.ops_per_sec(),
            cells,
        });
    }
    fresh.finish()?;
    Ok(Ceiling {
        workload: spec.label(),
        round,
        fsbench_version: system.fsbench_version.clone(),
        cpu_model: system.cpu_model.clone(),
        kernel_release: system.kernel_release.clone(),
        measured_at: super::records::now(),
        threads: spec.threads(),
        phases,
    })
}

/// The ceilings of the suite's workloads for round `round`, measured now. Measuring needs a
/// tmpfs mount, so only targets that make filesystems (root) do. The first round measured
/// (`first`) says so; later rounds leave out workloads that got no ceiling in it.
pub(crate) fn measure_round(
    target: &mut Target,
    workloads: &[Params],
    settings: &PhaseSettings,
    observer: &mut dyn Observer,
    (round, first): (u32, bool),
    earlier: &[Ceiling],
) -> anyhow::Result<Vec<Ceiling>> {
    if !target.spec().makes_filesystems() {
        return Ok(Vec::new());
    }
    let system = SystemInfo::collect();
    let mut found = Vec::new();
    // The user's commands run outside fsbench: its harness bounds nothing of theirs.
    for spec in workloads.iter().filter(|s| !s.runs_user_commands()) {
        let label = spec.label();
        if !first && !earlier.iter().any(|c| c.workload == label) {
            continue;
        }
        if first {
            observer.diagnostic(&Diagnostic::MeasuringCeiling { workload: &label });
        }
        // A workload tmpfs cannot run (O_DIRECT with records tmpfs refuses, say) has no
        // ceiling; the suite's own runs say what is wrong with it, if anything is.
        match measure(target, spec, settings, &system, round) {
            Ok(c) => found.push(c),
            Err(e) if matches!(e.downcast_ref(), Some(FsbenchError::Interrupted)) => {
                return Err(e);
            }
            Err(e) => observer.diagnostic(&Diagnostic::NoCeiling {
                workload: &label,
                error: &e,
            }),
        }
    }
    Ok(found)
}

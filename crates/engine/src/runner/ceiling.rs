//! The harness's own ceiling: each workload's phases run once on a fresh tmpfs, where the
//! filesystem costs next to nothing, give the rate fsbench and the kernel's VFS reach on
//! their own. A phase measured elsewhere at more than [`HARNESS_BOUND_PERCENT`] of that rate
//! says more about fsbench than about the filesystem. A workload's ceiling is measured at its
//! own thread count (a run at N threads is compared with how far fsbench goes at N), once per
//! machine, kernel and fsbench version, and cached in the state directory.

use std::path::PathBuf;

use anyhow::Context;

use super::observer::{Diagnostic, Observer, Silent};
use super::phases::{PhaseSettings, run_phase};
use crate::drivers::FsType;
use crate::error::FsbenchError;
use crate::results::ceiling::{CELL_FIGURE, Ceiling, PhaseCeiling};
use crate::suite::FsConfig;
use crate::sysinfo::SystemInfo;
use crate::testbed::{Target, scratch};
use crate::workload::WorkloadSpec;

/// Whether the cache's ceiling serves `spec`: measured on this machine, kernel and fsbench
/// version, with cells for its matrix phases (an older cache entry has none).
fn serves(ceiling: &Ceiling, spec: &WorkloadSpec, system: &SystemInfo) -> bool {
    let matrices = spec.phases().iter().filter(|p| !p.has_rate).count();
    ceiling.matches(&spec.label(), system)
        && ceiling.threads == spec.threads()
        && ceiling
            .phases
            .iter()
            .filter(|p| !p.cells.is_empty())
            .count()
            >= matrices
}

/// In a directory of its own, so that `fsbench clean` never takes it for a suite's state.
fn cache_path() -> PathBuf {
    scratch::state_dir().join("cache/harness-ceilings.json")
}

fn load_cache() -> Vec<Ceiling> {
    std::fs::read(cache_path())
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn save_cache(ceilings: &[Ceiling]) -> anyhow::Result<()> {
    let path = cache_path();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(ceilings)?)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))
}

/// Every phase of `spec` once on a fresh tmpfs of `target`.
fn measure(
    target: &mut Target,
    spec: &WorkloadSpec,
    settings: &PhaseSettings,
    system: &SystemInfo,
) -> anyhow::Result<Ceiling> {
    let config = FsConfig::new(FsType::Tmpfs, Vec::new(), String::new(), None);
    let tools = FsType::Tmpfs.driver().toolset()?;
    let fresh = target
        .fresh(&config, &tools)
        .context("cannot mount a tmpfs for the harness ceiling")?;
    let mut workload = spec.instantiate();
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
        )?;
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
        fsbench_version: system.fsbench_version.clone(),
        cpu_model: system.cpu_model.clone(),
        kernel_release: system.kernel_release.clone(),
        measured_at: super::now(),
        threads: spec.threads(),
        phases,
    })
}

/// The ceilings of the suite's workloads: cached ones, and the others measured now (and
/// cached). Measuring needs a tmpfs mount, so only targets that make filesystems (root) do.
pub(crate) fn ceilings(
    target: &mut Target,
    workloads: &[WorkloadSpec],
    settings: &PhaseSettings,
    observer: &mut dyn Observer,
) -> anyhow::Result<Vec<Ceiling>> {
    let system = SystemInfo::collect();
    let mut cache = load_cache();
    let mut found = Vec::new();
    // The user's commands run outside fsbench: its harness bounds nothing of theirs.
    for spec in workloads.iter().filter(|s| !s.runs_user_commands()) {
        let label = spec.label();
        if let Some(c) = cache.iter().find(|c| serves(c, spec, &system)) {
            found.push(c.clone());
            continue;
        }
        if !target.spec().makes_filesystems() {
            continue;
        }
        observer.diagnostic(&Diagnostic::MeasuringCeiling { workload: &label });
        // A workload tmpfs cannot run (O_DIRECT with records tmpfs refuses, say) has no
        // ceiling; the suite's own runs say what is wrong with it, if anything is.
        let ceiling = match measure(target, spec, settings, &system) {
            Ok(c) => c,
            Err(e) if matches!(e.downcast_ref(), Some(FsbenchError::Interrupted)) => {
                return Err(e);
            }
            Err(e) => {
                observer.diagnostic(&Diagnostic::NoCeiling {
                    workload: &label,
                    error: &e,
                });
                continue;
            }
        };
        cache.retain(|c| !c.matches(&label, &system));
        cache.push(ceiling.clone());
        if let Err(e) = save_cache(&cache) {
            observer.diagnostic(&Diagnostic::CeilingNotCached(&e));
        }
        found.push(ceiling);
    }
    Ok(found)
}

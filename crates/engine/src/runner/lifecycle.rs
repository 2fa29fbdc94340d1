//! A run's fresh filesystem, from its making (and aging) to its last unmount and fsck.

use std::os::fd::AsFd;

use anyhow::Context;

use super::observer::{Diagnostic, Observer};
use super::prepare;
use fsbench_measure::error::FsbenchError;
use fsbench_model::measurement::Figure;
use fsbench_model::results::{PhaseRecord, RunRecord, RunStatus};
use fsbench_model::testbed::TargetSpec;
use fsbench_testbed::testbed::{FreshFs, Target, Teardown};
use fsbench_workloads::Boundary;

/// A fresh filesystem for a run, aged and filled as its configuration asks.
pub(super) fn fresh_fs(
    target: &mut Target,
    preparer: &mut prepare::Preparer,
    what: &prepare::RunSpec,
    observer: &mut dyn Observer,
) -> anyhow::Result<(FreshFs, Option<fsbench_model::aging::Preparation>)> {
    (preparer.fresh(target, what, observer))
        .with_context(|| format!("cannot prepare a fresh {}", what.resolved.0.label))
}

/// A fresh filesystem for a run, with where it is, how it was made and prepared in the record.
pub(crate) fn fresh_for_run(
    target: &mut Target,
    preparer: &mut prepare::Preparer,
    what: &prepare::RunSpec,
    record: &mut RunRecord,
    observer: &mut dyn Observer,
) -> anyhow::Result<FreshFs> {
    let (mut fresh, preparation) = fresh_fs(target, preparer, what, observer)?;
    if let Some(name) = &what.resolved.0.sched {
        let (set, backing) =
            fresh.set_scheduler(name, what.sched_backing, |r| target.note_queue(r))?;
        observer.diagnostic(&Diagnostic::Scheduler {
            label: what.label,
            set: &set,
            backing: backing.as_deref(),
        });
        if let Some(testbed) = record.testbed.as_mut() {
            testbed.scheduler = Some(set);
            testbed.backing_scheduler = backing;
        }
    }
    if let Some(on) = what.resolved.0.wcache {
        let set = fresh.set_write_cache(on, |r| target.note_queue(r))?;
        if let Some(testbed) = record.testbed.as_mut() {
            testbed.write_cache = Some(set);
        }
    }
    // Last, so that the load is on while the phases run and not while the filesystem is made.
    if let Some(load) = &what.resolved.0.background {
        fresh.start_background(load)?;
    }
    record.preparation = preparation;
    record.mkfs_secs = fresh.mkfs_secs;
    record.mount_options = fresh.mount_options.clone();
    record.source = fresh.source.clone();
    record.loop_device = fresh.loop_info.clone();
    Ok(fresh)
}

/// After a run's phases: what failed in them, the free-space probe where asked for, the
/// unmount and the final fsck.
pub(crate) fn finish_run(
    mut fresh: FreshFs,
    what: &prepare::RunSpec,
    record: &mut RunRecord,
    observer: &mut dyn Observer,
) -> anyhow::Result<()> {
    let label = what.label;
    // A load that stopped on its own fails this run (its figures were not taken under the
    // load it names), not the suite.
    match fresh.stop_background() {
        Some(Ok(load)) => {
            if let Some(t) = record.testbed.as_mut() {
                t.background = Some(load);
            }
        }
        Some(Err(e)) => {
            record.status = RunStatus::Failed;
            record.error = Some(format!("{e:#}"));
            observer.diagnostic(&Diagnostic::RunFailed { label, error: &e });
        }
        None => {}
    }
    if what.probe_after {
        // On the filesystem as the phases left it: the figures are taken, the unmount
        // and fsck below are the run's own.
        record.probe_after =
            fsbench_testbed::aging::probe::probe(fresh.dir().as_fd(), &what.resolved.0.lacks())
                .with_context(|| format!("{label}: free-space probe after the run"))?;
    }
    record.incomplete = record.failure_summary();
    if let Some(what) = &record.incomplete {
        observer.diagnostic(&Diagnostic::IncompleteTree { label, what });
    }
    let teardown = fresh.finish()?;
    fsck_not_interrupted(&teardown, what.settings)?;
    record.unmount_secs = teardown.unmount_secs;
    if let Some(fsck) = &teardown.fsck
        && !fsck.clean
    {
        record.status = RunStatus::FsckFailed;
        observer.diagnostic(&Diagnostic::FsckInconsistent {
            label,
            after_phase: None,
            output: fsck.output.as_deref().unwrap_or(""),
        });
    }
    record.fsck = teardown.fsck;
    Ok(())
}

/// An fsck that found fault while the suite was being interrupted (Ctrl-C reaches it too, and
/// e2fsck exits "canceled" then) is an interruption, not a finding.
pub(super) fn fsck_not_interrupted(
    teardown: &Teardown,
    settings: &super::PhaseSettings,
) -> anyhow::Result<()> {
    let unclean = teardown.fsck.as_ref().is_some_and(|f| !f.clean);
    if unclean
        && settings
            .progress
            .cancel
            .load(std::sync::atomic::Ordering::SeqCst)
    {
        return Err(FsbenchError::Interrupted.into());
    }
    Ok(())
}

/// What the boundary after a phase does: nothing, a remount (unmounted and checked), or a
/// fresh filesystem in place of this one; the teardown to check where there was one. The
/// last phase needs no fresh filesystem after it, only the check.
pub(super) fn cross_boundary(
    mut fresh: FreshFs,
    boundary: Boundary,
    last: bool,
    (target, preparer, what): (&mut Target, &mut prepare::Preparer, &prepare::RunSpec),
    observer: &mut dyn Observer,
) -> anyhow::Result<(FreshFs, Option<Teardown>)> {
    let teardown = match boundary {
        Boundary::Keep => None,
        Boundary::Remount | Boundary::Remake if last => fresh.remount()?,
        Boundary::Remount => fresh.remount()?,
        Boundary::Remake => {
            let teardown = fresh.finish()?;
            fresh = fresh_fs(target, preparer, what, observer)?.0;
            Some(teardown)
        }
    };
    Ok((fresh, teardown))
}

/// The figures of an unmount and fsck right after `phase`: `unmount`, `time+unmount` (the
/// phase, the sync after it and the unmount: until its data was on disk, as alloc-perf's
/// second round timed it) and `fsck`.
pub(super) fn record_checkpoint(
    phase: &mut PhaseRecord,
    t: &Teardown,
    record: &mut RunRecord,
    label: &str,
    observer: &mut dyn Observer,
) {
    if let Some(unmount) = t.unmount_secs {
        phase
            .figures
            .push(Figure::new("unmount", "s", false, unmount));
        phase.figures.push(Figure::new(
            "time+unmount",
            "s",
            false,
            phase.measurement.elapsed_secs()
                + phase.sync_after_ns.unwrap_or(0) as f64 / 1e9
                + unmount,
        ));
    }
    if let Some(fsck) = &t.fsck {
        phase
            .figures
            .push(Figure::new("fsck", "s", false, fsck.secs));
        if !fsck.clean {
            record.status = RunStatus::FsckFailed;
            observer.diagnostic(&Diagnostic::FsckInconsistent {
                label,
                after_phase: Some(&phase.name),
                output: fsck.output.as_deref().unwrap_or(""),
            });
            phase.notes.push(format!(
                "fsck found the filesystem inconsistent: {}",
                fsck.output.as_deref().unwrap_or("").trim_end()
            ));
        }
    }
}

/// Undoes the run whose phase failed with `error`, and returns the error. On a directory
/// target that removes what the run made file by file, which for millions of files takes a
/// while: it says so first.
pub(super) fn undo_failed_run(
    fresh: FreshFs,
    label: &str,
    error: anyhow::Error,
    observer: &mut dyn Observer,
) -> anyhow::Error {
    if fresh.removes_files() {
        observer.diagnostic(&Diagnostic::CleaningUp {
            label,
            error: &error,
            dir: fresh.path(),
            ranks: None,
        });
    }
    drop(fresh);
    error
}

/// `error` with the advice for a full filesystem on `target`, where it is one.
pub(crate) fn with_remedy(mut error: anyhow::Error, target: &TargetSpec) -> anyhow::Error {
    if let Some(FsbenchError::DiskFull { remedy, .. }) = error.downcast_mut() {
        *remedy = space_remedy(target);
    }
    error
}

/// What to do when the filesystem under test fills up: only images have a size to give.
fn space_remedy(target: &TargetSpec) -> &'static str {
    match target {
        TargetSpec::Image { .. } => "use a larger image (--image-size) or a smaller workload",
        TargetSpec::Dir { .. } => {
            "free space in the --dir filesystem, use a --dir with more room, or a smaller workload"
        }
        TargetSpec::Device { .. } => "use a larger device or a smaller workload",
    }
}

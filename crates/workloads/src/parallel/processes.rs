//! A crew's workers as processes: each forked before the phase's work with its input, its
//! recorder made in it and publishing its count in the shared [`Board`]; all released at
//! once at the start line; each writing its recorder's [`Tally`] and its outcome down its pipe
//! when done. The phase's process only watches: it sums the counts, notes who ended, and stops
//! everything when a worker dies (naming it and how) or the user interrupts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::board::Board;
use super::fork::Brood;
use super::{Crew, POLL, Ran, Worker, last_end};
use fsbench_measure::error::{FsbenchError, WireError};
use fsbench_measure::measure::{PhaseRecorder, Progress, Tally};

/// What a worker process writes down its pipe.
#[derive(Serialize, Deserialize)]
struct Report<R> {
    tally: Option<Tally>,
    outcome: Result<R, WireError>,
}

/// [`Crew::run`] with processes.
pub(super) fn run<I, R>(
    crew: &Crew<'_>,
    rec: &mut PhaseRecorder,
    board: &Board<'_>,
    inputs: Vec<I>,
    work: &(impl Fn(&mut Worker<'_>, I) -> Result<R, FsbenchError> + Sync),
    fold: &mut impl FnMut(usize, R),
) -> Result<Ran<()>, FsbenchError>
where
    R: Serialize + DeserializeOwned,
{
    let n = inputs.len();
    // Dropped on any early return below: every worker is then killed and reaped.
    let mut brood = Brood::new();
    let phase_rec: &PhaseRecorder = rec;
    for (index, input) in inputs.into_iter().enumerate() {
        let forked = brood.fork(crew.keep, || worker(phase_rec, board, index, input, work));
        if let Err(e) = forked {
            return Err(FsbenchError::Failed(format!(
                "cannot start worker process {} of {n}: {e}",
                index + 1
            )));
        }
    }
    let cancel = &phase_rec.progress().cancel;
    let from = loop {
        if let Some(at) = board.release_if_ready(n, POLL) {
            break at;
        }
        brood.watch(Duration::ZERO);
        still_going(&brood, cancel)?;
    };
    let progress = phase_rec.progress();
    let mut ended = vec![false; n];
    loop {
        progress.done.store(units(board), Ordering::Relaxed);
        for (seen, slot) in ended.iter_mut().zip(board.slots()) {
            if let Some(at) = slot.ended().filter(|_| !*seen) {
                *seen = true;
                progress.thread_finished_at(at, slot.units_then.load(Ordering::Relaxed));
            }
        }
        still_going(&brood, cancel)?;
        if brood.all_ended() {
            break;
        }
        brood.watch(POLL);
    }
    let to = last_end(board, from);
    let cpu = brood.cpu();
    rec.add_cpu(cpu.user, cpu.system);
    let mut outcomes = Vec::with_capacity(n);
    for index in 0..n {
        let lost = |why: String| {
            FsbenchError::Failed(format!(
                "worker process {} of {n} (pid {}) ended without its figures: {why}",
                index + 1,
                brood.pid(index)
            ))
        };
        let report: Report<R> =
            serde_json::from_slice(brood.report(index)).map_err(|e| lost(e.to_string()))?;
        if let Some(tally) = report.tally {
            crew.absorb(rec, rec.worker_from(tally).map_err(lost)?);
        }
        outcomes.push((report.outcome.map_err(FsbenchError::from)).map(|v| fold(index, v)));
    }
    Ok(Ran {
        outcomes,
        from,
        to,
        cpu,
    })
}

/// The units every worker process has done.
fn units(board: &Board<'_>) -> u64 {
    (board.slots().iter())
        .map(|s| s.count.load(Ordering::Relaxed))
        .sum()
}

/// An error when a worker died (its number, pid and how) or the user interrupted.
fn still_going(brood: &Brood, cancel: &AtomicBool) -> Result<(), FsbenchError> {
    if cancel.load(Ordering::Relaxed) {
        return Err(FsbenchError::Interrupted);
    }
    match brood.failed() {
        Some((index, how)) => Err(FsbenchError::Failed(format!(
            "worker process {} of {} (pid {}) ended during the phase, {how}; the other \
             workers were stopped",
            index + 1,
            brood.len(),
            brood.pid(index)
        ))),
        None => Ok(()),
    }
}

/// The worker process's side: its recorder, its work, its report.
fn worker<I, R: Serialize>(
    phase_rec: &PhaseRecorder,
    board: &Board<'_>,
    index: usize,
    input: I,
    work: &impl Fn(&mut Worker<'_>, I) -> Result<R, FsbenchError>,
) -> Vec<u8> {
    let slot = board.slot(index);
    // Its cancel flag is a copy the user's signal never sets: the phase's process stops the
    // worker processes instead.
    let mut rec = phase_rec.worker(Arc::new(Progress::default()));
    // SAFETY: the board's mapping lasts as long as this process, which ends by _exit without
    // unmapping it.
    let count: &'static AtomicU64 = unsafe { &*std::ptr::from_ref(&slot.count) };
    rec.publish_to(count);
    let mut w = Worker::new(index, rec, board, false);
    let outcome = work(&mut w, input);
    let rec = w.rec.take();
    // Off the start line (if it never stood there), then done.
    drop(w);
    slot.units_then.store(units(board), Ordering::Relaxed);
    slot.mark_ended();
    let report = Report {
        tally: rec.map(PhaseRecorder::tally),
        outcome: outcome.map_err(WireError::from),
    };
    serde_json::to_vec(&report).unwrap_or_default()
}

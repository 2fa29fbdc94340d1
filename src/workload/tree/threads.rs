//! `threads=N`: each thread walks a tree of its own (`<root>.t<i>`) with a recorder of its
//! own; the phase's recorder gets their sum. One node's many-core scaling without MPI, as
//! fxmark measures it; under MPI every rank runs its threads.

use std::os::fd::BorrowedFd;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Tree, TreeParams};
use crate::error::FsbenchError;
use crate::measure::PhaseRecorder;
use crate::workload::Workload;

/// How often the threads' counts are summed for the progress bar and series.
const POLL: Duration = Duration::from_millis(10);

impl Tree {
    /// Thread `i`'s tree: the same shape, under a root of its own.
    fn thread(&self, i: u32) -> Tree {
        let params = TreeParams {
            threads: 1,
            ..self.params.clone()
        };
        Tree::new(params, format!("{}.t{i}", self.base_name()))
    }
}

/// Phase `phase` of every thread's tree at once; the first error of any thread ends it (once
/// every thread is done).
pub(super) fn run_phase(
    tree: &Tree,
    phase: usize,
    dir: BorrowedFd<'_>,
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    let shared = rec.progress().clone();
    let workers: Vec<(Tree, PhaseRecorder)> = (0..tree.params.threads)
        .map(|i| (tree.thread(i), rec.worker()))
        .collect();
    let results = std::thread::scope(|s| {
        let running: Vec<_> = workers
            .into_iter()
            .map(|(mut t, mut r)| {
                let counter = r.progress().clone();
                let shared = &shared;
                let handle = s.spawn(move || {
                    let outcome = t.run_phase(phase, dir, &mut r);
                    shared.thread_finished();
                    (outcome, r)
                });
                (handle, counter)
            })
            .collect();
        while !running.iter().all(|(h, _)| h.is_finished()) {
            let done = running.iter().map(|(_, c)| c.done.load(Ordering::Relaxed));
            shared.done.store(done.sum(), Ordering::Relaxed);
            std::thread::sleep(POLL);
        }
        running
            .into_iter()
            .map(|(h, _)| h.join().expect("a tree thread panicked"))
            .collect::<Vec<_>>()
    });
    let mut first_error = None;
    for (outcome, worker) in results {
        rec.absorb(worker);
        if let Err(e) = outcome {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

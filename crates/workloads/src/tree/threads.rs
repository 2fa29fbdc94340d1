//! `threads=N`: each thread walks a tree of its own (`<root>.t<i>`) with a recorder of its
//! own; the phase's recorder gets their sum. One node's many-core scaling without MPI, as
//! fxmark measures it; under MPI every rank runs its threads. With `shared` (or under MPI's
//! `--shared-dir`) the threads share one tree as ranks do: thread 0 makes and removes its
//! directories, each thread adds files named with its number.

use std::os::fd::BorrowedFd;

use super::{Share, Tree, TreeParams};
use crate::Workload;
use crate::parallel::Crew;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::PhaseRecorder;

impl Tree {
    /// Thread `i`'s tree: the same shape, under a root of its own, or the shared root.
    fn thread(&self, i: u32) -> Tree {
        let params = TreeParams {
            threads: 1,
            shared: false,
            ..self.params.clone()
        };
        let oracle = self.oracle.clone();
        if !self.is_shared() {
            let tree = Tree::new(params, format!("{}.t{i}", self.base_name()));
            return Tree { oracle, ..tree };
        }
        let share = Share {
            makes_dirs: self.makes_dirs() && i == 0,
            rank: self.share.and_then(|s| s.rank),
            thread: Some(i),
        };
        let tree = Tree::new(params, self.base_name().to_string()).shared(share);
        Tree { oracle, ..tree }
    }
}

/// Phase `phase` of every thread's tree at once, each thread with a descriptor table of its
/// own; the first error of any thread ends it (once every thread is done).
pub(super) fn run_phase(
    tree: &Tree,
    phase: usize,
    dir: BorrowedFd<'_>,
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    if tree.is_shared() && tree.phases[phase].on_dirs() {
        // One tree's directories: its maker's thread 0 alone, as one rank does under MPI.
        return match tree.makes_dirs() {
            true => tree.thread(0).run_phase(phase, dir, rec),
            false => Ok(()),
        };
    }
    let shared = rec.progress().clone();
    let counters: Vec<_> = (0..tree.params.threads)
        .map(|_| rec.worker_progress())
        .collect();
    let crew = Crew::new(counters.iter().map(|c| &*c.done).collect(), &shared);
    let phase_rec: &PhaseRecorder = rec;
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = counters
            .iter()
            .enumerate()
            .map(|(i, counter)| {
                let crew = &crew;
                s.spawn(move || {
                    // The tree and the recorder are made here, on the worker's thread, so
                    // that what they write at every call is on no other worker's cache line.
                    let (mut t, mut r) = (tree.thread(i as u32), phase_rec.worker(counter.clone()));
                    let outcome = crew.work(&[dir], || t.run_phase(phase, dir, &mut r));
                    (outcome.and_then(|o| o), r)
                })
            })
            .collect();
        crew.wait(&handles);
        handles
            .into_iter()
            .map(|h| h.join().expect("a tree thread panicked"))
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

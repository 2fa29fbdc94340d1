//! `threads=N`: each of N workers (processes or threads, `workers=`) walks a tree of its own
//! (`<root>.t<i>`) with a recorder of its own; the phase's recorder gets their sum. One
//! node's many-core scaling without MPI, as fxmark measures it; under MPI every rank runs its
//! workers. With `shared` (or under MPI's `--shared-dir`) the workers share one tree as ranks
//! do: worker 0 makes and removes its directories, each worker adds files named with its
//! number.

use std::os::fd::BorrowedFd;

use super::{DIR_CREATE, DIR_REMOVE, Share, Tree, TreeParams};
use crate::Workload;
use crate::error::FsbenchError;
use crate::measure::PhaseRecorder;
use crate::parallel::Crew;

impl Tree {
    /// Thread `i`'s tree: the same shape, under a root of its own, or the shared root.
    fn thread(&self, i: u32) -> Tree {
        let params = TreeParams {
            threads: 1,
            shared: false,
            ..self.params.clone()
        };
        if !self.is_shared() {
            return Tree::new(params, format!("{}.t{i}", self.base_name()));
        }
        let share = Share {
            makes_dirs: self.makes_dirs() && i == 0,
            rank: self.share.and_then(|s| s.rank),
            thread: Some(i),
        };
        Tree::new(params, self.base_name().to_string()).shared(share)
    }
}

/// Phase `phase` of every worker's tree at once, each worker a process or a thread as
/// `workers` says; the first error of any worker ends it (once every worker is done).
pub(super) fn run_phase(
    tree: &Tree,
    phase: usize,
    dir: BorrowedFd<'_>,
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    if tree.is_shared() && matches!(tree.kinds[phase], DIR_CREATE | DIR_REMOVE) {
        // One tree's directories: its maker's worker 0 alone, as one rank does under MPI.
        return match tree.makes_dirs() {
            true => tree.thread(0).run_phase(phase, dir, rec),
            false => Ok(()),
        };
    }
    let keep = [dir];
    let crew = Crew::new(tree.params.workers, &keep);
    let ran = crew.run(rec, (0..tree.params.threads).collect(), |w, i| {
        // Made where the worker runs, so that what it writes at every call is on no other
        // worker's cache line.
        let mut t = tree.thread(i);
        w.start()?;
        t.run_phase(phase, dir, w.rec())
    })?;
    rec.ran(ran.from, ran.to);
    ran.values().map(|_| ())
}

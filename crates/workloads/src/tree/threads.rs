//! `threads=N`: each of N workers (processes or threads, `workers=`) walks a tree of its own
//! (`<root>.t<i>`) with a recorder of its own; the phase's recorder gets their sum. One
//! node's many-core scaling without MPI, as fxmark measures it; under MPI every rank runs its
//! workers. With `shared` (or under MPI's `--shared-dir`) the workers share one tree as ranks
//! do: worker 0 makes and removes its directories, each worker adds files named with its
//! number.

use std::os::fd::BorrowedFd;

use super::{Tree, TreeParams};
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

/// Phase `phase` of every worker's tree at once, each worker a process or a thread as
/// `workers` says; the first error of any worker ends it (once every worker is done).
pub(super) fn run_phase(
    tree: &Tree,
    phase: usize,
    dir: BorrowedFd<'_>,
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    if tree.is_shared() && tree.phases[phase].on_dirs() {
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

/// Who one sharer of a tree is (mdtest without `-u`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// Makes and removes the directories (rank 0's thread 0); the others only add files.
    pub makes_dirs: bool,
    /// In its files' names (`L0F1.r2.t3`), so that sharers never touch each other's files.
    pub rank: Option<u32>,
    pub thread: Option<u32>,
}

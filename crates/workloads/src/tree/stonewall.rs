//! mdtest's stonewall (`-W`) on file create, as its `file_test` does it: at the deadline every
//! rank stops creating; the ranks agree on the most files any of them made (an all-reduce of
//! the maximum); the laggards then go on creating up to it inside the same timed phase
//! (wear-out), so that the later phases act on the same count on every rank: the first
//! `items` files of the walk.

use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::Tree;
use super::walk::FileStep;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::PhaseRecorder;

/// The stonewall of one run's file create.
#[derive(Clone)]
pub struct Stonewall {
    /// Time into file create at which every rank stops.
    pub(crate) after: Duration,
    /// The ranks' agreement, a collective every rank calls once per file create: given this
    /// rank's count (and whether it failed), the largest count of any rank, or `u64::MAX` if
    /// a rank failed.
    pub(crate) agree: fn(u64, bool) -> u64,
    /// What was agreed, once it was: for the figures, and for the later phases (the rank's
    /// own tree and, under shift, the tree of the rank it acts on share it).
    pub agreed: Arc<OnceLock<Agreed>>,
}

/// One rank's stonewall.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Agreed {
    /// Files this rank had made at the deadline (all, if it finished before it).
    pub reached: u64,
    /// When it stopped, seconds into the phase: at the deadline, or at its end if earlier.
    pub secs: f64,
    /// Files every rank has after wear-out: the most any rank had reached.
    pub items: u64,
}

impl Stonewall {
    pub fn new(after: Duration, agree: fn(u64, bool) -> u64) -> Stonewall {
        Stonewall {
            after,
            agree,
            agreed: Arc::new(OnceLock::new()),
        }
    }

    /// For a rank whose file create ended before it agreed (an error, a signal): the others
    /// wait for its word in the agreement, so it gives it, as a failure.
    pub fn abandon(&self) {
        if self.agreed.get().is_none() {
            (self.agree)(0, true);
            let _ = self.agreed.set(Agreed {
                reached: 0,
                secs: 0.0,
                items: 0,
            });
        }
    }
}

/// Armed during a stonewalled file create: the timer's flag and the phase's start.
pub(super) struct Deadline {
    pub(super) passed: Arc<AtomicBool>,
    started: Instant,
}

/// File create under the stonewall: a timer thread raises a flag at the deadline, which the
/// walk reads after each file (one relaxed load, no clock read per file).
pub(super) fn create_files(
    tree: &mut Tree,
    base: BorrowedFd<'_>,
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    let after = tree.stonewall.as_ref().expect("a stonewall").after;
    // Before the timer starts, so that the deadline is never earlier than `after` from here.
    let started = Instant::now();
    let passed = Arc::new(AtomicBool::new(false));
    let (stop_timer, stopped) = mpsc::channel::<()>();
    let timer = {
        let passed = passed.clone();
        std::thread::spawn(move || {
            if stopped.recv_timeout(after) == Err(RecvTimeoutError::Timeout) {
                passed.store(true, Ordering::Relaxed);
            }
        })
    };
    tree.deadline = Some(Deadline { passed, started });
    let levels = tree.params.levels;
    let mut outcome = tree.walk_files(base, levels, rec, FileStep::Create);
    if outcome.is_ok() {
        // Done before the deadline: it agrees at its end, as mdtest's ranks do.
        outcome = tree.reach_stonewall(rec);
    }
    tree.deadline = None;
    drop(stop_timer);
    let _ = timer.join();
    outcome
}

impl Tree {
    /// At the deadline, or at the end of the walk: agrees with the other ranks and goes on to
    /// the largest count (nothing left to do if this rank had it).
    pub(super) fn reach_stonewall(&mut self, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let Some(deadline) = self.deadline.take() else {
            return Ok(());
        };
        let stonewall = self
            .stonewall
            .as_ref()
            .expect("armed only with a stonewall");
        let reached = self.visited;
        let secs = deadline.started.elapsed().as_secs_f64();
        let most = (stonewall.agree)(reached, false);
        // A rank failed: this one stops here; the failure ends every rank at the phase's
        // barrier, naming that rank.
        let items = if most == u64::MAX { reached } else { most };
        let _ = stonewall.agreed.set(Agreed {
            reached,
            secs,
            items,
        });
        self.limit = items;
        // The wait for the other ranks is no operation's latency.
        rec.skip_lap();
        Ok(())
    }
}

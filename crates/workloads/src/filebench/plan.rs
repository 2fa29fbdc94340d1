//! Who runs what: every process and thread instance of the model numbered, the shared
//! semaphores and wake-up points of its semblock and block flowops, and the shared state of
//! a run built in one region before the processes are forked.

use std::collections::HashMap;
use std::ops::Range;
use std::os::fd::BorrowedFd;

use super::control::{Control, Semaphore, WakePoint};
use super::files::SetState;
use super::layout::Layout;
use super::model::{Counted, Model, Op};
use crate::parallel::shm::Region;

/// One worker thread: its process's and thread's definitions in the model.
#[derive(Debug, Clone, Copy)]
pub(super) struct Place {
    pub(super) process: usize,
    pub(super) thread: usize,
}

/// The model's instances, numbered.
#[derive(Debug)]
pub(super) struct Plan {
    /// Every worker thread, by its run-wide number (filebench's unique thread id).
    pub(super) threads: Vec<Place>,
    /// Every process instance: its threads' numbers.
    pub(super) processes: Vec<Range<usize>>,
    /// The semaphore of each semblock flowop instance: (thread number, flowop index).
    sem_of: HashMap<(usize, usize), usize>,
    sem_highwater: Vec<u64>,
    /// The semaphores of every instance of a semblock flowop name.
    sem_named: HashMap<String, Vec<usize>>,
    wake_of: HashMap<(usize, usize), usize>,
    wake_named: HashMap<String, Vec<usize>>,
    /// Whether a finish or limit flowop reads the run-wide counts.
    pub(super) counts_shared: bool,
}

impl Plan {
    pub(super) fn new(model: &Model) -> Plan {
        let mut plan = Plan {
            threads: Vec::new(),
            processes: Vec::new(),
            sem_of: HashMap::new(),
            sem_highwater: Vec::new(),
            sem_named: HashMap::new(),
            wake_of: HashMap::new(),
            wake_named: HashMap::new(),
            counts_shared: model.flowops().any(|(_, _, f)| {
                f.target.is_none()
                    && matches!(
                        f.op,
                        Op::Finishoncount
                            | Op::Finishonbytes
                            | Op::Opslimit
                            | Op::Iopslimit
                            | Op::Bwlimit
                    )
            }),
        };
        for (pi, p) in model.processes.iter().enumerate() {
            for _ in 0..p.instances {
                let first = plan.threads.len();
                for (ti, t) in p.threads.iter().enumerate() {
                    for _ in 0..t.instances {
                        let n = plan.threads.len();
                        plan.threads.push(Place {
                            process: pi,
                            thread: ti,
                        });
                        for (fi, f) in t.flowops.iter().enumerate() {
                            match f.op {
                                Op::Semblock => {
                                    let slot = plan.sem_highwater.len();
                                    plan.sem_highwater.push(f.highwater);
                                    plan.sem_of.insert((n, fi), slot);
                                    plan.sem_named.entry(f.name.clone()).or_default().push(slot);
                                }
                                Op::Block => {
                                    let slot = plan.wake_of.len();
                                    plan.wake_of.insert((n, fi), slot);
                                    plan.wake_named
                                        .entry(f.name.clone())
                                        .or_default()
                                        .push(slot);
                                }
                                _ => {}
                            }
                        }
                    }
                }
                plan.processes.push(first..plan.threads.len());
            }
        }
        plan
    }

    pub(super) fn semaphore(&self, thread: usize, flowop: usize) -> usize {
        self.sem_of[&(thread, flowop)]
    }

    pub(super) fn semaphores_named(&self, name: &str) -> &[usize] {
        self.sem_named.get(name).map_or(&[], Vec::as_slice)
    }

    pub(super) fn wake_point(&self, thread: usize, flowop: usize) -> usize {
        self.wake_of[&(thread, flowop)]
    }

    pub(super) fn wake_points_named(&self, name: &str) -> &[usize] {
        self.wake_named.get(name).map_or(&[], Vec::as_slice)
    }
}

/// Everything the workers share, laid out in one region.
pub(super) struct Shared<'r> {
    pub(super) model: &'r Model,
    pub(super) plan: &'r Plan,
    pub(super) layouts: &'r [Layout],
    pub(super) sets: Vec<SetState<'r>>,
    pub(super) control: Control<'r>,
    pub(super) sems: Vec<Semaphore<'r>>,
    pub(super) wakes: Vec<WakePoint<'r>>,
    /// The run's directory: every path is below it.
    pub(super) dir: BorrowedFd<'r>,
}

impl<'r> Shared<'r> {
    /// Bytes of shared memory the run needs.
    pub(super) fn room(model: &Model, plan: &Plan) -> usize {
        let threads = plan.threads.len() as u64;
        let sets: usize = model
            .filesets
            .iter()
            .map(|s| SetState::room(s.entries, s.leafdirs, threads))
            .sum();
        sets + Control::room()
            + plan.sem_highwater.len() * Semaphore::room()
            + plan.wake_of.len() * WakePoint::room()
    }

    pub(super) fn new(
        region: &'r Region,
        model: &'r Model,
        plan: &'r Plan,
        layouts: &'r [Layout],
        dir: BorrowedFd<'r>,
    ) -> Shared<'r> {
        let threads = plan.threads.len() as u64;
        Shared {
            model,
            plan,
            layouts,
            sets: (model.filesets.iter())
                .map(|s| SetState::new(region, s.entries, s.leafdirs, threads))
                .collect(),
            control: Control::new(region),
            sems: (plan.sem_highwater.iter())
                .map(|h| Semaphore::new(region, *h))
                .collect(),
            wakes: (0..plan.wake_of.len())
                .map(|_| WakePoint::new(region))
                .collect(),
            dir,
        }
    }

    /// Counts a finished IO or AIO flowop in the run-wide counts, where something reads them.
    #[inline]
    pub(super) fn count(&self, op: Op, bytes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        if !self.plan.counts_shared || op.counted() == Counted::Other {
            return;
        }
        let c = &self.control;
        c.io_count.fetch_add(1, Relaxed);
        c.io_bytes.fetch_add(bytes, Relaxed);
        if op.reads() || op.writes() {
            c.rw_count.fetch_add(1, Relaxed);
            c.rw_bytes.fetch_add(bytes, Relaxed);
        }
    }
}

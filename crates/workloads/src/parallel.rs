//! The workers of a parallel phase, as processes or threads ([`WorkerMode`]): a [`Crew`]
//! starts them, releases them together once all are ready, sums their counts into the
//! phase's progress while they run, and gathers what each measured and returned.
//!
//! Processes (the default, as fio's jobs and mdtest's ranks are) are forked before the phase's
//! work and share nothing the kernel keeps per process; threads share fsbench's address space,
//! its locks and its allocator, and each gets a descriptor table of its own (all threads of a
//! process share one, and every open and close takes its lock: 16 threads creating files
//! reached 0.67 × the rate of 16 processes). Either way a worker records into a recorder of
//! its own, made where it runs, and counts its units on a cache line of its own; the phase's
//! time runs from the release to the last worker's end, not from the first fork or spawn.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::{ScopedJoinHandle, Thread};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::options::{OptKind, OptionDef, Parsed};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::{CpuTimes, PhaseRecorder, Progress};
use fsbench_model::workload::WorkerMode;

mod board;
pub(crate) mod fork;
mod processes;
pub(crate) mod shm;
pub mod strays;

use board::Board;

/// The `workers=processes|threads` option every parallel workload's table has.
pub(crate) const WORKERS_OPTION: OptionDef = OptionDef {
    default: Some("processes"),
    ..OptionDef::new(
        "workers",
        OptKind::Choice(WorkerMode::NAMES),
        "parallel workers as processes (fio's and mdtest's) or threads of one process",
    )
};

/// The `workers` option's value.
pub(crate) fn workers_of(p: &Parsed) -> WorkerMode {
    p.text("workers")
        .and_then(WorkerMode::named)
        .expect("workers has a default among its choices")
}

/// For serde: the default mode is not written out.
pub(crate) fn is_default_mode(mode: &WorkerMode) -> bool {
    *mode == WorkerMode::default()
}

/// How often the workers' counts are summed for the progress bar and series, and the
/// crew's state looked at.
const POLL: Duration = Duration::from_millis(10);

/// How a phase's workers run: as `mode` says, each with the descriptors of `keep` (the
/// directories it makes its `*at()` calls in, at the same numbers) and no other of fsbench's.
pub(crate) struct Crew<'a> {
    mode: WorkerMode,
    keep: &'a [BorrowedFd<'a>],
    /// Whether the workers' latency timelines join the phase's (their calls are placed in
    /// time, [`PhaseRecorder::absorb_with_timeline`]).
    timelines: bool,
}

/// One worker, as its work sees it.
pub(crate) struct Worker<'a> {
    index: usize,
    rec: Option<PhaseRecorder>,
    board: &'a Board<'a>,
    started: bool,
    /// The crew's only worker: nobody to wait for at the start.
    alone: bool,
    /// When it started, if alone.
    started_at: Option<Instant>,
}

/// What a crew's run gives back: each worker's outcome, in order, and when the work ran
/// (from the release to the last worker's end).
pub(crate) struct Ran<R> {
    pub outcomes: Vec<Result<R, FsbenchError>>,
    pub from: Instant,
    pub to: Instant,
    /// The CPU time of the worker processes (already added to the phase's recorder); worker
    /// threads' is the process's own.
    pub cpu: CpuTimes,
}

impl<R> Ran<R> {
    /// Every worker's value, or the first worker's error, a full disk first (it explains
    /// the others' failures).
    pub(crate) fn values(self) -> Result<Vec<R>, FsbenchError> {
        let mut values = Vec::with_capacity(self.outcomes.len());
        let mut first_error = None;
        for outcome in self.outcomes {
            match outcome {
                Ok(v) => values.push(v),
                Err(e @ FsbenchError::DiskFull { .. }) => first_error = Some(e),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(values), Err)
    }
}

impl<'a> Crew<'a> {
    pub(crate) fn new(mode: WorkerMode, keep: &'a [BorrowedFd<'a>]) -> Crew<'a> {
        Crew {
            mode,
            keep,
            timelines: false,
        }
    }

    /// The workers' timelines join the phase's.
    pub(crate) fn with_timelines(self) -> Crew<'a> {
        Crew {
            timelines: true,
            ..self
        }
    }

    /// Runs `work` on one worker per input, each worker given its input; their recorders
    /// are added to `rec`'s. A worker's own error is its outcome; the run fails as a whole
    /// (the other workers stopped) when a worker cannot be started, a worker process dies, or
    /// the user interrupts.
    pub(crate) fn run<I, R>(
        &self,
        rec: &mut PhaseRecorder,
        inputs: Vec<I>,
        work: impl Fn(&mut Worker<'_>, I) -> Result<R, FsbenchError> + Sync,
    ) -> Result<Ran<R>, FsbenchError>
    where
        I: Send,
        R: Send + Serialize + DeserializeOwned,
    {
        let mut values: Vec<Option<R>> = inputs.iter().map(|_| None).collect();
        let ran = self.run_folding(rec, inputs, work, |index, value| {
            values[index] = Some(value)
        })?;
        let outcomes = (ran.outcomes.into_iter().zip(values))
            .map(|(outcome, value)| outcome.map(|()| value.expect("a worker's value was folded")))
            .collect();
        Ok(Ran {
            outcomes,
            from: ran.from,
            to: ran.to,
            cpu: ran.cpu,
        })
    }

    /// [`Crew::run`], each worker's value handed to `fold` as it is gathered (in the
    /// workers' order) instead of kept: the phase's process then holds one worker's value
    /// at a time, however many workers there are. The outcomes say which failed.
    pub(crate) fn run_folding<I, R>(
        &self,
        rec: &mut PhaseRecorder,
        inputs: Vec<I>,
        work: impl Fn(&mut Worker<'_>, I) -> Result<R, FsbenchError> + Sync,
        mut fold: impl FnMut(usize, R),
    ) -> Result<Ran<()>, FsbenchError>
    where
        I: Send,
        R: Send + Serialize + DeserializeOwned,
    {
        let region = shm::Region::new(Board::room(inputs.len()))?;
        let board = Board::new(&region, inputs.len());
        if inputs.len() == 1 {
            let input = inputs.into_iter().next().expect("one input");
            return self.run_alone(rec, &board, input, &work, &mut fold);
        }
        match self.mode {
            WorkerMode::Threads => self.run_threads(rec, &board, inputs, &work, &mut fold),
            WorkerMode::Processes => processes::run(self, rec, &board, inputs, &work, &mut fold),
        }
    }

    fn absorb(&self, rec: &mut PhaseRecorder, worker: PhaseRecorder) {
        match self.timelines {
            true => rec.absorb_with_timeline(worker),
            false => rec.absorb(worker),
        }
    }

    /// One worker: nobody to start with or to keep apart from, as one IOR rank or fio job
    /// is its own process. It still runs on a thread of its own, with a descriptor table of
    /// its own ([`with_private_fds`]): a table shared with the phase's thread (and an MPI
    /// rank's progress threads) makes every call take a reference on its file, every read
    /// and write its position lock, and every growth of the table wait for an RCU grace
    /// period (30–50 ms over 2,000 opens), none of which a fio job pays.
    fn run_alone<I, R>(
        &self,
        rec: &mut PhaseRecorder,
        board: &Board<'_>,
        input: I,
        work: &(impl Fn(&mut Worker<'_>, I) -> Result<R, FsbenchError> + Sync),
        fold: &mut impl FnMut(usize, R),
    ) -> Result<Ran<()>, FsbenchError>
    where
        I: Send,
        R: Send,
    {
        let began = Instant::now();
        // Its units count straight into the phase's progress.
        let progress = rec.progress().clone();
        let phase_rec: &PhaseRecorder = rec;
        let joined = std::thread::scope(|s| {
            let spawned = std::thread::Builder::new()
                .name("worker-0".into())
                .spawn_scoped(s, move || {
                    with_private_fds(self.keep, || {
                        let _ended = MarkEnded(board.slot(0));
                        let mut w = Worker::new(0, phase_rec.worker(progress), board, true);
                        let outcome = work(&mut w, input);
                        (w.rec.take(), w.started_at, outcome)
                    })
                });
            spawned.map(|h| h.join())
        });
        let joined = joined
            .map_err(|e| FsbenchError::Failed(format!("cannot start the worker thread: {e}")))?;
        let from = match &joined {
            Ok(Ok((_, Some(at), _))) => *at,
            _ => began,
        };
        let joined = joined.map(|ran| ran.map(|(worker, _, outcome)| (worker, outcome)));
        let outcomes = self.absorb_threads(rec, vec![joined], fold);
        Ok(Ran {
            outcomes,
            from,
            to: last_end(board, from),
            cpu: CpuTimes::default(),
        })
    }

    fn run_threads<I, R>(
        &self,
        rec: &mut PhaseRecorder,
        board: &Board<'_>,
        inputs: Vec<I>,
        work: &(impl Fn(&mut Worker<'_>, I) -> Result<R, FsbenchError> + Sync),
        fold: &mut impl FnMut(usize, R),
    ) -> Result<Ran<()>, FsbenchError>
    where
        I: Send,
        R: Send,
    {
        let n = inputs.len();
        let counters: Vec<Arc<Progress>> = (0..n).map(|_| rec.worker_progress()).collect();
        let threads = ThreadCrew::new(counters.iter().map(|c| &*c.done).collect(), rec.progress());
        let phase_rec: &PhaseRecorder = rec;
        let (joined, from) = std::thread::scope(|s| {
            let mut handles = Vec::with_capacity(n);
            let mut not_started = None;
            for (index, input) in inputs.into_iter().enumerate() {
                let (counter, threads) = (counters[index].clone(), &threads);
                let spawned = std::thread::Builder::new()
                    .name(format!("worker-{index}"))
                    .spawn_scoped(s, move || {
                        threads.work(self.keep, || {
                            let _ended = MarkEnded(board.slot(index));
                            // Made here, on the worker's thread, so that what it writes at
                            // every call is on no other worker's cache line.
                            let mut w = Worker::new(index, phase_rec.worker(counter), board, false);
                            let outcome = work(&mut w, input);
                            (w.rec.take(), outcome)
                        })
                    });
                match spawned {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        not_started = Some(FsbenchError::Failed(format!(
                            "cannot start worker thread {} of {n}: {e}",
                            index + 1
                        )));
                        board.halt();
                        break;
                    }
                }
            }
            let from = match not_started {
                Some(e) => Err(e),
                None => Ok(release(board, n, || {
                    handles.iter().all(|h| h.is_finished())
                })),
            };
            threads.wait(&handles);
            let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
            (joined, from)
        });
        let from = from?;
        let outcomes = self.absorb_threads(rec, joined, fold);
        let to = last_end(board, from);
        let cpu = CpuTimes::default();
        Ok(Ran {
            outcomes,
            from,
            to,
            cpu,
        })
    }

    /// Each joined worker thread's outcome, in order, its recorder added to `rec`'s and its
    /// value to `fold`.
    fn absorb_threads<R>(
        &self,
        rec: &mut PhaseRecorder,
        joined: Vec<JoinedWorker<R>>,
        fold: &mut impl FnMut(usize, R),
    ) -> Vec<Result<(), FsbenchError>> {
        let n = joined.len();
        let outcome = |(index, joined): (usize, JoinedWorker<R>)| match joined {
            Ok(Ok((worker, outcome))) => {
                if let Some(worker) = worker {
                    self.absorb(rec, worker);
                }
                outcome.map(|value| fold(index, value))
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(FsbenchError::Failed(format!(
                "worker thread {} of {n} panicked",
                index + 1
            ))),
        };
        joined.into_iter().enumerate().map(outcome).collect()
    }
}

/// A worker thread as joined: its recorder and outcome, its failure to get a descriptor table
/// of its own, or its panic.
type JoinedWorker<R> =
    std::thread::Result<Result<(Option<PhaseRecorder>, Result<R, FsbenchError>), FsbenchError>>;

/// Releases the workers at the start line once all `workers` are there (or `gone` says
/// none is left to come); when.
fn release(board: &Board<'_>, workers: usize, gone: impl Fn() -> bool) -> Instant {
    loop {
        if let Some(at) = board.release_if_ready(workers, POLL) {
            return at;
        }
        if gone() {
            return Instant::now();
        }
    }
}

/// When the last worker ended (`from` if none says).
fn last_end(board: &Board<'_>, from: Instant) -> Instant {
    (board.slots().iter().filter_map(board::Slot::ended))
        .max()
        .unwrap_or(from)
        .max(from)
}

/// Marks a worker's end in its slot when dropped, also by a panic.
struct MarkEnded<'a>(&'a board::Slot);

impl Drop for MarkEnded<'_> {
    fn drop(&mut self) {
        self.0.mark_ended();
    }
}

impl<'a> Worker<'a> {
    /// Worker `index` of the crew on `board`, recording into `rec`; `alone`: the only one.
    fn new(index: usize, rec: PhaseRecorder, board: &'a Board<'a>, alone: bool) -> Worker<'a> {
        Worker {
            index,
            rec: Some(rec),
            board,
            started: false,
            alone,
            started_at: None,
        }
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// The worker's recorder.
    pub(crate) fn rec(&mut self) -> &mut PhaseRecorder {
        self.rec.as_mut().expect("the recorder was given back")
    }

    /// Takes the worker's recorder, for work that keeps it by value; [`Worker::give_back`]
    /// returns it (one never given back is not counted).
    pub(crate) fn take_rec(&mut self) -> PhaseRecorder {
        self.rec.take().expect("the recorder was given back")
    }

    pub(crate) fn give_back(&mut self, rec: PhaseRecorder) {
        self.rec = Some(rec);
    }

    /// The flag every worker of the crew sees (processes too): work whose workers stop when
    /// one fails sets it and looks at it.
    pub(crate) fn halt(&self) -> &'a AtomicBool {
        self.board.halt_flag()
    }

    /// Ready: waits until every worker is, then all start at once. An error when the crew
    /// stopped before the start (another worker could not be started). Work that never
    /// calls it is started when it begins.
    pub(crate) fn start(&mut self) -> Result<(), FsbenchError> {
        if std::mem::replace(&mut self.started, true) {
            return Ok(());
        }
        if self.alone {
            self.started_at = Some(Instant::now());
        } else if !self.board.wait_at_start() {
            return Err(FsbenchError::Failed(
                "the phase stopped before its workers started".into(),
            ));
        }
        // The wait was no operation.
        if let Some(rec) = self.rec.as_mut() {
            rec.skip_lap();
        }
        Ok(())
    }

    /// Leaves the start line if the work never stood there (it failed getting ready).
    fn leave(&mut self) {
        if !std::mem::replace(&mut self.started, true) && !self.alone {
            self.board.arrive_without_waiting();
        }
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        self.leave();
    }
}

/// Runs `work` on the calling thread (a worker thread started for it) with a descriptor table
/// of its own: a copy of the process's, keeping only stdin, stdout, stderr and `keep` (the
/// directories `work` makes its `*at()` calls in, at the same numbers). What `work` opens is
/// private to the thread, and when it returns (or panics) every descriptor left in the table
/// is closed, before the thread is joined: a copy left for the thread's exit would be closed
/// only after the join returned (the kernel wakes the joiner first), keeping the filesystem
/// busy for the unmount that follows.
///
/// `work` must return no descriptor (it would mean nothing, or another file, to the caller)
/// and own none opened before the call (closing it would close the copy only).
pub(crate) fn with_private_fds<R>(
    keep: &[BorrowedFd<'_>],
    work: impl FnOnce() -> R,
) -> Result<R, FsbenchError> {
    // SAFETY: unshare affects this thread only; the descriptors it copies stay open in the
    // process's table, and this thread keeps using only `keep`'s copies, at the same numbers.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(FsbenchError::Failed(format!(
            "a worker thread cannot get a descriptor table of its own (unshare CLONE_FILES): {e}"
        )));
    }
    let table = PrivateTable;
    let mut kept: Vec<u32> = keep.iter().map(|fd| fd.as_raw_fd() as u32).collect();
    kept.sort_unstable();
    fork::close_all_but(&kept);
    let outcome = work();
    drop(table);
    Ok(outcome)
}

/// A thread's private descriptor table, emptied when dropped.
struct PrivateTable;

impl Drop for PrivateTable {
    fn drop(&mut self) {
        // SAFETY: only this thread's private table is touched, and nothing in the thread owns
        // a descriptor any more; an error leaves only this thread's copies, which its exit
        // closes.
        unsafe { libc::close_range(0, u32::MAX, 0) };
    }
}

/// Worker threads a workload starts itself (threads that share state in fsbench's memory,
/// as FFSB's share one file set), as the phase's thread sees them: it sums their counts
/// into the phase's progress every [`POLL`] and is woken as soon as the last one finishes
/// (not up to a poll later, which the phase's time would include).
pub(crate) struct ThreadCrew<'a> {
    counts: Vec<&'a AtomicU64>,
    progress: &'a Progress,
    left: AtomicUsize,
    phase_thread: Thread,
}

impl<'a> ThreadCrew<'a> {
    /// On the phase's thread, before starting a worker per counter of `counts`.
    pub(crate) fn new(counts: Vec<&'a AtomicU64>, progress: &'a Progress) -> ThreadCrew<'a> {
        ThreadCrew {
            left: AtomicUsize::new(counts.len()),
            counts,
            progress,
            phase_thread: std::thread::current(),
        }
    }

    fn units(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// One worker's `work`, on its thread, with a descriptor table of its own (see
    /// [`with_private_fds`]); says when it is done (the first-done time), also by a panic.
    pub(crate) fn work<R>(
        &self,
        keep: &[BorrowedFd<'_>],
        work: impl FnOnce() -> R,
    ) -> Result<R, FsbenchError> {
        let _finished = Finished(self);
        with_private_fds(keep, work)
    }

    /// Until every worker has finished (or every thread of `handles` has, if some were
    /// never started), sets the progress's count to the workers' sum.
    pub(crate) fn wait<T>(&self, handles: &[ScopedJoinHandle<'_, T>]) {
        self.wait_publishing(handles, |_| {});
    }

    /// [`ThreadCrew::wait`], handing the workers' sum to `publish` too at every look (threads
    /// of a worker process, whose count its recorder publishes to the phase's process).
    pub(crate) fn wait_publishing<T>(
        &self,
        handles: &[ScopedJoinHandle<'_, T>],
        mut publish: impl FnMut(u64),
    ) {
        loop {
            let units = self.units();
            self.progress.done.store(units, Ordering::Relaxed);
            publish(units);
            if self.left.load(Ordering::Acquire) == 0 || handles.iter().all(|h| h.is_finished()) {
                return;
            }
            std::thread::park_timeout(POLL);
        }
    }
}

/// Each thread's outcome, in order; a thread that panicked failed with `panicked`.
pub(crate) fn join_all<T>(
    handles: Vec<ScopedJoinHandle<'_, Result<T, FsbenchError>>>,
    panicked: &str,
) -> Vec<Result<T, FsbenchError>> {
    let failed = || Err(FsbenchError::Failed(panicked.to_string()));
    (handles.into_iter())
        .map(|h| h.join().unwrap_or_else(|_| failed()))
        .collect()
}

/// Counts a worker out of its crew when dropped, waking the phase's thread after the last.
struct Finished<'a, 'b>(&'a ThreadCrew<'b>);

impl Drop for Finished<'_, '_> {
    fn drop(&mut self) {
        let crew = self.0;
        crew.progress.thread_finished(crew.units());
        if crew.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            crew.phase_thread.unpark();
        }
    }
}

#[cfg(test)]
mod tests;

//! The timed replay: each traced thread's calls in its order, each after the other threads'
//! calls it depends on, made by bounded pools of worker threads: one in fsbench's process
//! (`workers=threads`), or one in each worker process, which hosts whole traced processes
//! ([`processes`], [`hosts`]). A worker thread takes its share of the traced threads (`me`,
//! `me + threads`, ...) and makes, in turn, whichever of their next calls may go: a traced
//! thread waiting for another never holds up the others of its worker, and the earliest call
//! not yet made can always go, whatever process makes it, so the replay never deadlocks.
//! Every path is resolved beneath the run's directory by the kernel ([`paths`]): nothing
//! outside is ever touched.

use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

mod calls;
mod data;
mod hosts;
mod latencies;
mod paths;
mod processes;
mod xattr;

pub(crate) use paths::ProcFd;
pub(crate) use xattr::NoFollow;

use super::load::{Loaded, Op, ThreadCalls, open_to_others};
use super::trace::Kind;
use crate::parallel::{ThreadCrew as Crew, join_all};
use calls::{Fds, Worker};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::{PhaseRecorder, Progress, lap_clock};
use fsbench_model::workload::WorkerMode;
use latencies::Latencies;
use latencies::Shared as SharedLatencies;

/// The most worker threads a replay runs, whatever the number of traced threads: each
/// holds a stack, a buffer of up to 1 MiB and its traced threads' descriptors, so the
/// bound keeps a replay's memory bounded for any trace. Traced threads beyond it share
/// workers.
pub(super) const WORKERS_MAX: usize = 16;
/// A worker's stack: it recurses nowhere, and 16 default stacks would be 32 MiB.
const WORKER_STACK: usize = 512 << 10;
/// The longest a worker sleeps before looking at the stop flags again.
const PAUSE_MAX: Duration = Duration::from_millis(10);
/// How long a worker sleeps while its traced threads wait for other threads' calls, at
/// first; a wait that goes on sleeps twice as long every [`DOUBLE_EVERY`] sleeps, up to 16
/// times this: a worker whose traced process starts after another ends wakes a few hundred
/// times, not thousands (each wake-up takes the CPU the working ones need), and is late by
/// under a millisecond once.
const DEPENDENCY_POLL: Duration = Duration::from_micros(50);
const DOUBLE_EVERY: u32 = 32;
/// Think mode spins, rather than sleeps, for the last stretch before a call's time: a sleep
/// wakes this much late or more (the timer slack and the scheduler's wake-up).
const SPIN_BELOW: Duration = Duration::from_micros(200);

/// A counter on a cache line pair of its own (the prefetcher fetches lines in pairs): a
/// traced thread's calls done, or a worker's.
#[repr(align(128))]
#[derive(Default)]
struct Done(AtomicU64);

// A counter of zero calls is all zeros.
impl crate::parallel::shm::Zeroed for Done {}

/// What one worker measured (its latencies go to the shared histograms); a worker process
/// sends its threads' back to the phase's process.
#[derive(Serialize, Deserialize)]
pub(crate) struct Replayed {
    pub calls: [u64; Kind::ALL.len()],
    pub bytes: u64,
    /// (kind, errno here or 0, errno in the capture or 0) → calls.
    #[serde(with = "as_pairs")]
    pub mismatches: BTreeMap<(Kind, i32, i32), u64>,
    pub samples: Vec<String>,
    pub refused: u64,
    /// Calls made otherwise than the program made them, by [`Adapted`].
    pub adapted: [u64; Adapted::ALL.len()],
    /// Some of the files mapped (their paths), for the note that names them.
    pub mapped: Vec<Vec<u8>>,
}

/// How a call may be made otherwise than the program made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Adapted {
    /// A descriptor the thread did not open itself (inherited, another thread's), opened by
    /// its path when first used.
    Reopened,
    /// chown made with -1, -1: ownership kept.
    Ownership,
    /// utimensat setting the current time, not the recorded one.
    TimesNow,
    /// O_DIRECT left out of an open.
    NoDirect,
    /// A mapping's pages within the file faulted in once each.
    Mapped,
}

impl Adapted {
    pub(crate) const ALL: [Adapted; 5] = [
        Adapted::Reopened,
        Adapted::Ownership,
        Adapted::TimesNow,
        Adapted::NoDirect,
        Adapted::Mapped,
    ];
}

/// Files a worker names as mapped, at most.
const MAPPED_NAMED: usize = 8;

impl Replayed {
    pub(super) fn adapt(&mut self, how: Adapted) {
        self.adapted[how as usize] += 1;
    }

    /// A chown (ownership kept) or a utimens (the current time).
    pub(super) fn adapt_kind(&mut self, kind: Kind) {
        match kind {
            Kind::Chown => self.adapt(Adapted::Ownership),
            Kind::Utimens => self.adapt(Adapted::TimesNow),
            _ => {}
        }
    }

    pub(super) fn mapped(&mut self, path: &[u8]) {
        if self.mapped.len() < MAPPED_NAMED && !self.mapped.iter().any(|p| p == path) {
            self.mapped.push(path.to_vec());
        }
    }
}

/// How a call came out: done, failed with an errno, or refused (its path leads outside the
/// run's directory).
enum Outcome {
    Done,
    Failed(Errno),
    Refused,
}

/// Why replay threads stop early: the user's Ctrl-C, or another worker's failure (that
/// worker's error is the phase's; the others stop quietly). With worker processes the flag
/// of failure is in memory they share.
struct Halt<'a> {
    user: &'a AtomicBool,
    failed: &'a AtomicBool,
}

impl Halt<'_> {
    /// Whether to go on; an error when the user asked to stop.
    fn go_on(&self) -> Result<bool, FsbenchError> {
        if self.user.load(Ordering::Relaxed) {
            return Err(FsbenchError::Interrupted);
        }
        Ok(!self.failed.load(Ordering::Relaxed))
    }
}

/// Replays every traced thread of `loaded` below `dir`, as worker processes (each hosting
/// whole traced processes, see [`processes`]) or as at most [`WORKERS_MAX`] threads of
/// fsbench's process; their calls, bytes and latencies go to `rec`. A worker that fails stops
/// the others; one that cannot start is the phase's error.
pub(crate) fn replay(
    loaded: &Loaded,
    dir: BorrowedFd<'_>,
    think: bool,
    oracle: Option<&crate::oracle::Oracle>,
    mode: WorkerMode,
    rec: &mut PhaseRecorder,
) -> Result<Vec<Result<Replayed, FsbenchError>>, FsbenchError> {
    if mode == WorkerMode::Processes {
        return processes::replay(loaded, dir, think, oracle, rec);
    }
    let user = rec.progress().cancel.clone();
    let failed = AtomicBool::new(false);
    let moved = AtomicU64::new(0);
    let done: Vec<Done> = loaded.threads.iter().map(|_| Done::default()).collect();
    let shared = Shared {
        loaded,
        dir,
        done: &done,
        think,
        halt: &Halt {
            user: &user,
            failed: &failed,
        },
        oracle,
        start: Instant::now(),
        umask: loaded.program.as_ref().map(|p| p.umask),
        moved: keeps_dirs(loaded, dir).then_some(&moved),
    };
    let all: Vec<u32> = (0..loaded.threads.len() as u32).collect();
    let lanes = hosts::lanes(&all, all.len().min(WORKERS_MAX));
    let pool = run_lanes(&shared, lanes, rec.progress(), |_| {})?;
    Ok(pool.record(rec, 0))
}

/// Whether the workers may keep directories open between calls: no directory beneath `dir`
/// (nor `dir` itself) lets another user move names (see [`paths::Dirs`]).
fn keeps_dirs(loaded: &Loaded, dir: BorrowedFd<'_>) -> bool {
    !loaded.others_may_move && rustix::fs::fstat(dir).is_ok_and(|st| !open_to_others(st.st_mode))
}

/// How many workers replay `loaded` in `mode`, and how many threads they run in all.
pub(super) fn workers_of(loaded: &Loaded, mode: WorkerMode) -> (usize, usize) {
    match mode {
        WorkerMode::Processes => {
            let hosts = hosts::hosts(&loaded.processes);
            (hosts.len(), hosts.iter().map(|h| h.lanes).sum())
        }
        WorkerMode::Threads => {
            let n = loaded.threads.len().min(WORKERS_MAX);
            (n, n)
        }
    }
}

/// What a pool of worker threads gave back: each one's outcome, and their latencies.
struct Pool {
    outcomes: Vec<Result<Replayed, FsbenchError>>,
    latencies: Vec<Option<Histogram<u64>>>,
}

impl Pool {
    /// Adds the latencies to `rec`, and the calls and bytes of the workers that did not fail
    /// (`published` of the calls counted there already); the outcomes.
    fn record(
        self,
        rec: &mut PhaseRecorder,
        published: u64,
    ) -> Vec<Result<Replayed, FsbenchError>> {
        for (kind, h) in Kind::ALL.iter().zip(&self.latencies) {
            if let Some(h) = h {
                rec.add_latency(kind.name(), h);
            }
        }
        let ok = self.outcomes.iter().filter_map(|o| o.as_ref().ok());
        let (calls, bytes) = ok.fold((0, 0), |(c, b), r| {
            (c + r.calls.iter().sum::<u64>(), b + r.bytes)
        });
        // The user's stop is the workers' error already.
        let _ = rec.units_done(calls.saturating_sub(published), bytes);
        self.outcomes
    }
}

/// Runs one worker thread per lane, each replaying the traced threads it lists, with a
/// descriptor table of its own; `progress` gets the sum of their counts of calls made, and
/// so does `publish`, every poll while they run. An error when a thread cannot start (the
/// others are stopped).
fn run_lanes(
    shared: &Shared<'_>,
    lanes: Vec<Vec<u32>>,
    progress: &Progress,
    publish: impl FnMut(u64),
) -> Result<Pool, FsbenchError> {
    let latencies: Vec<_> = Kind::ALL.iter().map(|_| Mutex::new(None)).collect();
    let made: Vec<Done> = lanes.iter().map(|_| Done::default()).collect();
    let crew = Crew::new(made.iter().map(|d| &d.0).collect(), progress);
    let n = lanes.len();
    let (outcomes, not_started) = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(n);
        let mut not_started = None;
        for (me, (mine, made)) in lanes.iter().zip(&made).enumerate() {
            let (crew, latencies) = (&crew, &latencies);
            let spawned = std::thread::Builder::new()
                .name(format!("replay-{me}"))
                .stack_size(WORKER_STACK)
                .spawn_scoped(s, move || {
                    let _guard = StopOthersOnPanic(shared.halt.failed);
                    let outcome = crew
                        .work(&[shared.dir], || {
                            replay_worker(shared, mine, latencies, &made.0)
                        })
                        .and_then(|r| r);
                    // A worker that stops early lets the others past their waits.
                    if outcome.is_err() {
                        shared.halt.failed.store(true, Ordering::Relaxed);
                    }
                    outcome
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    shared.halt.failed.store(true, Ordering::Relaxed);
                    not_started = Some(FsbenchError::Failed(format!(
                        "cannot start replay thread {} of {n}: {e}",
                        me + 1,
                    )));
                    break;
                }
            }
        }
        crew.wait_publishing(&handles, publish);
        (join_all(handles, "a replay thread panicked"), not_started)
    });
    if let Some(e) = not_started {
        return Err(e);
    }
    let latencies = (latencies.into_iter())
        .map(|h| h.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect();
    Ok(Pool {
        outcomes,
        latencies,
    })
}

/// Stops the other workers when a worker panics (they may wait for its calls).
struct StopOthersOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOthersOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// What a worker shares with the others.
struct Shared<'a> {
    loaded: &'a Loaded,
    dir: BorrowedFd<'a>,
    /// Calls done, per traced thread (in memory the worker processes share, as processes).
    done: &'a [Done],
    /// Each call at its recorded time on the program's clock, from `start`.
    think: bool,
    halt: &'a Halt<'a>,
    /// A crash-recorded run's: what the trace's syncs covered, noted as each returns.
    oracle: Option<&'a crate::oracle::Oracle>,
    start: Instant,
    /// The program's umask, which the workers create files with.
    umask: Option<u32>,
    /// Renames and directories removed so far, by any worker, where directories are kept
    /// open (see [`paths::Dirs`]).
    moved: Option<&'a AtomicU64>,
}

/// One traced thread, as its worker replays it.
struct Traced<'a> {
    /// Its place in `Shared::done`.
    index: usize,
    calls: &'a ThreadCalls,
    /// Its next call, and how many of that call's dependencies are known to be done.
    next: usize,
    waited: u32,
    fds: Fds,
}

impl Traced<'_> {
    /// Whether the other threads' calls that `op` depends on are all done.
    fn ready(&mut self, op: &Op, done: &[Done]) -> bool {
        self.waited = self.waited.max(op.deps.0);
        while self.waited < op.deps.1 {
            let dep = self.calls.deps[self.waited as usize];
            if done[dep.thread as usize].0.load(Ordering::Acquire) <= u64::from(dep.index) {
                return false;
            }
            self.waited += 1;
        }
        true
    }
}

/// What held a worker's traced threads back in one pass over them.
#[derive(Default)]
struct Held {
    /// Some wait for another thread's call.
    by_others: bool,
    /// The earliest end of a recorded pause (think mode).
    until: Option<Instant>,
}

impl Held {
    /// Whether a call recorded at `at_us` on the program's clock (from `start`) may go now,
    /// think mode's schedule: a late call goes at once and the next ones catch up. One not
    /// due yet holds its thread until then; a time too far to come in this machine's clock
    /// never comes: the thread waits until stopped.
    fn due(&mut self, start: Instant, at_us: u64) -> bool {
        match start.checked_add(Duration::from_micros(at_us)) {
            Some(due) if Instant::now() >= due => true,
            Some(due) => {
                self.until = Some(self.until.map_or(due, |u| u.min(due)));
                false
            }
            None => false,
        }
    }
}

/// Replays the traced threads `mine` below `shared.dir`, counting its calls in `made`.
fn replay_worker(
    shared: &Shared<'_>,
    mine: &[u32],
    latencies: &SharedLatencies,
    made: &AtomicU64,
) -> Result<Replayed, FsbenchError> {
    if let Some(umask) = shared.umask {
        own_umask(umask)?;
    }
    let mut traced: Vec<Traced<'_>> = (mine.iter())
        .map(|&index| Traced {
            index: index as usize,
            calls: &shared.loaded.threads[index as usize],
            next: 0,
            waited: 0,
            fds: Fds::default(),
        })
        .collect();
    let longest = traced.iter().map(|t| t.calls.max_len).max().unwrap_or(0);
    let mut worker = Worker::new(shared.dir, longest, shared.halt.user, shared.moved);
    let mut latencies = Latencies::new(latencies);
    let clock = lap_clock();
    let (mut idle, mut calls) = (0u32, 0u64);
    while !traced.is_empty() {
        let mut held = Held::default();
        let mut moved = false;
        let mut i = 0;
        while i < traced.len() {
            let t = &mut traced[i];
            while let Some(op) = t.calls.ops.get(t.next) {
                if !t.ready(op, shared.done) {
                    held.by_others = true;
                    break;
                }
                if shared.think && !held.due(shared.start, op.at_us) {
                    break;
                }
                let begin = clock.raw();
                let outcome = worker.call(&mut t.fds, t.calls, op);
                let ns = clock.delta_as_nanos(begin, clock.raw());
                latencies.record(op.kind, ns);
                if let (Some(oracle), Outcome::Done) = (shared.oracle, &outcome) {
                    t.fds.note_promise(oracle, op);
                }
                worker.record(op, t.calls, outcome)?;
                t.next += 1;
                shared.done[t.index]
                    .0
                    .store(t.next as u64, Ordering::Release);
                calls += 1;
                made.store(calls, Ordering::Relaxed);
                moved = true;
                if !shared.halt.go_on()? {
                    return Ok(worker.out);
                }
            }
            if t.next == t.calls.ops.len() {
                // Its descriptors are closed here, as the traced thread's were at its exit.
                traced.swap_remove(i);
            } else {
                i += 1;
            }
        }
        if moved {
            idle = 0;
        } else if !wait(&mut idle, &held, shared.halt)? {
            return Ok(worker.out);
        }
    }
    if shared.think {
        until_the_programs_end(shared)?;
    }
    Ok(worker.out)
}

/// Think mode: the program went on after its last recorded call (its last computing, its
/// exit) until its own time was up; a worker done with its calls waits until then too, so
/// that the phase takes the program's time where the filesystem keeps its pace.
fn until_the_programs_end(shared: &Shared<'_>) -> Result<(), FsbenchError> {
    let Some(program) = &shared.loaded.program else {
        return Ok(());
    };
    let Some(end) = shared
        .start
        .checked_add(Duration::from_micros(program.own_us))
    else {
        return Ok(());
    };
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() || !shared.halt.go_on()? {
            return Ok(());
        }
        std::thread::sleep(left.min(PAUSE_MAX));
    }
}

/// Gives the worker thread a umask of its own (and a working directory, unused): the
/// program's, whatever fsbench's is.
fn own_umask(umask: u32) -> Result<(), FsbenchError> {
    // SAFETY: unshare affects this thread only; it shares no file-system state with the
    // others from then on.
    if unsafe { libc::unshare(libc::CLONE_FS) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(FsbenchError::Failed(format!(
            "a replay thread cannot get a umask of its own (unshare CLONE_FS): {e}"
        )));
    }
    rustix::process::umask(rustix::fs::Mode::from_bits_truncate(umask));
    Ok(())
}

/// Waits a little for a held thread: spinning briefly, then yielding, then sleeping (never
/// past the end of a pause, never longer than [`PAUSE_MAX`]); false when the replay stops.
/// The last [`SPIN_BELOW`] before a recorded time are spun, not slept.
fn wait(idle: &mut u32, held: &Held, halt: &Halt<'_>) -> Result<bool, FsbenchError> {
    *idle = idle.saturating_add(1);
    let soon = |until: Instant| until.saturating_duration_since(Instant::now()) <= SPIN_BELOW;
    if !held.by_others && held.until.is_some_and(soon) {
        std::hint::spin_loop();
        return Ok(true);
    }
    if *idle < 100 {
        std::hint::spin_loop();
    } else if *idle < 1000 {
        std::thread::yield_now();
    } else {
        if !halt.go_on()? {
            return Ok(false);
        }
        let pause = if held.by_others {
            let doublings = ((*idle - 1000) / DOUBLE_EVERY).min(4);
            DEPENDENCY_POLL * (1 << doublings)
        } else {
            held.until.map_or(PAUSE_MAX, |until| {
                (until.saturating_duration_since(Instant::now()))
                    .saturating_sub(SPIN_BELOW)
                    .min(PAUSE_MAX)
            })
        };
        std::thread::sleep(pause);
    }
    Ok(true)
}

/// A fresh worker's record.
impl Default for Replayed {
    fn default() -> Replayed {
        Replayed {
            calls: [0; Kind::ALL.len()],
            bytes: 0,
            mismatches: BTreeMap::new(),
            samples: Vec::new(),
            refused: 0,
            adapted: [0; Adapted::ALL.len()],
            mapped: Vec::new(),
        }
    }
}

/// A map whose keys are not strings, as JSON holds it: a list of pairs.
mod as_pairs {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<K: Serialize, V: Serialize, S: Serializer>(
        map: &BTreeMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(map.iter())
    }

    pub(super) fn deserialize<'de, K, V, D>(d: D) -> Result<BTreeMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Ord,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
    }
}

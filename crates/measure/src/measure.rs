//! Measurements of one phase: elapsed time, operations, bytes, CPU time, a fixed-size latency
//! histogram per operation type, and errors by errno.
//!
//! The recorder is built for hot loops: it allocates once per phase, never per operation.
//! Latency is measured as laps of one clock: each operation's latency is the time since the
//! previous operation ended, so one clock read per operation suffices and the latencies of a
//! phase add up to its elapsed time. The clock is the CPU's invariant TSC calibrated against
//! the monotonic clock (quanta), about 8 ns a read instead of clock_gettime's 20; quanta falls
//! back to the monotonic clock where the TSC is not usable.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use fsbench_model::measurement::{
    JobThread, LatencySummary, LogFile, PendingLogs, PhaseMeasurement,
};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use rustix::io::Errno;

use crate::error::FsbenchError;

mod errno;
mod tally;
mod timeline;
pub use errno::{errno_name, fatal_error};
pub use tally::{Tally, histogram_serde};
pub use timeline::FIRST_INTERVAL_MS;
use timeline::Timeline;

/// Operation types with a latency histogram of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum OpKind {
    Mkdir,
    OpenDir,
    Create,
    Write,
    Close,
    Unlink,
    Rmdir,
    Link,
    Symlink,
    OpenFile,
    Read,
    /// fallocate, posix_fallocate, or one mmap window filled with memset.
    Allocate,
    Fsync,
    Stat,
    /// setxattr, getxattr, listxattr or removexattr on an open file.
    Xattr,
}

impl OpKind {
    pub const ALL: [OpKind; 15] = [
        OpKind::Mkdir,
        OpKind::OpenDir,
        OpKind::Create,
        OpKind::Write,
        OpKind::Close,
        OpKind::Unlink,
        OpKind::Rmdir,
        OpKind::Link,
        OpKind::Symlink,
        OpKind::OpenFile,
        OpKind::Read,
        OpKind::Allocate,
        OpKind::Fsync,
        OpKind::Stat,
        OpKind::Xattr,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Mkdir => "mkdir",
            OpKind::OpenDir => "open-dir",
            OpKind::Create => "create",
            OpKind::Write => "write",
            OpKind::Close => "close",
            OpKind::Unlink => "unlink",
            OpKind::Rmdir => "rmdir",
            OpKind::Link => "link",
            OpKind::Symlink => "symlink",
            OpKind::OpenFile => "open",
            OpKind::Read => "read",
            OpKind::Allocate => "allocate",
            OpKind::Fsync => "fsync",
            OpKind::Stat => "stat",
            OpKind::Xattr => "xattr",
        }
    }
}

/// Latencies above an hour are clamped; three significant digits keep each histogram ~256 KiB.
const HISTOGRAM_MAX_NS: u64 = 3_600_000_000_000;
const HISTOGRAM_DIGITS: u8 = 3;
/// Failures are counted by errno without limit; this many are also described, with paths.
const FAILURE_SAMPLES: usize = 10;

/// Shared between a running phase and the thread that reports progress.
#[derive(Debug, Default)]
pub struct Progress {
    /// Operations completed in the current phase.
    pub done: Counter,
    /// Set by Ctrl-C / SIGTERM; phases stop at the next operation.
    pub cancel: Arc<AtomicBool>,
    /// Worker threads of a multi-threaded phase that finished their share, and when the
    /// first did with the units all threads had done then (for first-done / last-done rates).
    pub threads_finished: AtomicU32,
    pub first_thread_finished: Mutex<Option<(Instant, u64)>>,
    /// When the current phase's work began (its workers released, after their set-up) and
    /// ended (its last worker done, before its figures were summed up): a rank's phase under
    /// MPI.
    pub work_span: Mutex<Option<(Instant, Instant)>>,
}

/// A counter on a cache line of its own: one thread writes it at every unit and another
/// reads it, and no other thread's counter shares its line (worker threads' counters are
/// allocated side by side, and would take the line from each other at every unit).
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Counter(AtomicU64);

impl std::ops::Deref for Counter {
    type Target = AtomicU64;
    fn deref(&self) -> &AtomicU64 {
        &self.0
    }
}

impl Progress {
    /// A worker thread of a multi-threaded phase finished its share of the work, when all
    /// threads had done `units` (their own counters' sum: `done` is only polled).
    pub fn thread_finished(&self, units: u64) {
        self.thread_finished_at(Instant::now(), units);
    }

    /// A worker finished its share at `at` (seen after the fact: a worker process's end),
    /// when all workers had done `units`.
    pub fn thread_finished_at(&self, at: Instant, units: u64) {
        if let Ok(mut first) = self.first_thread_finished.lock() {
            match first.as_mut() {
                Some(earliest) if earliest.0 <= at => {}
                _ => *first = Some((at, units)),
            }
        }
        self.threads_finished.fetch_add(1, Ordering::Relaxed);
    }

    /// Forgets the previous phase's finished threads.
    pub fn reset_threads(&self) {
        self.threads_finished.store(0, Ordering::Relaxed);
        if let Ok(mut first) = self.first_thread_finished.lock() {
            *first = None;
        }
    }

    /// How many threads finished, and when the first did with the units done then.
    pub fn threads(&self) -> (u32, Option<(Instant, u64)>) {
        let first = self.first_thread_finished.lock().ok().and_then(|f| *f);
        (self.threads_finished.load(Ordering::Relaxed), first)
    }
}

/// Records one phase. Create with [`PhaseRecorder::start`], finish with [`PhaseRecorder::finish`].
pub struct PhaseRecorder {
    phase: String,
    histograms: Vec<Option<Histogram<u64>>>,
    /// Histograms measured elsewhere (worker threads) under names of their own.
    merged: BTreeMap<String, Histogram<u64>>,
    errors: BTreeMap<i32, u64>,
    last_errno: i32,
    refused: u64,
    failures: Vec<String>,
    ops: u64,
    bytes: u64,
    started: Instant,
    clock: quanta::Clock,
    lap: u64,
    usage: CpuTimes,
    /// CPU time of processes the phase ran (a user's command), beside fsbench's own.
    children: CpuTimes,
    progress: Arc<Progress>,
    /// Where the count of units goes instead of `progress.done`: a counter in memory a
    /// worker process shares with the phase's process, which polls it.
    published: Option<&'static AtomicU64>,
    /// When the phase's work really began and ended, where that is not the recorder's life.
    span: Option<(Instant, Instant)>,
    timeline: Timeline,
    /// fio's record of each job thread, and the logs they wrote.
    jobs: Vec<JobThread>,
    logs: PendingLogs,
}

impl PhaseRecorder {
    pub fn start(phase: &str, progress: Arc<Progress>) -> PhaseRecorder {
        progress.done.store(0, Ordering::Relaxed);
        let clock = lap_clock();
        PhaseRecorder {
            phase: phase.to_string(),
            histograms: OpKind::ALL.iter().map(|_| None).collect(),
            merged: BTreeMap::new(),
            errors: BTreeMap::new(),
            last_errno: 0,
            refused: 0,
            failures: Vec::new(),
            ops: 0,
            bytes: 0,
            started: Instant::now(),
            lap: clock.raw(),
            clock,
            usage: CpuTimes::now(),
            children: CpuTimes::default(),
            progress,
            published: None,
            span: None,
            timeline: Timeline::default(),
            jobs: Vec::new(),
            logs: PendingLogs::default(),
        }
    }

    /// Counts units into `counter` from now on, not into this recorder's progress (a worker
    /// process's recorder, whose progress the phase's process cannot see).
    pub fn publish_to(&mut self, counter: &'static AtomicU64) {
        counter.store(self.ops, Ordering::Relaxed);
        self.published = Some(counter);
    }

    /// The phase's work ran from `from` (its workers released together) to `to` (the last
    /// one done): its elapsed time, rather than the recorder's whole life, which includes
    /// starting the workers and collecting their figures.
    pub fn ran(&mut self, from: Instant, to: Instant) {
        self.span = Some((from, to.max(from)));
    }

    /// When the phase's work began: its recorder's start, or the start given to [`Self::ran`].
    pub fn began(&self) -> Instant {
        self.span.map_or(self.started, |(from, _)| from)
    }

    /// When the phase's work ended: the end given to [`Self::ran`], or now.
    pub fn ended(&self) -> Instant {
        self.span.map_or_else(Instant::now, |(_, to)| to)
    }

    /// Records the outcome of one system call of type `op` that just returned.
    ///
    /// Returns `Ok(Some(value))` on success, `Ok(None)` for an error that is counted and
    /// tolerated, and `Err` for one that ends the phase (disk full, read-only, too many).
    #[inline]
    pub fn record<T>(
        &mut self,
        op: OpKind,
        result: Result<T, Errno>,
    ) -> Result<Option<T>, FsbenchError> {
        let now = self.clock.raw();
        let ns = self.clock.delta_as_nanos(self.lap, now);
        self.lap = now;
        let hist = self.histograms[op as usize].get_or_insert_with(new_histogram);
        hist.saturating_record(ns.max(1));
        self.timeline.record(ns);
        match result {
            Ok(v) => Ok(Some(v)),
            Err(e) => self.fail(e),
        }
    }

    /// Records a call of type `op` that ended `at_ns` after the phase started and took `ns`
    /// (calls in flight at once, or latency counted from a scheduled time: not laps).
    #[inline]
    pub fn record_ended_at(&mut self, op: OpKind, at_ns: u64, ns: u64) {
        let hist = self.histograms[op as usize].get_or_insert_with(new_histogram);
        hist.saturating_record(ns.max(1));
        self.timeline.record_at(at_ns, ns);
    }

    #[cold]
    fn fail<T>(&mut self, errno: Errno) -> Result<Option<T>, FsbenchError> {
        *self.errors.entry(errno.raw_os_error()).or_default() += 1;
        self.last_errno = errno.raw_os_error();
        match fatal_error(errno, &self.phase, self.ops) {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Describes the failure just recorded (the first few are kept, with `what` as the path).
    pub fn note_failure(&mut self, what: impl FnOnce() -> String) {
        if self.failures.len() < FAILURE_SAMPLES {
            let errno = errno_name(self.last_errno);
            self.failures.push(format!("{errno}: {}", what()));
        }
    }

    /// Counts a member refused for safety (a path outside the target), describing the first few.
    pub fn refuse(&mut self, what: impl FnOnce() -> String) {
        self.refused += 1;
        if self.failures.len() < FAILURE_SAMPLES {
            self.failures.push(format!("refused: {}", what()));
        }
    }

    /// Starts the next operation's latency now: the time since the last one was a wait (for
    /// other MPI ranks), not an operation.
    pub fn skip_lap(&mut self) {
        self.lap = self.clock.raw();
    }

    /// Counts `n` units and `bytes` at once (for workloads that measure their own batches).
    pub fn units_done(&mut self, n: u64, bytes: u64) -> Result<(), FsbenchError> {
        if n == 0 {
            self.bytes += bytes;
            return Ok(());
        }
        self.ops += n - 1;
        self.unit_done(bytes)
    }

    /// Adds the CPU time of processes the phase ran to the phase's.
    pub fn add_cpu(&mut self, user: Duration, system: Duration) {
        self.children.user += user;
        self.children.system += system;
    }

    /// The counter and cancel flag worker threads share with the progress bar.
    pub fn progress(&self) -> &Arc<Progress> {
        &self.progress
    }

    /// Adds latencies measured by a worker thread under `name` (e.g. an FFSB operation).
    pub fn add_latency(&mut self, name: &str, h: &Histogram<u64>) {
        match self.merged.get_mut(name) {
            Some(total) => total
                .add(h)
                .expect("histograms of the same bounds always add"),
            None => {
                self.merged.insert(name.to_string(), h.clone());
            }
        }
    }

    /// Adds a job thread's fio record and its log files.
    pub fn add_job(&mut self, job: JobThread, logs: Vec<LogFile>) {
        self.jobs.push(job);
        for file in logs {
            self.logs.push(file);
        }
    }

    /// A worker thread's progress: a counter of its own, the same cancel flag. Made on the
    /// phase's thread, which polls it; the worker makes its recorder with it.
    pub fn worker_progress(&self) -> Arc<Progress> {
        Arc::new(Progress {
            cancel: self.progress.cancel.clone(),
            ..Progress::default()
        })
    }

    /// A recorder for a worker thread of this phase, counting into `progress` (from
    /// [`PhaseRecorder::worker_progress`]); [`PhaseRecorder::absorb`] adds what it measured.
    /// Call it on the worker's own thread: what the recorder writes at every call is then
    /// allocated from that thread's malloc arena, never on a cache line beside another
    /// worker's (made side by side on one thread, 16 workers' recorders slowed each other).
    pub fn worker(&self, progress: Arc<Progress>) -> PhaseRecorder {
        PhaseRecorder::start(&self.phase, progress)
    }

    /// Adds everything a worker thread's recorder measured to this phase's.
    pub fn absorb(&mut self, worker: PhaseRecorder) {
        for (mine, theirs) in self.histograms.iter_mut().zip(worker.histograms) {
            match (mine.as_mut(), theirs) {
                (Some(m), Some(t)) => m.add(&t).expect("histograms of the same bounds add"),
                (None, theirs) => *mine = theirs,
                (Some(_), None) => {}
            }
        }
        for (name, h) in &worker.merged {
            self.add_latency(name, h);
        }
        for (e, n) in worker.errors {
            self.add_errors(e, n);
        }
        self.refused += worker.refused;
        let room = FAILURE_SAMPLES.saturating_sub(self.failures.len());
        self.failures.extend(worker.failures.into_iter().take(room));
        self.ops += worker.ops;
        self.bytes += worker.bytes;
        self.jobs.extend(worker.jobs);
        self.logs.extend(&worker.logs);
        self.progress.done.store(self.ops, Ordering::Relaxed);
    }

    /// [`PhaseRecorder::absorb`], the worker's timeline too: for workers that place their
    /// calls in time themselves ([`PhaseRecorder::record_ended_at`]), whose series add up.
    pub fn absorb_with_timeline(&mut self, mut worker: PhaseRecorder) {
        self.timeline.absorb(std::mem::take(&mut worker.timeline));
        self.absorb(worker);
    }

    /// Adds `n` failed calls with `errno` counted by a worker thread.
    pub fn add_errors(&mut self, errno: i32, n: u64) {
        *self.errors.entry(errno).or_default() += n;
    }

    /// Units completed so far.
    pub fn units(&self) -> u64 {
        self.ops
    }

    /// Counts one completed unit of the phase (a directory, a file) and `bytes` moved.
    /// Fails when the user asked to stop.
    #[inline]
    pub fn unit_done(&mut self, bytes: u64) -> Result<(), FsbenchError> {
        self.ops += 1;
        self.bytes += bytes;
        self.published
            .unwrap_or(&*self.progress.done)
            .store(self.ops, Ordering::Relaxed);
        if self.progress.cancel.load(Ordering::Relaxed) {
            return Err(FsbenchError::Interrupted);
        }
        Ok(())
    }

    /// Ends the phase and summarizes it.
    pub fn finish(self) -> PhaseMeasurement {
        let elapsed = match self.span {
            Some((from, to)) => to - from,
            None => self.started.elapsed(),
        };
        let own = CpuTimes::now().since(&self.usage);
        let cpu = CpuTimes {
            user: own.user + self.children.user,
            system: own.system + self.children.system,
        };
        let latency = OpKind::ALL
            .iter()
            .zip(&self.histograms)
            .filter_map(|(op, h)| Some((op.name().to_string(), LatencySummary::of(h.as_ref()?))))
            .chain(
                self.merged
                    .iter()
                    .map(|(name, h)| (name.clone(), LatencySummary::of(h))),
            )
            .collect();
        PhaseMeasurement {
            elapsed_ns: elapsed.as_nanos() as u64,
            ops: self.ops,
            bytes: self.bytes,
            cpu_user_ns: cpu.user.as_nanos() as u64,
            cpu_system_ns: cpu.system.as_nanos() as u64,
            latency,
            errors: self
                .errors
                .iter()
                .map(|(e, n)| (errno_name(*e), *n))
                .collect(),
            refused: self.refused,
            failures: self.failures,
            latency_timeline: self.timeline.finish(),
            jobs: self.jobs,
            logs: self.logs,
        }
    }
}

/// The calibrated lap clock, made once per process (calibration takes a few milliseconds).
pub fn lap_clock() -> quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new).clone()
}

/// A latency histogram in nanoseconds with the bounds every phase uses (so they merge).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_NS, HISTOGRAM_DIGITS)
        .expect("static histogram bounds are valid")
}

/// An empty histogram of the bounds' precision that grows with what is added (a sum no
/// larger than what it holds: one of the whole range is 256 KiB).
pub fn growing_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 2, HISTOGRAM_DIGITS)
        .expect("static histogram bounds are valid");
    h.auto(true);
    h
}

/// `h`'s counts in a histogram of its precision that reaches `high` (at least twice its
/// lowest value) and grows past it as more is added.
pub(crate) fn regrown(h: &Histogram<u64>, high: u64) -> Result<Histogram<u64>, String> {
    let high = high.max(2 * h.low());
    let mut out = Histogram::new_with_bounds(h.low(), high, h.sigfig())
        .map_err(|e| format!("a histogram's bounds: {e:?}"))?;
    out.auto(true);
    out.add(h)
        .map_err(|e| format!("a histogram's counts: {e:?}"))?;
    Ok(out)
}

/// `h`'s counts over the whole range, growing past it if it must.
fn widened(h: &Histogram<u64>) -> Histogram<u64> {
    regrown(h, HISTOGRAM_MAX_NS.max(h.high())).expect("a histogram that grows takes any counts")
}

/// Behaviour over the stored latency record: making it from a histogram, decoding its
/// histogram and merging several (hdrhistogram and base64 are measure's, not the model's).
pub trait LatencySummaryExt: Sized {
    /// The percentiles of `h`, with `h` encoded.
    fn of(h: &Histogram<u64>) -> Self;
    /// The histogram, decoded; `None` if it was not recorded (older results) or is damaged.
    fn decode(&self) -> Option<Histogram<u64>>;
    /// Percentiles of several runs' histograms merged: the latency of all their calls.
    fn merge<'a>(parts: impl IntoIterator<Item = &'a Self>) -> Option<Self>
    where
        Self: 'a;
}

impl LatencySummaryExt for LatencySummary {
    fn of(h: &Histogram<u64>) -> LatencySummary {
        let mut encoded = Vec::new();
        V2Serializer::new()
            .serialize(h, &mut encoded)
            .expect("serializing to memory cannot fail");
        LatencySummary {
            histogram: BASE64.encode(encoded),
            count: h.len(),
            mean_ns: h.mean(),
            min_ns: h.min(),
            p50_ns: h.value_at_quantile(0.50),
            p90_ns: h.value_at_quantile(0.90),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }

    fn decode(&self) -> Option<Histogram<u64>> {
        let bytes = BASE64.decode(&self.histogram).ok()?;
        Deserializer::new().deserialize(&mut bytes.as_slice()).ok()
    }

    fn merge<'a>(parts: impl IntoIterator<Item = &'a LatencySummary>) -> Option<LatencySummary> {
        let mut total: Option<Histogram<u64>> = None;
        for part in parts {
            let h = part.decode()?;
            match &mut total {
                Some(t) => t.add(&h).ok()?,
                // A histogram that crossed from a worker was stored with the range it
                // reached: the sum takes any.
                None => total = Some(widened(&h)),
            }
        }
        total.map(|t| LatencySummary::of(&t))
    }
}

/// User and system CPU time of the whole process (all threads), from getrusage.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuTimes {
    pub user: Duration,
    pub system: Duration,
}

impl CpuTimes {
    pub fn now() -> CpuTimes {
        // SAFETY: getrusage writes a plain struct; RUSAGE_SELF is always valid.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut usage);
            usage
        };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        CpuTimes {
            user: tv(usage.ru_utime),
            system: tv(usage.ru_stime),
        }
    }

    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

/// Caches synced and dropped between phases (root only). Returns whether they were dropped.
pub fn sync_and_drop_caches(dir: impl std::os::fd::AsFd) -> bool {
    let _ = rustix::fs::syncfs(&dir);
    rustix::fs::sync();
    crate::tools::is_root() && std::fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok()
}

#[cfg(test)]
mod tests;

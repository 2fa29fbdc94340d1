//! FFSB's workers: the file table the threads share, one thread's state and operations, and
//! the totals they add up to. A thread allocates its buffer, name buffers and histograms once;
//! a transaction allocates nothing.

use std::ffi::CStr;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, Mode, OFlags, SeekFrom};
use rustix::io::Errno;

use super::{FfsbParams, FileSet, Op, ThreadGroup};
use crate::parallel::{ThreadCrew as Crew, join_all};
use fsbench_measure::calls::{Aligned, push_decimal, read_full, write_all};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::extents::Mapper;
use fsbench_measure::measure::{
    Counter, CpuTimes, OpKind, PhaseRecorder, fatal_error, lap_clock, new_histogram,
};

mod fileset;
pub(super) use fileset::*;

mod totals;
pub(super) use totals::RunTotals;
use totals::{ThreadStats, index};

/// How often a watcher thread looks for an interrupt while the workers run.
const INTERRUPT_POLL: Duration = Duration::from_millis(10);

/// What the threads share.
struct Shared<'a> {
    params: &'a FfsbParams,
    data: BorrowedFd<'a>,
    meta: BorrowedFd<'a>,
    files: &'a Mutex<FileTable>,
    sizes: (u64, u64),
    /// Set by the first thread that fails, or on an interrupt, so the others stop.
    stop: AtomicBool,
    /// Wakes the threads sleeping out `op_delay` when `stop` is set.
    wake: Condvar,
    wake_lock: Mutex<()>,
    deadline: OnceLock<Option<Instant>>,
    /// Held for writing while threads are started; they wait on it to begin together.
    gate: RwLock<()>,
    progress: &'a fsbench_measure::measure::Progress,
    next_dir: AtomicU64,
}

impl Shared<'_> {
    /// Stops every thread, waking those asleep in `op_delay`.
    fn halt(&self) {
        self.stop.store(true, Ordering::Relaxed);
        // Under the lock: a thread between its check of `stop` and its wait gets the wakeup.
        let _guard = self.wake_lock.lock();
        self.wake.notify_all();
    }

    /// Sleeps `delay` between transactions, but not past the phase's end, nor once the
    /// threads are told to stop: a profile's `op_delay` never outlasts a signal or the time.
    fn pause(&self, delay: Duration, deadline: Option<Instant>) {
        let now = Instant::now();
        let until = deadline.map_or(now + delay, |d| d.min(now + delay));
        let Ok(guard) = self.wake_lock.lock() else {
            return;
        };
        let _ = self
            .wake
            .wait_timeout_while(guard, until.saturating_duration_since(now), |_| {
                !self.stop.load(Ordering::Relaxed)
            });
    }
}

/// One thread's state: everything a transaction needs, allocated once.
struct Worker<'a> {
    shared: &'a Shared<'a>,
    group: &'a ThreadGroup,
    /// The group's place in the profile, for the per-group results.
    group_index: usize,
    /// Block calls of the current transaction, counted as FFSB counts them.
    blocks: u64,
    thread: u32,
    rng: Rng,
    buf: Aligned,
    names: Names,
    other: Names,
    metaops: u64,
    stats: ThreadStats,
    /// Transactions done, for the progress bar: this thread's alone.
    done: &'a Counter,
}

impl Worker<'_> {
    fn direct(&self) -> OFlags {
        if self.shared.params.directio {
            OFlags::DIRECT
        } else {
            OFlags::empty()
        }
    }

    /// A random offset in [0, max], aligned to 4 KiB when asked (or for O_DIRECT).
    fn offset(&mut self, max: u64) -> u64 {
        let off = self.rng.next() % (max + 1);
        if self.shared.params.alignio || self.shared.params.directio {
            off & !4095
        } else {
            off
        }
    }

    fn open(&mut self, id: u32, flags: OFlags) -> Result<OwnedFd, Errno> {
        let dirs = self.shared.params.fileset.num_dirs;
        let flags = flags | OFlags::CLOEXEC | self.direct();
        let path = self.names.file(id, dirs);
        rustix::fs::openat(self.shared.data, path, flags, Mode::empty())
    }

    /// Reads (or writes) a `size`-byte file's range as FFSB's read and write do, call for
    /// call, so that a transaction costs what FFSB's does: `amount` bytes in `block`-byte
    /// read/write calls, sequentially after one lseek to a random offset (none when the
    /// amount is the whole file), or each block after its own lseek; skipping reads start at
    /// 0 and lseek past `read_skipsize` after each block.
    fn range(&mut self, file: &OwnedFd, size: u64, write: bool) -> Result<(), Errno> {
        let g = self.group;
        let (amount, block, random) = if write {
            (g.write_size, g.write_blocksize, g.write_random)
        } else {
            (g.read_size, g.read_blocksize, g.read_random)
        };
        let block = block.min(size);
        if block == 0 {
            return Ok(());
        }
        // FFSB counts every write call but only whole read blocks, except for skipping reads,
        // where the last partial block counts too.
        let counts = |n: u64| write || n == block || g.read_skip;
        let io = |w: &mut Self, n: u64| -> Result<(), Errno> {
            let buf = &mut w.buf.buf()[..n as usize];
            if write {
                w.stats.written_bytes += write_all(file, buf)? as u64;
            } else {
                w.stats.read_bytes += read_full(file, buf)? as u64;
            }
            w.blocks += u64::from(counts(n));
            Ok(())
        };
        let seek = |to: SeekFrom| rustix::fs::seek(file, to).map(drop);
        if random {
            // As FFSB: `amount / block` calls (none when a block is larger than the amount).
            for _ in 0..amount / block {
                seek(SeekFrom::Start(self.offset(size - block)))?;
                io(self, block)?;
            }
        } else if !write && g.read_skip {
            for _ in 0..amount / block {
                io(self, block)?;
                seek(SeekFrom::Current(g.read_skipsize as i64))?;
            }
            if amount % block > 0 {
                io(self, amount % block)?;
            }
        } else {
            let amount = amount.min(size);
            if size > amount {
                seek(SeekFrom::Start(self.offset(size - amount)))?;
            }
            let mut left = amount;
            while left > 0 {
                let n = block.min(left);
                io(self, n)?;
                left -= n;
            }
        }
        Ok(())
    }

    /// One transaction; `Ok(false)` when there was no file to work on.
    fn transact(&mut self, op: Op) -> Result<bool, Errno> {
        let shared = self.shared;
        match op {
            Op::Create | Op::CreateFsync => {
                let id = shared.files.lock().expect("not poisoned").reserve();
                let size = choose_size(&shared.params.fileset, shared.sizes, self.rng.next());
                let file = self.open(id, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL)?;
                self.blocks += fill(&file, &mut self.buf, size, self.group.write_blocksize)?;
                self.stats.written_bytes += size;
                if op == Op::CreateFsync {
                    rustix::fs::fsync(&file)?;
                }
                drop(file);
                shared.files.lock().expect("not poisoned").publish(id, size);
                Ok(true)
            }
            Op::Delete => {
                let taken = shared
                    .files
                    .lock()
                    .expect("not poisoned")
                    .take_idle(self.rng.next());
                let Some(id) = taken else {
                    return Ok(false);
                };
                let path = self.names.file(id, shared.params.fileset.num_dirs);
                rustix::fs::unlinkat(shared.data, path, AtFlags::empty())?;
                Ok(true)
            }
            Op::Metaop => {
                let (k, t) = (self.metaops, self.thread);
                self.metaops += 2;
                let mode = Mode::from(0o755);
                rustix::fs::mkdirat(shared.meta, self.names.meta(t, k, false), mode)?;
                rustix::fs::mkdirat(shared.meta, self.names.meta(t, k + 1, false), mode)?;
                rustix::fs::unlinkat(
                    shared.meta,
                    self.names.meta(t, k, false),
                    AtFlags::REMOVEDIR,
                )?;
                rustix::fs::renameat(
                    shared.meta,
                    self.names.meta(t, k + 1, false),
                    shared.meta,
                    self.other.meta(t, k + 1, true),
                )?;
                Ok(true)
            }
            Op::Createdir => {
                let n = shared.next_dir.fetch_add(1, Ordering::Relaxed);
                let name = self.names.prefixed(b"cdir", n);
                rustix::fs::mkdirat(shared.data, name, Mode::from(0o755))?;
                Ok(true)
            }
            _ => {
                let picked = shared
                    .files
                    .lock()
                    .expect("not poisoned")
                    .pick(self.rng.next());
                let Some((id, size)) = picked else {
                    return Ok(false);
                };
                let result = self.on_file(op, id, size);
                let grew = match (op, &result) {
                    (Op::Append | Op::AppendFsync, Ok(())) => self.group.write_size,
                    _ => 0,
                };
                shared.files.lock().expect("not poisoned").release(id, grew);
                result.map(|()| true)
            }
        }
    }

    /// An operation on an existing file (picked and marked in use by the caller).
    fn on_file(&mut self, op: Op, id: u32, size: u64) -> Result<(), Errno> {
        let fsync = matches!(op, Op::WriteFsync | Op::AppendFsync | Op::WriteallFsync);
        let file = match op {
            Op::Stat => {
                let dirs = self.shared.params.fileset.num_dirs;
                let path = self.names.file(id, dirs);
                rustix::fs::statat(self.shared.data, path, AtFlags::empty())?;
                return Ok(());
            }
            Op::OpenClose | Op::Read | Op::Readall => self.open(id, OFlags::RDONLY)?,
            Op::Append | Op::AppendFsync => self.open(id, OFlags::WRONLY | OFlags::APPEND)?,
            _ => self.open(id, OFlags::WRONLY)?,
        };
        if matches!(
            op,
            Op::Read | Op::Readall | Op::Write | Op::WriteFsync | Op::Writeall | Op::WriteallFsync
        ) {
            // FFSB learns the size by stat()ing the file's name after opening it
            // (ffsb_get_filesize); fsbench knows it, but makes the same call so that a
            // transaction is the same work.
            let path = self.names.file(id, self.shared.params.fileset.num_dirs);
            rustix::fs::statat(self.shared.data, path, AtFlags::empty())?;
        }
        match op {
            Op::Read => self.range(&file, size, false)?,
            Op::Write | Op::WriteFsync => self.range(&file, size, true)?,
            Op::Readall => {
                let block = self.group.read_blocksize;
                let mut off = 0;
                while off < size {
                    let n = block.min(size - off) as usize;
                    let got = read_full(&file, &mut self.buf.buf()[..n])?;
                    self.stats.read_bytes += got as u64;
                    // FFSB's readall counts whole blocks only.
                    self.blocks += u64::from(n as u64 == block);
                    if got < n {
                        break;
                    }
                    off += n as u64;
                }
            }
            Op::Append | Op::AppendFsync => {
                self.blocks += fill(
                    &file,
                    &mut self.buf,
                    self.group.write_size,
                    self.group.write_blocksize,
                )?;
                self.stats.written_bytes += self.group.write_size;
            }
            Op::Writeall | Op::WriteallFsync => {
                self.blocks += fill(&file, &mut self.buf, size, self.group.write_blocksize)?;
                self.stats.written_bytes += size;
            }
            _ => {}
        }
        if fsync {
            rustix::fs::fsync(&file)?;
        }
        Ok(())
    }

    /// The thread's loop: transactions until the time is up, its count is done, another
    /// thread failed or the user interrupted.
    fn run(mut self, clock: quanta::Clock) -> Result<(usize, ThreadStats), FsbenchError> {
        drop(self.shared.gate.read());
        let shared = self.shared;
        let deadline = shared.deadline.get().copied().flatten();
        let mut done = 0u64;
        let mut counted = 0u64;
        loop {
            // An interrupt also sets `stop` (to wake the sleepers): it is checked first.
            if shared.progress.cancel.load(Ordering::Relaxed) {
                return Err(FsbenchError::Interrupted);
            }
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
            if self.group.ops_per_thread.is_some_and(|n| done >= n)
                || deadline.is_some_and(|d| Instant::now() >= d)
            {
                break;
            }
            let op = self.group.choose(self.rng.next());
            self.blocks = 0;
            let moved = self.stats.read_bytes + self.stats.written_bytes;
            let start = clock.raw();
            let outcome = self.transact(op);
            let ns = clock.delta_as_nanos(start, clock.raw());
            done += 1;
            match outcome {
                Ok(true) => {
                    let i = index(op);
                    self.stats.tx[i] += 1;
                    // FFSB's "Transactions": block calls of data operations, one per call of
                    // the others.
                    self.stats.calls[i] += if op.moves_data() { self.blocks } else { 1 };
                    self.stats.bytes[i] += self.stats.read_bytes + self.stats.written_bytes - moved;
                    self.stats.latency[i]
                        .get_or_insert_with(new_histogram)
                        .saturating_record(ns.max(1));
                    counted += 1;
                    self.done.store(counted, Ordering::Relaxed);
                }
                Ok(false) => self.stats.no_file += 1,
                Err(e) => {
                    if let Some(fatal) = fatal_error(e, "run", done) {
                        shared.halt();
                        return Err(fatal);
                    }
                    *self.stats.errors.entry(e.raw_os_error()).or_default() += 1;
                }
            }
            if self.group.op_delay_ms > 0 {
                let delay = Duration::from_millis(u64::from(self.group.op_delay_ms));
                shared.pause(delay, deadline);
            }
        }
        Ok((self.group_index, self.stats))
    }
}

/// What a thread returns: its group's place and its counts.
type Outcome = Result<(usize, ThreadStats), FsbenchError>;

/// Runs every thread group's threads from one start until all are done; returns the totals
/// and the CPU time of the timed part.
pub(super) fn run_groups(
    params: &FfsbParams,
    data: &OwnedFd,
    meta: &OwnedFd,
    sizes: (u64, u64),
    files: &Mutex<FileTable>,
    rec: &mut PhaseRecorder,
) -> Result<(RunTotals, CpuTimes), FsbenchError> {
    use std::os::fd::AsFd;
    let shared = Shared {
        params,
        data: data.as_fd(),
        meta: meta.as_fd(),
        files,
        sizes,
        stop: AtomicBool::new(false),
        wake: Condvar::new(),
        wake_lock: Mutex::new(()),
        deadline: OnceLock::new(),
        gate: RwLock::new(()),
        progress: rec.progress(),
        next_dir: AtomicU64::new(0),
    };
    let root = absolute_root(data);
    let counts: Vec<Counter> = (0..params.total_threads())
        .map(|_| Counter::default())
        .collect();
    let crew = Crew::new(counts.iter().map(|c| &**c).collect(), rec.progress());
    let (results, threads_time, runtime, cpu) = std::thread::scope(|s| {
        let gate = shared.gate.write().expect("not poisoned");
        let (handles, mut spawn_error) = spawn_workers(s, &shared, &crew, &counts, &root);
        if let Err(e) = spawn_watcher(s, &shared) {
            spawn_error.get_or_insert(e);
            shared.halt();
        }
        let _ = shared.deadline.set(
            params
                .run_time()
                .map(|t| Instant::now() + Duration::from_secs(u64::from(t))),
        );
        let cpu = CpuTimes::now();
        let start = Instant::now();
        drop(gate);
        crew.wait(&handles);
        let mut results = join_all(handles, "ffsb thread panicked");
        let threads_time = start.elapsed();
        // FFSB's run time ends after the sync that follows the last thread (main.c).
        if let Err(e) = rustix::fs::syncfs(data) {
            results.push(Err(FsbenchError::Failed(format!(
                "sync after the run: {e}"
            ))));
        }
        let runtime = start.elapsed();
        shared.halt();
        results.extend(spawn_error.map(Err));
        (results, threads_time, runtime, CpuTimes::now().since(&cpu))
    });
    let mut totals = RunTotals::new(params.groups.len());
    totals.runtime = runtime;
    totals.threads_time = threads_time;
    add_up(&mut totals, results)?;
    for (op, h) in Op::ALL.iter().zip(&totals.total.latency) {
        if let Some(h) = h {
            rec.add_latency(op.name(), h);
        }
    }
    for (e, n) in &totals.total.errors {
        rec.add_errors(*e, *n);
    }
    let tx: u64 = totals.total.tx.iter().sum();
    rec.units_done(tx, totals.total.read_bytes + totals.total.written_bytes)?;
    Ok((totals, cpu))
}

/// The data directory's absolute path and a `/`. FFSB opens, stats and unlinks its files by
/// their whole path from `/`, and each component is a lookup the filesystem's dentry cache
/// serves: the same paths, the same work. Untimed, once: where the path cannot be known,
/// paths stay relative.
fn absolute_root(data: &OwnedFd) -> Vec<u8> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    std::fs::read_link(format!("/proc/self/fd/{}", data.as_raw_fd()))
        .ok()
        .filter(|p| p.is_absolute())
        .map(|p| [p.as_os_str().as_bytes(), b"/"].concat())
        .unwrap_or_default()
}

/// Starts every thread group's threads, each waiting at the gate. Where one cannot be
/// started, those started are told to stop, and the error comes back beside them.
fn spawn_workers<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    shared: &'env Shared<'env>,
    crew: &'env Crew<'env>,
    counts: &'env [Counter],
    root: &'env [u8],
) -> (
    Vec<std::thread::ScopedJoinHandle<'scope, Outcome>>,
    Option<FsbenchError>,
) {
    let clock = lap_clock();
    let mut handles = Vec::new();
    let mut thread = 0u32;
    for (group_index, group) in shared.params.groups.iter().enumerate() {
        let buffer = group.read_blocksize.max(group.write_blocksize).max(4096) as usize;
        for _ in 0..group.num_threads {
            let me = thread;
            thread += 1;
            let (clock, done) = (clock.clone(), &counts[me as usize]);
            let work = move || {
                // Made here, on its own thread, so that its buffers, names and counts,
                // written at every operation, are on no other thread's cache line.
                let worker = Worker {
                    shared,
                    group,
                    group_index,
                    blocks: 0,
                    thread: me,
                    rng: Rng::new(u64::from(me) + 1),
                    buf: Aligned::new(buffer),
                    names: Names::under(root),
                    other: Names::default(),
                    metaops: 0,
                    stats: ThreadStats::new(),
                    done,
                };
                let keep = [shared.data, shared.meta];
                crew.work(&keep, || worker.run(clock)).and_then(|r| r)
            };
            let spawned = std::thread::Builder::new()
                .name(format!("ffsb-{thread}"))
                .stack_size(256 << 10)
                .spawn_scoped(s, work);
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    shared.halt();
                    let e = format!("ffsb: cannot start thread {thread}: {e}");
                    return (handles, Some(FsbenchError::Failed(e)));
                }
            }
        }
    }
    (handles, None)
}

/// Where a group sleeps out `op_delay`, a thread that wakes the sleepers on an interrupt
/// (an interrupt only sets a flag; without a delay, threads look at it before every
/// transaction). It ends when `stop` is set, by a failure or after the timed part.
fn spawn_watcher<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    shared: &'env Shared<'env>,
) -> Result<(), FsbenchError> {
    if shared.params.groups.iter().all(|g| g.op_delay_ms == 0) {
        return Ok(());
    }
    let watch = move || {
        while !shared.stop.load(Ordering::Relaxed) {
            if shared.progress.cancel.load(Ordering::Relaxed) {
                shared.halt();
            }
            std::thread::sleep(INTERRUPT_POLL);
        }
    };
    let spawned = std::thread::Builder::new()
        .name("ffsb-watch".into())
        .stack_size(64 << 10)
        .spawn_scoped(s, watch);
    spawned.map(drop).map_err(|e| {
        FsbenchError::Failed(format!(
            "ffsb: cannot start the thread that watches for interrupts: {e}"
        ))
    })
}

/// Every thread's counts into `totals`, or the first error (a full disk before the others:
/// it explains their failures).
fn add_up(totals: &mut RunTotals, results: Vec<Outcome>) -> Result<(), FsbenchError> {
    let mut first_error = None;
    for r in results {
        match r {
            Ok((group, stats)) => totals.add(group, stats),
            Err(e @ FsbenchError::DiskFull { .. }) => first_error = Some(e),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

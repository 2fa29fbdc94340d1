//! FFSB's workers: the file table the threads share, one thread's state and operations, and
//! the totals they add up to. A thread allocates its buffer, name buffers and histograms once;
//! a transaction allocates nothing.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::{FfsbParams, FileSet, Op, ThreadGroup};
use crate::error::FsbenchError;
use crate::extents::Mapper;
use crate::measure::{
    CpuTimes, Figure, OpKind, PhaseRecorder, errno_name, fatal_error, lap_clock, new_histogram,
};
use crate::workload::{Aligned, pread_full, push_decimal, pwrite_all, write_all};

mod fileset;
pub use fileset::*;

/// What one thread did.
struct ThreadStats {
    tx: [u64; Op::ALL.len()],
    latency: Vec<Option<Histogram<u64>>>,
    read_bytes: u64,
    written_bytes: u64,
    errors: BTreeMap<i32, u64>,
    /// Transactions that found no file to work on (the set was empty or all in use).
    no_file: u64,
}

impl ThreadStats {
    fn new() -> ThreadStats {
        ThreadStats {
            tx: [0; Op::ALL.len()],
            latency: Op::ALL.iter().map(|_| None).collect(),
            read_bytes: 0,
            written_bytes: 0,
            errors: BTreeMap::new(),
            no_file: 0,
        }
    }
}

/// Everything the thread groups did, added up.
pub struct RunTotals {
    stats: ThreadStats,
    elapsed: Duration,
}

/// The position of `op` in [`Op::ALL`].
fn index(op: Op) -> usize {
    Op::ALL
        .iter()
        .position(|o| *o == op)
        .expect("every op is listed")
}

impl RunTotals {
    fn add(&mut self, other: ThreadStats) {
        let s = &mut self.stats;
        for (total, n) in s.tx.iter_mut().zip(other.tx) {
            *total += n;
        }
        for (total, h) in s.latency.iter_mut().zip(other.latency) {
            match (total.as_mut(), h) {
                (Some(t), Some(h)) => t.add(&h).expect("same bounds"),
                (None, Some(h)) => *total = Some(h),
                _ => {}
            }
        }
        s.read_bytes += other.read_bytes;
        s.written_bytes += other.written_bytes;
        for (e, n) in other.errors {
            *s.errors.entry(e).or_default() += n;
        }
        s.no_file += other.no_file;
    }

    /// FFSB's report as figures: throughput, and per operation transactions per second,
    /// "% Trans" and "% Op Weight"; CPU as user and system percentages of the elapsed time.
    pub fn figures(&self, params: &FfsbParams, cpu: &CpuTimes) -> Vec<Figure> {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let mib = |b: u64| b as f64 / f64::from(1 << 20) / secs;
        let ops = |f: fn(Op) -> bool| {
            params
                .groups
                .iter()
                .any(|g| g.weights.keys().any(|o| f(*o)))
        };
        let mut out = Vec::new();
        if ops(Op::reads) {
            out.push(Figure::new(
                "read throughput",
                "MiB/s",
                true,
                mib(self.stats.read_bytes),
            ));
        }
        if ops(Op::writes) {
            out.push(Figure::new(
                "write throughput",
                "MiB/s",
                true,
                mib(self.stats.written_bytes),
            ));
        }
        let total_tx: u64 = self.stats.tx.iter().sum();
        let threads = params.total_threads() as f64;
        for op in Op::ALL {
            // "% Op Weight" over all groups: each group's weight share, by its thread count.
            let weight: f64 = params
                .groups
                .iter()
                .map(|g| {
                    let w = g.weights.get(&op).copied().unwrap_or(0);
                    f64::from(w) / g.total_weight().max(1) as f64 * f64::from(g.num_threads)
                })
                .sum::<f64>()
                / threads;
            if weight == 0.0 {
                continue;
            }
            let tx = self.stats.tx[index(op)];
            let name = op.name();
            out.push(Figure::new(
                format!("{name} tx/s"),
                "tx/s",
                true,
                tx as f64 / secs,
            ));
            out.push(Figure::new(
                format!("{name} % trans"),
                "%",
                true,
                tx as f64 / total_tx.max(1) as f64 * 100.0,
            ));
            out.push(Figure::new(
                format!("{name} % op weight"),
                "%",
                true,
                weight * 100.0,
            ));
        }
        out.push(Figure::new(
            "cpu user",
            "%",
            false,
            cpu.user.as_secs_f64() / secs * 100.0,
        ));
        out.push(Figure::new(
            "cpu system",
            "%",
            false,
            cpu.system.as_secs_f64() / secs * 100.0,
        ));
        out
    }

    /// Bytes the transactions wrote.
    pub fn written(&self) -> u64 {
        self.stats.written_bytes
    }

    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .stats
            .errors
            .iter()
            .map(|(e, n)| {
                format!(
                    "{} ×{n} in transactions (counted, not retried)",
                    errno_name(*e)
                )
            })
            .collect();
        if self.stats.no_file > 0 {
            notes.push(format!(
                "{} transaction(s) found no file to work on (the set was empty or every file was in use)",
                self.stats.no_file
            ));
        }
        notes
    }
}

/// What the threads share.
struct Shared<'a> {
    params: &'a FfsbParams,
    data: BorrowedFd<'a>,
    meta: BorrowedFd<'a>,
    files: &'a Mutex<FileTable>,
    sizes: (u64, u64),
    /// Set by the first thread that fails, so the others stop.
    stop: AtomicBool,
    deadline: OnceLock<Option<Instant>>,
    /// Held for writing while threads are started; they wait on it to begin together.
    gate: RwLock<()>,
    progress: &'a crate::measure::Progress,
    next_dir: AtomicU64,
}

/// One thread's state: everything a transaction needs, allocated once.
struct Worker<'a> {
    shared: &'a Shared<'a>,
    group: &'a ThreadGroup,
    thread: u32,
    rng: Rng,
    buf: Aligned,
    names: Names,
    other: Names,
    metaops: u64,
    stats: ThreadStats,
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

    /// Reads (or writes) `size`-byte file's range as read/write do: `amount` bytes in
    /// `block`-byte calls, at random offsets or sequentially from a random one.
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
        let io = |w: &mut Self, off: u64, n: u64| -> Result<(), Errno> {
            let buf = &mut w.buf.buf()[..n as usize];
            if write {
                w.stats.written_bytes += pwrite_all(file, buf, off)? as u64;
            } else {
                w.stats.read_bytes += pread_full(file, buf, off)? as u64;
            }
            Ok(())
        };
        if random {
            for _ in 0..(amount / block).max(1) {
                let off = self.offset(size - block);
                io(self, off, block)?;
            }
        } else {
            let amount = amount.min(size);
            let mut off = self.offset(size - amount);
            let end = off + amount;
            while off < end {
                let n = block.min(end - off);
                io(self, off, n)?;
                off += n;
                if !write && g.read_skip {
                    off += g.read_skipsize;
                }
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
                fill(&file, &mut self.buf, size, self.group.write_blocksize)?;
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
        match op {
            Op::Read => self.range(&file, size, false)?,
            Op::Write | Op::WriteFsync => self.range(&file, size, true)?,
            Op::Readall => {
                let block = self.group.read_blocksize;
                let mut off = 0;
                while off < size {
                    let n = block.min(size - off) as usize;
                    let got = pread_full(&file, &mut self.buf.buf()[..n], off)?;
                    self.stats.read_bytes += got as u64;
                    if got < n {
                        break;
                    }
                    off += n as u64;
                }
            }
            Op::Append | Op::AppendFsync => {
                fill(
                    &file,
                    &mut self.buf,
                    self.group.write_size,
                    self.group.write_blocksize,
                )?;
                self.stats.written_bytes += self.group.write_size;
            }
            Op::Writeall | Op::WriteallFsync => {
                fill(&file, &mut self.buf, size, self.group.write_blocksize)?;
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
    fn run(mut self, clock: quanta::Clock) -> Result<ThreadStats, FsbenchError> {
        drop(self.shared.gate.read());
        let shared = self.shared;
        let deadline = shared.deadline.get().copied().flatten();
        let mut done = 0u64;
        loop {
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
            if shared.progress.cancel.load(Ordering::Relaxed) {
                return Err(FsbenchError::Interrupted);
            }
            if self.group.ops_per_thread.is_some_and(|n| done >= n)
                || deadline.is_some_and(|d| Instant::now() >= d)
            {
                break;
            }
            let op = self.group.choose(self.rng.next());
            let start = clock.raw();
            let outcome = self.transact(op);
            let ns = clock.delta_as_nanos(start, clock.raw());
            done += 1;
            match outcome {
                Ok(true) => {
                    let i = index(op);
                    self.stats.tx[i] += 1;
                    self.stats.latency[i]
                        .get_or_insert_with(new_histogram)
                        .saturating_record(ns.max(1));
                    shared.progress.done.fetch_add(1, Ordering::Relaxed);
                }
                Ok(false) => self.stats.no_file += 1,
                Err(e) => {
                    if let Some(fatal) = fatal_error(e, "run", done) {
                        shared.stop.store(true, Ordering::Relaxed);
                        return Err(fatal);
                    }
                    *self.stats.errors.entry(e.raw_os_error()).or_default() += 1;
                }
            }
            if self.group.op_delay_ms > 0 {
                std::thread::sleep(Duration::from_millis(u64::from(self.group.op_delay_ms)));
            }
        }
        shared.progress.thread_finished();
        Ok(self.stats)
    }
}

/// Runs every thread group's threads from one start until all are done; returns the totals
/// and the CPU time of the timed part.
pub fn run_groups(
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
        deadline: OnceLock::new(),
        gate: RwLock::new(()),
        progress: rec.progress(),
        next_dir: AtomicU64::new(0),
    };
    let clock = lap_clock();
    let (results, elapsed, cpu) = std::thread::scope(|s| {
        let gate = shared.gate.write().expect("not poisoned");
        let mut handles = Vec::new();
        let mut spawn_error = None;
        let mut thread = 0u32;
        for group in &params.groups {
            let buffer = group.read_blocksize.max(group.write_blocksize).max(4096) as usize;
            for _ in 0..group.num_threads {
                let worker = Worker {
                    shared: &shared,
                    group,
                    thread,
                    rng: Rng::new(u64::from(thread) + 1),
                    buf: Aligned::new(buffer),
                    names: Names::default(),
                    other: Names::default(),
                    metaops: 0,
                    stats: ThreadStats::new(),
                };
                thread += 1;
                let clock = clock.clone();
                match std::thread::Builder::new()
                    .name(format!("ffsb-{thread}"))
                    .stack_size(256 << 10)
                    .spawn_scoped(s, move || worker.run(clock))
                {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        spawn_error = Some(FsbenchError::Failed(format!(
                            "ffsb: cannot start thread {thread}: {e}"
                        )));
                        shared.stop.store(true, Ordering::Relaxed);
                        break;
                    }
                }
            }
        }
        let _ = shared.deadline.set(
            params
                .time
                .map(|t| Instant::now() + Duration::from_secs(u64::from(t))),
        );
        let cpu = CpuTimes::now();
        let start = Instant::now();
        drop(gate);
        let mut results: Vec<Result<ThreadStats, FsbenchError>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(FsbenchError::Failed("ffsb thread panicked".into())))
            })
            .collect();
        let elapsed = start.elapsed();
        if let Some(e) = spawn_error {
            results.push(Err(e));
        }
        (results, elapsed, CpuTimes::now().since(&cpu))
    });
    let mut totals = RunTotals {
        stats: ThreadStats::new(),
        elapsed,
    };
    let mut first_error = None;
    for r in results {
        match r {
            Ok(stats) => totals.add(stats),
            // A full disk explains the other threads' failures: report it first.
            Err(e @ FsbenchError::DiskFull { .. }) => first_error = Some(e),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    for (op, h) in Op::ALL.iter().zip(&totals.stats.latency) {
        if let Some(h) = h {
            rec.add_latency(op.name(), h);
        }
    }
    for (e, n) in &totals.stats.errors {
        rec.add_errors(*e, *n);
    }
    let tx: u64 = totals.stats.tx.iter().sum();
    rec.units_done(tx, totals.stats.read_bytes + totals.stats.written_bytes)?;
    Ok((totals, cpu))
}

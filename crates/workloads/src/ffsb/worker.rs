//! FFSB's workers: one thread's state and operations, the file table they share, and the
//! totals they add up to. A worker allocates its buffer, name buffers and histograms once; a
//! transaction allocates nothing. The workers are processes or threads (`workers=`): what
//! they share and change — the file table, the counter of directories made, the halt flag —
//! is in memory shared by processes, under a process-shared lock.

use std::ffi::CStr;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rustix::fs::{AtFlags, Mode, OFlags, SeekFrom};
use rustix::io::Errno;

use super::{FfsbParams, FileSet, Op, ThreadGroup};
use crate::parallel::Crew;
use crate::parallel::shm::{Region, SharedLock};
use fsbench_measure::calls::{Aligned, push_decimal, read_full, write_all};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::extents::Mapper;
use fsbench_measure::measure::{
    CpuTimes, OpKind, PhaseRecorder, fatal_error, lap_clock, new_histogram,
};

mod fileset;
pub(super) use fileset::*;

mod table;
pub(crate) use table::FileTable;
use table::SharedFiles;

mod totals;
pub(super) use totals::RunTotals;
use totals::{ThreadStats, index};

/// The longest a worker sleeping out `op_delay` waits before it looks at the interrupt flag
/// again (a worker thread's; worker processes are stopped by the phase's process).
const INTERRUPT_POLL: Duration = Duration::from_millis(10);

/// What the workers share.
struct Shared<'a> {
    params: &'a FfsbParams,
    data: BorrowedFd<'a>,
    meta: BorrowedFd<'a>,
    files: &'a SharedFiles<'a>,
    sizes: (u64, u64),
    /// Wakes the workers sleeping out `op_delay` when the crew is halted.
    wake: &'a SharedLock,
    next_dir: &'a AtomicU64,
}

impl Shared<'_> {
    /// Stops every worker (`stop` is the crew's halt flag), waking those asleep in
    /// `op_delay`.
    fn halt(&self, stop: &AtomicBool) {
        stop.store(true, Ordering::Relaxed);
        // Under the lock: a worker between its check of `stop` and its wait gets the wakeup.
        let _held = self.wake.lock();
        self.wake.notify_all();
    }

    /// Sleeps `delay` between transactions, but not past the phase's end, nor once the
    /// workers are told to stop or the user interrupts: a profile's `op_delay` never
    /// outlasts a signal or the time.
    fn pause(
        &self,
        delay: Duration,
        deadline: Option<Instant>,
        stop: &AtomicBool,
        cancel: &AtomicBool,
    ) {
        let now = Instant::now();
        let until = deadline.map_or(now + delay, |d| d.min(now + delay));
        let mut held = self.wake.lock();
        loop {
            let now = Instant::now();
            if now >= until || stop.load(Ordering::Relaxed) || cancel.load(Ordering::Relaxed) {
                return;
            }
            held.wait((until - now).min(INTERRUPT_POLL));
        }
    }
}

/// One worker's state: everything a transaction needs, allocated once.
struct Worker<'a> {
    shared: &'a Shared<'a>,
    /// The crew's halt flag: set by the first worker that fails.
    stop: &'a AtomicBool,
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
    /// Latencies per operation, in [`Op::ALL`]'s order.
    latency: Vec<Option<Histogram<u64>>>,
}

/// What one transaction came to.
enum Tx {
    Done,
    /// There was no file to work on.
    NoFile,
    /// A create found the file table full.
    TableFull,
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

    /// One transaction.
    fn transact(&mut self, op: Op) -> Result<Tx, Errno> {
        let shared = self.shared;
        match op {
            Op::Create | Op::CreateFsync => {
                let Some(id) = shared.files.reserve() else {
                    return Ok(Tx::TableFull);
                };
                let size = choose_size(&shared.params.fileset, shared.sizes, self.rng.next());
                let file = self.open(id, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL)?;
                self.blocks += fill(&file, &mut self.buf, size, self.group.write_blocksize)?;
                self.stats.written_bytes += size;
                if op == Op::CreateFsync {
                    rustix::fs::fsync(&file)?;
                }
                drop(file);
                shared.files.publish(id, size);
                Ok(Tx::Done)
            }
            Op::Delete => {
                let taken = shared.files.take_idle(self.rng.next());
                let Some(id) = taken else {
                    return Ok(Tx::NoFile);
                };
                let path = self.names.file(id, shared.params.fileset.num_dirs);
                rustix::fs::unlinkat(shared.data, path, AtFlags::empty())?;
                Ok(Tx::Done)
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
                Ok(Tx::Done)
            }
            Op::Createdir => {
                let n = shared.next_dir.fetch_add(1, Ordering::Relaxed);
                let name = self.names.prefixed(b"cdir", n);
                rustix::fs::mkdirat(shared.data, name, Mode::from(0o755))?;
                Ok(Tx::Done)
            }
            _ => {
                let picked = shared.files.pick(self.rng.next());
                let Some((id, size)) = picked else {
                    return Ok(Tx::NoFile);
                };
                let result = self.on_file(op, id, size);
                let grew = match (op, &result) {
                    (Op::Append | Op::AppendFsync, Ok(())) => self.group.write_size,
                    _ => 0,
                };
                shared.files.release(id, grew);
                result.map(|()| Tx::Done)
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

    /// The worker's loop: transactions until the time is up, its count is done, another
    /// worker failed or the user interrupted. Each transaction done is a unit of `rec`;
    /// the latencies and errors join it at the end.
    fn run(
        mut self,
        rec: &mut PhaseRecorder,
        deadline: Option<Instant>,
        clock: quanta::Clock,
    ) -> Result<(usize, ThreadStats), FsbenchError> {
        let shared = self.shared;
        let cancel = rec.progress().cancel.clone();
        let mut done = 0u64;
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Err(FsbenchError::Interrupted);
            }
            if self.stop.load(Ordering::Relaxed)
                || self.group.ops_per_thread.is_some_and(|n| done >= n)
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
                Ok(Tx::Done) => {
                    let i = index(op);
                    let bytes = self.stats.read_bytes + self.stats.written_bytes - moved;
                    self.stats.tx[i] += 1;
                    // FFSB's "Transactions": block calls of data operations, one per call of
                    // the others.
                    self.stats.calls[i] += if op.moves_data() { self.blocks } else { 1 };
                    self.stats.bytes[i] += bytes;
                    self.latency[i]
                        .get_or_insert_with(new_histogram)
                        .saturating_record(ns.max(1));
                    rec.unit_done(bytes)?;
                }
                Ok(Tx::NoFile) => self.stats.no_file += 1,
                Ok(Tx::TableFull) => {
                    shared.halt(self.stop);
                    return Err(FsbenchError::Failed(format!(
                        "ffsb: the run made more files than its file table holds ({}, the set \
                         and what the run creates): give the groups num_ops, or a shorter time",
                        shared.files.capacity()
                    )));
                }
                Err(e) => {
                    if let Some(fatal) = fatal_error(e, "run", done) {
                        shared.halt(self.stop);
                        return Err(fatal);
                    }
                    *self.stats.errors.entry(e.raw_os_error()).or_default() += 1;
                }
            }
            if self.group.op_delay_ms > 0 {
                let delay = Duration::from_millis(u64::from(self.group.op_delay_ms));
                shared.pause(delay, deadline, self.stop, &cancel);
            }
        }
        for (op, h) in Op::ALL.iter().zip(&self.latency) {
            if let Some(h) = h {
                rec.add_latency(op.name(), h);
            }
        }
        for (e, n) in &self.stats.errors {
            rec.add_errors(*e, *n);
        }
        Ok((self.group_index, self.stats))
    }
}

/// Runs every thread group's workers from one start until all are done; returns the totals
/// and the CPU time of the timed part. The file set goes into memory the workers share for
/// the run, and comes back into `files` after it.
pub(super) fn run_groups(
    params: &FfsbParams,
    (data, meta): (&OwnedFd, &OwnedFd),
    sizes: (u64, u64),
    files: &mut FileTable,
    rec: &mut PhaseRecorder,
) -> Result<(RunTotals, CpuTimes), FsbenchError> {
    use std::os::fd::AsFd;
    let capacity = SharedFiles::capacity_for(files, creates_at_most(params));
    let room = SharedFiles::room(capacity) + Region::lock_room() + Region::room::<AtomicU64>(1);
    let region = Region::new(room)?;
    let table = SharedFiles::new(&region, capacity, files);
    let shared = Shared {
        params,
        data: data.as_fd(),
        meta: meta.as_fd(),
        files: &table,
        sizes,
        wake: region.lock(),
        next_dir: &region.take::<AtomicU64>(1)[0],
    };
    let root = absolute_root(data);
    let clock = lap_clock();
    let keep = [shared.data, shared.meta];
    let crew = Crew::new(params.workers, &keep);
    let cpu = CpuTimes::now();
    let ran = crew.run(rec, workers(params), |w, (group_index, thread)| {
        let group = &params.groups[group_index];
        let buffer = group.read_blocksize.max(group.write_blocksize).max(4096) as usize;
        // Made where the worker runs, so that its buffers, names and counts, written at
        // every operation, are on no other worker's cache line.
        let worker = Worker {
            shared: &shared,
            stop: w.halt(),
            group,
            group_index,
            blocks: 0,
            thread,
            rng: Rng::new(u64::from(thread) + 1),
            buf: Aligned::new(buffer),
            names: Names::under(&root),
            other: Names::default(),
            metaops: 0,
            stats: ThreadStats::new(),
            latency: Op::ALL.iter().map(|_| None).collect(),
        };
        w.start()?;
        let deadline =
            (params.run_time()).map(|t| Instant::now() + Duration::from_secs(u64::from(t)));
        worker.run(w.rec(), deadline, clock.clone())
    })?;
    table.copy_out(files);
    // FFSB's run time ends after the sync that follows the last worker (main.c).
    let synced = rustix::fs::syncfs(data);
    let end = Instant::now();
    rec.ran(ran.from, end);
    let own = CpuTimes::now().since(&cpu);
    let cpu = CpuTimes {
        user: own.user + ran.cpu.user,
        system: own.system + ran.cpu.system,
    };
    let mut totals = RunTotals::new(params.groups.len());
    totals.runtime = end - ran.from;
    totals.threads_time = ran.to - ran.from;
    for (group, stats) in ran.values()? {
        totals.add(group, stats);
    }
    synced.map_err(|e| FsbenchError::Failed(format!("sync after the run: {e}")))?;
    Ok((totals, cpu))
}

/// One worker per thread of each group: its group's place and its number among all.
fn workers(params: &FfsbParams) -> Vec<(usize, u32)> {
    let per_group = params.groups.iter().enumerate();
    let all = per_group.flat_map(|(g, group)| (0..group.num_threads).map(move |_| g));
    all.enumerate().map(|(n, g)| (g, n as u32)).collect()
}

/// The most files the groups' transactions may create: every transaction of a group that
/// creates (`None`: a group that creates has no count, the run is time-based).
fn creates_at_most(params: &FfsbParams) -> Option<u64> {
    let creating =
        (params.groups.iter()).filter(|g| g.weights.iter().any(|(op, w)| op.creates() && *w > 0));
    creating
        .map(|g| (g.ops_per_thread).map(|n| n.saturating_mul(u64::from(g.num_threads))))
        .try_fold(0u64, |sum, n| n.map(|n| sum.saturating_add(n)))
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

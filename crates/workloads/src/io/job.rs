//! One job's I/O: its files opened in its own descriptor table, its I/Os issued by the
//! engine, each one's latencies recorded (no allocation per I/O), until the pass, the
//! runtime or `number_ios` ends it.

use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::layout::file_name;
use super::mmap::Mapping;
use super::params::{ErrorKind, IoParams};
use super::pattern::{Next, Pattern};
use super::verify::{self, Verifier};
use fsbench_measure::calls::Aligned;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::fio::{Completion, JobStats};
use fsbench_measure::measure::{OpKind, PhaseRecorder};

mod calls;
mod depth;
mod errors;
mod only;
mod open;
mod out;
mod queueing;
mod written;
use crate::io::files::Files;
pub(crate) use errors::io_error;
pub(crate) use only::verify_only;
pub(crate) use open::Step;
pub(crate) use out::JobOut;
pub(crate) use queueing::{InFlight, Issuing, Queue, wait_for_completions};

/// An asynchronous engine's issue-and-complete loop over a job.
pub(crate) type IssueLoop = fn(&mut Job) -> Result<(), FsbenchError>;

/// How long a job runs and whether it is measured (the ramp is not).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    pub measured: bool,
    /// Passes end it unless it is time-based: then only the deadline does.
    pub time_based: bool,
    pub limit: Option<Duration>,
}

impl Span {
    /// The timed part of `params`'s job (`measured`), or its untimed ramp (`ramp_time`).
    pub(crate) fn of(params: &IoParams, measured: bool) -> Span {
        if !measured {
            return Span {
                measured,
                time_based: true,
                limit: Some(Duration::from_millis(params.ramp_ms)),
            };
        }
        Span {
            measured,
            time_based: params.time_based,
            limit: (params.runtime_ms > 0).then(|| Duration::from_millis(params.runtime_ms)),
        }
    }
}

/// One job on its thread.
pub(crate) struct Job<'a> {
    pub params: &'a IoParams,
    /// The run's directory, and the job's files' names in it.
    pub dir: BorrowedFd<'a>,
    pub names: Vec<String>,
    pub files: Files,
    pub pattern: &'a mut Pattern,
    pub bufs: Vec<Aligned>,
    pub rec: PhaseRecorder,
    pub out: JobOut,
    pub halt: &'a AtomicBool,
    pub span: Span,
    pub start: Instant,
    /// What the engine's teardown took after its last I/O (libaio's io_destroy waits for an
    /// RCU grace period, tens of ms): outside the job's time, as fio's engine cleanup is.
    pub teardown: Duration,
    /// Writes since the last fsync, and whether a file was written (for end_fsync).
    writes: u32,
    written: Vec<bool>,
    /// Where each file's offset is (`sync` and `vsync` seek only when the next I/O is
    /// elsewhere, as fio's engines do); 0 once opened, `u64::MAX` when unknown.
    positions: Vec<u64>,
    /// The file whose `fsync=N` is due before the next I/O (none after the last: fio asks
    /// for the sync when it picks the next I/O, so the end has `end_fsync` alone).
    sync_due: Option<usize>,
    /// Open loop: the interval between scheduled issues, and the next one's number.
    interval_ns: Option<f64>,
    issued: u64,
    /// Open loop under `rate_process=poisson`: the I/Os' due times.
    arrivals: Option<super::think::Arrivals>,
    /// fio's `thinktime`, where the job thinks.
    thinker: Option<super::think::Thinker>,
    /// Where a crash-recorded run notes what each sync covered.
    pub oracle: Option<crate::oracle::Oracle>,
    /// fio's `flow`: the job's place in the flow it shares with jobs beside it.
    pub flow: Option<super::flow::Gate<'a>>,
    /// A cpuio job's `exit_on_io_done`: the count of jobs doing I/O beside it not ended yet.
    pub io_jobs_left: Option<&'a AtomicU64>,
    /// fio's steady state check (`ss`), in the timed part.
    pub steady: Option<super::steady::Steady<'a>>,
    /// fio's `verify`: the blocks written, stamped and checked at the end; a job that only
    /// reads, or reads back as `verify_only`, checks each block it reads (`checks_reads`).
    verifier: Option<Verifier>,
    checks_reads: bool,
    /// What the written blocks hold (fio's buffer options).
    filler: super::contents::Filler,
    /// The `mmap` and `libpmem` engines' mappings, one per file (none with the others).
    maps: Vec<Mapping>,
    /// The `pmemblk` engine's pools, one per file (it opens no file itself).
    pools: Vec<std::sync::Arc<super::pmem::Pool>>,
    /// The `e4defrag` engine's donor file.
    donor: Option<super::e4defrag::Donor>,
    /// fio's `verify_backlog`: a check of the latest writes is due before the next I/O.
    backlog_due: bool,
    /// fio's `latency_target`: the search for the depth whose I/Os meet it.
    search: Option<super::latency::DepthSearch>,
    /// An open during the job that failed (the job ends, then fails with it).
    open_failed: Option<FsbenchError>,
}

impl<'a> Job<'a> {
    /// Opens the job's files (in the calling worker's descriptor table) and sets up what it
    /// needs to run: buffers, fio's statistics, its rate and its verifier.
    pub(crate) fn open(
        params: &'a IoParams,
        dir: BorrowedFd<'a>,
        (job, copy): (usize, u32),
        pattern: &'a mut Pattern,
        rec: PhaseRecorder,
        halt: &'a AtomicBool,
        span: Span,
    ) -> Result<Job<'a>, FsbenchError> {
        let names: Vec<String> = (0..params.nrfiles as usize)
            .map(|f| file_name(params, job, copy, f))
            .collect();
        let files = open::at_start(params, dir, &names)?;
        if params.pre_read {
            super::layout::pre_read(&files)
                .map_err(|e| FsbenchError::Failed(format!("io: pre_read: {e}")))?;
        }
        let maps = Mapping::of_files(params, copy, &files, &names)?;
        let pools = super::pmem::Pool::of_job(params, dir, &names)?;
        let donor = super::e4defrag::Donor::open(params, dir)?;
        let mut bufs = verify::write_buffers(params, job, copy);
        let mut filler = super::contents::Filler::new(params, (job, copy));
        filler.initial(params, &mut bufs);
        // fio numbers threads over the whole job file; its logs carry the number.
        let no_logs = fsbench_model::fio::LogOptions::default();
        let (logs, thread) =
            (params.fio.as_ref()).map_or((&no_logs, 0), |f| (&f.logs, f.first_thread + copy));
        let expected = params.size / params.max_bs().max(1) * u64::from(params.loops);
        let stats = JobStats::new(logs, thread, expected);
        let interval_ns = super::think::interval_ns(params, pattern.mean_bs());
        let files = Files::of(params, files);
        Ok(Job {
            params,
            dir,
            names,
            written: vec![false; params.nrfiles as usize],
            positions: vec![0; params.nrfiles as usize],
            files,
            pattern,
            bufs,
            rec,
            out: JobOut::new(stats),
            halt,
            span,
            start: Instant::now(),
            teardown: Duration::ZERO,
            writes: 0,
            sync_due: None,
            interval_ns,
            issued: 0,
            arrivals: super::think::Arrivals::of(
                params,
                params.randseed ^ ((job as u64) << 32 | u64::from(copy)) ^ 0x706f_6973,
            ),
            thinker: super::think::Thinker::of(params),
            oracle: None,
            flow: None,
            io_jobs_left: None,
            steady: None,
            filler,
            verifier: Verifier::of(params, copy),
            checks_reads: params.verify.is_some()
                && (params.rw.read_percent(params.rwmixread) == 100 || params.verify_only),
            maps,
            pools,
            donor,
            backlog_due: false,
            search: depth::search_of(params, span),
            open_failed: None,
        })
    }

    /// Runs the job from `start` (every job's common start) to its end, its I/O issued by
    /// `engine` (io_uring's loop; `None`: the synchronous calls).
    pub(crate) fn run(
        mut self,
        start: Instant,
        engine: Option<IssueLoop>,
    ) -> Result<(PhaseRecorder, JobOut), FsbenchError> {
        self.start = start;
        if self.span.measured && self.params.startdelay_ms.1 > 0 {
            self.start_late();
        }
        self.out.stats.start();
        let mut ended = false;
        let outcome = match engine {
            Some(issue) => issue(&mut self),
            None => self.run_sync(),
        }
        .and_then(|()| self.open_failed.take().map_or(Ok(()), Err))
        .and_then(|()| {
            ended = true;
            // Ctrl-C ends the ramp too, which counts no I/O that would notice it.
            if self.rec.progress().cancel.load(Ordering::Relaxed) {
                return Err(FsbenchError::Interrupted);
            }
            self.finish_files()?;
            // The job's time ends with its writes; the verify phase reads after it, its
            // time fio's reads' (and in the thread's CPU time, as fio's).
            self.out.elapsed = self.start.elapsed().saturating_sub(self.teardown);
            let verifying = Instant::now();
            let checked = self.verify_written(0);
            self.out.verify_time = verifying.elapsed();
            self.out.stats.stop();
            checked
        });
        self.out.steady = self.steady.as_ref().and_then(|s| s.record());
        self.out.latency_search = self.search.as_ref().map(|s| s.record());
        // fio's `exitall`: the first job to end stops the others running with it.
        if outcome.is_err() || (self.span.measured && self.params.exitall) {
            self.halt.store(true, Ordering::Relaxed);
        }
        if outcome.is_err() && self.out.verify_failed.is_some() {
            // Its figures to the mismatch go back with it, as fio prints the job.
            if !ended {
                self.out.elapsed = self.start.elapsed().saturating_sub(self.teardown);
                self.out.stats.stop();
            }
            return Ok((self.rec, self.out));
        }
        outcome?;
        self.check_ratemin()?;
        Ok((self.rec, self.out))
    }

    /// fio's `startdelay`: the job starts that long after the others (a range: a delay
    /// drawn from it), its time counted from then; Ctrl-C or another job's failure ends
    /// the wait.
    fn start_late(&mut self) {
        let (lo, hi) = self.params.startdelay_ms;
        let drawn = if hi > lo {
            lo + self.pattern.below(hi - lo + 1)
        } else {
            lo
        };
        let at = self.start + Duration::from_millis(drawn);
        while Instant::now() < at {
            if self.halt.load(Ordering::Relaxed)
                || self.rec.progress().cancel.load(Ordering::Relaxed)
            {
                break;
            }
            std::thread::sleep((at - Instant::now()).min(Duration::from_millis(10)));
        }
        self.start = Instant::now();
    }

    /// fio's `verify` in a job that only reads (the files a group before it wrote): the
    /// block read into buffer `slot` checked once its latency is recorded, as fio's
    /// `verify_io_u` checks it at completion (fio does whatever `do_verify` says); a wrong
    /// one fails the job, or is an error gone past under `continue_on_error=verify`.
    #[inline]
    pub(crate) fn verify_read(&mut self, slot: usize, io: Next) -> Result<(), FsbenchError> {
        let Some(v) = self.verifier.as_ref().filter(|_| self.checks_reads) else {
            return Ok(());
        };
        let block = &self.bufs[slot].buf()[..io.len as usize];
        let bad = v.check_read(block, io.offset, &self.names[io.file]);
        self.out.verified += u64::from(io.len) / self.params.interval();
        match bad {
            None => Ok(()),
            Some(_) if (self.params.errors).continues(ErrorKind::Verify, libc::EILSEQ) => {
                self.out.stats.errored(libc::EILSEQ, None);
                Ok(())
            }
            Some(message) => Err(self.failed_verify(format!("io: {message}"))),
        }
    }

    /// A mismatch that ends the job: noted in its figures (fio prints the job, `err=84`)
    /// and its error.
    pub(crate) fn failed_verify(&mut self, message: String) -> FsbenchError {
        self.out.verify_failed = Some(message.clone());
        FsbenchError::Failed(message)
    }

    /// fio's `ratemin`: a job that moved fewer bytes per second fails (over its whole time;
    /// fio checks each second).
    fn check_ratemin(&self) -> Result<(), FsbenchError> {
        let min = self.params.ratemin;
        let secs = self.out.elapsed.as_secs_f64();
        if min == 0 || !self.span.measured || secs <= 0.0 {
            return Ok(());
        }
        let rate = (self.out.bytes[0] + self.out.bytes[1]) as f64 / secs;
        if rate < min as f64 {
            return Err(FsbenchError::Failed(format!(
                "io: job `{}` moved {rate:.0} bytes/s, below its ratemin of {min}",
                self.params.job.as_deref().unwrap_or("io")
            )));
        }
        Ok(())
    }

    /// The next I/O, or `None` when the job is done: a pass ended (the next starts unless
    /// it was the last), the time is up, `number_ios` are done, its steady state is
    /// attained, or another job failed; while its `flow` holds it back, none yet.
    #[inline]
    pub(crate) fn next_io(&mut self, passes: &mut u32) -> Option<Next> {
        if self.ends() {
            return None;
        }
        loop {
            match self.next_step(passes) {
                Step::Io(next) => return Some(next),
                Step::Done => return None,
                // Nothing in flight holds a file open: the turn has moved on, pick again.
                Step::Busy => {}
            }
        }
    }

    /// Whether the job ends before its next I/O: another job failed, Ctrl-C, the latency
    /// search is over, `number_ios` are done, the time is up or its steady state is
    /// attained; while its `flow` holds it back, it waits here.
    #[inline]
    pub(crate) fn ends(&mut self) -> bool {
        loop {
            if self.halt.load(Ordering::Relaxed)
                || self.rec.progress().cancel.load(Ordering::Relaxed)
                || self.search_done()
            {
                return true;
            }
            if self.span.measured
                && self.params.number_ios > 0
                && self.issued >= self.params.number_ios
            {
                return true;
            }
            if let Some(limit) = self.span.limit
                && self.start.elapsed() >= limit
            {
                return true;
            }
            if let Some(steady) = &mut self.steady {
                let [ios, bytes] = [self.out.ios, self.out.bytes].map(|d| d[0] + d[1]);
                if steady.attained(self.start.elapsed(), ios, bytes) {
                    return true;
                }
            }
            // fio's `flow`: held back, the job looks again (after `flow_sleep`).
            if !self.flow.as_mut().is_some_and(|gate| gate.holds_back()) {
                return false;
            }
        }
    }

    /// When the next I/O is due: now without a rate; else on the open-loop schedule (evenly
    /// spaced, or Poisson's arrivals), which a late I/O does not move (its latency counts
    /// from here: no coordinated omission).
    #[inline]
    pub(crate) fn scheduled(&mut self) -> Option<Instant> {
        let interval = self.interval_ns?;
        let ns = match &self.arrivals {
            Some(arrivals) => arrivals.due_ns(),
            None => (self.issued as f64 * interval) as u64,
        };
        Some(self.start + Duration::from_nanos(ns))
    }

    /// Counts an I/O as issued (for the schedule).
    #[inline]
    pub(crate) fn count_issue(&mut self) {
        self.issued += 1;
        if let Some(arrivals) = &mut self.arrivals {
            arrivals.issued();
        }
    }

    /// Sleeps until `at`: the last stretch spins, since a sleep overshoots by the timer slack.
    pub(crate) fn wait_until(at: Instant) {
        loop {
            let now = Instant::now();
            if now >= at {
                return;
            }
            let left = at - now;
            if left > Duration::from_micros(200) {
                std::thread::sleep(left - Duration::from_micros(100));
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Records one completed I/O: its completion latency from `submitted`, its submission
    /// latency, its total latency (both, as fio's lat) and, on a schedule, its latency from
    /// `due` (its scheduled time).
    #[inline]
    pub(crate) fn complete(
        &mut self,
        io: Next,
        done: Instant,
        submitted: Instant,
        due: Instant,
        slat_ns: Option<u64>,
    ) -> Result<(), FsbenchError> {
        if !self.span.measured {
            return Ok(());
        }
        let d = usize::from(!io.read);
        let clat = done.saturating_duration_since(submitted).as_nanos() as u64;
        self.out.clat[d].saturating_record(clat.max(1));
        if let Some(s) = slat_ns {
            self.out.slat[d].saturating_record(s.max(1));
        }
        if self.interval_ns.is_some() {
            let lag = submitted.saturating_duration_since(due).as_nanos() as u64;
            self.out.lag.saturating_record(lag.max(1));
            let late = done.saturating_duration_since(due).as_nanos() as u64;
            self.out.from_schedule[d].saturating_record(late.max(1));
        }
        let at = done.saturating_duration_since(self.start).as_nanos() as u64;
        let op = if io.read { OpKind::Read } else { OpKind::Write };
        self.rec
            .record_ended_at(op, at, clat + slat_ns.unwrap_or(0));
        self.out.stats.completed(Completion {
            at_ns: at,
            read: io.read,
            len: io.len,
            offset: io.offset,
            clat_ns: clat,
            slat_ns,
            trim: false,
            prio: self.params.placement.prio_of(io.prio),
        });
        self.out.ios[d] += 1;
        self.out.bytes[d] += u64::from(io.len);
        self.search_step(io, clat + slat_ns.unwrap_or(0), done)?;
        self.rec.unit_done(u64::from(io.len))
    }

    /// Counts a completed write (and notes its blocks for `verify`); after every `fsync=N`th
    /// (or `fdatasync=N`th) the sync is due before the next I/O ([`Job::before_next_io`]).
    #[inline]
    fn note_write(&mut self, io: Next) {
        let file = io.file;
        if let Some(v) = &mut self.verifier {
            self.backlog_due |= v.written(file, io.offset, u64::from(io.len));
        }
        self.written[file] = true;
        let every = self.params.fsync.max(self.params.fdatasync);
        if every == 0 {
            return;
        }
        self.writes += 1;
        if self.writes >= every {
            self.writes = 0;
            self.sync_due = Some(file);
        }
    }

    /// The file to sync before the I/O in hand, if a sync is due (the engine syncs with
    /// nothing in flight, as fio quiesces first).
    #[inline]
    fn take_due_sync(&mut self) -> Option<usize> {
        self.sync_due.take()
    }

    /// What is due before the next I/O, with nothing in flight: the sync `fsync=N` asks
    /// for, the check `verify_backlog` asks for (timed with the job, as fio's; its reads are
    /// not in the job's figures).
    fn before_next_io(&mut self) -> Result<(), FsbenchError> {
        self.settle_depth();
        if let Some(file) = self.take_due_sync() {
            self.sync_writes(file)?;
        }
        if std::mem::take(&mut self.backlog_due) {
            self.verify_written(self.params.verify_backlog_batch)?;
        }
        Ok(())
    }

    /// The sync `fsync=N` or `fdatasync=N` asks for, timed as an operation of its own.
    fn sync_writes(&mut self, file: usize) -> Result<(), FsbenchError> {
        self.sync(file, self.params.fdatasync > 0, true)
    }

    /// Syncs `file`; `fio_counts` where fio's `sync` figures count it (fsync=N's syncs, not
    /// end_fsync's).
    fn sync(&mut self, file: usize, data_only: bool, fio_counts: bool) -> Result<(), FsbenchError> {
        if self.files.is_empty() && self.pools.is_empty() {
            return Ok(());
        }
        let before = Instant::now();
        let fd = self.files.get(file);
        // The mmap engine syncs its mapping, whatever the sync, as fio's; fio's pmemblk
        // engine completes a sync at once ("we're always sync'd").
        let result = match (self.maps.get(file), fd) {
            (Some(map), _) => map.sync(),
            (None, Some(fd)) if data_only => rustix::fs::fdatasync(fd),
            (None, Some(fd)) => rustix::fs::fsync(fd),
            (None, None) => Ok(()),
        };
        let done = Instant::now();
        if self.span.measured {
            let at = done.saturating_duration_since(self.start).as_nanos() as u64;
            let ns = done.saturating_duration_since(before).as_nanos() as u64;
            self.rec.record_ended_at(OpKind::Fsync, at, ns);
            if fio_counts {
                self.out.stats.synced(ns);
            }
        }
        if let (Ok(()), Some(oracle), Some(fd)) = (&result, &self.oracle, fd) {
            // The job writes on: what this sync covered binds a crash at this moment only.
            oracle.file_synced(fd, false);
        }
        result.map_err(|e| io_error(e, "fsync", &self.rec))
    }

    /// `end_fsync` and `fsync_on_close`: the written files synced, in the timed part.
    fn finish_files(&mut self) -> Result<(), FsbenchError> {
        if !self.span.measured || !(self.params.end_fsync || self.params.fsync_on_close) {
            return Ok(());
        }
        for file in 0..self.files.len().max(self.pools.len()) {
            if self.written[file] || self.params.fsync_on_close {
                self.sync(file, false, false)?;
            }
        }
        Ok(())
    }

    /// The synchronous engines: one I/O at a time, each with fio's calls for it.
    fn run_sync(&mut self) -> Result<(), FsbenchError> {
        let (mut passes, mut renewed) = (0, 0);
        while let Some(io) = self.next_io(&mut passes) {
            if self.params.unlink_each_loop && passes > renewed {
                renewed = passes;
                let (params, dir, names) = (self.params, self.dir, &self.names);
                self.files
                    .renew(|f| super::layout::renew(params, dir, &names[f]))?;
                self.positions.fill(0);
            }
            self.before_next_io()?;
            let scheduled = self.scheduled();
            if let Some(at) = scheduled {
                Self::wait_until(at);
            }
            self.count_issue();
            if self.params.rw.trims_then_writes() {
                self.trim_first(io)?;
            }
            self.stamp(0, io);
            let submitted = Instant::now();
            let result = self.transfer(io);
            let done = Instant::now();
            self.out.stats.submitted(1, 1);
            self.out.stats.reaped(1);
            if super::layout::full(self.params, &result, io) {
                break;
            }
            if self.checked(result, io)? {
                self.complete(io, done, submitted, scheduled.unwrap_or(submitted), None)?;
                if io.read {
                    self.verify_read(0, io)?;
                } else {
                    self.note_write(io);
                }
            }
            if let Some(thinker) = &mut self.thinker {
                thinker.after_io();
            }
        }
        Ok(())
    }
}

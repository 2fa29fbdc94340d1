//! The libaio engine: the kernel's native AIO (`io_setup`, `io_submit`, `io_getevents`),
//! not io_uring under another name: up to `iodepth` I/Os in flight, submitted in batches of
//! `iodepth_batch_submit`, reaped as fio reaps them (`iodepth_batch_complete_min` at least
//! and `iodepth_batch_complete_max` at most a call, down to `iodepth_low` once the queue was
//! full), so that fio's IO depths, submit and complete figures are fio's. The system calls are made directly (no libaio library to link).

use std::time::Instant;

use super::job::{InFlight, Issuing, Job, Queue, io_error, wait_for_completions};
use super::pattern::Next;
use fsbench_measure::error::FsbenchError;

/// The kernel's `struct iocb` (little-endian layout: the key before the flags).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Iocb {
    data: u64,
    key: u32,
    rw_flags: u32,
    opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

/// The kernel's `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;
/// `aio_reqprio` holds the I/O's own priority.
const IOCB_FLAG_IOPRIO: u32 = 1 << 1;

/// An AIO context, destroyed when dropped (which waits for what is in flight).
struct Context(libc::c_ulong);

impl Context {
    fn new(depth: u32) -> Result<Context, FsbenchError> {
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the new context's id into `ctx`.
        let r = unsafe { libc::syscall(libc::SYS_io_setup, depth, &mut ctx) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            return Err(FsbenchError::InvalidInput(format!(
                "io: ioengine=libaio: io_setup({depth}) failed: {e} (fs.aio-max-nr may be too low)"
            )));
        }
        Ok(Context(ctx))
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context is ours; io_destroy waits for its I/Os before it returns.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.0) };
    }
}

pub(crate) fn run(job: &mut Job<'_>) -> Result<(), FsbenchError> {
    let depth = job.params.depth();
    let ctx = Context::new(depth)?;
    let n = job.bufs.len();
    let mut state = State {
        iocbs: vec![Iocb::default(); n],
        pointers: Vec::with_capacity(n),
        events: vec![IoEvent::default(); n],
        slots: vec![None; n],
        free: (0..n).rev().collect(),
        queued: Vec::with_capacity(n),
        inflight: 0,
        cmdprio: super::cmdprio::Chooser::for_job(job),
    };
    let outcome = state.run(job, &ctx);
    // Dropping the context waits for what is still in flight, before the buffers go.
    let teardown = Instant::now();
    drop(ctx);
    job.teardown += teardown.elapsed();
    outcome
}

struct State {
    iocbs: Vec<Iocb>,
    /// The queued iocbs' addresses, as io_submit takes them.
    pointers: Vec<*mut Iocb>,
    events: Vec<IoEvent>,
    slots: Vec<Option<InFlight>>,
    free: Vec<usize>,
    queued: Vec<usize>,
    inflight: usize,
    /// fio's `cmdprio_*`: the priorities I/Os get of their own.
    cmdprio: Option<super::cmdprio::Chooser>,
}

impl State {
    /// The issue-and-reap cycle, one loop as io_uring's (fill the free slots, submit, sync
    /// with nothing in flight, reap).
    fn run(&mut self, job: &mut Job<'_>, ctx: &Context) -> Result<(), FsbenchError> {
        let batch = job.params.iodepth_batch_submit as usize;
        let mut issuing = Issuing::default();
        let mut finished = false;
        let mut quiesce = false;
        loop {
            let mut wait_for: Option<Instant> = None;
            while !quiesce && !finished && !self.free.is_empty() && job.has_room(self.in_use()) {
                match job.next_to_queue(&mut issuing) {
                    Queue::Io(io, due) => self.queue(job, io, due),
                    // Reap: I/Os in flight hold the files open.
                    Queue::Busy => break,
                    Queue::Quiesce => quiesce = true,
                    Queue::Later(at) => wait_for = Some(at),
                    Queue::Done => finished = true,
                }
                if self.queued.len() >= batch {
                    self.submit(ctx, job)?;
                }
                if quiesce || wait_for.is_some() {
                    break;
                }
            }
            if !self.queued.is_empty() {
                self.submit(ctx, job)?;
            }
            if self.inflight == 0 {
                if job.idle(&mut quiesce, finished, wait_for)? {
                    return Ok(());
                }
                continue;
            }
            self.reap_as_fio(job, ctx, wait_for)?;
        }
    }

    /// fio's `wait_for_completions` with `io_getevents`.
    fn reap_as_fio(
        &mut self,
        job: &mut Job<'_>,
        ctx: &Context,
        wait_for: Option<Instant>,
    ) -> Result<(), FsbenchError> {
        let full = self.free.is_empty() || !job.has_room(self.in_use());
        let in_flight = |s: &State| s.inflight;
        wait_for_completions(job, self, in_flight, full, |s, job, want, most| {
            // Open loop: no longer than the next I/O is due.
            let timeout = wait_for.map(|at| {
                let left = at.saturating_duration_since(Instant::now());
                libc::timespec {
                    tv_sec: left.as_secs() as libc::time_t,
                    tv_nsec: libc::c_long::from(left.subsec_nanos() as i32),
                }
            });
            let got = s.reap(ctx, want, most, timeout.as_ref())?;
            s.complete(job, got, Instant::now())?;
            Ok(got)
        })
    }

    /// The I/Os queued or in flight.
    fn in_use(&self) -> usize {
        self.inflight + self.queued.len()
    }

    /// Prepares the iocb of `io` in a free slot and queues it for the next submission.
    fn queue(&mut self, job: &mut Job<'_>, mut io: Next, due: Option<Instant>) {
        let slot = self.free.pop().expect("a free slot");
        job.stamp(slot, io);
        let buf = job.bufs[slot].buf();
        // As fio's libaio: an I/O's own priority only where cmdprio gives it one.
        let own = self.cmdprio.as_mut().and_then(|c| c.pick(&io));
        io.prio = own.unwrap_or(0);
        self.iocbs[slot] = Iocb {
            data: slot as u64,
            opcode: if io.read {
                IOCB_CMD_PREAD
            } else {
                IOCB_CMD_PWRITE
            },
            fildes: job.files.raw(io.file) as u32,
            buf: buf.as_mut_ptr() as u64,
            nbytes: u64::from(io.len),
            offset: io.offset as i64,
            reqprio: own.map_or(0, |p| p as i16),
            flags: if own.is_some() { IOCB_FLAG_IOPRIO } else { 0 },
            ..Iocb::default()
        };
        self.slots[slot] = Some(InFlight::prepared(io, due));
        self.queued.push(slot);
    }

    /// Takes the `got` events reaped at `done`: each I/O's slot freed, its result checked and
    /// its latencies recorded.
    fn complete(
        &mut self,
        job: &mut Job<'_>,
        got: usize,
        done: Instant,
    ) -> Result<(), FsbenchError> {
        for e in 0..got {
            let event = self.events[e];
            let slot = event.data as usize;
            let s = self.slots[slot]
                .take()
                .expect("a completion of an I/O in flight");
            self.free.push(slot);
            self.inflight -= 1;
            job.completed_async(
                (s.io, slot),
                event.res,
                (s.prepped, s.submitted, s.due),
                done,
            )?;
        }
        Ok(())
    }

    /// Submits the queued iocbs (all of them, however many io_submit takes at a time).
    fn submit(&mut self, ctx: &Context, job: &mut Job<'_>) -> Result<(), FsbenchError> {
        self.pointers.clear();
        for &slot in &self.queued {
            self.pointers.push(&mut self.iocbs[slot] as *mut Iocb);
        }
        let mut at = 0;
        while at < self.pointers.len() {
            let left = self.pointers.len() - at;
            // SAFETY: the pointers are to this state's iocbs, whose buffers live in `job`
            // until every I/O completed (the context is dropped first).
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    ctx.0,
                    left,
                    self.pointers[at..].as_mut_ptr(),
                )
            };
            if r < 0 {
                let errno = std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
                if errno == libc::EINTR || errno == libc::EAGAIN {
                    continue;
                }
                let errno = rustix::io::Errno::from_raw_os_error(errno);
                return Err(io_error(errno, "io_submit", &job.rec));
            }
            at += r as usize;
        }
        let now = Instant::now();
        self.inflight += self.queued.len();
        (job.out.stats).submitted(self.queued.len() as u32, self.inflight as u32);
        for slot in self.queued.drain(..) {
            if let Some(s) = self.slots[slot].as_mut() {
                s.submitted = now;
            }
        }
        Ok(())
    }

    /// Waits for at least `want` completions (or the timeout); how many are in `events`.
    fn reap(
        &mut self,
        ctx: &Context,
        want: usize,
        max: usize,
        timeout: Option<&libc::timespec>,
    ) -> Result<usize, FsbenchError> {
        let max = max.max(want);
        let timeout = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
        loop {
            // SAFETY: `events` has room for `max` (at most the slots) events.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    ctx.0,
                    want,
                    max,
                    self.events.as_mut_ptr(),
                    timeout,
                )
            };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(FsbenchError::Failed(format!("io: io_getevents: {e}")));
            }
        }
    }
}

//! fio's `posixaio` engine: POSIX AIO through glibc (`aio_read`, `aio_write`, `aio_error`,
//! `aio_return`, `aio_suspend`), up to `iodepth` I/Os in flight, each queued on its own (the
//! engine has no batch submit) and reaped as libaio's are (`iodepth_batch_complete_min`,
//! `_max`, `iodepth_low`): as fio's engine, the I/Os in flight are polled with `aio_error`, and when too few are
//! done the job sleeps in `aio_suspend` on up to 8 of those still in progress. glibc runs
//! the transfers on threads of its own (`pread64`/`pwrite64` under strace). A sync (or a
//! verify backlog check) waits for nothing in flight, as the other queueing engines' do.

use std::time::Instant;

use super::job::{InFlight, Issuing, Job, Queue, io_error};
use super::pattern::Next;
use fsbench_measure::error::FsbenchError;

/// fio's `SUSPEND_ENTRIES`: the I/Os in progress one `aio_suspend` waits on.
const SUSPEND_ENTRIES: usize = 8;

pub(crate) fn run(job: &mut Job<'_>) -> Result<(), FsbenchError> {
    let n = job.bufs.len();
    let mut state = State {
        // SAFETY: an all-zero aiocb is glibc's idle control block.
        cbs: (0..n).map(|_| unsafe { std::mem::zeroed() }).collect(),
        slots: vec![None; n],
        seen: vec![false; n],
        free: (0..n).rev().collect(),
        done: Vec::with_capacity(n),
        inflight: 0,
    };
    state.run(job)
}

struct State {
    /// One control block per slot, never moved while its I/O is in flight.
    cbs: Vec<libc::aiocb>,
    slots: Vec<Option<InFlight>>,
    /// Per slot, its I/O found done by a reap (fio's `io_u->seen`), its result taken.
    seen: Vec<bool>,
    free: Vec<usize>,
    /// The slots found done by the last reap, with their results (bytes or -errno).
    done: Vec<(usize, i64)>,
    inflight: usize,
}

impl Drop for State {
    /// Waits for every I/O still in flight (a job that failed), before its buffers and
    /// control blocks go.
    fn drop(&mut self) {
        for slot in 0..self.slots.len() {
            if self.slots[slot].is_none() || self.seen[slot] {
                continue;
            }
            let cb = &raw mut self.cbs[slot];
            // SAFETY: the control block of an I/O queued by this state.
            while unsafe { libc::aio_error(cb) } == libc::EINPROGRESS {
                let list = [cb.cast_const()];
                // SAFETY: a list of one queued control block, no timeout.
                unsafe { libc::aio_suspend(list.as_ptr(), 1, std::ptr::null()) };
            }
            // SAFETY: the I/O is done; its result is collected once.
            unsafe { libc::aio_return(cb) };
        }
    }
}

impl State {
    /// The issue-and-reap cycle, as libaio's (fill the free slots, sync with nothing in
    /// flight, reap).
    fn run(&mut self, job: &mut Job<'_>) -> Result<(), FsbenchError> {
        let mut issuing = Issuing::default();
        let mut finished = false;
        let mut quiesce = false;
        loop {
            let mut wait_for: Option<Instant> = None;
            while !quiesce
                && wait_for.is_none()
                && !finished
                && !self.free.is_empty()
                && job.has_room(self.inflight)
            {
                match job.next_to_queue(&mut issuing) {
                    Queue::Io(io, due) => self.queue(job, io, due)?,
                    Queue::Quiesce => quiesce = true,
                    Queue::Later(at) => wait_for = Some(at),
                    Queue::Done => finished = true,
                    // Not reached: files open and close with io_uring and libaio only.
                    Queue::Busy => break,
                }
            }
            if self.inflight == 0 {
                if job.idle(&mut quiesce, finished, wait_for)? {
                    return Ok(());
                }
                continue;
            }
            // fio's `wait_for_completions`, as libaio's.
            let (min, _, low) = job.params.reaping();
            let full = self.free.is_empty() || !job.has_room(self.inflight);
            loop {
                self.reap(min.min(self.inflight).max(1), wait_for);
                let done = Instant::now();
                job.out.stats.reaped(self.done.len() as u32);
                for i in 0..self.done.len() {
                    let (slot, res) = self.done[i];
                    let s = self.slots[slot].take().expect("a completion in flight");
                    self.free.push(slot);
                    job.completed_async((s.io, slot), res, (s.prepped, s.submitted, s.due), done)?;
                }
                if !full || self.inflight <= low || self.done.is_empty() {
                    break;
                }
            }
        }
    }

    /// Queues `io` in a free slot: its control block filled, `aio_read` or `aio_write`.
    fn queue(
        &mut self,
        job: &mut Job<'_>,
        io: Next,
        due: Option<Instant>,
    ) -> Result<(), FsbenchError> {
        let slot = self.free.pop().expect("a free slot");
        job.stamp(slot, io);
        let buf = job.bufs[slot].buf();
        let cb = &mut self.cbs[slot];
        cb.aio_fildes = job.files.raw(io.file);
        cb.aio_buf = buf.as_mut_ptr().cast();
        cb.aio_nbytes = io.len as usize;
        cb.aio_offset = io.offset as libc::off_t;
        cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
        let mut in_flight = InFlight::prepared(io, due);
        // SAFETY: the control block and its buffer are slot `slot`'s, which no other I/O
        // uses until this one is reaped, and live until it is (the state's drop waits).
        let r = unsafe {
            if io.read {
                libc::aio_read(cb)
            } else {
                libc::aio_write(cb)
            }
        };
        let submitted = Instant::now();
        if r != 0 {
            self.free.push(slot);
            let e = std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            let what = if io.read { "aio_read" } else { "aio_write" };
            return Err(io_error(
                rustix::io::Errno::from_raw_os_error(e),
                what,
                &job.rec,
            ));
        }
        in_flight.submitted = submitted;
        self.slots[slot] = Some(in_flight);
        self.seen[slot] = false;
        self.inflight += 1;
        // The engine has no commit: fio counts each I/O a submit and a completion of its own
        // as it is queued (besides each reap's).
        (job.out.stats).submitted(1, self.inflight as u32);
        job.out.stats.reaped(1);
        Ok(())
    }

    /// Collects into `done` every I/O that completed, at least `want` of them (fio's engine
    /// takes all it finds, whatever its maximum), sleeping in `aio_suspend` (no later than
    /// `until`, an open loop's next I/O) while too few are.
    fn reap(&mut self, want: usize, until: Option<Instant>) {
        self.done.clear();
        loop {
            let mut waiting = [std::ptr::null::<libc::aiocb>(); SUSPEND_ENTRIES];
            let mut waits = 0;
            for slot in 0..self.slots.len() {
                if self.slots[slot].is_none() || self.seen[slot] {
                    continue;
                }
                let cb = &raw mut self.cbs[slot];
                // SAFETY: the control block of an I/O in flight.
                let err = unsafe { libc::aio_error(cb) };
                if err == libc::EINPROGRESS {
                    if waits < SUSPEND_ENTRIES {
                        waiting[waits] = cb.cast_const();
                        waits += 1;
                    }
                    continue;
                }
                let res = match err {
                    // SAFETY: done; its result is collected once.
                    0 => (unsafe { libc::aio_return(cb) }) as i64,
                    e => -i64::from(e),
                };
                self.seen[slot] = true;
                self.done.push((slot, res));
                self.inflight -= 1;
            }
            if self.done.len() >= want || waits == 0 {
                return;
            }
            let timeout = until.map(|at| {
                let left = at.saturating_duration_since(Instant::now());
                libc::timespec {
                    tv_sec: left.as_secs() as libc::time_t,
                    tv_nsec: libc::c_long::from(left.subsec_nanos() as i32),
                }
            });
            if let Some(t) = &timeout
                && t.tv_sec == 0
                && t.tv_nsec == 0
            {
                return;
            }
            let t = timeout.as_ref().map_or(std::ptr::null(), |t| t as *const _);
            // SAFETY: control blocks of I/Os in flight; an interrupted or timed-out wait
            // polls again.
            unsafe { libc::aio_suspend(waiting.as_ptr(), waits as i32, t) };
        }
    }
}

//! The io_uring engine: up to `iodepth` I/Os in flight, submitted in batches of
//! `iodepth_batch_submit`, reaped `iodepth_batch_complete_min` at least at a time, with
//! registered files and buffers, `sqpoll` and polled completions (`hipri`) as asked.

use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

use io_uring::{IoUring, opcode, squeue, types};

use super::job::{self, InFlight, Job, Queue, io_error, wait_for_completions};
use super::params::IoParams;
use super::pattern::Next;
use fsbench_measure::error::FsbenchError;

/// A ring as the job's options ask for it; the error names why io_uring is unavailable.
///
/// As fio 3.33 sets its ring up: completions run as task work only when the job reaps
/// (`DEFER_TASKRUN`, with `SINGLE_ISSUER`: the job's thread alone submits) and never
/// interrupt it (`COOP_TASKRUN`); a kernel without a flag refuses it (EINVAL), and the ring is
/// asked for again without it (the deferred pair first), as fio does. Without them, every
/// completion that a kernel worker posted interrupted the job: on tmpfs at iodepth 32 fsbench
/// reached half of fio's IOPS.
pub(crate) fn ring(params: &IoParams) -> Result<IoUring, FsbenchError> {
    let build = |deferred: bool, coop: bool| {
        let mut builder = IoUring::builder();
        if params.sqpoll {
            builder.setup_sqpoll(1000);
        }
        if params.hipri {
            builder.setup_iopoll();
        }
        if coop {
            builder.setup_coop_taskrun();
        }
        if deferred {
            builder.setup_single_issuer().setup_defer_taskrun();
        }
        builder.build(params.iodepth.next_power_of_two())
    };
    let refused = |r: &std::io::Result<IoUring>| matches!(r, Err(e) if e.raw_os_error() == Some(libc::EINVAL));
    let mut ring = build(true, true);
    if refused(&ring) {
        ring = build(false, true);
    }
    if refused(&ring) {
        ring = build(false, false);
    }
    ring.map_err(|e| unavailable(&e))
}

/// Why io_uring cannot be used, naming the cause and the sysctl.
fn unavailable(e: &std::io::Error) -> FsbenchError {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "absent".into());
    let cause = match e.raw_os_error() {
        Some(libc::ENOSYS) => {
            "the kernel has no io_uring (ENOSYS: built without CONFIG_IO_URING, or too old)".into()
        }
        Some(libc::EPERM) => format!(
            "io_uring is refused (EPERM): sysctl kernel.io_uring_disabled is {disabled} (0 allows it; 1 allows only root and kernel.io_uring_group) or a seccomp filter forbids it"
        ),
        _ => format!("io_uring_setup failed ({e}); sysctl kernel.io_uring_disabled is {disabled}"),
    };
    FsbenchError::InvalidInput(format!("io: ioengine=io_uring: {cause}"))
}

/// Refuses io_uring before any I/O when the kernel, its sysctl or a seccomp filter forbids it.
pub(crate) fn check_available(params: &IoParams) -> Result<(), FsbenchError> {
    if let Ok(v) = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        && v.trim() == "2"
    {
        return Err(FsbenchError::InvalidInput(
            "io: ioengine=io_uring: io_uring is disabled (sysctl kernel.io_uring_disabled = 2): set it to 0, or use ioengine=psync or pvsync2".into(),
        ));
    }
    ring(params).map(drop)
}

pub(crate) fn run(job: &mut Job<'_>) -> Result<(), FsbenchError> {
    let params = job.params;
    let mut ring = ring(params)?;
    // Files that open and close during the job are not registered (fio registers none
    // unless asked).
    let fixed = params.registerfiles && !job.files.open_as_picked();
    let fds: Vec<RawFd> = job.files.iter().map(|(_, f)| f.as_raw_fd()).collect();
    let setup =
        |e: std::io::Error, what: &str| FsbenchError::Failed(format!("io: io_uring {what}: {e}"));
    if fixed {
        ring.submitter()
            .register_files(&fds)
            .map_err(|e| setup(e, "register_files"))?;
    }
    let iovecs: Vec<libc::iovec> = job
        .bufs
        .iter_mut()
        .map(|b| {
            let buf = b.buf();
            libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            }
        })
        .collect();
    if params.fixedbufs {
        // SAFETY: the buffers live in `job` and are neither moved nor freed before the ring
        // is dropped at the end of this function, after every I/O completed.
        unsafe { ring.submitter().register_buffers(&iovecs) }
            .map_err(|e| setup(e, "register_buffers"))?;
    }
    let mut state = State {
        slots: vec![None; iovecs.len()],
        free: (0..iovecs.len() as u16).rev().collect(),
        queued: Vec::with_capacity(iovecs.len()),
        inflight: 0,
        cmdprio: super::cmdprio::Chooser::for_job(job),
    };
    let outcome = state.run(job, &mut ring, fixed, &iovecs);
    if outcome.is_err() {
        // The kernel may still write the buffers: wait for what is in flight before they go.
        while state.inflight > 0 && ring.submit_and_wait(1).is_ok() {
            state.inflight -= ring.completion().count();
        }
    }
    // Outside the job's time, as libaio's io_destroy (fio's engine cleanup comes after).
    let teardown = Instant::now();
    drop(ring);
    job.teardown += teardown.elapsed();
    outcome
}

/// Waits for `want` completions or, in an open loop (`due`), for one but no longer than the
/// next I/O is due.
fn wait(ring: &mut IoUring, due: Option<Instant>, want: usize) -> Result<(), FsbenchError> {
    let waited = match due {
        Some(at) => {
            let left = at.saturating_duration_since(Instant::now());
            let ts = types::Timespec::from(left);
            let args = types::SubmitArgs::new().timespec(&ts);
            match ring.submitter().submit_with_args(1, &args) {
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => Ok(0),
                waited => waited,
            }
        }
        None => ring.submit_and_wait(want),
    };
    match waited {
        Err(e) if e.raw_os_error() != Some(libc::EINTR) => {
            Err(FsbenchError::Failed(format!("io: io_uring wait: {e}")))
        }
        _ => Ok(()),
    }
}

struct State {
    slots: Vec<Option<InFlight>>,
    free: Vec<u16>,
    /// Slots prepared and not yet submitted.
    queued: Vec<u16>,
    inflight: usize,
    /// fio's `cmdprio_*`: the priorities I/Os get of their own.
    cmdprio: Option<super::cmdprio::Chooser>,
}

/// Where issuing stands, and whether the job has no I/O left.
#[derive(Default)]
struct Issuing {
    queue: job::Issuing,
    finished: bool,
}

impl State {
    fn run(
        &mut self,
        job: &mut Job<'_>,
        ring: &mut IoUring,
        fixed: bool,
        iovecs: &[libc::iovec],
    ) -> Result<(), FsbenchError> {
        let mut issuing = Issuing::default();
        // Something due once nothing is in flight (a sync, a verify backlog check), before
        // the pending I/O.
        let mut quiesce = false;
        loop {
            let wait_for = match quiesce {
                false => self.issue(job, ring, fixed, iovecs, &mut issuing, &mut quiesce)?,
                true => None,
            };
            if !self.queued.is_empty() {
                self.submit(ring, 0, job)?;
            }
            if self.inflight == 0 {
                if job.idle(&mut quiesce, issuing.finished, wait_for)? {
                    return Ok(());
                }
                continue;
            }
            self.reap_as_fio(ring, job, wait_for)?;
        }
    }

    /// fio's `wait_for_completions` with its io_uring engine's `getevents`: the completions
    /// posted, up to the most, the ring entered to wait when fewer than wanted are there.
    fn reap_as_fio(
        &mut self,
        ring: &mut IoUring,
        job: &mut Job<'_>,
        wait_for: Option<Instant>,
    ) -> Result<(), FsbenchError> {
        let in_use = self.inflight + self.queued.len();
        let full = self.free.is_empty() || !job.has_room(in_use);
        let in_flight = |s: &State| s.inflight;
        wait_for_completions(job, self, in_flight, full, |s, job, want, most| {
            let mut got = s.reap(ring, job, most)?;
            while got < want {
                wait(ring, wait_for, want - got)?;
                let more = s.reap(ring, job, most - got)?;
                got += more;
                // Open loop: the wait ends when the next I/O is due.
                if more == 0 && wait_for.is_some() {
                    break;
                }
            }
            Ok(got)
        })
    }

    /// Prepares I/Os into free slots (submitting each full batch) until the slots, the job's
    /// I/Os or the open loop's schedule run out, or a sync or check is due before the next
    /// I/O (as fio asks for it: when it picks that I/O; set in `quiesce`); returns when the
    /// next I/O is due, if later.
    fn issue(
        &mut self,
        job: &mut Job<'_>,
        ring: &mut IoUring,
        fixed: bool,
        iovecs: &[libc::iovec],
        issuing: &mut Issuing,
        quiesce: &mut bool,
    ) -> Result<Option<Instant>, FsbenchError> {
        let batch = job.params.iodepth_batch_submit as usize;
        while !issuing.finished
            && !self.free.is_empty()
            && job.has_room(self.inflight + self.queued.len())
        {
            let (mut io, due) = match job.next_to_queue(&mut issuing.queue) {
                Queue::Io(io, due) => (io, due),
                Queue::Quiesce => {
                    // It goes first, once what is in flight completed.
                    *quiesce = true;
                    break;
                }
                Queue::Later(at) => return Ok(Some(at)),
                // Reap: I/Os in flight hold the files open.
                Queue::Busy => break,
                Queue::Done => {
                    issuing.finished = true;
                    break;
                }
            };
            let slot = self.free.pop().expect("a free slot");
            job.stamp(usize::from(slot), io);
            io.prio = (self.cmdprio.as_mut()).map_or(0, |c| c.pick(&io).unwrap_or(0));
            let fd = (!fixed).then(|| job.files.raw(io.file));
            let entry = entry(job.params, io, slot, fd, iovecs);
            let in_flight = InFlight::prepared(io, due);
            // SAFETY: the entry's buffer is slot `slot`'s, which no other I/O uses until
            // this one completes, and lives until the ring is gone.
            while unsafe { ring.submission().push(&entry) }.is_err() {
                // With sqpoll the kernel thread posts a batch's completions before it moves
                // the queue's head past the batch: the room comes a moment later.
                let _ = ring.submit();
                std::thread::yield_now();
            }
            self.slots[slot as usize] = Some(in_flight);
            self.queued.push(slot);
            if self.queued.len() >= batch {
                self.submit(ring, 0, job)?;
            }
        }
        Ok(None)
    }

    /// The completions posted, up to `most`: each recorded, its slot freed; how many.
    fn reap(
        &mut self,
        ring: &mut IoUring,
        job: &mut Job<'_>,
        most: usize,
    ) -> Result<usize, FsbenchError> {
        let done = Instant::now();
        let mut cq = ring.completion();
        cq.sync();
        let mut got = 0;
        while got < most {
            let Some(cqe) = cq.next() else { break };
            got += 1;
            let slot = cqe.user_data() as u16;
            let s = self.slots[slot as usize]
                .take()
                .expect("a completion of an I/O in flight");
            self.free.push(slot);
            self.inflight -= 1;
            job.completed_async(
                (s.io, usize::from(slot)),
                i64::from(cqe.result()),
                (s.prepped, s.submitted, s.due),
                done,
            )?;
        }
        Ok(got)
    }

    /// Submits the queued I/Os, stamping their submission time.
    fn submit(
        &mut self,
        ring: &mut IoUring,
        want: usize,
        job: &mut Job<'_>,
    ) -> Result<(), FsbenchError> {
        loop {
            match ring.submit_and_wait(want) {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => {
                    let errno =
                        rustix::io::Errno::from_raw_os_error(e.raw_os_error().unwrap_or(libc::EIO));
                    return Err(io_error(errno, "io_uring submit", &job.rec));
                }
            }
        }
        let now = Instant::now();
        // Every queued I/O is in flight now (the ring takes all its entries).
        self.inflight += self.queued.len();
        (job.out.stats).submitted(self.queued.len() as u32, self.inflight as u32);
        for slot in self.queued.drain(..) {
            if let Some(s) = self.slots[slot as usize].as_mut() {
                s.submitted = now;
            }
        }
        Ok(())
    }
}

/// The submission entry of `io` in slot `slot`, with its priority: its own, else the job's
/// (fio's io_uring sets it on every entry, since a polling kernel thread would not inherit
/// the job's `ioprio_set`).
fn entry(
    params: &IoParams,
    io: Next,
    slot: u16,
    fd: Option<RawFd>,
    iovecs: &[libc::iovec],
) -> squeue::Entry {
    let buf = iovecs[slot as usize].iov_base.cast::<u8>();
    let prio = params.placement.prio_of(io.prio);
    macro_rules! build {
        ($fd:expr) => {
            match (io.read, params.fixedbufs) {
                (true, true) => opcode::ReadFixed::new($fd, buf, io.len, slot)
                    .offset(io.offset)
                    .ioprio(prio)
                    .build(),
                (false, true) => opcode::WriteFixed::new($fd, buf, io.len, slot)
                    .offset(io.offset)
                    .ioprio(prio)
                    .build(),
                (true, false) => opcode::Read::new($fd, buf, io.len)
                    .offset(io.offset)
                    .ioprio(prio)
                    .build(),
                (false, false) => opcode::Write::new($fd, buf, io.len)
                    .offset(io.offset)
                    .ioprio(prio)
                    .build(),
            }
        };
    }
    let entry = match fd {
        None => build!(types::Fixed(io.file as u32)),
        Some(fd) => build!(types::Fd(fd)),
    };
    entry.user_data(u64::from(slot))
}

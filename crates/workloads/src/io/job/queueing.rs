//! What the queueing engines (libaio, io_uring, posixaio) share: the record of an I/O in
//! flight, the step that picks what a free slot gets, what is done with nothing in flight,
//! and a completion's recording.

use std::time::Instant;

use super::Job;
use crate::io::pattern::Next;
use fsbench_measure::error::FsbenchError;

/// A queueing engine's I/O in flight (in the slot whose buffer is its own): when it was
/// prepared, submitted, and when it was due (its scheduled time, or its preparation).
#[derive(Clone, Copy)]
pub(crate) struct InFlight {
    pub io: Next,
    pub prepped: Instant,
    pub submitted: Instant,
    pub due: Instant,
}

impl InFlight {
    /// `io`, prepared now (and submitted now until its submission says otherwise).
    pub(crate) fn prepared(io: Next, due: Option<Instant>) -> InFlight {
        let prepped = Instant::now();
        InFlight {
            io,
            prepped,
            submitted: prepped,
            due: due.unwrap_or(prepped),
        }
    }
}

/// What a queueing engine does with a free slot.
pub(crate) enum Queue {
    /// Queue this I/O (due at that time, on a schedule).
    Io(Next, Option<Instant>),
    /// Wait for nothing in flight first: a sync is due (`fsync=N`, as fio asks for it when
    /// it picks the next I/O), a verify backlog check, or the latency target's next depth.
    Quiesce,
    /// The next I/O is due then (open loop).
    Later(Instant),
    /// The file picked is closed and `openfiles` are open: reap, then ask again (fio's
    /// `FIO_Q_BUSY`).
    Busy,
    /// The job has no I/O left.
    Done,
}

/// Where a queueing engine's issuing stands: the passes over the files, and an I/O picked
/// but not queued yet (a sync before it, or not yet due).
#[derive(Default)]
pub(crate) struct Issuing {
    passes: u32,
    pending: Option<Next>,
}

impl Job<'_> {
    /// What a queueing engine does with its next free slot ([`Queue`]).
    pub(crate) fn next_to_queue(&mut self, issuing: &mut Issuing) -> Queue {
        let io = match issuing.pending.take() {
            Some(io) => io,
            None if self.ends() => return Queue::Done,
            None => match self.next_step(&mut issuing.passes) {
                super::Step::Io(io) => io,
                super::Step::Busy => return Queue::Busy,
                super::Step::Done => return Queue::Done,
            },
        };
        if self.sync_due.is_some() || self.backlog_due || self.search_quiesces() {
            issuing.pending = Some(io);
            return Queue::Quiesce;
        }
        let due = self.scheduled();
        if let Some(at) = due
            && at > Instant::now()
        {
            issuing.pending = Some(io);
            return Queue::Later(at);
        }
        self.count_issue();
        self.files.issued(io.file);
        Queue::Io(io, due)
    }

    /// A queueing engine with nothing in flight: what was due before the next I/O
    /// (`quiesce`: the sync, the verify backlog check), or the wait until the next I/O is
    /// due; whether the job has ended instead (`finished`).
    pub(crate) fn idle(
        &mut self,
        quiesce: &mut bool,
        finished: bool,
        wait_for: Option<Instant>,
    ) -> Result<bool, FsbenchError> {
        if std::mem::take(quiesce) {
            self.before_next_io()?;
            return Ok(false);
        }
        if finished {
            return Ok(true);
        }
        if let Some(at) = wait_for {
            Job::wait_until(at);
        }
        Ok(false)
    }

    /// An asynchronous engine's completion of `io` (in buffer `slot`) at `done` (its raw
    /// result: bytes or the negated errno): its length checked (an error gone past counts
    /// nothing more), its latencies recorded (submission from `prepped` to `submitted`), a
    /// write noted for the syncs, a read checked where the job verifies what it reads.
    pub(crate) fn completed_async(
        &mut self,
        (io, slot): (Next, usize),
        res: i64,
        (prepped, submitted, due): (Instant, Instant, Instant),
        done: Instant,
    ) -> Result<(), FsbenchError> {
        self.files.completed(io.file);
        let result = if res < 0 {
            Err(rustix::io::Errno::from_raw_os_error(-res as i32))
        } else {
            Ok(res as usize)
        };
        if !self.checked(result, io)? {
            return Ok(());
        }
        let slat = submitted.saturating_duration_since(prepped).as_nanos() as u64;
        self.complete(io, done, submitted, due, Some(slat))?;
        if io.read {
            self.verify_read(slot, io)?;
        } else {
            self.note_write(io);
        }
        Ok(())
    }

    /// A write's block in buffer `slot` before it is issued: refilled or scrambled as fio's
    /// buffer options say, then stamped for fio's `verify`.
    #[inline]
    pub(crate) fn stamp(&mut self, slot: usize, io: Next) {
        if io.read {
            return;
        }
        let buf = &mut self.bufs[slot].buf()[..io.len as usize];
        self.filler.before_write(buf, io.offset);
        if let Some(v) = &self.verifier {
            v.stamp(buf, io.offset);
        }
    }
}

/// fio's `wait_for_completions` over a queueing engine's `getevents` (`reap`: at least
/// `want` and at most `most` completions, each recorded; how many): at least
/// `iodepth_batch_complete_min` (one at the least) and at most `iodepth_batch_complete_max`
/// a call; when the queue was `full`, again until no more than `iodepth_low` are in flight.
pub(crate) fn wait_for_completions<E>(
    job: &mut Job<'_>,
    engine: &mut E,
    in_flight: fn(&E) -> usize,
    full: bool,
    mut reap: impl FnMut(&mut E, &mut Job<'_>, usize, usize) -> Result<usize, FsbenchError>,
) -> Result<(), FsbenchError> {
    let (min, max, low) = job.params.reaping();
    loop {
        let inflight = in_flight(engine);
        let want = min.min(inflight).max(1);
        let got = reap(engine, job, want, max.min(inflight).max(want))?;
        job.out.stats.reaped(got as u32);
        if !full || in_flight(engine) <= low || got == 0 {
            return Ok(());
        }
    }
}

//! One worker thread: its descriptor slots (filebench's 128, and the file each holds), its
//! buffer, and its loop through the thread's flowops until the run stops. What a flowop does
//! is in `ops`; here are the parts they share: choosing a slot, obtaining a file (waiting for
//! one rather than stopping the run), opening it, and counting each flowop as filebench does.
//! A thread allocates its buffers and histograms once; a flowop allocates nothing.

use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rustix::fs::{Mode, OFlags};

use super::control::POLL;
use super::files::{Missing, Want};
use super::model::{Flowop, Op};
use super::plan::{Place, Shared};
use super::stats::{FlowStats, ThreadReport, encode, new_histogram};
use crate::io::Rng;
use fsbench_measure::calls::Aligned;

/// filebench's descriptor slots per thread.
pub(super) const SLOTS: usize = 128;
/// How long every live thread may wait for a file before the run is called stalled.
const STALL: Duration = Duration::from_secs(2);

/// A descriptor slot: the file it was last given (kept after a close, as filebench keeps it
/// for `srcfd` and `deletefile fd=`), and the descriptor while it is open.
#[derive(Default)]
pub(super) struct Slot {
    pub(super) fd: Option<OwnedFd>,
    pub(super) file: Option<(usize, u64)>,
}

/// What a flowop tells the loop.
pub(super) enum Step {
    Next,
    /// The thread's finishoncount or finishonbytes is reached.
    Done,
    /// The run is stopping (seen while waiting).
    Stopping,
}

pub(super) type Flow = Result<Step, String>;

/// A limit flowop's bucket, as filebench keeps it per flowop.
#[derive(Default, Clone, Copy)]
pub(super) struct Bucket {
    pub(super) started: bool,
    pub(super) last: u64,
    pub(super) level: i64,
}

pub(super) struct Worker<'a> {
    pub(super) sh: &'a Shared<'a>,
    pub(super) me: usize,
    pub(super) flowops: &'a [Flowop],
    pub(super) stats: Vec<FlowStats>,
    pub(super) buckets: Vec<Bucket>,
    /// The same-thread flowop each limit or finish flowop watches, by index.
    pub(super) targets: Vec<Option<usize>>,
    pub(super) slots: Vec<Slot>,
    fd_rotor: usize,
    pub(super) buf: Aligned,
    buf_len: usize,
    pub(super) path: Box<[u8; 4096]>,
    /// A second path, for renames.
    pub(super) path2: Box<[u8; 4096]>,
    /// listdir's buffer of directory entries.
    pub(super) dirents: Vec<std::mem::MaybeUninit<u8>>,
    pub(super) rng: Rng,
    clock: quanta::Clock,
    latency: Vec<Option<Histogram<u64>>>,
    pub(super) aio: super::aio::Aio,
    passes: u64,
}

impl<'a> Worker<'a> {
    pub(super) fn new(
        sh: &'a Shared<'a>,
        me: usize,
        place: Place,
        seed: u64,
    ) -> Result<Worker<'a>, String> {
        let thread = &sh.model.processes[place.process].threads[place.thread];
        let flowops = thread.flowops.as_slice();
        let targets = (flowops.iter())
            .map(|f| match (&f.target, f.op) {
                (
                    Some(t),
                    Op::Opslimit
                    | Op::Iopslimit
                    | Op::Bwlimit
                    | Op::Finishoncount
                    | Op::Finishonbytes,
                ) => flowops
                    .iter()
                    .position(|o| o.name == *t)
                    .map(Some)
                    .ok_or_else(|| {
                        format!(
                            "{}: its target {t} is not a flowop of thread {}",
                            f.name, thread.name
                        )
                    }),
                _ => Ok(None),
            })
            .collect::<Result<_, String>>()?;
        let buf_len = super::params::buffer_of(thread) as usize;
        Ok(Worker {
            sh,
            me,
            flowops,
            stats: vec![FlowStats::default(); flowops.len()],
            buckets: vec![Bucket::default(); flowops.len()],
            targets,
            slots: (0..=SLOTS).map(|_| Slot::default()).collect(),
            fd_rotor: 0,
            buf: Aligned::new(buf_len),
            buf_len,
            path: Box::new([0; 4096]),
            path2: Box::new([0; 4096]),
            dirents: Vec::new(),
            rng: Rng::new(seed),
            clock: fsbench_measure::measure::lap_clock(),
            latency: Op::ALL.iter().map(|_| None).collect(),
            aio: super::aio::Aio::default(),
            passes: 0,
        })
    }

    /// Runs the thread's flowops in a loop until the run stops or the thread is done.
    pub(super) fn run(&mut self) -> ThreadReport {
        let control = &self.sh.control;
        control.arrive();
        let error = loop {
            match self.run_list(0, self.flowops.len()) {
                Ok(Step::Next) => self.passes += 1,
                Ok(Step::Done | Step::Stopping) => break None,
                Err(e) => {
                    control.stop(super::control::Stop::Abort);
                    break Some(e);
                }
            }
        };
        self.aio.drain();
        // The process's exit closes them, as filebench's workers, which are killed.
        for slot in &mut self.slots {
            std::mem::forget(slot.fd.take());
        }
        control.finished.fetch_add(1, Relaxed);
        control.lock.notify_all();
        self.report(error)
    }

    /// Runs flowops `start..end` once each (each its `iters` times; a composite its body),
    /// until one ends the thread or the run stops.
    fn run_list(&mut self, start: usize, end: usize) -> Flow {
        let mut fi = start;
        while fi < end {
            let f = &self.flowops[fi];
            let (iters, body) = (f.iters, f.body as usize);
            for _ in 0..iters {
                if self.sh.control.stopping() {
                    return Ok(Step::Stopping);
                }
                let step = if f.op == Op::Composite {
                    self.run_list(fi + 1, fi + 1 + body)?
                } else {
                    self.flowop(fi)?
                };
                if !matches!(step, Step::Next) {
                    return Ok(step);
                }
            }
            fi += 1 + body;
        }
        Ok(Step::Next)
    }

    fn report(&mut self, error: Option<String>) -> ThreadReport {
        let latency = (Op::ALL.iter().zip(&self.latency))
            .filter_map(|(op, h)| Some((op.name().to_string(), encode(h.as_ref()?))))
            .collect();
        ThreadReport {
            thread: self.me,
            flows: std::mem::take(&mut self.stats),
            latency,
            passes: self.passes,
            error,
        }
    }

    /// The clock, for a flowop's start.
    #[inline]
    pub(super) fn now(&self) -> u64 {
        self.clock.raw()
    }

    /// Counts a run of flowop `fi` that started at `t0` and moved `bytes`.
    #[inline]
    pub(super) fn done(&mut self, fi: usize, t0: u64, bytes: u64) {
        let ns = self.clock.delta_as_nanos(t0, self.clock.raw());
        let op = self.flowops[fi].op;
        self.stats[fi].record(op, ns, bytes);
        let h = self.latency[op as usize].get_or_insert_with(new_histogram);
        h.saturating_record(ns.max(1));
        self.sh.count(op, bytes);
    }

    /// The slot a flowop uses: its `fd`, or slot 0, or the next of a rotation through all
    /// slots for `opennext`.
    pub(super) fn slot_of(&mut self, fi: usize) -> usize {
        let f = &self.flowops[fi];
        if f.fd > 0 || !f.opennext {
            return f.fd as usize;
        }
        if self.fd_rotor == 0 {
            self.fd_rotor = SLOTS;
        }
        self.fd_rotor -= 1;
        self.fd_rotor
    }

    /// A buffer of at least `len` bytes (grown, rarely, for a larger drawn size).
    pub(super) fn buffer(&mut self, len: usize) -> &mut [u8] {
        if len > self.buf_len {
            self.buf = Aligned::new(len);
            self.buf_len = len;
        }
        &mut self.buf.buf()[..len]
    }

    /// The file set flowop `fi` names; an error where it names none.
    pub(super) fn set_of(&self, fi: usize) -> Result<usize, String> {
        let f = &self.flowops[fi];
        f.fileset
            .ok_or_else(|| format!("{}: {} names no fileset or file", f.name, f.op.name()))
    }

    /// A file of `set` as `want`s, picked by filebench's rule, waiting while there is none
    /// (counted for flowop `fi`); `None` when the run stops first. When every live thread
    /// has waited this way for a while, the run has stalled: an error naming the flowop.
    pub(super) fn obtain(
        &mut self,
        fi: usize,
        set: usize,
        want: Want,
        rotor: usize,
    ) -> Result<Option<u64>, String> {
        self.obtain_in(fi, set, want, rotor, false)
    }

    /// [`Worker::obtain`] among the set's leaf directories where `leafdirs`.
    pub(super) fn obtain_in(
        &mut self,
        fi: usize,
        set: usize,
        want: Want,
        rotor: usize,
        leafdirs: bool,
    ) -> Result<Option<u64>, String> {
        let index = self.flowops[fi].index.map(|n| n.draw(&mut self.rng));
        let sh = self.sh;
        let state = if leafdirs {
            &sh.sets[set].leafdirs
        } else {
            &sh.sets[set].files
        };
        let control = &sh.control;
        let mut waiting_since: Option<Instant> = None;
        let mut guard = state.lock.lock();
        loop {
            let missing = match state.pick(&guard, want, rotor, index) {
                Ok(file) => {
                    if let Some(since) = waiting_since {
                        control.waiting.fetch_sub(1, Relaxed);
                        self.stats[fi].wait_ns += since.elapsed().as_nanos() as u64;
                    }
                    return Ok(Some(file));
                }
                Err(m) => m,
            };
            if missing == Missing::None && sh.model.mode != super::model::Mode::Timeout {
                // In a mode that ends when threads are done, a thread that finds none of what
                // it needs is done, as filebench's (makedirs ends when every one is made).
                if waiting_since.is_some() {
                    control.waiting.fetch_sub(1, Relaxed);
                }
                return Ok(None);
            }
            let since = match waiting_since {
                Some(since) => since,
                None => {
                    control.waiting.fetch_add(1, Relaxed);
                    // Where every entry is busy filebench waits too; elsewhere it would
                    // have stopped the run.
                    if missing == Missing::None || state.any_idle() {
                        self.stats[fi].waits += 1;
                    }
                    *waiting_since.insert(Instant::now())
                }
            };
            if control.stopping() {
                control.waiting.fetch_sub(1, Relaxed);
                return Ok(None);
            }
            let alive = self.sh.plan.threads.len() as u64 - control.finished.load(Relaxed);
            if since.elapsed() > STALL && control.waiting.load(Relaxed) >= alive {
                control.waiting.fetch_sub(1, Relaxed);
                let f = &self.flowops[fi];
                let why = match (missing, want) {
                    (Missing::AllBusy, _) => "every file is being picked by another thread",
                    (Missing::None, Want::Free) => "every slot has a file and nothing deletes one",
                    (Missing::None, Want::Existing) => "no file exists and nothing creates one",
                };
                return Err(format!(
                    "the run stalled: every thread waits for a file; {} ({}) of fileset {}: {why}",
                    f.name,
                    f.op.name(),
                    self.sh.model.filesets[set].name
                ));
            }
            guard.wait(POLL);
        }
    }

    /// The rotor a pick of flowop `fi` moves: the set's, or the thread's own for `opennext`.
    pub(super) fn rotor_of(&self, fi: usize) -> usize {
        if self.flowops[fi].opennext {
            2 + self.me
        } else {
            1
        }
    }

    /// The open flags for flowop `fi` on `set`: read-only, write-only or both, O_SYNC for
    /// `dsync`, O_DIRECT for `directio`.
    pub(super) fn flags(&self, fi: usize, set: usize) -> OFlags {
        let (f, s) = (&self.flowops[fi], &self.sh.model.filesets[set]);
        let mut flags = if s.readonly {
            OFlags::RDONLY
        } else if s.writeonly {
            OFlags::WRONLY
        } else {
            OFlags::RDWR
        };
        if f.dsync {
            flags |= OFlags::SYNC;
        }
        if f.directio {
            flags |= OFlags::DIRECT;
        }
        flags | OFlags::CLOEXEC
    }

    /// Opens a file of flowop `fi`'s set on `slot`, as filebench's openfile does (counted as
    /// a run of flowop `fi`, whichever flowop it is).
    pub(super) fn open_slot(&mut self, fi: usize, slot: usize) -> Flow {
        let set = self.set_of(fi)?;
        if self.slots[slot].fd.is_some() {
            return Err(format!(
                "{}: opens slot {slot}, which is already open",
                self.flowops[fi].name
            ));
        }
        let Some(file) = self.obtain(fi, set, Want::Existing, self.rotor_of(fi))? else {
            return Ok(Step::Stopping);
        };
        self.slots[slot].file = Some((set, file));
        let flags = self.flags(fi, set);
        let t0 = self.now();
        let path = self.sh.layouts[set].file_path(file, &mut self.path);
        let opened = rustix::fs::openat(self.sh.dir, path, flags, Mode::from(0o666));
        self.done(fi, t0, 0);
        let state = &self.sh.sets[set];
        let ok = opened.is_ok();
        state.unbusy(&state.lock.lock(), file, None, i32::from(ok));
        let fd = opened.map_err(|e| self.failed(fi, "open", set, file, e))?;
        if self.flowops[fi].noreadahead {
            let _ = rustix::fs::fadvise(&fd, 0, None, rustix::fs::Advice::Random);
        }
        self.slots[slot].fd = Some(fd);
        Ok(Step::Next)
    }

    /// The slot flowop `fi` works on, opened from its set if it is not open, and the bytes
    /// a random offset stays below (`workingset`, or the file's size).
    pub(super) fn setup(&mut self, fi: usize) -> Result<Option<(usize, u64)>, String> {
        let slot = self.slot_of(fi);
        if self.slots[slot].fd.is_none() {
            match self.open_slot(fi, slot)? {
                Step::Next => {}
                _ => return Ok(None),
            }
        }
        let wss = match (self.flowops[fi].workingset, self.slots[slot].file) {
            (0, Some((set, file))) => self.sh.layouts[set].size(file),
            (w, _) => w,
        };
        Ok(Some((slot, wss)))
    }

    /// The message for a call on file `file` of `set` that failed.
    pub(super) fn failed(
        &mut self,
        fi: usize,
        call: &str,
        set: usize,
        file: u64,
        e: rustix::io::Errno,
    ) -> String {
        let path = self.sh.layouts[set]
            .file_path(file, &mut self.path)
            .to_string_lossy()
            .into_owned();
        format!("{}: {call} {path}: {e}", self.flowops[fi].name)
    }
}

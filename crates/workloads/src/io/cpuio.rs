//! fio's cpuio engine (engines/cpu.c): a job that moves no data and burns a share of a CPU,
//! the load beside the jobs that do I/O. Each burn spins `cpuchunks` microseconds (`noop`)
//! or sorts a MiB of numbers four ways with the C library's `qsort`, as fio's (`qsort`);
//! then the job sleeps as long as keeps its burns at `cpuload` of its time (fio's
//! thinktime, made anew after each sort). fio records each burn as an I/O of no bytes, and
//! so do fsbench's fio outputs; fsbench's own figures leave the job out, and say so.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Io;
use super::gather::Gathered;
use super::job::Job;
use super::params::IoParams;
use crate::parallel::shm::Region;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::fio::Completion;

/// fio's qsort mode sorts this many 32-bit numbers.
const SORTED: usize = 256 << 10;

/// The longest sleep between two looks at whether the job is to stop.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// The job's burns until its time is up, another job stops it or, with `exit_on_io_done`,
/// the jobs doing I/O beside it have ended.
pub(crate) fn run(job: &mut Job<'_>) -> Result<(), FsbenchError> {
    let burn = job.params.cpu_burn.expect("a cpuio job has its load");
    let mut numbers = burn.qsort.then(fio_numbers);
    let mut chunk_us = burn.chunk_us;
    while goes_on(job, burn.exit_on_io_done) {
        let began = Instant::now();
        match numbers.as_deref_mut() {
            Some(numbers) => {
                sort_four_ways(numbers);
                chunk_us = began.elapsed().as_micros() as u64;
            }
            None => spin(Duration::from_micros(chunk_us)),
        }
        record(job, began, Instant::now());
        // fio's thinktime, in whole microseconds as fio's.
        let idle_us = chunk_us * u64::from(100 - burn.load) / u64::from(burn.load);
        sleep(job, Duration::from_micros(idle_us));
    }
    Ok(())
}

/// Whether the job burns on: not stopped (another job's failure or end, Ctrl-C), its time
/// not up, and, with `exit_on_io_done`, a job doing I/O beside it still running.
fn goes_on(job: &Job<'_>, exit_on_io_done: bool) -> bool {
    let time_up = job.span.limit.is_some_and(|l| job.start.elapsed() >= l);
    let io_done =
        exit_on_io_done && (job.io_jobs_left).is_some_and(|n| n.load(Ordering::Relaxed) == 0);
    !(stopped(job) || time_up || io_done)
}

/// fio's `usec_spin`: the clock read until `chunk` has passed.
fn spin(chunk: Duration) {
    let began = Instant::now();
    while began.elapsed() < chunk {
        std::hint::spin_loop();
    }
}

/// Sleeps `idle`, looking every [`LOOK_EVERY`] whether the job is stopped (as fio's
/// `usec_sleep`, a second at most between looks); the end of its time does not cut the
/// sleep short, as it does not fio's.
fn sleep(job: &Job<'_>, idle: Duration) {
    let until = Instant::now() + idle;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stopped(job) {
            return;
        }
        std::thread::sleep(left.min(LOOK_EVERY));
    }
}

/// Whether another job's failure or end (`exitall`) or Ctrl-C stopped the job.
pub(super) fn stopped(job: &Job<'_>) -> bool {
    job.halt.load(Ordering::Relaxed) || job.rec.progress().cancel.load(Ordering::Relaxed)
}

/// A burn as fio records a cpuio "I/O": a read of no bytes at depth 1, its time its
/// completion latency; in fio's record alone, not in fsbench's (the phase's I/Os, its
/// latencies).
fn record(job: &mut Job<'_>, began: Instant, done: Instant) {
    if !job.span.measured {
        return;
    }
    let clat = done.saturating_duration_since(began).as_nanos() as u64;
    job.out.clat[0].saturating_record(clat.max(1));
    job.out.stats.submitted(1, 1);
    job.out.stats.reaped(1);
    job.out.stats.completed(Completion {
        at_ns: done.saturating_duration_since(job.start).as_nanos() as u64,
        read: true,
        len: 0,
        offset: 0,
        clat_ns: clat,
        slat_ns: None,
        trim: false,
        prio: 0,
    });
}

/// fio's numbers to sort: its multiply-with-carry generator from its seeds.
fn fio_numbers() -> Vec<i32> {
    let (mut w, mut z) = (521_288_629_u32, 362_436_069_u32);
    (0..SORTED)
        .map(|_| {
            z = 36969_u32.wrapping_mul(z & 65535).wrapping_add(z >> 16);
            w = 18000_u32.wrapping_mul(w & 65535).wrapping_add(w >> 16);
            (z << 16).wrapping_add(w) as i32
        })
        .collect()
}

/// fio's `do_qsort`: the numbers sorted, reversed, their bytes sorted, reversed again, each
/// with the C library's `qsort`, as fio's.
fn sort_four_ways(numbers: &mut [i32]) {
    let (base, len) = (numbers.as_mut_ptr().cast::<c_void>(), numbers.len());
    // SAFETY: `base` holds `len` i32s (4 × `len` bytes), sorted in place; each comparator
    // reads two elements of the size its call gives.
    unsafe {
        libc::qsort(base, len, 4, Some(ascending));
        libc::qsort(base, len, 4, Some(descending));
        libc::qsort(base, len * 4, 1, Some(bytes_ascending));
        libc::qsort(base, len, 4, Some(descending));
    }
}

unsafe extern "C" fn ascending(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: qsort hands two of the i32s it sorts.
    let (a, b) = unsafe { (*a.cast::<i32>(), *b.cast::<i32>()) };
    a.cmp(&b) as c_int
}

unsafe extern "C" fn descending(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: as `ascending`'s, the other way round.
    unsafe { ascending(b, a) }
}

unsafe extern "C" fn bytes_ascending(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: qsort hands two of the bytes it sorts (signed, as fio's comparator reads them).
    let (a, b) = unsafe { (*a.cast::<i8>(), *b.cast::<i8>()) };
    c_int::from(a) - c_int::from(b)
}

/// The memory shared by the workers for the count of jobs doing I/O, where a cpuio job of
/// `threads` waits for them (`exit_on_io_done`) and there are some: fio's cpuio job with
/// no I/O job to wait for burns for its time.
pub(super) fn region(threads: &[&IoParams]) -> Result<Option<Region>, FsbenchError> {
    let waits = (threads.iter()).any(|p| p.cpu_burn.is_some_and(|b| b.exit_on_io_done));
    let io = threads.iter().any(|p| p.does_io());
    if !(waits && io) {
        return Ok(None);
    }
    Region::new(Region::room::<AtomicU64>(1)).map(Some)
}

/// The count of `threads` doing I/O, in `region` (from [`region`]); each ends it by one.
pub(super) fn io_jobs<'r>(region: &'r Region, threads: &[&IoParams]) -> &'r AtomicU64 {
    let count = &region.take::<AtomicU64>(1)[0];
    let io = threads.iter().filter(|p| p.does_io()).count();
    count.store(io as u64, Ordering::Relaxed);
    count
}

impl Io {
    /// What the cpuio jobs did, in the run's notes: the share of a CPU each burned (its
    /// user and system time over its time, per copy) and that they moved no data; where
    /// every job is cpuio, that no filesystem data moved at all.
    pub(super) fn note_cpu_burns(&mut self, all: &Gathered) {
        let mut burns = Vec::new();
        for (j, (p, sums)) in self.params.jobs().zip(&all.jobs).enumerate() {
            let Some(burn) = p.cpu_burn else { continue };
            let (cpu, time) = (sums.cpu_ns, sums.time.as_nanos() as u64);
            let name = p.job.clone().unwrap_or_else(|| format!("job{j}"));
            let share = cpu as f64 * 100.0 / time.max(1) as f64;
            burns.push(format!(
                "`{name}` burned {share:.1}% of a CPU per copy (cpuload={})",
                burn.load
            ));
        }
        if burns.is_empty() {
            return;
        }
        let burns = burns.join(", ");
        self.notes.push(if self.params.jobs().all(|p| !p.does_io()) {
            format!(
                "cpuio: {burns}, and no job did I/O: no filesystem data moved, and there are no I/O figures"
            )
        } else {
            format!(
                "cpuio: {burns} beside the jobs doing I/O; it moves no data and is left out of the I/O figures"
            )
        });
    }
}

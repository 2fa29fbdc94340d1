//! The jobs' outputs as the phase keeps them: each folded into the sums the figures need as
//! it arrives (in the jobs' order), then dropped. A job's output holds 13 latency
//! histograms, the busy ones up to 160 KiB each; the phase's process held every copy's until
//! the last had ended (128 copies: 64 MiB of them).

use std::time::Duration;

use hdrhistogram::Histogram;

use super::DIRECTIONS;
use super::job::JobOut;
use super::params::IoParams;
use fsbench_measure::measure::{PhaseRecorder, growing_histogram};
use fsbench_model::measurement::{JobThread, LogFile};

/// Every job thread's output, folded.
pub(super) struct Gathered {
    /// Per direction of [`DIRECTIONS`], over the threads that count in it.
    pub directions: [Direction; 3],
    /// The longest time of a thread that did I/O.
    pub longest: Duration,
    /// Every thread's issue lag.
    pub lag: Histogram<u64>,
    pub verified: u64,
    /// Every thread's I/Os and bytes, both directions.
    pub ios: u64,
    pub bytes: u64,
    /// What the `fill_device` threads wrote.
    pub filled: u64,
    /// Per job (of the job file, or the one job), its copies' sums.
    pub jobs: Vec<JobSums>,
    /// Each exec job copy's program's end: the job, the copy, how it ended.
    pub programs: Vec<(usize, u32, String)>,
    /// The first read that failed its verify.
    pub verify_failed: Option<String>,
    /// Each thread's record as fio reports it, and its log files, in the threads' order.
    records: Vec<(JobThread, Vec<LogFile>)>,
}

/// One direction's sums.
pub(super) struct Direction {
    pub ios: u64,
    pub bytes: u64,
    pub clat: Histogram<u64>,
    pub slat: Histogram<u64>,
    pub from_schedule: Histogram<u64>,
}

/// One job's copies' sums.
pub(super) struct JobSums {
    pub cpu_ns: u64,
    /// Its copies' times, added.
    pub time: Duration,
    pub longest: Duration,
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    /// Per direction; kept only for a job that ran beside others, whose latency is
    /// recorded as its own.
    pub latency: Option<[[Histogram<u64>; 2]; 2]>,
}

impl Direction {
    fn new() -> Direction {
        Direction {
            ios: 0,
            bytes: 0,
            clat: growing_histogram(),
            slat: growing_histogram(),
            from_schedule: growing_histogram(),
        }
    }
}

/// Adds `part` to `total` (the same precision: they add).
fn add(total: &mut Histogram<u64>, part: &Histogram<u64>) {
    total.add(part).expect("histograms of the same bounds add");
}

impl Gathered {
    /// Nothing yet, for `jobs` (their own latency kept where they run `beside` others).
    pub(super) fn new<'p>(jobs: impl Iterator<Item = &'p IoParams>, beside: bool) -> Gathered {
        let jobs = jobs
            .map(|p| JobSums {
                cpu_ns: 0,
                time: Duration::ZERO,
                longest: Duration::ZERO,
                ios: [0; 2],
                bytes: [0; 2],
                latency: (beside && p.does_io()).then(|| {
                    let pair = || [growing_histogram(), growing_histogram()];
                    [pair(), pair()]
                }),
            })
            .collect();
        Gathered {
            directions: [Direction::new(), Direction::new(), Direction::new()],
            longest: Duration::ZERO,
            lag: growing_histogram(),
            verified: 0,
            ios: 0,
            bytes: 0,
            filled: 0,
            jobs,
            programs: Vec::new(),
            verify_failed: None,
            records: Vec::new(),
        }
    }

    /// Folds in the output `o` of copy `copy` of job `job` (its options `p`).
    pub(super) fn add(&mut self, (p, job, copy): (&IoParams, usize, u32), o: JobOut) {
        if p.does_io() {
            for ((_, d, trims), sums) in DIRECTIONS.iter().zip(&mut self.directions) {
                if trims.is_none_or(|t| p.rw.trims() == t) {
                    sums.ios += o.ios[*d];
                    sums.bytes += o.bytes[*d];
                    add(&mut sums.clat, &o.clat[*d]);
                    add(&mut sums.slat, &o.slat[*d]);
                    add(&mut sums.from_schedule, &o.from_schedule[*d]);
                }
            }
            self.longest = self.longest.max(o.elapsed);
        }
        add(&mut self.lag, &o.lag);
        self.verified += o.verified;
        self.ios += o.ios[0] + o.ios[1];
        self.bytes += o.bytes[0] + o.bytes[1];
        if p.fill_device {
            self.filled += o.bytes[1];
        }
        let sums = &mut self.jobs[job];
        sums.cpu_ns += o.stats.cpu_ns();
        sums.time += o.elapsed;
        sums.longest = sums.longest.max(o.elapsed);
        for d in 0..2 {
            sums.ios[d] += o.ios[d];
            sums.bytes[d] += o.bytes[d];
            if let Some([clat, slat]) = &mut sums.latency {
                add(&mut clat[d], &o.clat[d]);
                add(&mut slat[d], &o.slat[d]);
            }
        }
        if let (Some(_), Some(ended)) = (&p.exec, &o.exec_ended) {
            self.programs.push((job, copy, ended.clone()));
        }
        if self.verify_failed.is_none() {
            self.verify_failed.clone_from(&o.verify_failed);
        }
        self.records.push(record(p, (job, copy), o));
    }

    /// Each thread's record as fio reports it (and its log files), in the threads' order.
    pub(super) fn record_threads(self, rec: &mut PhaseRecorder) {
        for (thread, logs) in self.records {
            rec.add_job(thread, logs);
        }
    }
}

/// Thread `copy` of job `job`'s record as fio reports it, and its log files.
fn record(p: &IoParams, (job, copy): (usize, u32), o: JobOut) -> (JobThread, Vec<LogFile>) {
    let name = p.job.clone().unwrap_or_else(|| format!("job{job}"));
    let runtime = o.elapsed.as_nanos() as u64;
    let who = (name.as_str(), job as u32, copy);
    // fio's figures count the verify phase's reads as the job's reads.
    let mut clat = o.clat;
    add(&mut clat[0], &o.verify_clat);
    let (mut thread, logs) = o.stats.finish(who, runtime, &o.slat, &clat, &o.trim_clat);
    (thread.verify_reads, thread.verify_ns) = (o.verify_reads, o.verify_time.as_nanos() as u64);
    thread.steadystate = o.steady;
    thread.latency_search = o.latency_search;
    if o.verify_failed.is_some() {
        thread.error = libc::EILSEQ;
    }
    (thread, logs)
}

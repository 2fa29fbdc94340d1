//! What fio reports of each job thread beside its completion and submission latency (its
//! thread_stat): the latency from the I/O's preparation (fio's `lat`), syncs, queue depths,
//! the thread's CPU time and faults, bandwidth and IOPS samples, and the log files the job
//! asked for. Fixed-size counters and histograms, samples once per interval: nothing is
//! allocated per I/O except the entries of a log that records every I/O.

use hdrhistogram::Histogram;

use fsbench_model::fio::LogOptions;
use fsbench_model::measurement::{JobThread, LatencySummary, LogFile, SampleStats, Trims};
use serde::{Deserialize, Serialize};

use crate::measure::{LatencySummaryExt, new_histogram};

mod latency;
mod logs;
pub mod plat;
mod thread;

pub use latency::FioLatency;

use logs::{CLAT, LAT, Logs, SLAT};
use thread::{Usage, thread_id};

/// fio's `bwavgtime` and `iopsavgtime`: a bandwidth and an IOPS sample every 500 ms.
const SAMPLE_MS: u64 = 500;

/// One completed I/O, as the engine saw it.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    /// From the job's start to the I/O's completion.
    pub at_ns: u64,
    pub read: bool,
    pub len: u32,
    pub offset: u64,
    pub clat_ns: u64,
    /// Submission latency, for the engines that submit apart from completing.
    pub slat_ns: Option<u64>,
    /// A trim of a job that also writes (fio's `trimwrite`; `read` is false).
    pub trim: bool,
    /// The I/O's priority (fio's ioprio value: class << 13 | level; 0: none set).
    pub prio: u16,
}

/// The rate samples of one kind (bandwidth or IOPS), per direction.
#[derive(Debug, Serialize, Deserialize)]
struct Rates {
    /// 0: a sample per I/O (fio's per-I/O bandwidth and IOPS logs).
    interval_ms: u64,
    last_ms: u64,
    at_last: [u64; 2],
    total: [u64; 2],
    stats: [SampleStats; 2],
}

impl Rates {
    fn new(interval_ms: u64) -> Rates {
        Rates {
            interval_ms,
            last_ms: 0,
            at_last: [0; 2],
            total: [0; 2],
            stats: [SampleStats::default(); 2],
        }
    }

    /// Counts `amount` done in direction `d`; returns the samples taken now, per direction
    /// (fio takes both directions' at once, each only if it moved, per `divisor` bytes or
    /// I/Os per second).
    #[inline]
    fn add(&mut self, at_ms: u64, d: usize, amount: u64, divisor: u64) -> [Option<u64>; 2] {
        self.total[d] += amount;
        let spent = at_ms.saturating_sub(self.last_ms);
        if self.interval_ms == 0 || spent < self.interval_ms {
            return [None; 2];
        }
        let mut taken = [None; 2];
        for (dir, slot) in taken.iter_mut().enumerate() {
            let delta = self.total[dir] - self.at_last[dir];
            if delta == 0 {
                continue;
            }
            let rate = delta * 1000 / spent / divisor;
            self.stats[dir].add(rate);
            self.at_last[dir] = self.total[dir];
            *slot = Some(rate);
        }
        self.last_ms = at_ms;
        taken
    }
}

/// One job thread's fio statistics, recorded on the thread as its I/Os complete.
#[derive(Debug, Serialize, Deserialize)]
pub struct JobStats {
    #[serde(with = "crate::measure::histogram_serde::pair")]
    lat: [Histogram<u64>; 2],
    #[serde(with = "crate::measure::histogram_serde")]
    sync: Histogram<u64>,
    ios: [u64; 2],
    bytes: [u64; 2],
    /// The trims of a job that trims and writes: latency, I/Os and bytes, rates.
    #[serde(with = "crate::measure::histogram_serde")]
    trim_lat: Histogram<u64>,
    trimmed: [u64; 2],
    trim_rates: [Rates; 2],
    depth: [u64; 7],
    submit: [u64; 7],
    complete: [u64; 7],
    bw: Rates,
    iops: Rates,
    start: Usage,
    /// The job's thread (fio's `td->pid`): a worker process's only thread has its pid.
    pid: u32,
    /// The thread's usage when it ended (taken on the thread itself).
    end: Option<Usage>,
    logs: Option<Box<Logs>>,
    /// Errors gone past (fio's `continue_on_error`), the first one's errno, and the I/Os
    /// that failed with them per direction (fio counts them issued).
    errors: u64,
    first_error: i32,
    failed: [u64; 2],
    /// fio's per-priority completion latency (its `clat_prio`), kept where the engine gives
    /// I/Os priorities of their own (`by_priority`): one entry per priority met.
    #[serde(default)]
    by_prio: Option<Vec<PrioClat>>,
}

/// One priority's completion latency per direction.
#[derive(Debug, Serialize, Deserialize)]
struct PrioClat {
    prio: u16,
    #[serde(with = "crate::measure::histogram_serde::pair")]
    clat: [Histogram<u64>; 2],
}

/// The latency key of priority `prio` (fio's ioprio value) in direction `dir`:
/// `read clat prio 1/0`, class then level as fio prints them.
pub fn prio_key(dir: &str, prio: u16) -> String {
    format!("{dir} clat prio {}/{}", prio >> 13, prio & 7)
}

/// fio's bucket of a count: 0, 1–4, 5–8, 9–16, 17–32, 33–64, more (`__io_u_mark_map`).
#[inline]
fn count_bucket(n: u32) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// fio's bucket of a queue depth: 1, 2–3, 4–7, 8–15, 16–31, 32–63, 64 and more.
#[inline]
fn depth_bucket(depth: u32) -> usize {
    match depth {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

impl JobStats {
    /// The statistics of fio's thread `thread` (from 1 over the job file), with the logs
    /// `logs` asks for; `expected_ios` sizes a log of every I/O.
    pub fn new(logs: &LogOptions, thread: u32, expected_ios: u64) -> JobStats {
        // fio samples at the logs' interval when they are written (`log_avg_msec`, 0 for
        // every I/O), else every 500 ms.
        let bw = logs.bw.as_ref().map_or(SAMPLE_MS, |_| logs.avg_msec);
        let iops = logs.iops.as_ref().map_or(SAMPLE_MS, |_| logs.avg_msec);
        JobStats {
            lat: [new_histogram(), new_histogram()],
            sync: new_histogram(),
            ios: [0; 2],
            bytes: [0; 2],
            trim_lat: new_histogram(),
            trimmed: [0; 2],
            trim_rates: [Rates::new(SAMPLE_MS), Rates::new(SAMPLE_MS)],
            depth: [0; 7],
            submit: [0; 7],
            complete: [0; 7],
            bw: Rates::new(bw),
            iops: Rates::new(iops),
            start: Usage::now(),
            pid: thread_id(),
            end: None,
            logs: (!logs.is_off()).then(|| Box::new(Logs::new(logs, thread, expected_ios))),
            errors: 0,
            first_error: 0,
            failed: [0; 2],
            by_prio: None,
        }
    }

    /// Keeps fio's per-priority statistics: the engine gives I/Os priorities of their own.
    pub fn by_priority(&mut self) {
        self.by_prio.get_or_insert_with(Vec::new);
    }

    /// An I/O's completion latency under its priority.
    #[inline]
    fn prio_clat(&mut self, prio: u16, d: usize, clat_ns: u64) {
        let Some(by_prio) = &mut self.by_prio else {
            return;
        };
        let at = match by_prio.iter().position(|p| p.prio == prio) {
            Some(at) => at,
            // A priority met first (a few a job: its own and those of cmdprio's options).
            None => {
                by_prio.push(PrioClat {
                    prio,
                    clat: [new_histogram(), new_histogram()],
                });
                by_prio.len() - 1
            }
        };
        by_prio[at].clat[d].saturating_record(clat_ns.max(1));
    }

    /// Starts the thread's CPU time and faults now (call on the job's own thread).
    pub fn start(&mut self) {
        self.start = Usage::now();
        self.pid = thread_id();
    }

    /// Everything counted so far dropped, the CPU time and faults started again now, the
    /// logs kept: fio's `reset_all_stats` and `reset_io_stats`, as its latency target search
    /// makes them before the final run at the depth it found.
    pub fn restart(&mut self) {
        let logs = self.logs.take();
        let (bw, iops) = (self.bw.interval_ms, self.iops.interval_ms);
        *self = JobStats {
            bw: Rates::new(bw),
            iops: Rates::new(iops),
            logs,
            ..JobStats::new(&LogOptions::default(), 0, 0)
        };
    }

    /// Ends them now (on the job's own thread, before its record is made elsewhere).
    pub fn stop(&mut self) {
        self.end = Some(Usage::now());
    }

    /// The thread's CPU time (user and system) from its start to its end (or now, on it).
    pub fn cpu_ns(&self) -> u64 {
        let end = self.end.unwrap_or_else(Usage::now);
        (end.usr_ns + end.sys_ns).saturating_sub(self.start.usr_ns + self.start.sys_ns)
    }

    /// One I/O done: its total latency from its preparation (completion plus submission
    /// latency), rates, logs.
    #[inline]
    pub fn completed(&mut self, c: Completion) {
        if c.trim {
            return self.trim_completed(c);
        }
        let d = usize::from(!c.read);
        let lat = c.clat_ns + c.slat_ns.unwrap_or(0);
        self.lat[d].saturating_record(lat.max(1));
        self.ios[d] += 1;
        self.bytes[d] += u64::from(c.len);
        let at_ms = c.at_ns / 1_000_000;
        let bw = self.bw.add(at_ms, d, u64::from(c.len), 1024);
        let iops = self.iops.add(at_ms, d, 1, 1);
        if self.bw.interval_ms == 0 {
            self.bw.stats[d].add(u64::from(c.len) * 1_000_000 / c.clat_ns.max(1));
        }
        if self.iops.interval_ms == 0 {
            self.iops.stats[d].add(1);
        }
        if let Some(logs) = &mut self.logs {
            log(logs, &c, lat, at_ms, (bw, iops));
        }
        self.prio_clat(c.prio, d, c.clat_ns);
    }

    /// A trimwrite job's trim: its latency, count and bytes, and a bandwidth and IOPS sample
    /// every 500 ms (its job's logs are refused).
    fn trim_completed(&mut self, c: Completion) {
        let lat = c.clat_ns + c.slat_ns.unwrap_or(0);
        self.trim_lat.saturating_record(lat.max(1));
        self.trimmed[0] += 1;
        self.trimmed[1] += u64::from(c.len);
        let at_ms = c.at_ns / 1_000_000;
        self.trim_rates[0].add(at_ms, 0, u64::from(c.len), 1024);
        self.trim_rates[1].add(at_ms, 0, 1, 1);
    }

    /// `n` I/Os submitted at once, `in_flight` of them then in flight.
    #[inline]
    pub fn submitted(&mut self, n: u32, in_flight: u32) {
        self.submit[count_bucket(n)] += 1;
        self.depth[depth_bucket(in_flight)] += u64::from(n);
    }

    /// `n` completions reaped at once.
    #[inline]
    pub fn reaped(&mut self, n: u32) {
        self.complete[count_bucket(n)] += 1;
    }

    /// An error `errno` the job went past (fio's `update_error_count`): a failed I/O's
    /// (`read` its direction) or a wrong block's that `verify` read (`None`).
    pub fn errored(&mut self, errno: i32, read: Option<bool>) {
        self.errors += 1;
        if self.errors == 1 {
            self.first_error = errno;
        }
        if let Some(read) = read {
            self.failed[usize::from(!read)] += 1;
        }
    }

    /// One fsync or fdatasync that took `ns`, issued with nothing else in flight.
    pub fn synced(&mut self, ns: u64) {
        self.sync.saturating_record(ns.max(1));
        // fio counts a sync in its queue depths too, and divides by the reads and writes
        // alone: with fsync=N its depth 1 reads more than 100%, as fio's does.
        self.depth[depth_bucket(1)] += 1;
    }

    /// The thread's record (`job`'s copy `copy`, the `index`-th job of its group), with its
    /// completion and submission latencies, and its log files.
    pub fn finish(
        self,
        (job, index, copy): (&str, u32, u32),
        runtime_ns: u64,
        slat: &[Histogram<u64>; 2],
        clat: &[Histogram<u64>; 2],
        trim_clat: &Histogram<u64>,
    ) -> (JobThread, Vec<LogFile>) {
        let end = self.end.unwrap_or(self.start);
        let mut latency = std::collections::BTreeMap::new();
        for (d, dir) in ["read", "write"].into_iter().enumerate() {
            for (kind, h) in [
                ("slat", &slat[d]),
                ("clat", &clat[d]),
                ("lat", &self.lat[d]),
            ] {
                if !h.is_empty() {
                    latency.insert(format!("{dir} {kind}"), LatencySummary::of(h));
                }
            }
        }
        for (kind, h) in [("trim clat", trim_clat), ("trim lat", &self.trim_lat)] {
            if !h.is_empty() {
                latency.insert(kind.into(), LatencySummary::of(h));
            }
        }
        if !self.sync.is_empty() {
            latency.insert("sync".into(), LatencySummary::of(&self.sync));
        }
        for p in self.by_prio.iter().flatten() {
            for (d, dir) in ["read", "write"].into_iter().enumerate() {
                if !p.clat[d].is_empty() {
                    latency.insert(prio_key(dir, p.prio), LatencySummary::of(&p.clat[d]));
                }
            }
        }
        let record = JobThread {
            job: job.to_string(),
            index,
            copy,
            runtime_ns,
            pid: self.pid,
            usr_ns: end.usr_ns.saturating_sub(self.start.usr_ns),
            sys_ns: end.sys_ns.saturating_sub(self.start.sys_ns),
            ctx: end.ctx.saturating_sub(self.start.ctx),
            majf: end.majf.saturating_sub(self.start.majf),
            minf: end.minf.saturating_sub(self.start.minf),
            ios: self.ios,
            bytes: self.bytes,
            syncs: self.sync.len(),
            depth: self.depth,
            submit: self.submit,
            complete: self.complete,
            bw: self.bw.stats,
            iops: self.iops.stats,
            latency,
            total_err: self.errors,
            first_error: self.first_error,
            error: 0,
            failed: self.failed,
            steadystate: None,
            trims: Trims {
                ios: self.trimmed[0],
                bytes: self.trimmed[1],
                bw: self.trim_rates[0].stats[0],
                iops: self.trim_rates[1].stats[0],
            },
            latency_search: None,
            verify_reads: 0,
            verify_ns: 0,
        };
        let files = self
            .logs
            .map_or_else(Vec::new, |l| l.files(runtime_ns / 1_000_000));
        (record, files)
    }
}

/// One I/O into the logs: its latencies, and the rate samples taken at it (`taken`: bandwidth
/// and IOPS per direction) or, for logs of every I/O, its own rate.
#[inline]
fn log(
    logs: &mut Logs,
    c: &Completion,
    lat: u64,
    at_ms: u64,
    taken: ([Option<u64>; 2], [Option<u64>; 2]),
) {
    let opts = &logs.opts;
    if let Some(l) = &mut logs.lat {
        let io = (c.len, c.offset, c.prio);
        l[LAT].add(opts, at_ms, c.read, lat, io);
        l[CLAT].add(opts, at_ms, c.read, c.clat_ns, io);
        if let Some(slat) = c.slat_ns {
            l[SLAT].add(opts, at_ms, c.read, slat, io);
        }
    }
    for (log, samples, per_io) in [
        (
            &mut logs.bw,
            taken.0,
            u64::from(c.len) * 1_000_000 / c.clat_ns.max(1),
        ),
        (&mut logs.iops, taken.1, 1),
    ] {
        let Some(log) = log else { continue };
        if opts.avg_msec == 0 {
            log.add(opts, at_ms, c.read, per_io, (c.len, c.offset, c.prio));
            continue;
        }
        for (dir, sample) in samples.iter().enumerate() {
            if let Some(rate) = sample {
                log.add(opts, at_ms, dir == 0, *rate, (0, 0, 0));
            }
        }
    }
    if let Some(h) = &mut logs.hist {
        h.add(opts.hist_msec, at_ms, c.read, c.clat_ns, c.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(at_ms: u64, read: bool, clat_us: u64) -> Completion {
        Completion {
            at_ns: at_ms * 1_000_000,
            read,
            len: 4096,
            offset: at_ms * 4096,
            clat_ns: clat_us * 1000,
            slat_ns: None,
            trim: false,
            prio: 0,
        }
    }

    #[test]
    fn rates_are_sampled_every_500_ms_per_direction() {
        let mut s = JobStats::new(&LogOptions::default(), 1, 0);
        // 10 reads per 100 ms for 2 s: 100 IO/s, 400 KiB/s.
        for ms in (10..=2000).step_by(10) {
            s.completed(io(ms, true, 50));
        }
        s.submitted(1, 1);
        s.reaped(1);
        let h = [new_histogram(), new_histogram()];
        let (t, files) = s.finish(("j", 0, 0), 2_000_000_000, &h, &h, &h[0]);
        assert!(files.is_empty());
        assert_eq!(t.ios, [200, 0]);
        assert_eq!(t.iops[0].samples, 4, "at 500, 1000, 1500 and 2000 ms");
        assert_eq!((t.iops[0].min, t.iops[0].max), (100, 100));
        assert_eq!(t.bw[0].max, 400);
        assert_eq!(t.iops[1].samples, 0);
        assert_eq!((t.submit[1], t.complete[1], t.depth[0]), (1, 1, 1));
        assert_eq!(t.latency["read lat"].count, 200);
    }

    #[test]
    fn a_sync_counts_in_the_depths_as_fio_s() {
        let mut s = JobStats::new(&LogOptions::default(), 1, 0);
        for ms in 1..=4 {
            s.submitted(1, 1);
            s.completed(io(ms, false, 50));
        }
        s.synced(1000);
        let h = [new_histogram(), new_histogram()];
        let (t, _) = s.finish(("j", 0, 0), 1_000_000_000, &h, &h, &h[0]);
        // fio 3.33 on 256 writes and 63 fsyncs printed `IO depths : 1=124.6%`.
        assert_eq!((t.ios, t.depth[0]), ([0, 4], 5));
    }

    #[test]
    fn logs_are_fio_s_lines() {
        let opts = LogOptions {
            lat: Some("x".into()),
            iops: Some("x".into()),
            hist: Some("x".into()),
            hist_msec: 100,
            ..LogOptions::default()
        };
        let mut s = JobStats::new(&opts, 3, 10);
        for ms in [1, 2, 150, 300] {
            s.completed(io(ms, ms != 2, 20));
        }
        let h = [new_histogram(), new_histogram()];
        let (_, files) = s.finish(("j", 0, 0), 300_000_000, &h, &h, &h[0]);
        let names: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
        assert_eq!(
            names,
            [
                "x_lat.3.log",
                "x_clat.3.log",
                "x_slat.3.log",
                "x_iops.3.log",
                "x_clat_hist.3.log"
            ]
        );
        assert_eq!(files[1].text.lines().next(), Some("1, 20000, 0, 4096, 0"));
        assert_eq!(files[1].text.lines().nth(1), Some("2, 20000, 1, 4096, 0"));
        assert_eq!(
            files[2].text, "",
            "no submission latency of a synchronous engine"
        );
        assert_eq!(files[3].text.lines().count(), 4);
        // Reads at 1, 150 and 300 ms: entries at 150 (two) and 300 (one); a line has the
        // time, direction, block size and every bucket.
        let hist: Vec<&str> = files[4].text.lines().collect();
        assert_eq!(hist.len(), 2, "{hist:?}");
        let fields: Vec<&str> = hist[0].split(", ").collect();
        assert_eq!(fields.len(), 3 + plat::PLAT_NR);
        assert_eq!(&fields[..3], ["150", "0", "4096"]);
        let counted: u64 = fields[3..].iter().map(|n| n.parse::<u64>().unwrap()).sum();
        assert_eq!(counted, 2);
    }

    #[test]
    fn averaged_logs_have_one_entry_per_window() {
        let opts = LogOptions {
            lat: Some("a".into()),
            avg_msec: 100,
            max_value: true,
            ..LogOptions::default()
        };
        let mut s = JobStats::new(&opts, 1, 0);
        for (ms, us) in [(10, 5), (50, 9), (120, 7), (130, 1)] {
            s.completed(io(ms, true, us));
        }
        let h = [new_histogram(), new_histogram()];
        let (_, files) = s.finish(("j", 0, 0), 200_000_000, &h, &h, &h[0]);
        let lat: Vec<&str> = files[0].text.lines().collect();
        // The window of 10, 50 and 120 ms closes at 120 (its maximum, 9 µs); 130 ms's at
        // the end.
        assert_eq!(lat, ["120, 9000, 0, 0, 0", "200, 1000, 0, 0, 0"]);
    }
}

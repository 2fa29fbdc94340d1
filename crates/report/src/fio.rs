//! fio's own outputs of the io workload, as fio 3.33 lays them out: `normal` (which `fsbench
//! fio JOBFILE` prints before fsbench's tables), `json`, `json+` and `terse`, from the
//! records each run stored of each job thread. Per configuration, a suite's runs are pooled
//! as if one run: their I/Os, bytes, times and CPU added up, their latencies and rate
//! samples merged; with one run, the figures are that run's.

use std::fmt::Write;

use fsbench_measure::error::invalid;
use fsbench_model::results::SuiteResult;

mod json;
mod normal;
mod num2str;
mod ordered;
mod stat;
mod terse;

use stat::ThreadStat;

/// fio's default percentiles (`percentile_list`).
const PERCENTILE_LIST: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// What every format prints once: fsbench's version where fio prints its own, when the
/// suite ended, the job file's `[global]` options.
struct Header {
    version: String,
    /// C's ctime of the suite's end, without its newline.
    time: String,
    timestamp_ms: u64,
    /// The longest run's time, whole seconds (fio's `elapsed`).
    elapsed_secs: u64,
    global: Vec<(String, String)>,
}

impl Header {
    fn of(r: &SuiteResult, jobs: &[stat::PlacedJob]) -> Header {
        let end = chrono::DateTime::parse_from_rfc3339(&r.finished_at)
            .or_else(|_| chrono::DateTime::parse_from_rfc3339(&r.started_at))
            .map(|t| t.with_timezone(&chrono::Local));
        let (time, timestamp_ms) = match end {
            Ok(t) => (
                t.format("%a %b %e %H:%M:%S %Y").to_string(),
                t.timestamp_millis() as u64,
            ),
            Err(_) => (String::new(), 0),
        };
        let elapsed_ns = (r.runs.iter())
            .map(|run| {
                run.phases
                    .iter()
                    .map(|p| p.measurement.elapsed_ns)
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0);
        Header {
            version: format!("fsbench-{}", env!("CARGO_PKG_VERSION")),
            time,
            timestamp_ms,
            elapsed_secs: elapsed_ns.div_ceil(1_000_000_000),
            global: jobs
                .last()
                .map(|j| j.2.fio.global.clone())
                .unwrap_or_default(),
        }
    }
}

/// The stats of a suite, or why it has none.
fn stats(r: &SuiteResult) -> anyhow::Result<(Header, Vec<stat::PlacedJob>)> {
    let jobs = stat::jobs(r);
    if jobs.is_empty() {
        return Err(invalid(
            "this suite has no io workload to report as fio does (run `fsbench fio JOBFILE` or -w io:...)",
        ));
    }
    Ok((Header::of(r, &jobs), jobs))
}

/// `--output-format normal` (and `export --format fio`): fio's normal output, a line before
/// each configuration's where the suite has several configurations or runs.
pub(crate) fn normal(r: &SuiteResult) -> anyhow::Result<String> {
    let (header, jobs) = stats(r)?;
    let configs = stat::configs(r, &jobs);
    let infos: Vec<&stat::JobInfo> = jobs.iter().map(|j| &j.2).collect();
    let mut out = normal::job_lines(&infos, &header);
    let several = configs.len() > 1 || configs.iter().any(|c| c.runs > 1);
    for c in &configs {
        if several {
            let _ = write!(
                out,
                "\nfsbench: {}: {} run(s) pooled (I/Os, bytes and times added, latencies merged)\n",
                c.config, c.runs
            );
        }
        out.push_str(&normal::config(c, &header));
    }
    Ok(out)
}

/// What the terminal shows before fsbench's tables: fio's normal output of a job file's
/// jobs (nothing for io workloads of `fsbench run`).
pub(crate) fn render(r: &SuiteResult) -> String {
    let from_job_file = stat::jobs(r).iter().any(|j| j.2.params.fio.is_some());
    match normal(r) {
        Ok(text) if from_job_file => text + "\n",
        _ => String::new(),
    }
}

/// `--output-format json` and `json+`.
pub(crate) fn json(r: &SuiteResult, plus: bool) -> anyhow::Result<String> {
    let (header, jobs) = stats(r)?;
    Ok(json::document(&header, &stat::configs(r, &jobs), plus))
}

/// `--output-format terse`: fio's terse version 3, a line per stat.
pub(crate) fn terse(r: &SuiteResult) -> anyhow::Result<String> {
    let (header, jobs) = stats(r)?;
    let mut out = String::new();
    for c in stat::configs(r, &jobs) {
        for s in &c.stats {
            out.push_str(&terse::line(s, &c, &header));
        }
    }
    Ok(out)
}

/// fio's CPU percentages: the stat's CPU time over its threads' run time.
fn cpu(s: &ThreadStat) -> (f64, f64) {
    match s.run_ns {
        0 => (0.0, 0.0),
        run => (
            s.usr_ns as f64 * 100.0 / run as f64,
            s.sys_ns as f64 * 100.0 / run as f64,
        ),
    }
}

/// fio's latency distribution (`stat_calc_lat_*`) of a stat's completion latencies, in
/// percent of its I/Os (a bucket with any at least 0.01%).
fn distribution(s: &ThreadStat) -> ([f64; 10], [f64; 10], [f64; 12]) {
    let total: u64 = s.ios.iter().sum();
    let (mut n, mut u, mut m) = ([0u64; 10], [0u64; 10], [0u64; 12]);
    for l in s.clat.iter().flatten() {
        (0..10).for_each(|i| n[i] += l.nsec[i]);
        (0..10).for_each(|i| u[i] += l.usec[i]);
        (0..12).for_each(|i| m[i] += l.msec[i]);
    }
    let pct = |c: &u64| num2str::share(*c, total, 0.01);
    (n.map(|c| pct(&c)), u.map(|c| pct(&c)), m.map(|c| pct(&c)))
}

/// A thread's mean bandwidth (KiB/s) as a share of its group's (bytes/s), as fio's `per=`.
fn share_of_group(mean_kib: f64, agg: u64) -> f64 {
    if agg > 1024 {
        (mean_kib * 100.0 / (agg as f64 / 1024.0)).min(100.0)
    } else {
        100.0
    }
}

/// The mean of a steady state window's samples, as fio's `steadystate_*_mean` (whole).
fn steady_mean(samples: &[u64]) -> u64 {
    samples
        .iter()
        .sum::<u64>()
        .checked_div(samples.len() as u64)
        .unwrap_or(0)
}

/// fio's `latency_depth`, `latency_target` (ns), `latency_percentile` and `latency_window`
/// (µs) of a stat: its search's, or without a latency target the job's iodepth, 0, 100 and 0
/// (fio's depth limit is then its iodepth).
fn latency_search(s: &ThreadStat) -> (u64, u64, f64, u64) {
    match &s.latency_search {
        Some(l) => (u64::from(l.depth), l.target_ns, l.percentile, l.window_us),
        None => (u64::from(s.iodepth), 0, 100.0, 0),
    }
}

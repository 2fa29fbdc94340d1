//! fio's normal output (stat.c's `show_thread_status_normal` and `show_group_stats`): the
//! job lines, then each stat, then each group's "Run status group" lines. Disk statistics
//! are not printed: fsbench does not sample the disk as fio does.

use std::fmt::Write;

use fsbench_measure::fio::FioLatency;
use fsbench_model::measurement::FioSteadyState;
use fsbench_model::workload::WorkerMode;

use super::num2str::{SIG_FIGS, Unit, bandwidth, lat_unit, num2str, percentile_unit, share};
use super::stat::{ConfigStats, GroupStat, JobInfo, ThreadStat};
use super::{Header, PERCENTILE_LIST};

const DIRECTIONS: [&str; 3] = ["read", "write", "trim"];

/// The job lines fio prints as it starts: `NAME: (g=0): rw=…, bs=(R) …, ioengine=…,
/// iodepth=…`, `...` for a job's further copies; a cpuio job has no job line (its `...`
/// still), and each of its copies prints the engine's line as it starts, after fio's
/// "Starting" line.
pub(super) fn job_lines(jobs: &[&JobInfo], header: &Header) -> String {
    let mut out = String::new();
    let mut burns = String::new();
    // fio's backend.c counts each job's copies as threads (`thread`) or processes; under MPI
    // every rank's copies ran, as its stats count them.
    let mut workers = [0; 2];
    for job in jobs {
        let p = &job.params;
        workers[usize::from(p.workers == WorkerMode::Threads)] += job.copies;
        let further = if job.copies > 1 { "...\n" } else { "" };
        if let Some(burn) = &p.cpu_burn {
            let mode = if burn.qsort { "qsort" } else { "noop" };
            for _ in 0..job.copies {
                let _ = writeln!(
                    burns,
                    "{} ({mode}): ioengine=cpuio, cpuload={}, cpucycle={}",
                    job.name, burn.load, burn.chunk_us
                );
            }
            out.push_str(further);
            continue;
        }
        if let Some(exec) = &p.exec {
            // fio's exec engine prints its program as each copy starts, no job line.
            let arguments = exec.arguments.as_deref().unwrap_or("(null)");
            for _ in 0..job.copies {
                let _ = writeln!(
                    burns,
                    "{} : program={}, arguments={arguments}",
                    job.name, exec.program
                );
            }
            out.push_str(further);
            continue;
        }
        let sizes = p.bssplit.iter().map(|b| b.0);
        let (min, max) = (sizes.clone().min().unwrap_or(0), sizes.max().unwrap_or(0));
        let range = format!(
            "{}-{}",
            num2str(min, SIG_FIGS, true, Unit::Byte),
            num2str(max, SIG_FIGS, true, Unit::Byte)
        );
        let _ = writeln!(
            out,
            "{}: (g={}): rw={}, bs=(R) {range}, (W) {range}, (T) {range}, ioengine={}, iodepth={}",
            job.name,
            job.fio.groupid,
            p.rw.name(),
            p.engine.name(),
            p.iodepth
        );
        out.push_str(further);
    }
    let _ = writeln!(out, "{}", header.version);
    let _ = writeln!(out, "Starting {}", starting(workers));
    out + &burns
}

/// What fio's "Starting" line says of `processes` and `threads`: `2 threads`, `1 process`,
/// `1 thread and 3 processes`.
fn starting([processes, threads]: [u32; 2]) -> String {
    let mut said = Vec::new();
    if threads > 0 {
        said.push(format!(
            "{threads} thread{}",
            if threads > 1 { "s" } else { "" }
        ));
    }
    if processes > 0 {
        let plural = if processes > 1 { "es" } else { "" };
        said.push(format!("{processes} process{plural}"));
    }
    said.join(" and ")
}

/// One configuration's stats and groups.
pub(super) fn config(c: &ConfigStats, header: &Header) -> String {
    let mut out = String::from("\n");
    for s in &c.stats {
        if s.ios == [0; 3] {
            continue;
        }
        let g = c.groups.iter().find(|g| g.groupid == s.groupid);
        stat(&mut out, s, g, header);
    }
    for g in &c.groups {
        group(&mut out, g);
    }
    out
}

fn stat(out: &mut String, s: &ThreadStat, g: Option<&GroupStat>, header: &Header) {
    let err = match s.error {
        0 => format!("{:2}", 0),
        e => format!("{e:2} ({}, error={})", s.error_site, strerror(e)),
    };
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err={err}: pid={}: {}",
        s.name, s.groupid, s.members, s.pid, header.time
    );
    if let Some(desc) = &s.description {
        let _ = writeln!(out, "  Description  : [{desc}]");
    }
    for d in 0..3 {
        if s.bytes[d] > 0 && s.runtime_ms[d] > 0 {
            direction(out, s, d, g);
        }
    }
    latencies(out, s);
    if let Some(sync) = &s.sync {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        lat_line(out, "sync", sync);
        percentiles(out, "sync", sync);
    }
    let (usr, sys) = super::cpu(s);
    let _ = writeln!(
        out,
        "  cpu          : usr={usr:.2}%, sys={sys:.2}%, ctx={}, majf={}, minf={}",
        s.ctx, s.majf, s.minf
    );
    let depth = |counts: &[u64; 7], total: u64| -> Vec<String> {
        counts
            .iter()
            .map(|c| format!("{:.1}%", share(*c, total, 0.1)))
            .collect()
    };
    let d = depth(&s.depth, s.ios.iter().sum::<u64>());
    let _ = writeln!(
        out,
        "  IO depths    : 1={}, 2={}, 4={}, 8={}, 16={}, 32={}, >=64={}",
        d[0], d[1], d[2], d[3], d[4], d[5], d[6]
    );
    for (name, counts) in [("submit", &s.submit), ("complete", &s.complete)] {
        let d = depth(counts, counts.iter().sum());
        let _ = writeln!(
            out,
            "     {name:<10}: 0={}, 4={}, 8={}, 16={}, 32={}, 64={}, >=64={}",
            d[0], d[1], d[2], d[3], d[4], d[5], d[6]
        );
    }
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short=0,0,0,0 dropped=0,0,0,0",
        s.ios[0], s.ios[1], s.ios[2], s.syncs
    );
    if s.continue_on_error {
        let _ = writeln!(
            out,
            "     errors    : total={}, first_error={}/<{}>",
            s.total_err,
            s.first_error,
            strerror(s.first_error)
        );
    }
    let (depth, target, percentile, window) = super::latency_search(s);
    let _ = writeln!(
        out,
        "     latency   : target={target}, window={window}, percentile={percentile:.2}%, depth={depth}"
    );
    if let Some(ss) = &s.steadystate {
        steady_line(out, ss);
    }
}

/// fio's steady state line (`show_ss_normal`).
fn steady_line(out: &mut String, ss: &FioSteadyState) {
    let (bw, bw_alt) = bandwidth(super::steady_mean(&ss.bw_samples));
    let iops = num2str(
        super::steady_mean(&ss.iops_samples),
        SIG_FIGS,
        false,
        Unit::None,
    );
    let _ = writeln!(
        out,
        "  steadystate  : attained={}, bw={bw} ({bw_alt}), iops={iops}, {}{}={:.3}{}",
        if ss.attained { "yes" } else { "no" },
        if ss.iops { "iops" } else { "bw" },
        if ss.by_slope { " slope" } else { " mean dev" },
        ss.criterion,
        if ss.percent { "%" } else { "" }
    );
}

/// A direction's lines (fio's `show_ddir_status`).
fn direction(out: &mut String, s: &ThreadStat, d: usize, g: Option<&GroupStat>) {
    let run = s.runtime_ms[d];
    let bw = s.bytes[d] * 1000 / run;
    let (bw_p, bw_alt) = bandwidth(bw);
    let iops = num2str(1000 * s.ios[d] / run, SIG_FIGS, false, Unit::None);
    let io = num2str(s.bytes[d], SIG_FIGS, true, Unit::Byte);
    let resets = if d == 1 { "; 0 zone resets" } else { "" };
    let _ = writeln!(
        out,
        "  {}: IOPS={iops}, BW={bw_p} ({bw_alt})({io}/{run}msec){resets}",
        DIRECTIONS[d]
    );
    for (name, l) in [
        ("slat", &s.slat[d]),
        ("clat", &s.clat[d]),
        (" lat", &s.lat[d]),
    ] {
        if let Some(l) = l {
            lat_line(out, name, l);
        }
    }
    // fio prints each priority's where two or more had I/Os.
    let prios = s.clat_prio.get(d).filter(|p| p.len() >= 2);
    for (prio, l) in prios.into_iter().flatten() {
        lat_line(out, &format!("clat prio {}/{}", prio >> 13, prio & 7), l);
    }
    if let Some(clat) = &s.clat[d] {
        percentiles(out, "clat", clat);
        for (prio, l) in prios.into_iter().flatten() {
            let share = 100.0 * l.n as f64 / clat.n.max(1) as f64;
            let name = format!("clat prio {}/{} ({share:.2}% of IOs)", prio >> 13, prio & 7);
            percentiles(out, &name, l);
        }
    }
    let agg = g.map_or(0, |g| g.agg[d]);
    let bw = &s.bw[d];
    if bw.samples > 0 {
        let per = super::share_of_group(bw.mean, agg);
        let (mut unit, mut div) = ("KiB", 1.0);
        if bw.mean > 1024.0 * 1024.0 {
            (unit, div) = ("MiB", 1024.0);
        }
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={:5}, max={:5}, per={per:3.2}%, avg={:5.02}, stdev={:5.02}, samples={}",
            (bw.min as f64 / div) as u64,
            (bw.max as f64 / div) as u64,
            bw.mean / div,
            bw.stdev() / div,
            bw.samples
        );
    }
    let iops = &s.iops[d];
    if iops.samples > 0 {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.02}, stdev={:5.02}, samples={}",
            iops.min,
            iops.max,
            iops.mean,
            iops.stdev(),
            iops.samples
        );
    }
}

/// `    clat (usec): min=…, max=…, avg=…, stdev=…` (fio's `display_lat`).
fn lat_line(out: &mut String, name: &str, l: &FioLatency) {
    let (unit, div) = lat_unit(l.min, l.max, l.stdev);
    let min = num2str(l.min / div, 6, false, Unit::None);
    let max = num2str(l.max / div, 6, false, Unit::None);
    let (mean, dev) = (l.mean / div as f64, l.stdev / div as f64);
    let _ = writeln!(
        out,
        "    {name} ({unit}): min={min}, max={max}, avg={mean:5.02}, stdev={dev:5.02}"
    );
}

/// The percentile table (fio's `show_clat_percentiles`), in the unit fio picks.
fn percentiles(out: &mut String, name: &str, l: &FioLatency) {
    let values = l.percentiles(&PERCENTILE_LIST);
    let (Some(min), Some(max)) = (values.iter().min(), values.iter().max()) else {
        return;
    };
    let (unit, div) = percentile_unit(*min, *max);
    let _ = write!(out, "    {name} percentiles ({unit}):\n     |");
    let width = 5.max(((max / div) as f64).log10() as usize + 1);
    let per_line = (80 - 7) / (2 + 10 + width);
    let last = values.len() - 1;
    for (j, (q, v)) in PERCENTILE_LIST.iter().zip(&values).enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let mut v = *v;
        for _ in 0..(div.ilog10() / 3) {
            v = v.div_ceil(1000);
        }
        let end = if j == last { '\n' } else { ',' };
        let _ = write!(out, " {q:5.2}th=[{v:width$}]{end}");
        if j != last && j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// The latency distribution lines (fio's `show_latencies`): each unit's non-empty shares,
/// five to a line.
fn latencies(out: &mut String, s: &ThreadStat) {
    let (n, u, m) = super::distribution(s);
    let bounds = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    let ms_bounds = [&bounds[..], &["2000", ">=2000"]].concat();
    for (unit, shares, names) in [
        ("nsec", &n[..], &bounds[..]),
        ("usec", &u[..], &bounds[..]),
        ("msec", &m[..], &ms_bounds[..]),
    ] {
        let shown: Vec<String> = (names.iter().zip(shares))
            .filter(|(_, v)| **v > 0.0)
            .map(|(k, v)| format!("{k}={v:3.2}%"))
            .collect();
        for line in shown.chunks(5) {
            let _ = writeln!(out, "  lat ({unit})   : {}", line.join(", "));
        }
    }
}

/// A group's status lines (fio's `show_group_stats`).
fn group(out: &mut String, g: &GroupStat) {
    let _ = writeln!(out, "\nRun status group {} (all jobs):", g.groupid);
    for (d, name) in ["   READ", "  WRITE", "   TRIM"].into_iter().enumerate() {
        if g.max_run[d] == 0 {
            continue;
        }
        let (agg, agg_alt) = bandwidth(g.agg[d]);
        let (min, min_alt) = bandwidth(g.min_bw[d]);
        let (max, max_alt) = bandwidth(g.max_bw[d]);
        let io = num2str(g.iobytes[d], SIG_FIGS, true, Unit::Byte);
        let io_alt = num2str(g.iobytes[d], SIG_FIGS, false, Unit::Byte);
        let _ = writeln!(
            out,
            "{name}: bw={agg} ({agg_alt}), {min}-{max} ({min_alt}-{max_alt}), io={io} ({io_alt}), run={}-{}msec",
            g.min_run[d], g.max_run[d]
        );
    }
}

/// The C library's text of an errno, as fio prints it (`strerror`).
fn strerror(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno)
        .to_string()
        .split(" (os error")
        .next()
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    /// fio 3.33's backend.c: threads, then processes, each with its plural.
    #[test]
    fn the_starting_line_counts_threads_and_processes_as_fio_does() {
        assert_eq!(super::starting([1, 0]), "1 process");
        assert_eq!(super::starting([0, 1]), "1 thread");
        assert_eq!(super::starting([3, 0]), "3 processes");
        assert_eq!(super::starting([0, 2]), "2 threads");
        assert_eq!(super::starting([3, 1]), "1 thread and 3 processes");
    }
}

//! fio's terse output, version 3 (stat.c's `show_thread_status_terse_all`): one line of
//! `;`-separated fields per stat, in fio's order. Latencies are in microseconds, disk
//! statistics are left out (fsbench does not sample the disk as fio does).

use std::fmt::Write;

use fsbench_measure::fio::FioLatency;

use super::stat::{ConfigStats, ThreadStat};
use super::{Header, PERCENTILE_LIST};

/// fio's percentile fields: always this many, the unused ones `0%=0`.
const LIST_MAX: usize = 20;

pub(super) fn line(s: &ThreadStat, c: &ConfigStats, header: &Header) -> String {
    let mut out = format!("3;{};{};{};{}", header.version, s.name, s.groupid, s.error);
    let g = c.groups.iter().find(|g| g.groupid == s.groupid);
    // Version 3 has no trim fields, as fio's.
    for d in 0..2 {
        direction(&mut out, s, d, g.map_or(0, |g| g.agg[d]));
    }
    let (usr, sys) = super::cpu(s);
    let _ = write!(out, ";{usr:.6}%;{sys:.6}%;{};{};{}", s.ctx, s.majf, s.minf);
    let total: u64 = s.ios.iter().sum();
    for c in &s.depth {
        let _ = write!(out, ";{:.1}%", super::num2str::share(*c, total, 0.1));
    }
    // As fio's terse format: the nanosecond buckets counted in the first microsecond one.
    let (n, mut u, m) = super::distribution(s);
    u[0] += n.iter().sum::<f64>();
    for v in u.iter().chain(&m) {
        let _ = write!(out, ";{v:.2}%");
    }
    if s.continue_on_error {
        let _ = write!(out, ";{};{}", s.total_err, s.first_error);
    }
    out.push('\n');
    out
}

/// A direction's fields (fio's `show_ddir_status_terse`); `agg` is its group's bandwidth.
fn direction(out: &mut String, s: &ThreadStat, d: usize, agg: u64) {
    let run = s.runtime_ms[d];
    let (bw, iops) = match run {
        0 => (0, 0),
        run => (s.bytes[d] * 1000 / run / 1024, 1000 * s.ios[d] / run),
    };
    let _ = write!(out, ";{};{bw};{iops};{run}", s.bytes[d] >> 10);
    usec(out, s.slat[d].as_ref());
    usec(out, s.clat[d].as_ref());
    let values = s.clat[d].as_ref().map_or_else(
        || vec![0; PERCENTILE_LIST.len()],
        |l| l.percentiles(&PERCENTILE_LIST),
    );
    for i in 0..LIST_MAX {
        match (PERCENTILE_LIST.get(i), values.get(i)) {
            (Some(q), Some(v)) => {
                let _ = write!(out, ";{q:.6}%={}", v / 1000);
            }
            _ => out.push_str(";0%=0"),
        }
    }
    usec(out, s.lat[d].as_ref());
    let b = &s.bw[d];
    if b.samples == 0 {
        out.push_str(";0;0;0.000000%;0.000000;0.000000");
        return;
    }
    // fio divides the group's bandwidth to KiB/s in integers here.
    let per = match agg / 1024 {
        0 => 100.0,
        kib => (b.mean * 100.0 / kib as f64).min(100.0),
    };
    let _ = write!(
        out,
        ";{};{};{per:.6}%;{:.6};{:.6}",
        b.min,
        b.max,
        b.mean,
        b.stdev()
    );
}

/// `;min;max;mean;stdev` in microseconds, zeros without a latency.
fn usec(out: &mut String, l: Option<&FioLatency>) {
    match l {
        Some(l) => {
            let _ = write!(
                out,
                ";{};{};{:.6};{:.6}",
                l.min / 1000,
                l.max / 1000,
                l.mean / 1000.0,
                l.stdev / 1000.0
            );
        }
        None => out.push_str(";0;0;0.000000;0.000000"),
    }
}

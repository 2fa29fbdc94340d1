//! fio's `--output-format=json` and `json+` (stat.c's `show_thread_status_json`): every key
//! fio writes, in its order; what fsbench does not measure holds fio's neutral value (no
//! short or dropped I/Os, no disk statistics). Each job entry
//! ends with an `fsbench` object naming its configuration and the runs pooled in it.

use fsbench_measure::fio::FioLatency;
use fsbench_model::measurement::{FioSteadyState, SampleStats};

use super::ordered::J;
use super::stat::{ConfigStats, GroupStat, ThreadStat};
use super::{Header, PERCENTILE_LIST};

/// The document, `bins` in each latency with percentiles for json+.
pub(super) fn document(header: &Header, configs: &[ConfigStats], plus: bool) -> String {
    let mut jobs = Vec::new();
    for c in configs {
        for s in &c.stats {
            let g = c.groups.iter().find(|g| g.groupid == s.groupid);
            let mut entry = job(s, g, header, plus);
            if let J::Obj(pairs) = &mut entry {
                pairs.push((
                    "fsbench".into(),
                    J::Obj(vec![
                        ("configuration".into(), J::str(c.config)),
                        ("runs".into(), J::int(c.runs as u64)),
                    ]),
                ));
            }
            jobs.push(entry);
        }
    }
    let options = |list: &[(String, String)]| {
        J::Obj(list.iter().map(|(k, v)| (k.clone(), J::str(v))).collect())
    };
    let mut top = vec![
        ("fio version".into(), J::str(&header.version)),
        ("timestamp".into(), J::int(header.timestamp_ms / 1000)),
        ("timestamp_ms".into(), J::int(header.timestamp_ms)),
        ("time".into(), J::str(&header.time)),
    ];
    if !header.global.is_empty() {
        top.push(("global options".into(), options(&header.global)));
    }
    top.push(("jobs".into(), J::Arr(jobs)));
    top.push(("disk_util".into(), J::Arr(Vec::new())));
    J::Obj(top).print()
}

/// One stat's entry of `jobs` (fio's `show_thread_status_json`).
fn job(s: &ThreadStat, g: Option<&GroupStat>, header: &Header, plus: bool) -> J {
    let mut pairs = vec![
        ("jobname".into(), J::str(&s.name)),
        ("groupid".into(), J::int(s.groupid)),
        ("error".into(), J::int(s.error)),
        ("eta".into(), J::int(0)),
        ("elapsed".into(), J::int(header.elapsed_secs)),
    ];
    if !s.options.is_empty() {
        let options = s
            .options
            .iter()
            .map(|(k, v)| (k.clone(), J::str(v)))
            .collect();
        pairs.push(("job options".into(), J::Obj(options)));
    }
    for (d, dir) in ["read", "write", "trim"].into_iter().enumerate() {
        pairs.push((dir.into(), direction(s, d, g, plus)));
    }
    pairs.push((
        "sync".into(),
        J::Obj(vec![
            ("total_ios".into(), J::int(s.syncs)),
            ("lat_ns".into(), latency(s.sync.as_ref(), true, plus)),
        ]),
    ));
    let (usr, sys) = super::cpu(s);
    pairs.extend([
        ("job_runtime".into(), J::int(s.run_ns / 1_000_000)),
        ("usr_cpu".into(), J::Float(usr)),
        ("sys_cpu".into(), J::Float(sys)),
        ("ctx".into(), J::int(s.ctx)),
        ("majf".into(), J::int(s.majf)),
        ("minf".into(), J::int(s.minf)),
    ]);
    pairs.extend(distributions(s));
    if s.continue_on_error {
        pairs.push(("total_err".into(), J::int(s.total_err)));
        pairs.push(("first_error".into(), J::int(s.first_error)));
    }
    let (depth, target, percentile, window) = super::latency_search(s);
    pairs.extend([
        ("latency_depth".into(), J::int(depth)),
        ("latency_target".into(), J::int(target)),
        ("latency_percentile".into(), J::Float(percentile)),
        ("latency_window".into(), J::int(window)),
    ]);
    if let Some(desc) = &s.description {
        pairs.push(("desc".into(), J::str(desc)));
    }
    if let Some(ss) = &s.steadystate {
        pairs.push(("steadystate".into(), steadystate(ss)));
    }
    J::Obj(pairs)
}

/// fio's `steadystate` object: the criterion, whether attained, the window's samples.
fn steadystate(ss: &FioSteadyState) -> J {
    let samples = |v: &[u64]| J::Arr(v.iter().map(|n| J::int(*n)).collect());
    let pct = if ss.percent { "%" } else { "" };
    J::Obj(vec![
        ("ss".into(), J::str(&ss.ss)),
        ("duration".into(), J::int(ss.duration)),
        ("attained".into(), J::int(u8::from(ss.attained))),
        (
            "criterion".into(),
            J::str(format!("{:.6}{pct}", ss.criterion as f32)),
        ),
        ("max_deviation".into(), J::Float(ss.max_deviation)),
        ("slope".into(), J::Float(ss.slope)),
        (
            "data".into(),
            J::Obj(vec![
                ("bw_mean".into(), J::int(super::steady_mean(&ss.bw_samples))),
                (
                    "iops_mean".into(),
                    J::int(super::steady_mean(&ss.iops_samples)),
                ),
                ("iops".into(), samples(&ss.iops_samples)),
                ("bw".into(), samples(&ss.bw_samples)),
            ]),
        ),
    ])
}

/// fio's distributions of a stat: queue depths, I/Os per submit and per reap, and
/// completion latencies, in percent.
fn distributions(s: &ThreadStat) -> Vec<(String, J)> {
    let mut out = Vec::new();
    let ios: u64 = s.ios.iter().sum();
    let dist = |counts: &[u64; 7], total: u64, names: [&str; 7]| {
        J::Obj(
            (names.iter().zip(counts))
                .map(|(n, c)| ((*n).into(), J::Float(super::num2str::share(*c, total, 0.1))))
                .collect(),
        )
    };
    let levels = ["1", "2", "4", "8", "16", "32", ">=64"];
    let counts = ["0", "4", "8", "16", "32", "64", ">=64"];
    out.push(("iodepth_level".into(), dist(&s.depth, ios, levels)));
    out.push((
        "iodepth_submit".into(),
        dist(&s.submit, s.submit.iter().sum(), counts),
    ));
    out.push((
        "iodepth_complete".into(),
        dist(&s.complete, s.complete.iter().sum(), counts),
    ));
    let (n, u, m) = super::distribution(s);
    let bounds = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    let shares = |values: &[f64], names: &[&str]| {
        J::Obj(
            names
                .iter()
                .zip(values)
                .map(|(k, v)| ((*k).into(), J::Float(*v)))
                .collect(),
        )
    };
    out.push(("latency_ns".into(), shares(&n, &bounds)));
    out.push(("latency_us".into(), shares(&u, &bounds)));
    let ms_bounds = [&bounds[..], &["2000", ">=2000"]].concat();
    out.push(("latency_ms".into(), shares(&m, &ms_bounds)));
    out
}

/// One direction's figures (fio's `add_ddir_status_json`).
fn direction(s: &ThreadStat, d: usize, g: Option<&GroupStat>, plus: bool) -> J {
    let runtime = s.runtime_ms[d];
    let (bw_bytes, iops) = match runtime {
        0 => (0, 0.0),
        run => (
            s.bytes[d] * 1000 / run,
            1000.0 * s.ios[d] as f64 / run as f64,
        ),
    };
    let mut pairs = vec![
        ("io_bytes".into(), J::int(s.bytes[d])),
        ("io_kbytes".into(), J::int(s.bytes[d] >> 10)),
        ("bw_bytes".into(), J::int(bw_bytes)),
        ("bw".into(), J::int(bw_bytes / 1024)),
        ("iops".into(), J::Float(iops)),
        ("runtime".into(), J::int(runtime)),
        ("total_ios".into(), J::int(s.ios[d])),
        ("short_ios".into(), J::int(0)),
        ("drop_ios".into(), J::int(0)),
        ("slat_ns".into(), latency(s.slat[d].as_ref(), false, plus)),
        ("clat_ns".into(), latency(s.clat[d].as_ref(), true, plus)),
        ("lat_ns".into(), latency(s.lat[d].as_ref(), false, plus)),
    ];
    // fio's `prios` where two or more priorities had I/Os: each one's class, level and
    // completion latency.
    if let Some(prios) = s.clat_prio.get(d).filter(|p| p.len() >= 2) {
        let each = (prios.iter())
            .map(|(prio, l)| {
                J::Obj(vec![
                    ("prioclass".into(), J::int(u64::from(prio >> 13))),
                    ("prio".into(), J::int(u64::from(prio & 7))),
                    ("clat_ns".into(), latency(Some(l), true, plus)),
                ])
            })
            .collect();
        pairs.push(("prios".into(), J::Arr(each)));
    }
    let agg = g.map_or(0, |g| g.agg[d]);
    pairs.extend(rates(&s.bw[d], &s.iops[d], agg));
    J::Obj(pairs)
}

/// The bandwidth and IOPS samples' keys; `agg` is the group's bandwidth (bytes/s).
fn rates(bw: &SampleStats, iops: &SampleStats, agg: u64) -> Vec<(String, J)> {
    let per = if bw.samples == 0 {
        0.0
    } else {
        super::share_of_group(bw.mean, agg)
    };
    vec![
        ("bw_min".into(), J::int(bw.min)),
        ("bw_max".into(), J::int(bw.max)),
        ("bw_agg".into(), J::Float(per)),
        ("bw_mean".into(), J::Float(bw.mean)),
        ("bw_dev".into(), J::Float(bw.stdev())),
        ("bw_samples".into(), J::int(bw.samples)),
        ("iops_min".into(), J::int(iops.min)),
        ("iops_max".into(), J::int(iops.max)),
        ("iops_mean".into(), J::Float(iops.mean)),
        ("iops_stddev".into(), J::Float(iops.stdev())),
        ("iops_samples".into(), J::int(iops.samples)),
    ]
}

/// A latency object (fio's `add_ddir_lat_json`): percentiles where fio computes them, their
/// `bins` in json+.
fn latency(l: Option<&FioLatency>, percentiles: bool, plus: bool) -> J {
    let Some(l) = l else {
        return J::Obj(vec![
            ("min".into(), J::int(0)),
            ("max".into(), J::int(0)),
            ("mean".into(), J::Float(0.0)),
            ("stddev".into(), J::Float(0.0)),
            ("N".into(), J::int(0)),
        ]);
    };
    let mut pairs = vec![
        ("min".into(), J::int(l.min)),
        ("max".into(), J::int(l.max)),
        ("mean".into(), J::Float(l.mean)),
        ("stddev".into(), J::Float(l.stdev)),
        ("N".into(), J::int(l.n)),
    ];
    if percentiles {
        let values = l.percentiles(&PERCENTILE_LIST);
        let p = (PERCENTILE_LIST.iter().zip(values))
            .map(|(q, v)| (format!("{q:.6}"), J::int(v)))
            .collect();
        pairs.push(("percentile".into(), J::Obj(p)));
        if plus {
            let bins = l.bins().map(|(v, n)| (v.to_string(), J::int(n))).collect();
            pairs.push(("bins".into(), J::Obj(bins)));
        }
    }
    J::Obj(pairs)
}

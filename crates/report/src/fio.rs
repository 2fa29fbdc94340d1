//! fio's own outputs for the io workload: the per-job summary a fio user reads (`fsbench fio
//! JOBFILE` prints it before fsbench's tables) and `fsbench export ID --format fio-json`,
//! fio's `--output-format=json` layout. Per configuration and job, IOPS and bandwidth are
//! fsbench's means over the successful runs, latency percentiles those of all the runs'
//! I/Os together (their histograms merged).

use std::fmt::Write;

use serde_json::{Map, Value, json};

use fsbench_measure::error::invalid;
use fsbench_measure::measure::LatencySummaryExt;
use fsbench_model::measurement::{Dim, DimValue, LatencySummary};
use fsbench_model::results::{RunRecord, RunStatus, SuiteResult};
use fsbench_workloads::io::{IoParams, PERCENTILES};

const DIRECTIONS: [&str; 2] = ["read", "write"];

/// One job on one configuration, as the outputs need it.
struct JobView<'a> {
    label: String,
    config: &'a str,
    params: IoParams,
    group: usize,
    /// Whether the job ran beside others of its job file (its figures carry its name).
    beside_others: bool,
    r: &'a SuiteResult,
}

impl JobView<'_> {
    fn mean(&self, metric: &str, dims: &[Dim]) -> Option<f64> {
        self.r
            .summaries
            .iter()
            .find(|s| {
                s.config == self.config
                    && s.workload == self.label
                    && s.phase == "io"
                    && s.metric == metric
                    && s.dims == dims
            })
            .map(|s| s.summary.mean)
    }

    fn rate(&self, metric: &str, dir: &str) -> Option<f64> {
        let direction = Dim::new("direction", DimValue::Text(dir.into()));
        match self.own_name() {
            Some(job) => self.mean(metric, &[Dim::new("job", DimValue::Text(job)), direction]),
            None => self.mean(metric, &[direction]),
        }
    }

    /// The job's name in its figures and latencies, where it ran beside others.
    fn own_name(&self) -> Option<String> {
        self.beside_others
            .then(|| self.params.job.clone())
            .flatten()
    }

    /// The job's successful runs on its configuration.
    fn ok_runs(&self) -> impl Iterator<Item = &RunRecord> {
        self.r.runs.iter().filter(|run| {
            run.config == self.config && run.workload == self.label && run.status == RunStatus::Ok
        })
    }

    /// The latency histogram `name` of every successful run, merged.
    fn latency(&self, name: &str) -> Option<LatencySummary> {
        let parts: Vec<&LatencySummary> = self
            .ok_runs()
            .filter_map(|run| {
                let io = run.phases.iter().find(|p| p.name == "io")?;
                match self.own_name() {
                    Some(job) => io.measurement.latency.get(&format!("{job}: {name}")),
                    None => io.measurement.latency.get(name),
                }
            })
            .collect();
        LatencySummary::merge(parts)
    }

    fn runs(&self) -> usize {
        self.ok_runs().count()
    }
}

/// Every job of every io workload of `r` on every configuration, in order; a job's group is
/// its workload's place (jobs that ran at the same time are one group, as in fio).
fn jobs(r: &SuiteResult) -> Vec<JobView<'_>> {
    let mut out = Vec::new();
    let typed = crate::typed_workloads(r);
    for c in &r.configurations {
        let ios = (typed.iter())
            .filter_map(|(label, w)| Some((label.clone(), w.get::<IoParams>()?.clone())));
        for (group, (label, params)) in ios.enumerate() {
            let beside_others = !params.beside.is_empty();
            for job in params.jobs() {
                out.push(JobView {
                    label: label.clone(),
                    config: &c.config.label,
                    params: IoParams {
                        beside: Vec::new(),
                        ..job.clone()
                    },
                    group,
                    beside_others,
                    r,
                });
            }
        }
    }
    out
}

/// Three significant digits: `1.07`, `10.7`, `107`.
fn sig3(v: f64) -> String {
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}")
}

/// fio's num2str: a count with three significant digits and k, M, G.
fn short(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{}G", sig3(v / 1e9)),
        v if v >= 1e6 => format!("{}M", sig3(v / 1e6)),
        v if v >= 1e3 => format!("{}k", sig3(v / 1e3)),
        v => format!("{v:.0}"),
    }
}

/// Bandwidth as fio prints it: `145MiB/s (152MB/s)`.
fn bandwidth(kib_per_sec: f64) -> String {
    let bytes = kib_per_sec * 1024.0;
    let binary = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    let decimal = [(1e9, "GB"), (1e6, "MB"), (1e3, "kB")];
    let b = binary
        .iter()
        .find(|(s, _)| bytes >= *s as f64)
        .map_or(format!("{bytes:.0}B"), |(s, u)| {
            format!("{}{u}", short(bytes / *s as f64))
        });
    let d = decimal
        .iter()
        .find(|(s, _)| bytes >= *s)
        .map_or(format!("{bytes:.0}B"), |(s, u)| {
            format!("{}{u}", short(bytes / s))
        });
    format!("{b}/s ({d}/s)")
}

/// `fsbench export --format fio`: the summary, refused for a suite without a job file's jobs.
pub(crate) fn summary(r: &SuiteResult) -> anyhow::Result<String> {
    if !jobs(r).iter().any(|j| j.params.job.is_some()) {
        return Err(invalid(
            "this suite has no job of a fio job file to summarize as fio does (run `fsbench fio JOBFILE`)",
        ));
    }
    Ok(render(r))
}

/// The summary fio prints for each job and group, for the jobs of a job file: each job's
/// lines, then its run status group's (jobs that ran at the same time are one group).
pub(crate) fn render(r: &SuiteResult) -> String {
    let mut out = String::new();
    let jobs: Vec<JobView> = jobs(r)
        .into_iter()
        .filter(|j| j.params.job.is_some() && j.runs() > 0)
        .collect();
    for (i, job) in jobs.iter().enumerate() {
        let n = job.runs();
        let name = job.params.job.as_deref().unwrap_or_default();
        let _ = writeln!(out, "fio's summary: {name} on {}, {n} run(s)", job.config);
        let _ = writeln!(
            out,
            "{name}: (groupid={}, jobs={})",
            job.group, job.params.numjobs
        );
        for dir in DIRECTIONS {
            let (Some(iops), Some(bw)) = (job.rate("iops", dir), job.rate("bw", dir)) else {
                continue;
            };
            let _ = writeln!(out, "  {dir}: IOPS={}, BW={}", short(iops), bandwidth(bw));
            if let Some(clat) = job.latency(&format!("{dir} clat")).and_then(|l| l.decode()) {
                let _ = writeln!(out, "    clat percentiles (usec):");
                let cells: Vec<String> = PERCENTILES
                    .iter()
                    .map(|q| format!("{q:5.2}th=[{:5}]", clat.value_at_percentile(*q) / 1000))
                    .collect();
                for row in cells.chunks(4) {
                    let _ = writeln!(out, "     | {},", row.join(", "));
                }
            }
        }
        let next = jobs.get(i + 1);
        if next.is_some_and(|next| next.group == job.group && next.config == job.config) {
            continue;
        }
        let _ = writeln!(
            out,
            "\nRun status group {} (all jobs): means of {n} run(s)",
            job.group
        );
        for dir in DIRECTIONS {
            // The group's bandwidth: all its jobs' bytes over its time.
            let at = [Dim::new("direction", DimValue::Text(dir.into()))];
            if let Some(bw) = job.mean("bw", &at) {
                let _ = writeln!(out, "  {:>5}: bw={}", dir.to_uppercase(), bandwidth(bw));
            }
        }
        out.push('\n');
    }
    out
}

/// fio's `--output-format=json` latency block from a histogram in nanoseconds.
fn latency_json(l: Option<LatencySummary>) -> Value {
    let Some(h) = l.as_ref().and_then(LatencySummary::decode) else {
        return json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0});
    };
    let percentile: Map<String, Value> = PERCENTILES
        .iter()
        .map(|q| (format!("{q:.6}"), json!(h.value_at_percentile(*q))))
        .collect();
    json!({
        "min": h.min(),
        "max": h.max(),
        "mean": h.mean(),
        "stddev": h.stdev(),
        "N": h.len(),
        "percentile": percentile,
    })
}

/// The job's options under fio's names, as fio's `job options` holds them (strings).
fn options(p: &IoParams) -> Value {
    let bs: Vec<String> = p
        .bssplit
        .iter()
        .map(|(s, pct)| format!("{s}/{pct}"))
        .collect();
    json!({
        "rw": p.rw.name(),
        "bssplit": bs.join(":"),
        "size": p.size.to_string(),
        "filesize": p.filesize.to_string(),
        "nrfiles": p.nrfiles.to_string(),
        "numjobs": p.numjobs.to_string(),
        "ioengine": p.engine.name(),
        "iodepth": p.iodepth.to_string(),
        "direct": u8::from(p.direct).to_string(),
        "rate_iops": p.rate_iops.to_string(),
    })
}

/// `fsbench export ID --format fio-json`: one fio job per configuration and io workload.
pub(crate) fn json(r: &SuiteResult) -> anyhow::Result<String> {
    let jobs = jobs(r);
    if jobs.is_empty() {
        return Err(invalid(
            "this suite has no io workload to export as fio's JSON (run `fsbench fio JOBFILE` or -w io:...)",
        ));
    }
    let entries: Vec<Value> = jobs
        .iter()
        .map(|job| {
            let mut entry = json!({
                "jobname": job.params.job.clone().unwrap_or_else(|| job.label.clone()),
                "groupid": job.group,
                "error": 0,
                "job options": options(&job.params),
                "fsbench": {"configuration": job.config, "workload": job.label, "runs": job.runs()},
            });
            for dir in DIRECTIONS {
                let iops = job.rate("iops", dir).unwrap_or(0.0);
                let bw = job.rate("bw", dir).unwrap_or(0.0);
                let clat = job.latency(&format!("{dir} clat"));
                let ios = clat.as_ref().map_or(0, |c| c.count);
                entry[dir] = json!({
                    "iops": iops,
                    "bw": bw.round() as u64,
                    "bw_bytes": (bw * 1024.0).round() as u64,
                    "total_ios": ios,
                    "clat_ns": latency_json(clat),
                    "slat_ns": latency_json(job.latency(&format!("{dir} slat"))),
                    "lat_ns": latency_json(job.latency(dir)),
                });
            }
            entry
        })
        .collect();
    let doc = json!({
        "fio version": format!("fsbench-{}", env!("CARGO_PKG_VERSION")),
        "timestamp": chrono::DateTime::parse_from_rfc3339(&r.started_at).map_or(0, |t| t.timestamp()),
        "jobs": entries,
    });
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}

//! Terminal tables: per workload, the fdtree article's two tables (phase times and rates, one
//! row per configuration, mean ± stddev), then the full statistics, latency and lifecycle.

use std::fmt::Write;

use comfy_table::{CellAlignment, Table, presets};

use super::figure;
use crate::results::{MetricSummary, RunStatus, SuiteResult};
use crate::stats::Summary;
use crate::units::format_bytes;

fn new_table(header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    t.set_header(header);
    t
}

fn right_align(t: &mut Table) {
    for i in 1..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// `mean ± stddev`, or the lone value of a single run.
fn mean_sd(s: &Summary) -> String {
    match s.stddev {
        Some(sd) => format!("{} ± {}", figure(s.mean), figure(sd)),
        None => figure(s.mean),
    }
}

/// Short-phase marker used in the tables and explained below them.
const SHORT: &str = " †";

pub fn render(r: &SuiteResult) -> String {
    let mut out = String::new();
    let s = &r.system;
    let _ = writeln!(
        out,
        "fsbench {} — suite `{}`",
        s.fsbench_version, r.suite.name
    );
    let purpose = if r.suite.purpose.is_empty() {
        "(none stated)"
    } else {
        &r.suite.purpose
    };
    let _ = writeln!(out, "Purpose: {purpose}");
    let _ = writeln!(
        out,
        "System:  Linux {} {}, {} ({} CPUs), {} RAM",
        s.kernel_release,
        s.arch,
        s.cpu_model,
        s.cpus,
        format_bytes(s.memory_bytes)
    );
    let _ = write!(out, "Target:  {}", r.target.description);
    if let Some(d) = &r.target.device {
        let rot = match d.rotational {
            Some(true) => "rotational",
            Some(false) => "non-rotational",
            None => "rotational: unknown",
        };
        let _ = write!(
            out,
            " — device {}{} ({}, {}, scheduler {})",
            d.name,
            d.model
                .as_ref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default(),
            format_bytes(d.size_bytes),
            rot,
            d.scheduler.as_deref().unwrap_or("unknown")
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "Configurations:");
    for c in &r.configurations {
        let _ = writeln!(out, "  {}", c.config.label);
        if let Some(cmd) = &c.mkfs_command {
            let _ = writeln!(out, "      mkfs:    {cmd}");
        }
        if let Some(v) = &c.mkfs_version {
            let _ = writeln!(out, "      version: {v}");
        }
        if let Some(v) = &c.fsck_version {
            let _ = writeln!(out, "      fsck:    {v}");
        }
        if let Some(m) = &c.mount_options {
            let _ = writeln!(out, "      mounted: {m}");
        }
    }
    for sk in &r.skipped {
        let _ = writeln!(out, "  {} — skipped: {}", sk.label, sk.reason);
    }
    for spec in &r.suite.workloads {
        render_workload(&mut out, r, &spec.label(), &spec.describe(), spec.phases());
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(out, "\nWarnings:");
        for w in &r.warnings {
            let _ = writeln!(out, "  ! {}", w.message);
        }
    }
    let failed = r.runs.iter().filter(|x| x.status != RunStatus::Ok).count();
    let _ = writeln!(
        out,
        "\n{} run(s) recorded, {} excluded from the statistics; suite {:?}{}",
        r.runs.len(),
        failed,
        r.status,
        r.error
            .as_ref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default()
    );
    out
}

fn render_workload(
    out: &mut String,
    r: &SuiteResult,
    workload: &str,
    description: &str,
    phases: &[crate::workload::PhaseInfo],
) {
    let find = |config: &str, phase: &str, metric: &str| -> Option<&MetricSummary> {
        r.summary(config, workload, phase, metric)
    };
    let configs: Vec<&str> = r
        .configurations
        .iter()
        .map(|c| c.config.label.as_str())
        .filter(|c| {
            r.summaries
                .iter()
                .any(|s| s.config == *c && s.workload == workload)
        })
        .collect();
    let _ = writeln!(out, "\n== {workload} — {description} ==");
    if configs.is_empty() {
        let _ = writeln!(out, "no successful runs");
        return;
    }
    let short = |config: &str, phase: &str| {
        find(config, phase, "time").is_some_and(|s| s.summary.mean < r.suite.min_phase_secs)
    };

    let mut times = new_table(
        std::iter::once("Configuration".to_string())
            .chain(phases.iter().map(|p| format!("{} (s)", p.title)))
            .collect(),
    );
    for c in &configs {
        let mut row = vec![c.to_string()];
        for p in phases {
            let cell = find(c, p.name, "time").map_or("-".into(), |s| mean_sd(&s.summary));
            row.push(if short(c, p.name) { cell + SHORT } else { cell });
        }
        times.add_row(row);
    }
    right_align(&mut times);
    let n = find(configs[0], phases[0].name, "time").map_or(0, |s| s.summary.n);
    let _ = writeln!(out, "Phase times, mean ± stddev over {n} run(s):\n{times}");

    let mut header = vec!["Configuration".to_string()];
    let mut columns = Vec::new();
    for p in phases {
        header.push(format!("{} ({}/s)", p.title, p.unit));
        columns.push((p.name, "rate"));
        if p.moves_data {
            header.push(format!("{} (KiB/s)", p.title));
            columns.push((p.name, "throughput"));
        }
    }
    let mut rates = new_table(header);
    for c in &configs {
        let mut row = vec![c.to_string()];
        for (phase, metric) in &columns {
            let cell = find(c, phase, metric).map_or("-".into(), |s| mean_sd(&s.summary));
            row.push(if short(c, phase) { cell + SHORT } else { cell });
        }
        rates.add_row(row);
    }
    right_align(&mut rates);
    let _ = writeln!(out, "Rates, mean of per-run rates ± stddev:\n{rates}");
    if configs
        .iter()
        .any(|c| phases.iter().any(|p| short(c, p.name)))
    {
        let _ = writeln!(
            out,
            "† shorter than {} s: too short to measure reliably; use a larger preset",
            r.suite.min_phase_secs
        );
    }

    let mut detail = new_table(
        [
            "Configuration",
            "Phase",
            "Figure",
            "n",
            "Mean",
            "Stddev",
            "Min",
            "Median",
            "Max",
            "CV %",
            "95% CI",
        ]
        .map(String::from)
        .to_vec(),
    );
    for s in r.summaries.iter().filter(|s| s.workload == workload) {
        let m = &s.summary;
        let opt = |v: Option<f64>| v.map_or("-".into(), figure);
        let ci = match (m.ci95_low, m.ci95_high) {
            (Some(lo), Some(hi)) => format!("{} – {}", figure(lo), figure(hi)),
            _ => "-".into(),
        };
        detail.add_row(vec![
            s.config.clone(),
            s.phase.clone(),
            format!("{} ({})", s.metric, s.unit),
            m.n.to_string(),
            figure(m.mean),
            opt(m.stddev),
            figure(m.min),
            figure(m.median),
            figure(m.max),
            opt(m.cv_percent),
            ci,
        ]);
    }
    for i in 3..detail.column_count() {
        if let Some(col) = detail.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(
        out,
        "All figures (rates are means of per-run rates; CI from Student's t):\n{detail}"
    );

    let mut latency = new_table(
        [
            "Configuration",
            "Phase",
            "Operation",
            "Calls/run",
            "p50 µs",
            "p99 µs",
            "p99.9 µs",
            "Max µs",
        ]
        .map(String::from)
        .to_vec(),
    );
    for c in &configs {
        for p in phases {
            let runs: Vec<_> = r
                .runs
                .iter()
                .filter(|x| x.status == RunStatus::Ok && x.config == *c && x.workload == workload)
                .filter_map(|x| x.phases.iter().find(|ph| ph.name == p.name))
                .collect();
            let mut ops: Vec<&String> = runs
                .iter()
                .flat_map(|ph| ph.measurement.latency.keys())
                .collect();
            ops.sort();
            ops.dedup();
            for op in ops {
                let lat: Vec<_> = runs
                    .iter()
                    .filter_map(|ph| ph.measurement.latency.get(op))
                    .collect();
                let k = lat.len() as f64;
                let mean = |f: fn(&crate::measure::LatencySummary) -> u64| {
                    figure(lat.iter().map(|l| f(l) as f64).sum::<f64>() / k / 1000.0)
                };
                latency.add_row(vec![
                    c.to_string(),
                    p.name.to_string(),
                    op.clone(),
                    figure(lat.iter().map(|l| l.count as f64).sum::<f64>() / k),
                    mean(|l| l.p50_ns),
                    mean(|l| l.p99_ns),
                    mean(|l| l.p999_ns),
                    figure(lat.iter().map(|l| l.max_ns).max().unwrap_or(0) as f64 / 1000.0),
                ]);
            }
        }
    }
    for i in 3..latency.column_count() {
        if let Some(col) = latency.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(
        out,
        "Latency per system call (percentiles averaged over runs, max over all runs):\n{latency}"
    );
}

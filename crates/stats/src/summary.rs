//! Summaries of a suite's runs: every figure of every successful run, grouped by
//! (configuration, workload, phase, metric, dimensions) and summarized across runs.

use crate::compare::{FigureKey, PhaseRoles, Role};
use crate::summarize;
use fsbench_model::measurement::{Dim, Figure};
use fsbench_model::results::Summary;
use fsbench_model::results::{MetricSummary, PhaseRecord, RunStatus, SuiteResult};
use fsbench_model::workload::PhaseInfo;

/// Every figure of a phase: its time, rate, throughput and CPU, the sync after it and the
/// workload's own figures.
pub fn phase_metrics(p: &PhaseRecord, info: &PhaseInfo) -> Vec<Figure> {
    if p.unsupported.is_some() || p.idle.is_some() {
        return Vec::new();
    }
    let m = &p.measurement;
    let mut out = vec![Figure::new("time", "s", false, m.elapsed_secs())];
    if info.has_rate {
        let rate = format!("{}/s", info.unit);
        out.push(Figure::new("rate", &rate, true, m.ops_per_sec()));
        if info.moves_data {
            out.push(Figure::new("throughput", "KiB/s", true, m.kib_per_sec()));
        }
        // The phase's shape: its rate once warmed up, the rate until the first thread was
        // done, and its rate as a share of what fsbench itself can do on this machine.
        if let Some(steady) = p.shape.steady.as_ref().filter(|s| s.reached) {
            out.push(Figure::new("steady rate", &rate, true, steady.rate));
        }
        if let Some(t) = &p.shape.threads {
            out.push(Figure::new(
                "first-done rate",
                &rate,
                true,
                t.first_done_rate,
            ));
        }
        if let Some(percent) = p.shape.harness_percent {
            out.push(Figure::new("harness %", "%", false, percent));
        }
    }
    out.push(Figure::new("cpu", "%", false, m.cpu_percent()));
    if let Some(ns) = p.sync_after_ns {
        out.push(Figure::new("sync-after", "s", false, ns as f64 / 1e9));
    }
    out.extend(p.figures.iter().cloned());
    out
}

/// Summaries of every figure of the successful runs, in suite order.
pub fn summarize_runs(result: &mut SuiteResult) {
    /// Identifies one figure of one configuration: (config, workload, phase, metric, dims).
    type Key = (String, String, String, String, Vec<Dim>);
    // The figures in the order first seen, with their unit, direction and per-run values;
    // an index by key, since a matrix has thousands of figures.
    let mut figures: Vec<(Key, String, bool, Vec<f64>)> = Vec::new();
    let mut index: std::collections::HashMap<Key, usize> = std::collections::HashMap::new();
    for run in result.runs.iter().filter(|r| r.status == RunStatus::Ok) {
        let mut values = Vec::new();
        for (p, info) in run.phases.iter().zip(result.phases_of(run)) {
            for f in phase_metrics(p, info) {
                values.push((p.name.clone(), f));
            }
        }
        let lifecycle = [
            ("mkfs", run.mkfs_secs),
            ("unmount", run.unmount_secs),
            ("fsck", run.fsck.as_ref().map(|f| f.secs)),
        ];
        for (metric, v) in lifecycle {
            if let Some(v) = v {
                values.push(("lifecycle".to_string(), Figure::new(metric, "s", false, v)));
            }
        }
        for (phase, f) in values {
            let key = (
                run.config.clone(),
                run.workload.clone(),
                phase,
                f.name,
                f.dims,
            );
            match index.get(&key) {
                Some(&i) => figures[i].3.push(f.value),
                None => {
                    index.insert(key.clone(), figures.len());
                    figures.push((key, f.unit, f.higher_is_better, vec![f.value]));
                }
            }
        }
    }
    let config_pos = |label: &str| {
        result
            .configurations
            .iter()
            .position(|c| c.config.label == label)
    };
    let workload_pos =
        |label: &str| (result.workload_records.iter()).position(|w| w.label == label);
    figures.sort_by_key(|(k, ..)| (config_pos(&k.0), workload_pos(&k.1)));
    let cpus = result.system.cpus;
    result.summaries = figures
        .into_iter()
        .filter_map(
            |((config, workload, phase, metric, dims), unit, higher_is_better, v)| {
                let summary = bounded(summarize(&v)?, &metric, &unit, cpus);
                Some(MetricSummary {
                    config,
                    workload,
                    phase,
                    metric,
                    dims,
                    unit,
                    higher_is_better,
                    summary,
                })
            },
        )
        .collect();
}

/// A percentage of CPU time cannot exceed 100 per CPU: its interval is cut there (other
/// percentages, such as harness %, can exceed it).
fn bounded(summary: Summary, metric: &str, unit: &str, cpus: usize) -> Summary {
    if unit == "%" && metric.contains("cpu") {
        summary.bounded_above(100.0 * cpus.max(1) as f64)
    } else {
        summary
    }
}

/// The widest 95% CI half-width of any primary figure (a phase's verdict figure), in
/// percent of its mean: what `--runs auto` drives down. `None` while one has no interval.
pub fn widest_primary_ci_percent(result: &SuiteResult) -> Option<f64> {
    let keys: Vec<FigureKey> = result.summaries.iter().map(FigureKey::of).collect();
    let roles = PhaseRoles::new(std::slice::from_ref(result), &keys);
    result
        .summaries
        .iter()
        .zip(&keys)
        .filter(|(_, key)| roles.role(key) == Role::Primary)
        .map(|(s, _)| s.summary.ci95_relative_half_width())
        .try_fold(0.0f64, |widest, w| Some(widest.max(w?)))
}

//! Summaries of a suite's runs: every figure of every successful run, grouped by
//! (configuration, workload, phase, metric) and summarized across runs.

use crate::results::{MetricSummary, PhaseRecord, RunStatus, SuiteResult};
use crate::stats::Summary;
use crate::stats::compare::{FigureKey, Role, role_of};

/// A figure extracted from a phase: (metric, unit, higher is better, value).
pub fn phase_metrics(
    p: &PhaseRecord,
    unit: &str,
    moves_data: bool,
) -> Vec<(String, String, bool, f64)> {
    if p.unsupported.is_some() {
        return Vec::new();
    }
    let m = &p.measurement;
    let figure = |name: &str, unit: &str, higher: bool, v: f64| {
        (name.to_string(), unit.to_string(), higher, v)
    };
    let mut out = vec![figure("time", "s", false, m.elapsed_secs())];
    // A matrix phase's figures are its cells; its overall rate would mix them all.
    if p.cells.is_empty() {
        out.push(figure("rate", &format!("{unit}/s"), true, m.ops_per_sec()));
        if moves_data {
            out.push(figure("throughput", "KiB/s", true, m.kib_per_sec()));
        }
    }
    out.push(figure("cpu", "%", false, m.cpu_percent()));
    if let Some(ns) = p.sync_after_ns {
        out.push(figure("sync-after", "s", false, ns as f64 / 1e9));
    }
    for f in &p.figures {
        out.push(figure(&f.name, &f.unit, f.higher_is_better, f.value));
    }
    for c in &p.cells {
        out.push(figure(&c.metric(), "KiB/s", true, c.kib_per_sec));
        out.push(figure(
            &format!("{} cpu", c.metric()),
            "%",
            false,
            c.cpu_percent(),
        ));
    }
    out
}

impl SuiteResult {
    /// Summaries of every figure of the successful runs, in suite order.
    pub fn summarize(&mut self) {
        // (config, workload, phase, metric, unit, higher is better) and the per-run values,
        // in the order first seen; sorted by configuration and workload afterwards.
        type Figure = (String, String, String, String, String, bool);
        let mut figures: Vec<(Figure, Vec<f64>)> = Vec::new();
        let mut index: std::collections::HashMap<(String, String, String, String), usize> =
            std::collections::HashMap::new();
        for run in self.runs.iter().filter(|r| r.status == RunStatus::Ok) {
            let Some(spec) = self.workload_of(run) else {
                continue;
            };
            let mut values = Vec::new();
            for (p, info) in run.phases.iter().zip(spec.phases().iter()) {
                for (metric, unit, hib, v) in phase_metrics(p, info.unit, info.moves_data) {
                    values.push((p.name.clone(), metric, unit, hib, v));
                }
            }
            let lifecycle = [
                ("mkfs", run.mkfs_secs),
                ("unmount", run.unmount_secs),
                ("fsck", run.fsck.as_ref().map(|f| f.secs)),
            ];
            for (metric, v) in lifecycle {
                if let Some(v) = v {
                    values.push((
                        "lifecycle".to_string(),
                        metric.to_string(),
                        "s".to_string(),
                        false,
                        v,
                    ));
                }
            }
            for (phase, metric, unit, hib, v) in values {
                let figure = (
                    run.config.clone(),
                    run.workload.clone(),
                    phase,
                    metric,
                    unit,
                    hib,
                );
                // An index by (config, workload, phase, metric): a matrix has thousands of figures.
                let key = (
                    figure.0.clone(),
                    figure.1.clone(),
                    figure.2.clone(),
                    figure.3.clone(),
                );
                match index.get(&key) {
                    Some(&i) => figures[i].1.push(v),
                    None => {
                        index.insert(key, figures.len());
                        figures.push((figure, vec![v]));
                    }
                }
            }
        }
        let config_pos = |label: &str| {
            self.configurations
                .iter()
                .position(|c| c.config.label == label)
        };
        let workload_pos =
            |label: &str| self.suite.workloads.iter().position(|w| w.label() == label);
        figures.sort_by_key(|(f, _)| (config_pos(&f.0), workload_pos(&f.1)));
        let cpus = self.system.cpus;
        self.summaries = figures
            .into_iter()
            .filter_map(
                |((config, workload, phase, metric, unit, higher_is_better), v)| {
                    let summary = bounded(Summary::of(&v)?, &unit, cpus);
                    Some(MetricSummary {
                        config,
                        workload,
                        phase,
                        metric: metric.to_string(),
                        unit,
                        higher_is_better,
                        summary,
                    })
                },
            )
            .collect();
    }
}

/// A percentage of CPU time cannot exceed 100 per CPU: its interval is cut there.
fn bounded(summary: Summary, unit: &str, cpus: usize) -> Summary {
    if unit == "%" {
        summary.bounded_above(100.0 * cpus.max(1) as f64)
    } else {
        summary
    }
}

impl SuiteResult {
    /// The widest 95% CI half-width of any primary figure (a phase's verdict figure), in
    /// percent of its mean: what `--runs auto` drives down. `None` while one has no interval.
    pub fn widest_primary_ci_percent(&self) -> Option<f64> {
        let keys: Vec<FigureKey> = self.summaries.iter().map(FigureKey::of).collect();
        self.summaries
            .iter()
            .zip(&keys)
            .filter(|(_, key)| role_of(key, &keys) == Role::Primary)
            .map(|(s, _)| s.summary.ci95_relative_half_width())
            .try_fold(0.0f64, |widest, w| Some(widest.max(w?)))
    }
}

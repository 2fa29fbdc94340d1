//! The long tables below a workload's phase tables: every figure's statistics (with
//! `--verbose`, `show --all` and in the Markdown export) and the latency per system call.

use comfy_table::CellAlignment;

use super::fit::{View, fit, new_table};
use super::{column_decimals, figure, fixed};
use fsbench_measure::measure::LatencySummaryExt;
use fsbench_model::measurement::{LatencySummary, figure_name};
use fsbench_model::results::{PhaseRecord, RunStatus, SuiteResult};
use fsbench_model::units::group_thousands;
use fsbench_model::workload::PhaseInfo;

fn align_right_from(table: &mut comfy_table::Table, first: usize) {
    for i in first..table.column_count() {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// Every figure of the workload: n, mean, stddev, min, median, max, CV and 95% CI.
pub(super) fn all_figures(r: &SuiteResult, view: &View, workload: &str) -> String {
    let mut detail = new_table(
        view.style,
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
        let (unit, divisor) = super::shown_unit(&s.unit);
        let m = &super::shown_summary(&s.summary, divisor);
        let opt = |v: Option<f64>| v.map_or("-".into(), figure);
        let ci = match (m.ci95_low, m.ci95_high) {
            (Some(lo), Some(hi)) => format!("{} – {}", figure(lo), figure(hi)),
            _ => "-".into(),
        };
        detail.add_row(vec![
            s.config.clone(),
            s.phase.clone(),
            format!("{} ({unit})", figure_name(&s.metric, &s.dims)),
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
    align_right_from(&mut detail, 3);
    fit(&mut detail, view.width);
    view.style.table(
        "All figures (rates are means of per-run rates; 95% CI of the mean: log-normal (Cox) for positive figures, Student's t cut at 0 where a run measured 0):",
        &detail,
    )
}

/// Each system call timed in any of `phases`, in name order, with its latencies in those of
/// them that timed it.
pub(super) fn latency_by_call<'a>(
    phases: &[&'a PhaseRecord],
) -> Vec<(&'a String, Vec<&'a LatencySummary>)> {
    let mut ops: Vec<&String> = phases
        .iter()
        .flat_map(|p| p.measurement.latency.keys())
        .collect();
    ops.sort();
    ops.dedup();
    let parts = |op: &String| {
        (phases.iter())
            .filter_map(|p| p.measurement.latency.get(op))
            .collect()
    };
    ops.into_iter().map(|op| (op, parts(op))).collect()
}

/// Latency percentiles per system call, a table per configuration (phase and call down),
/// all runs' calls together; nothing for a configuration without latencies.
pub(super) fn latency(
    r: &SuiteResult,
    view: &View,
    workload: &str,
    configs: &[&str],
    phases: &[PhaseInfo],
) -> String {
    let mut out = String::new();
    for c in configs {
        let mut rows: Vec<(String, String, u64, [u64; 4])> = Vec::new();
        for p in phases {
            let runs: Vec<_> = r
                .runs
                .iter()
                .filter(|x| x.status == RunStatus::Ok && x.config == *c && x.workload == workload)
                .filter_map(|x| x.phases.iter().find(|ph| ph.name == p.name))
                .collect();
            for (op, parts) in latency_by_call(&runs) {
                let calls: u64 = parts.iter().map(|l| l.count).sum();
                let Some(all) = LatencySummary::merge(parts.iter().copied()) else {
                    continue;
                };
                // Calls are whole: the mean per run is rounded to one.
                let per_run = (calls as f64 / parts.len() as f64).round() as u64;
                let percentiles = [all.p50_ns, all.p99_ns, all.p999_ns, all.max_ns];
                rows.push((p.name.to_string(), op.clone(), per_run, percentiles));
            }
        }
        if rows.is_empty() {
            continue;
        }
        let mut table = new_table(
            view.style,
            [
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
        let us = |ns: u64| ns as f64 / 1000.0;
        let decimals: Vec<usize> = (0..4)
            .map(|i| column_decimals(rows.iter().map(|row| us(row.3[i]))))
            .collect();
        for (phase, op, per_run, percentiles) in rows {
            let mut row = vec![phase, op, group_thousands(per_run)];
            row.extend(
                percentiles
                    .iter()
                    .zip(&decimals)
                    .map(|(ns, d)| fixed(us(*ns), *d)),
            );
            table.add_row(row);
        }
        align_right_from(&mut table, 2);
        fit(&mut table, view.width);
        out.push_str(&view.style.table(
            &format!("Latency per system call on {c}, all runs' calls together:"),
            &table,
        ));
    }
    out
}

//! Terminal tables: per workload, the fdtree article's two tables (phase times and rates, one
//! row per configuration, mean ± stddev), then the full statistics, latency and lifecycle.

use std::fmt::Write;

use comfy_table::{CellAlignment, Table, presets};

use super::figure;
use super::matrix::Matrix;
use crate::measure::{LatencySummary, figure_name};
use crate::results::{MetricSummary, RunStatus, SuiteResult};
use crate::runner::ceiling::HARNESS_BOUND_PERCENT;
use crate::stats::Summary;
use crate::units::format_bytes;

/// Where the tables go: a terminal, or a Markdown document (`fsbench export --format markdown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Terminal,
    Markdown,
}

fn new_table(style: Style, header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_style(match style {
        Style::Terminal => presets::UTF8_FULL_CONDENSED,
        Style::Markdown => presets::ASCII_MARKDOWN,
    });
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
/// Marks a rate over 80% of the harness ceiling.
const HARNESS_BOUND: &str = " ‼";

impl Style {
    /// A line of a list: indented for a terminal, a (nested) Markdown list item otherwise.
    fn item(self, level: usize, text: &str) -> String {
        let indent = "  ".repeat(level);
        match self {
            Style::Terminal => format!("{indent}{text}\n"),
            Style::Markdown => format!("{indent}- {}\n", text.replace('`', "'")),
        }
    }

    fn heading(self, text: &str) -> String {
        match self {
            Style::Terminal => format!("\n== {text} ==\n"),
            Style::Markdown => format!("\n## {text}\n\n"),
        }
    }

    /// A table with its caption (Markdown needs blank lines around tables).
    fn table(self, caption: &str, table: &Table) -> String {
        match self {
            Style::Terminal => format!("{caption}\n{table}\n"),
            Style::Markdown => format!("{caption}\n\n{table}\n\n"),
        }
    }
}

fn device_text(r: &SuiteResult) -> String {
    let Some(d) = &r.target.device else {
        return String::new();
    };
    let rot = match d.rotational {
        Some(true) => "rotational",
        Some(false) => "non-rotational",
        None => "rotational: unknown",
    };
    format!(
        " — device {}{} ({}, {}, scheduler {})",
        d.name,
        d.model
            .as_ref()
            .map(|m| format!(" {m}"))
            .unwrap_or_default(),
        format_bytes(d.size_bytes),
        rot,
        d.scheduler.as_deref().unwrap_or("unknown")
    )
}

pub fn render(r: &SuiteResult, style: Style) -> String {
    let s = &r.system;
    let mut out = match style {
        Style::Terminal => String::new(),
        Style::Markdown => "# ".to_string(),
    };
    let id = r.id.map(|i| format!(" (ID {i})")).unwrap_or_default();
    let _ = writeln!(
        out,
        "fsbench {} — suite `{}`{id}",
        s.fsbench_version, r.suite.name
    );
    if style == Style::Markdown {
        out.push('\n');
    }
    let purpose = if r.suite.purpose.is_empty() {
        "(none stated)"
    } else {
        &r.suite.purpose
    };
    out.push_str(&style.item(0, &format!("Purpose: {purpose}")));
    out.push_str(&style.item(
        0,
        &format!(
            "System:  Linux {} {}, {} ({} CPUs), {} RAM",
            s.kernel_release,
            s.arch,
            s.cpu_model,
            s.cpus,
            format_bytes(s.memory_bytes)
        ),
    ));
    out.push_str(&style.item(
        0,
        &format!("Target:  {}{}", r.target.description, device_text(r)),
    ));
    if let Some(loops) = r.loop_summary() {
        out.push_str(&style.item(1, &loops));
    }
    if let Some(t) = &r.testbed {
        let mut lines = super::stack::describe(t).into_iter();
        if let Some(first) = lines.next() {
            out.push_str(&style.item(0, &format!("Storage {first}")));
        }
        for line in lines {
            out.push_str(&style.item(1, &line));
        }
    }
    let ceilings = super::stack::ceiling_lines(r);
    if !ceilings.is_empty() {
        out.push_str(&style.item(0, "Harness ceiling (each phase on tmpfs, this machine):"));
        for line in ceilings {
            out.push_str(&style.item(1, &line));
        }
    }
    out.push_str(&style.item(0, "Configurations:"));
    for c in &r.configurations {
        out.push_str(&style.item(1, &c.config.label));
        let details = [
            ("mkfs:   ", &c.mkfs_command),
            ("version:", &c.mkfs_version),
            ("fsck:   ", &c.fsck_version),
            ("mounted:", &c.mount_options),
        ];
        for (name, value) in details {
            if let Some(v) = value {
                out.push_str(&style.item(3, &format!("{name} {v}")));
            }
        }
    }
    for sk in &r.skipped {
        out.push_str(&style.item(1, &format!("{} — skipped: {}", sk.label, sk.reason)));
    }
    for spec in &r.suite.workloads {
        render_workload(
            &mut out,
            r,
            style,
            &spec.label(),
            &spec.describe(),
            &spec.phases(),
        );
    }
    render_answers(&mut out, r, style);
    if !r.warnings.is_empty() {
        out.push_str(&style.heading("Warnings"));
        for w in &r.warnings {
            out.push_str(&style.item(1, &format!("! {}", w.message)));
        }
    }
    let failed = r.runs.iter().filter(|x| x.status != RunStatus::Ok).count();
    let _ = writeln!(
        out,
        "\n{} run(s) recorded, {} excluded from the statistics; suite {}{}",
        r.runs.len(),
        failed,
        serde_json::to_string(&r.status)
            .unwrap_or_default()
            .trim_matches('"'),
        r.error
            .as_ref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default()
    );
    match style {
        Style::Terminal => out,
        // Markdown renderers pass HTML through: user strings must not become markup.
        Style::Markdown => out.replace('<', "&lt;").replace('>', "&gt;"),
    }
}

/// One line per phase and configuration against the first configuration, with the
/// corrections applied (the noise threshold is `compare`'s default).
fn render_answers(out: &mut String, r: &SuiteResult, style: Style) {
    use crate::stats::compare::{DEFAULT_NOISE_PERCENT, compare, suite_columns};
    let columns = suite_columns(r);
    if columns.len() < 2 {
        return;
    }
    let comparison = compare(std::slice::from_ref(r), &columns, 0, DEFAULT_NOISE_PERCENT);
    let answers = comparison.answers();
    if answers.is_empty() {
        return;
    }
    out.push_str(&style.heading(&format!("Verdicts against {}", columns[0].config)));
    for a in &answers {
        out.push_str(&style.item(0, &super::compare::answer_line(&columns, &comparison, a)));
    }
    out.push_str(&style.item(
        0,
        &format!(
            "{} Noise threshold {DEFAULT_NOISE_PERCENT}%; `fsbench compare` shows every figure.",
            super::compare::corrections_text(&comparison)
        ),
    ));
}

/// The workload's own figures (extents, fsck after a phase, FFSB's per-operation figures), one
/// row per figure and a column per configuration, and the notes that go with them.
fn render_figures(
    out: &mut String,
    r: &SuiteResult,
    style: Style,
    workload: &str,
    configs: &[&str],
    phases: &[crate::workload::PhaseInfo],
) {
    let runs: Vec<_> = r.runs.iter().filter(|x| x.workload == workload).collect();
    let mut rows: Vec<(&str, &str, &str)> = Vec::new();
    for p in runs.iter().flat_map(|run| &run.phases) {
        // Figures with dimensions are matrices, shown by `render_matrix`.
        for f in p.figures.iter().filter(|f| f.dims.is_empty()) {
            let key = (p.name.as_str(), f.name.as_str(), f.unit.as_str());
            if !rows.contains(&key) {
                rows.push(key);
            }
        }
    }
    let title = |phase: &str| {
        phases
            .iter()
            .find(|p| p.name == phase)
            .map_or(phase.to_string(), |p| p.title.to_string())
    };
    let cell = |c: &str, phase: &str, name: &str| {
        r.summary(c, workload, phase, name)
            .map_or("-".into(), |s| mean_sd(&s.summary))
    };
    // A few figures read best as the seed articles laid them out, a row per configuration;
    // many (FFSB's per-operation figures) as a row per figure.
    let table = if rows.is_empty() {
        None
    } else if rows.len() <= 6 {
        let mut table = new_table(
            style,
            std::iter::once("Configuration".to_string())
                .chain(
                    rows.iter()
                        .map(|(p, n, u)| format!("{} {n} ({u})", title(p))),
                )
                .collect(),
        );
        for c in configs {
            let mut row = vec![c.to_string()];
            row.extend(rows.iter().map(|(p, n, _)| cell(c, p, n)));
            table.add_row(row);
        }
        right_align(&mut table);
        Some(table)
    } else {
        let mut table = new_table(
            style,
            ["Phase", "Figure"]
                .into_iter()
                .map(String::from)
                .chain(configs.iter().map(|c| c.to_string()))
                .collect(),
        );
        for (phase, name, unit) in &rows {
            let mut row = vec![title(phase), format!("{name} ({unit})")];
            row.extend(configs.iter().map(|c| cell(c, phase, name)));
            table.add_row(row);
        }
        for i in 2..table.column_count() {
            if let Some(col) = table.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        Some(table)
    };
    if let Some(table) = table {
        out.push_str(&style.table("Workload figures, mean ± stddev:", &table));
    }
    let mut notes: Vec<String> = Vec::new();
    for run in &runs {
        for p in &run.phases {
            let unsupported = p.unsupported.iter().map(|u| format!("unsupported: {u}"));
            for n in p.notes.iter().cloned().chain(unsupported) {
                let line = format!("{} · {}: {n}", run.config, p.name);
                if !notes.contains(&line) {
                    notes.push(line);
                }
            }
        }
    }
    for n in notes {
        out.push_str(&style.item(0, &format!("note: {n}")));
    }
}

fn render_workload(
    out: &mut String,
    r: &SuiteResult,
    style: Style,
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
    out.push_str(&style.heading(&format!("{workload} — {description}")));
    if configs.is_empty() {
        let _ = writeln!(out, "no successful runs");
        return;
    }
    let short = |config: &str, phase: &str| {
        find(config, phase, "time").is_some_and(|s| s.summary.mean < r.suite.min_phase_secs)
    };
    let harness_bound = |config: &str, phase: &str| {
        find(config, phase, "harness %").is_some_and(|s| s.summary.mean > HARNESS_BOUND_PERCENT)
    };

    let mut times = new_table(
        style,
        std::iter::once("Configuration".to_string())
            .chain(phases.iter().map(|p| format!("{} (s)", p.title)))
            .collect(),
    );
    for c in &configs {
        let mut row = vec![c.to_string()];
        for p in phases {
            let cell = find(c, &p.name, "time").map_or("-".into(), |s| mean_sd(&s.summary));
            row.push(if short(c, &p.name) {
                cell + SHORT
            } else {
                cell
            });
        }
        times.add_row(row);
    }
    right_align(&mut times);
    let n = find(configs[0], &phases[0].name, "time").map_or(0, |s| s.summary.n);
    out.push_str(&style.table(
        &format!("Phase times, mean ± stddev over {n} run(s):"),
        &times,
    ));

    let mut header = vec!["Configuration".to_string()];
    let mut columns = Vec::new();
    for p in phases {
        header.push(format!("{} ({}/s)", p.title, p.unit));
        columns.push((p.name.as_ref(), "rate"));
        // The steady-state rate (MSER-5) beside the whole phase's, where a run had one.
        if configs
            .iter()
            .any(|c| find(c, &p.name, "steady rate").is_some())
        {
            header.push(format!("{} steady ({}/s)", p.title, p.unit));
            columns.push((p.name.as_ref(), "steady rate"));
        }
        if p.moves_data {
            header.push(format!("{} (KiB/s)", p.title));
            columns.push((p.name.as_ref(), "throughput"));
        }
    }
    let mut rates = new_table(style, header);
    for c in &configs {
        let mut row = vec![c.to_string()];
        for (phase, metric) in &columns {
            let mut cell = find(c, phase, metric).map_or("-".into(), |s| mean_sd(&s.summary));
            if short(c, phase) {
                cell += SHORT;
            }
            if harness_bound(c, phase) {
                cell += HARNESS_BOUND;
            }
            row.push(cell);
        }
        rates.add_row(row);
    }
    right_align(&mut rates);
    out.push_str(&style.table("Rates, mean of per-run rates ± stddev:", &rates));
    for run in r.runs.iter().filter(|x| x.workload == workload) {
        if let Some(what) = &run.incomplete {
            let _ = writeln!(
                out,
                "‡ INCOMPLETE TREE: {} run {}: {what}",
                run.config, run.run
            );
        }
    }
    if configs
        .iter()
        .any(|c| phases.iter().any(|p| short(c, &p.name)))
    {
        let _ = writeln!(
            out,
            "† shorter than {} s: too short to measure reliably; use a larger preset",
            r.suite.min_phase_secs
        );
    }

    if configs
        .iter()
        .any(|c| phases.iter().any(|p| harness_bound(c, &p.name)))
    {
        let _ = writeln!(
            out,
            "‼ harness-bound: over {HARNESS_BOUND_PERCENT}% of the harness ceiling; the figure is mostly fsbench's and the kernel's VFS cost, not the filesystem's"
        );
    }
    render_figures(out, r, style, workload, &configs, phases);
    render_matrix(out, r, style, workload, &configs);

    let mut detail = new_table(
        style,
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
            format!("{} ({})", figure_name(&s.metric, &s.dims), s.unit),
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
    out.push_str(&style.table(
        "All figures (rates are means of per-run rates; 95% CI of the mean: log-normal (Cox) for positive figures, Student's t cut at 0 where a run measured 0):",
        &detail,
    ));

    let mut latency = new_table(
        style,
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
                let parts: Vec<_> = runs
                    .iter()
                    .filter_map(|ph| ph.measurement.latency.get(op))
                    .collect();
                let per_run =
                    figure(parts.iter().map(|l| l.count as f64).sum::<f64>() / parts.len() as f64);
                let Some(all) = LatencySummary::merge(parts.iter().copied()) else {
                    continue;
                };
                let us = |ns: u64| figure(ns as f64 / 1000.0);
                latency.add_row(vec![
                    c.to_string(),
                    p.name.to_string(),
                    op.clone(),
                    per_run,
                    us(all.p50_ns),
                    us(all.p99_ns),
                    us(all.p999_ns),
                    us(all.max_ns),
                ]);
            }
        }
    }
    for i in 3..latency.column_count() {
        if let Some(col) = latency.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    out.push_str(&style.table(
        "Latency per system call, all runs' calls together:",
        &latency,
    ));
}

/// A matrix figure (IOzone's throughput): per first dimension (test) a table, the second
/// down and the third across, in MiB/s.
fn render_matrix(
    out: &mut String,
    r: &SuiteResult,
    style: Style,
    workload: &str,
    configs: &[&str],
) {
    let summaries = r
        .summaries
        .iter()
        .filter(|s| s.workload == workload)
        .map(|s| (s.config.clone(), s));
    let Some(m) = Matrix::of(summaries) else {
        return;
    };
    let (unit, scale) = if m.unit == "KiB/s" {
        ("MiB/s", 1024.0)
    } else {
        (m.unit.as_str(), 1.0)
    };
    for table in &m.tables {
        let mut header = vec!["Configuration".to_string(), m.names[1].clone()];
        header.extend(m.cols.iter().map(ToString::to_string));
        let mut t = new_table(style, header);
        for c in configs {
            for row_value in &m.rows {
                let mut row = vec![c.to_string(), row_value.to_string()];
                let mut any = false;
                for col_value in &m.cols {
                    let s = m.get(c, table, row_value, col_value);
                    any |= s.is_some();
                    row.push(s.map_or(String::new(), |s| {
                        let scaled = |v: f64| figure(v / scale);
                        match s.stddev {
                            Some(sd) => format!("{} ± {}", scaled(s.mean), scaled(sd)),
                            None => scaled(s.mean),
                        }
                    }));
                }
                if any {
                    t.add_row(row);
                }
            }
        }
        right_align(&mut t);
        out.push_str(&style.table(
            &format!(
                "{table}: {unit} (mean ± stddev), {} down, {} across:",
                m.names[1], m.names[2]
            ),
            &t,
        ));
    }
}

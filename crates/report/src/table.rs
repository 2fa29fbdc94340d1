//! Terminal tables: the verdicts first, then per workload the fdtree article's two tables
//! (phase times and rates, one row per configuration, mean ± stddev), the workload's own
//! figures (every figure's statistics and the latency per call with `--verbose`), then the
//! warnings and the configurations.

use std::fmt::Write;

use comfy_table::CellAlignment;

pub(crate) use super::fit::Style;
use super::fit::{Grid, View, fit, new_table, right_align};
use super::matrix::Matrix;
use super::{column_decimals, fixed};
use super::{details, warnings};
use fsbench_model::results::Summary;
use fsbench_model::results::ceiling::{self, HARNESS_BOUND_PERCENT};
use fsbench_model::results::{MetricSummary, RunStatus, SuiteResult};
use fsbench_model::units::format_bytes;
use fsbench_model::workload::PhaseInfo;

mod matrix_tables;
use matrix_tables::render_matrix;

/// `mean ± stddev` of each summary (the lone value of a single run; `-` where there is none),
/// divided by `divisor` (1024 shows KiB/s in MiB/s), all with one precision so that they
/// line up.
fn mean_sd_column(summaries: &[Option<&Summary>], divisor: f64) -> Vec<String> {
    let decimals = column_decimals(summaries.iter().flatten().map(|s| s.mean / divisor));
    let value = |v: f64| fixed(v / divisor, decimals);
    summaries
        .iter()
        .map(|s| {
            s.map_or("-".into(), |s| match s.stddev {
                Some(sd) => format!("{} ± {}", value(s.mean), value(sd)),
                None => value(s.mean),
            })
        })
        .collect()
}

/// A figure's name with its unit, once: `create tx/s`, `extents (count)`.
fn with_unit(name: &str, unit: &str) -> String {
    if name.ends_with(unit) {
        name.to_string()
    } else {
        format!("{name} ({unit})")
    }
}

/// Short-phase marker used in the tables and explained below them.
const SHORT: &str = " †";
/// Marks a rate over the harness-bound share of fsbench's own ceiling on this machine.
const HARNESS_BOUND: &str = " ‼";

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

/// The suite's results: what was asked and the answers first, then the tables, the
/// warnings, and last what was run on (system, target, storage stack, ceilings).
pub(crate) fn render(r: &SuiteResult, view: &View) -> String {
    let mut out = String::new();
    render_title(&mut out, r, view);
    render_conclusions(&mut out, r, view);
    render_answers(&mut out, r, view);
    for w in &r.workload_records {
        render_workload(&mut out, r, view, &w.label, &w.description, &w.phases);
    }
    render_preparation(&mut out, r, view);
    super::crash::render(&mut out, r, view);
    let warning_lines = warnings::lines(r, view.verbose);
    if !warning_lines.is_empty() {
        out.push_str(&view.style.heading("Warnings"));
        for w in &warning_lines {
            out.push_str(&view.item(1, &format!("! {w}")));
        }
    }
    // What it ran on, after what it found: the details a reader looks up, not reads first.
    render_system(&mut out, r, view);
    render_configurations(&mut out, r, view);
    if view.verbose {
        super::kept_output::render(&mut out, r, view);
    }
    render_status(&mut out, r);
    match view.style {
        Style::Terminal => out,
        // Markdown renderers pass HTML through: user strings must not become markup.
        Style::Markdown => out.replace('<', "&lt;").replace('>', "&gt;"),
    }
}

/// The suite's name and ID, and what it was for.
fn render_title(out: &mut String, r: &SuiteResult, view: &View) {
    let id = r.id.map(|i| format!(" (ID {i})")).unwrap_or_default();
    let title = format!(
        "fsbench {} — suite `{}`{id}",
        r.system.fsbench_version,
        r.display_name()
    );
    match view.style {
        // Wrapped as any long line on a terminal: a suite's name lists its configurations.
        Style::Terminal => out.push_str(&super::fit::wrap(&title, view.width, 0, 4)),
        Style::Markdown => out.push_str(&format!("# {title}\n\n")),
    }
    let purpose = if r.suite.purpose.is_empty() {
        "(none stated)"
    } else {
        &r.suite.purpose
    };
    out.push_str(&view.item(0, &format!("Purpose: {purpose}")));
}

/// The machine, the target and the storage stack under it.
fn render_system(out: &mut String, r: &SuiteResult, view: &View) {
    let s = &r.system;
    out.push_str(&view.style.heading("System and storage"));
    out.push_str(&view.item(
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
    out.push_str(&view.item(
        0,
        &format!("Target:  {}{}", r.target.description, device_text(r)),
    ));
    render_testbed(out, r, view);
}

/// Each configuration's mkfs, tool versions and mount options, and those skipped.
fn render_configurations(out: &mut String, r: &SuiteResult, view: &View) {
    out.push_str(&view.style.heading("Configurations"));
    for c in &r.configurations {
        out.push_str(&view.item(1, &c.config.label));
        let details = [
            ("mkfs:   ", &c.mkfs_command),
            ("version:", &c.mkfs_version),
            ("fsck:   ", &c.fsck_version),
            ("mounted:", &c.mount_options),
        ];
        for (name, value) in details {
            if let Some(v) = value {
                out.push_str(&view.item(3, &format!("{name} {v}")));
            }
        }
    }
    for sk in &r.skipped {
        out.push_str(&view.item(1, &format!("{} — skipped: {}", sk.label, sk.reason)));
    }
}

/// The last line: runs recorded and excluded, and how the suite ended.
fn render_status(out: &mut String, r: &SuiteResult) {
    let failed = r.runs.iter().filter(|x| x.status != RunStatus::Ok).count();
    let _ = writeln!(
        out,
        "\n{} run(s) recorded, {} excluded from the statistics; suite {}{}",
        r.runs.len(),
        failed,
        r.status,
        // An interruption's error says no more than the status.
        r.error
            .as_ref()
            .filter(|e| **e != r.status.to_string())
            .map(|e| format!(": {e}"))
            .unwrap_or_default()
    );
}

/// What aging and filling did per configuration, and the rates against the fill level.
fn render_preparation(out: &mut String, r: &SuiteResult, view: &View) {
    let sections = [
        (
            "Aged and filled filesystems",
            super::aging::lines(r, view.verbose),
        ),
        (
            "Free space after the runs (free-space probe)",
            super::aging::after_lines(r),
        ),
        (
            "Fill levels (mean rate per phase)",
            super::aging::fill_table(r),
        ),
    ];
    for (heading, lines) in sections {
        if !lines.is_empty() {
            out.push_str(&view.style.heading(heading));
            for line in &lines {
                out.push_str(&view.item(1, line));
            }
        }
    }
}

/// The loop devices as sysfs showed them, the storage stack and the harness ceilings.
fn render_testbed(out: &mut String, r: &SuiteResult, view: &View) {
    if let Some(loops) = fsbench_stats::warnings::loop_summary(r) {
        out.push_str(&view.item(1, &loops));
    }
    if let Some(t) = &r.testbed {
        let mut lines = super::stack::describe(t).into_iter();
        if let Some(first) = lines.next() {
            out.push_str(&view.item(0, &format!("Storage {first}")));
        }
        for line in lines {
            out.push_str(&view.item(1, &line));
        }
    }
    let ceilings = super::stack::ceiling_lines(r);
    if !ceilings.is_empty() {
        out.push_str(&view.item(0, "Harness ceiling (each phase on tmpfs, this machine):"));
        for line in ceilings {
            out.push_str(&view.item(1, &line));
        }
    }
}

/// The answer: per workload a headline and a line per phase.
pub(crate) fn render_conclusions(out: &mut String, r: &SuiteResult, view: &View) {
    let lines = super::answer::lines(r);
    if !lines.is_empty() {
        out.push_str(&view.style.heading("Answer"));
        for (level, line) in &lines {
            out.push_str(&view.item(*level, line));
        }
    }
}

/// The verdicts the answer rests on: with two configurations, the second against the first;
/// with more, every pair, corrected together (the noise threshold is `compare`'s default).
fn render_answers(out: &mut String, r: &SuiteResult, view: &View) {
    use fsbench_stats::compare::{DEFAULT_NOISE_PERCENT, pairwise};
    let pairs = pairwise(r, DEFAULT_NOISE_PERCENT);
    let answers = pairs.answers();
    if answers.is_empty() {
        return;
    }
    let heading = match pairs.columns.as_slice() {
        [first, _] => format!("Verdicts against {}", first.config),
        _ => "Verdicts, every pair".to_string(),
    };
    out.push_str(&view.style.heading(&heading));
    let names = super::compare::names(&pairs.columns);
    for (baseline, a) in &answers {
        let comparison = &pairs.by_baseline[*baseline];
        out.push_str(&view.item(0, &super::compare::answer_line(&names, comparison, a)));
    }
    out.push_str(&view.item(
        0,
        &format!(
            "{} Noise threshold {DEFAULT_NOISE_PERCENT}%; `fsbench compare` shows every figure.",
            super::compare::corrections_text(&pairs.by_baseline[0])
        ),
    ));
}

/// The workload's own figures (extents, fsck after a phase, FFSB's per-operation figures), one
/// row per figure and a column per configuration, and the notes that go with them.
fn render_figures(
    out: &mut String,
    r: &SuiteResult,
    view: &View,
    workload: &str,
    configs: &[&str],
) {
    let style = view.style;
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
    // One figure's cells across the configurations.
    let cells = |phase: &str, name: &str| {
        let summaries: Vec<_> = configs
            .iter()
            .map(|c| r.summary(c, workload, phase, name).map(|s| &s.summary))
            .collect();
        mean_sd_column(&summaries, 1.0)
    };
    let grid = || {
        let columns = (rows.iter())
            .map(|(p, n, u)| (format!("{p} {}", with_unit(n, u)), cells(p, n)))
            .collect();
        let corner = ["Configuration".into(), "Figure".into()];
        Grid::of_columns(corner, configs, columns)
    };
    // A few figures read best as the seed articles laid them out, a row per configuration;
    // many (FFSB's per-operation figures) as a row per figure, or where the terminal is too
    // narrow for that, as the grid fits them.
    let table = if rows.is_empty() {
        None
    } else if rows.len() <= 6 {
        Some(grid().table(view))
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
            let mut row = vec![phase.to_string(), with_unit(name, unit)];
            row.extend(cells(phase, name));
            table.add_row(row);
        }
        for i in 2..table.column_count() {
            if let Some(col) = table.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        match fit(&mut table, view.width) {
            true => Some(table),
            false => Some(grid().table(view)),
        }
    };
    if let Some(table) = table {
        out.push_str(&style.table("Workload figures, mean ± stddev:", &table));
    }
    super::notes::render(out, &runs, view);
}

fn render_workload(
    out: &mut String,
    r: &SuiteResult,
    view: &View,
    workload: &str,
    description: &str,
    phases: &[PhaseInfo],
) {
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
    out.push_str(&view.style.heading(workload));
    out.push_str(&view.item(0, description));
    if configs.is_empty() {
        let _ = writeln!(out, "no successful runs");
        return;
    }
    let w = WorkloadTables {
        r,
        view,
        workload,
        configs: &configs,
    };
    let time_columns = w.render_times(out, phases);
    w.render_rates(out, phases);
    w.render_legend(out, phases, &time_columns);
    render_figures(out, r, view, workload, &configs);
    render_matrix(out, r, view, workload, &configs);
    if view.verbose {
        out.push_str(&details::all_figures(r, view, workload));
        out.push_str(&details::latency(r, view, workload, &configs, phases));
    }
}

/// A column of a phase table: its title, phase, figure and the divisor to its shown unit.
type Column<'p> = (String, &'p str, &'static str, f64);

/// One workload's phase tables: its configurations that have results, and their figures.
struct WorkloadTables<'a> {
    r: &'a SuiteResult,
    view: &'a View,
    workload: &'a str,
    configs: &'a [&'a str],
}

impl WorkloadTables<'_> {
    fn find(&self, config: &str, phase: &str, metric: &str) -> Option<&MetricSummary> {
        self.r.summary(config, self.workload, phase, metric)
    }

    fn short(&self, config: &str, phase: &str) -> bool {
        self.find(config, phase, "time")
            .is_some_and(|s| s.summary.mean < self.r.suite.min_phase_secs)
    }

    fn harness_bound(&self, config: &str, phase: &str) -> bool {
        self.find(config, phase, "harness %")
            .is_some_and(|s| ceiling::harness_bound(&s.summary))
    }

    fn marks(&self, config: &str, phase: &str, metric: &str) -> String {
        let mut m = String::new();
        if self.short(config, phase) {
            m.push_str(SHORT);
        }
        if metric != "time" && self.harness_bound(config, phase) {
            m.push_str(HARNESS_BOUND);
        }
        m
    }

    /// A phase no configuration measured (one with nothing to do) has no column; its note
    /// says why.
    fn has_data(&self, phase: &str, metric: &str) -> bool {
        self.configs
            .iter()
            .any(|c| self.find(c, phase, metric).is_some())
    }

    /// A phase table: per column (phase and figure) its cells down the configurations, in
    /// the column's unit, marked when the phase was too short.
    fn grid(&self, columns: &[Column<'_>]) -> Grid {
        let columns = columns
            .iter()
            .map(|(title, phase, metric, divisor)| {
                let summaries: Vec<_> = self
                    .configs
                    .iter()
                    .map(|c| self.find(c, phase, metric).map(|s| &s.summary))
                    .collect();
                let texts = mean_sd_column(&summaries, *divisor);
                let cells = (self.configs.iter().zip(texts))
                    .map(|(c, t)| t + &self.marks(c, phase, metric))
                    .collect();
                (title.clone(), cells)
            })
            .collect();
        Grid::of_columns(
            ["Configuration".into(), "Phase".into()],
            self.configs,
            columns,
        )
    }

    /// The phase times table; its columns, for the legend.
    fn render_times<'p>(&self, out: &mut String, phases: &'p [PhaseInfo]) -> Vec<Column<'p>> {
        let time_columns: Vec<_> = phases
            .iter()
            .filter(|p| self.has_data(&p.name, "time"))
            .map(|p| {
                let head = match p.timed {
                    true => p.name.to_string(),
                    false => format!("{} (untimed)", p.name),
                };
                (head, p.name.as_ref(), "time", 1.0)
            })
            .collect();
        let n = time_columns
            .first()
            .and_then(|(_, phase, ..)| self.find(self.configs[0], phase, "time"))
            .map_or(0, |s| s.summary.n);
        out.push_str(&self.view.style.table(
            &format!("Phase times in s, mean ± stddev over {n} run(s):"),
            &self.grid(&time_columns).table(self.view),
        ));
        time_columns
    }

    /// Rates, steady rates and throughput in MiB/s, as in every table; a column only where
    /// some configuration has it.
    fn render_rates(&self, out: &mut String, phases: &[PhaseInfo]) {
        let mut rate_columns = Vec::new();
        for p in phases {
            let name = p.name.as_ref();
            rate_columns.push((format!("{name} ({}/s)", p.unit), name, "rate", 1.0));
            // The steady-state rate (MSER-5) beside the whole phase's, where a run had one.
            let steady = format!("{name} steady ({}/s)", p.unit);
            rate_columns.push((steady, name, "steady rate", 1.0));
            if p.moves_data {
                let (unit, divisor) = super::shown_unit("KiB/s");
                rate_columns.push((format!("{name} ({unit})"), name, "throughput", divisor));
            }
        }
        rate_columns.retain(|(_, phase, metric, _)| self.has_data(phase, metric));
        if rate_columns.is_empty() {
            return;
        }
        out.push_str(&self.view.style.table(
            "Rates, mean of per-run rates ± stddev:",
            &self.grid(&rate_columns).table(self.view),
        ));
        if rate_columns.iter().any(|(_, _, m, _)| *m == "steady rate") {
            out.push_str(&self.view.item(
                0,
                "steady: the rate once warmed up (MSER-5), over the runs that settled; - where none did",
            ));
        }
    }

    /// What the tables' marks mean, where a mark was used, and runs whose tree was cut short.
    fn render_legend(&self, out: &mut String, phases: &[PhaseInfo], time_columns: &[Column<'_>]) {
        let (r, view) = (self.r, self.view);
        for run in r.runs.iter().filter(|x| x.workload == self.workload) {
            if let Some(what) = &run.incomplete {
                let _ = writeln!(
                    out,
                    "‡ INCOMPLETE TREE: {} run {}: {what}",
                    run.config, run.run
                );
            }
        }
        let any = |mark: &dyn Fn(&str, &str) -> bool| {
            (self.configs.iter()).any(|c| phases.iter().any(|p| mark(c, &p.name)))
        };
        if any(&|c, p| self.short(c, p)) {
            out.push_str(&view.item(
                0,
                &format!(
                    "† shorter than {} s: too short to measure reliably (see the warnings)",
                    r.suite.min_phase_secs
                ),
            ));
        }
        if any(&|c, p| self.harness_bound(c, p)) {
            // Wrapped at words by the view, as every long line.
            out.push_str(&view.item(
                0,
                &format!(
                    "‼ harness-bound: over {HARNESS_BOUND_PERCENT}% of the harness ceiling; the figure is mostly fsbench's and the kernel's VFS cost, not the filesystem's"
                ),
            ));
        }
        if time_columns
            .iter()
            .any(|(head, ..)| head.ends_with("(untimed)"))
        {
            out.push_str(&view.item(
                0,
                "untimed: set-up recorded to be seen, left out of verdicts, ranks and answers",
            ));
        }
    }
}

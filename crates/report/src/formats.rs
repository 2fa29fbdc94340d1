//! One interface for every report of a suite (hyperfine's `Exporter`, criterion's `Report`)
//! and their registry: the command line picks a row by name (`fsbench export --format NAME`,
//! `run --output-format NAME`), and a workload names the formats of its own (its
//! `WorkloadParams::REPORTS`).

use crate::fit::{Style, View};
use fsbench_measure::error::invalid;
use fsbench_model::results::SuiteResult;
use fsbench_stats::compare::{DEFAULT_NOISE_PERCENT, suite_columns};

/// A way to write a suite's results.
pub trait Report: Sync {
    /// The name the command line takes.
    fn name(&self) -> &'static str;
    /// One line for `fsbench export --help`.
    fn describe(&self) -> &'static str;
    /// `fsbench export --format NAME` (and `run --export-*`) offers it.
    fn exported(&self) -> bool {
        true
    }
    /// `run`/`show --output-format NAME` offers it, with this line for `--help`.
    fn on_stdout(&self) -> Option<&'static str> {
        None
    }
    /// The text: for a suite without what the format needs, an error that says so.
    fn render(&self, suite: &SuiteResult, view: &View) -> anyhow::Result<String>;
    /// What the terminal shows of it before its tables when one of the suite's workloads
    /// names it (FFSB's and fio's own reports, for users who compare with their output).
    fn leads_terminal(&self, _suite: &SuiteResult, _view: &View) -> String {
        String::new()
    }
}

impl std::fmt::Debug for dyn Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Every report, in the order `--help` lists them.
pub static REPORTS: &[&dyn Report] = &[
    &Terminal,
    &Json,
    &Csv,
    &Markdown,
    &Iozone,
    &Fio,
    &FioJson,
    &FioJsonPlus,
    &FioTerse,
    &Ffsb,
    &Filebench,
    &Html,
];

/// The report called `name`; an unknown name is refused, naming the known ones.
pub fn named(name: &str) -> anyhow::Result<&'static dyn Report> {
    REPORTS
        .iter()
        .find(|r| r.name() == name)
        .copied()
        .ok_or_else(|| {
            let known: Vec<&str> = REPORTS.iter().map(|r| r.name()).collect();
            invalid(format!(
                "unknown report format `{name}`; known: {}",
                known.join(", ")
            ))
        })
}

/// The terminal's tables: the own reports of the suite's workloads first (found through
/// their registry rows), the answer leading the tables and ending them, where a long run's
/// reader looks.
struct Terminal;

impl Report for Terminal {
    fn name(&self) -> &'static str {
        "table"
    }
    fn describe(&self) -> &'static str {
        "Tables for a person"
    }
    fn exported(&self) -> bool {
        false
    }
    fn on_stdout(&self) -> Option<&'static str> {
        Some(self.describe())
    }
    fn render(&self, suite: &SuiteResult, view: &View) -> anyhow::Result<String> {
        let view = View {
            style: Style::Terminal,
            ..*view
        };
        let own: Vec<&str> = (suite.suite.workloads.iter())
            .filter_map(|w| fsbench_workloads::registered(&w.kind))
            .flat_map(|k| k.reports.iter().copied())
            .collect();
        let mut out = String::new();
        for report in REPORTS.iter().filter(|r| own.contains(&r.name())) {
            out.push_str(&report.leads_terminal(suite, &view));
        }
        let mut answer = String::new();
        crate::table::render_conclusions(&mut answer, suite, &view);
        out.push_str(&crate::table::render(suite, &view));
        Ok(out + &answer)
    }
}

struct Json;

impl Report for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn describe(&self) -> &'static str {
        "The versioned JSON document: every run and summary"
    }
    fn on_stdout(&self) -> Option<&'static str> {
        Some("One versioned JSON document")
    }
    fn render(&self, suite: &SuiteResult, _: &View) -> anyhow::Result<String> {
        Ok(crate::json::render(suite) + "\n")
    }
}

struct Csv;

impl Report for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn describe(&self) -> &'static str {
        "One row per figure of every run and per summary, in long form"
    }
    fn render(&self, suite: &SuiteResult, _: &View) -> anyhow::Result<String> {
        crate::csv::render(suite)
    }
}

/// The terminal's tables as a Markdown document, every figure included.
struct Markdown;

impl Report for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }
    fn describe(&self) -> &'static str {
        "The tables, every figure included"
    }
    fn render(&self, suite: &SuiteResult, _: &View) -> anyhow::Result<String> {
        Ok(crate::table::render(suite, &View::markdown()))
    }
}

struct Iozone;

impl Report for Iozone {
    fn name(&self) -> &'static str {
        "iozone"
    }
    fn describe(&self) -> &'static str {
        "IOzone's -R report layout of the throughput matrices"
    }
    fn render(&self, suite: &SuiteResult, _: &View) -> anyhow::Result<String> {
        crate::iozone::render(suite)
    }
}

struct Ffsb;

impl Report for Ffsb {
    fn name(&self) -> &'static str {
        "ffsb"
    }
    fn describe(&self) -> &'static str {
        "FFSB's report layout of the ffsb workload's means"
    }
    fn render(&self, suite: &SuiteResult, view: &View) -> anyhow::Result<String> {
        crate::ffsb::report(suite, view.width)
    }
    fn leads_terminal(&self, suite: &SuiteResult, view: &View) -> String {
        crate::ffsb::render(suite, view.width)
    }
}

struct Filebench;

impl Report for Filebench {
    fn name(&self) -> &'static str {
        "filebench"
    }
    fn describe(&self) -> &'static str {
        "filebench's summary layout of the personality workload's means"
    }
    fn render(&self, suite: &SuiteResult, view: &View) -> anyhow::Result<String> {
        crate::filebench::report(suite, view.width)
    }
    fn leads_terminal(&self, suite: &SuiteResult, view: &View) -> String {
        crate::filebench::render(suite, view.width)
    }
}

/// `fsbench report ID` as a format: every configuration of one suite against its first.
/// (`fsbench report` itself takes several suites and a noise threshold.)
struct Html;

impl Report for Html {
    fn name(&self) -> &'static str {
        "html"
    }
    fn describe(&self) -> &'static str {
        "The self-contained HTML report of `fsbench report ID`"
    }
    fn render(&self, suite: &SuiteResult, _: &View) -> anyhow::Result<String> {
        let columns = suite_columns(suite);
        if columns.is_empty() {
            return Err(invalid(
                "nothing to compare: the suites have no configurations",
            ));
        }
        Ok(crate::html::render(
            std::slice::from_ref(suite),
            &columns,
            DEFAULT_NOISE_PERCENT,
        ))
    }
}

mod fio;
use fio::{Fio, FioJson, FioJsonPlus, FioTerse};

#[cfg(test)]
mod tests;

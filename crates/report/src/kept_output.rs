//! What the command workload's commands wrote, run by run: the tails kept in the results.

use std::fmt::Write as _;

use super::fit::View;
use fsbench_model::results::SuiteResult;

/// Each run's kept stdout and stderr, step by step, under a heading; nothing when no run
/// kept any.
pub(super) fn render(out: &mut String, r: &SuiteResult, view: &View) {
    let runs: Vec<_> = r.runs.iter().filter(|run| !run.output.is_empty()).collect();
    if runs.is_empty() {
        return;
    }
    out.push_str(
        &view
            .style
            .heading("Command output (the last 64 KiB of each stream)"),
    );
    for run in runs {
        out.push_str(&view.item(
            1,
            &format!("run {} · {} · {}", run.run, run.config, run.workload),
        ));
        for o in &run.output {
            for (stream, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
                if text.is_empty() {
                    continue;
                }
                let _ = writeln!(out, "    {} {stream}:", o.step);
                for line in text.lines() {
                    let _ = writeln!(out, "      | {line}");
                }
            }
        }
    }
}

//! IOzone's `-R` (Excel) report layout, so spreadsheets built for IOzone keep working: per
//! test a block titled as IOzone titles it, record sizes in KiB across the first row, file
//! sizes in KiB down the first column, KiB/s in the cells (fsbench's mean over runs). One set
//! of blocks per configuration, each introduced by a line naming it.

use std::fmt::Write;

use crate::error::invalid;
use crate::results::SuiteResult;
use crate::workload::iozone::{TESTS, matrix_axes, matrix_metric};

pub fn render(r: &SuiteResult) -> anyhow::Result<String> {
    let workloads: Vec<String> = r
        .suite
        .workloads
        .iter()
        .map(|w| w.label())
        .filter(|w| !matrix_axes(&r.runs, w).0.is_empty())
        .collect();
    if workloads.is_empty() {
        return Err(invalid(
            "this suite has no IOzone-style matrix to export (run an iozone workload)",
        ));
    }
    let mut out = String::new();
    for workload in &workloads {
        let (tests, files, records) = matrix_axes(&r.runs, workload);
        for c in &r.configurations {
            let config = &c.config.label;
            let _ = writeln!(
                out,
                "\tfsbench {workload} on {config}: mean of the successful runs, KiB/s\n"
            );
            let _ = writeln!(out, "Excel output is below:");
            for test in &tests {
                let title = TESTS.iter().find(|t| t.0 == *test).map_or(*test, |t| t.2);
                let _ = writeln!(out, "\n\"{title}\"");
                let header: Vec<String> = records
                    .iter()
                    .map(|rec| format!("\"{}\"", rec / 1024))
                    .collect();
                let _ = writeln!(out, "      {}", header.join("  "));
                for f in &files {
                    let mut line = format!("\"{}\"", f / 1024);
                    for rec in records.iter().filter(|rec| *rec <= f) {
                        if let Some(s) =
                            r.summary(config, workload, "matrix", &matrix_metric(test, *f, *rec))
                        {
                            let _ = write!(line, "   {:.0}", s.summary.mean);
                        }
                    }
                    let _ = writeln!(out, "{line}");
                }
            }
            out.push('\n');
        }
    }
    Ok(out)
}

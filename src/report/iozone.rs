//! IOzone's `-R` (Excel) report layout, so spreadsheets built for IOzone keep working: per
//! test a block titled as IOzone titles it, record sizes in KiB across the first row, file
//! sizes in KiB down the first column, KiB/s in the cells (fsbench's mean over runs). One set
//! of blocks per configuration, each introduced by a line naming it.

use std::fmt::Write;

use super::matrix::Matrix;
use crate::error::invalid;
use crate::measure::DimValue;
use crate::results::SuiteResult;
use crate::workload::iozone::{DIMENSIONS, TESTS};

/// The suite's IOzone matrices: per workload whose figures are broken down by IOzone's
/// dimensions, its throughput matrix.
fn matrices(r: &SuiteResult) -> Vec<(String, Matrix<'_>)> {
    r.suite
        .workloads
        .iter()
        .map(|w| w.label())
        .filter_map(|w| {
            let m = Matrix::of(
                r.summaries
                    .iter()
                    .filter(|s| s.workload == w)
                    .map(|s| (s.config.clone(), s)),
            )?;
            (m.names == DIMENSIONS).then_some((w, m))
        })
        .collect()
}

pub fn render(r: &SuiteResult) -> anyhow::Result<String> {
    let matrices = matrices(r);
    if matrices.is_empty() {
        return Err(invalid(
            "this suite has no IOzone-style matrix to export (run an iozone workload)",
        ));
    }
    let kib = |v: &DimValue| match v {
        DimValue::Bytes(b) => b / 1024,
        _ => 0,
    };
    let mut out = String::new();
    for (workload, m) in &matrices {
        for c in &r.configurations {
            let config = &c.config.label;
            let _ = writeln!(
                out,
                "\tfsbench {workload} on {config}: mean of the successful runs, KiB/s\n"
            );
            let _ = writeln!(out, "Excel output is below:");
            for test in &m.tables {
                let name = test.to_string();
                let title = TESTS
                    .iter()
                    .find(|t| t.0 == name)
                    .map_or(name.as_str(), |t| t.2);
                let _ = writeln!(out, "\n\"{title}\"");
                let header: Vec<String> = m
                    .cols
                    .iter()
                    .map(|rec| format!("\"{}\"", kib(rec)))
                    .collect();
                let _ = writeln!(out, "      {}", header.join("  "));
                for f in &m.rows {
                    let mut line = format!("\"{}\"", kib(f));
                    for rec in m.cols.iter().filter(|rec| *rec <= f) {
                        if let Some(s) = m.get(config, test, f, rec) {
                            let _ = write!(line, "   {:.0}", s.mean);
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

//! IOzone's `-R` output, so scripts and spreadsheets built for IOzone keep working: per
//! configuration (one IOzone run) the preamble lines that apply, `iozone test complete.`,
//! `Excel output is below:` and per test a block titled and laid out as IOzone's dump_report
//! prints it, to the space: record sizes in KiB across, file sizes in KiB down, KiB/s in the
//! cells (fsbench's mean over runs). IOzone's normal table before the Excel section is not
//! reproduced.

use std::fmt::Write;

use super::matrix::Matrix;
use crate::error::invalid;
use crate::measure::DimValue;
use crate::results::SuiteResult;
use crate::workload::WorkloadSpec;
use crate::workload::iozone::{DIMENSIONS, IozoneParams, TESTS};

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
    let mut out = String::new();
    for (workload, m) in &matrices {
        let params = r.suite.workloads.iter().find_map(|w| match w {
            WorkloadSpec::Iozone(p) if w.label() == *workload => Some(p),
            _ => None,
        });
        // IOzone's header lists every record size of the run, measured in a row or not.
        let records: Vec<u64> = params.map_or_else(
            || m.cols.iter().map(kib).collect(),
            |p| p.record_sizes.iter().map(|r| r / 1024).collect(),
        );
        for c in &r.configurations {
            let config = &c.config.label;
            let runs = r
                .summaries
                .iter()
                .find(|s| s.config == *config && s.workload == *workload)
                .map_or(0, |s| s.summary.n);
            preamble(&mut out, workload, config, runs, m, params);
            out.push_str("\niozone test complete.\nExcel output is below:\n");
            for test in &m.tables {
                let name = test.to_string();
                let title = TESTS
                    .iter()
                    .find(|t| t.0 == name)
                    .map_or(name.as_str(), |t| t.2);
                let _ = write!(out, "\n\"{title}\"\n");
                dump_report(&mut out, m, config, test, &records);
            }
            out.push('\n');
        }
    }
    Ok(out)
}

/// A size dimension in KiB, as IOzone prints sizes.
fn kib(v: &DimValue) -> u64 {
    match v {
        DimValue::Bytes(b) => b / 1024,
        DimValue::Count(n) => *n,
        DimValue::Text(_) => 0,
    }
}

/// IOzone's lines before its table, where they apply to fsbench's run.
fn preamble(
    out: &mut String,
    workload: &str,
    config: &str,
    runs: usize,
    m: &Matrix<'_>,
    params: Option<&IozoneParams>,
) {
    let _ = write!(
        out,
        "\tIozone: Performance Test of File I/O\n\t        fsbench {}: {workload} on {config}, mean of {runs} run(s)\n\n",
        env!("CARGO_PKG_VERSION")
    );
    if params.is_some_and(|p| matches!(p.preset.as_deref(), Some("auto" | "quick"))) {
        out.push_str("\tAuto Mode\n");
    }
    let sizes: Vec<u64> = m.rows.iter().map(kib).collect();
    if let (Some(min), Some(max)) = (sizes.first(), sizes.last()) {
        let _ = write!(
            out,
            "\tUsing minimum file size of {min} kilobytes.\n\tUsing maximum file size of {max} kilobytes.\n"
        );
    }
    out.push_str("\tExcel chart generation enabled\n\tOutput is in kBytes/sec\n");
}

/// One test's block as IOzone's `dump_report` prints it: six spaces, then `  "<KiB>"` per
/// record size; then per file size `"<KiB>"  ` and ` <KiB/s> ` per measured cell (integers,
/// truncated as IOzone's `%lld` of its long long rates).
fn dump_report(out: &mut String, m: &Matrix<'_>, config: &str, test: &DimValue, records: &[u64]) {
    out.push_str("      ");
    for r in records {
        let _ = write!(out, "  \"{r}\"");
    }
    out.push('\n');
    let mut first = true;
    for f in &m.rows {
        let cells: Vec<u64> = m
            .cols
            .iter()
            .filter_map(|rec| m.get(config, test, f, rec))
            .map(|s| s.mean as u64)
            .collect();
        if cells.is_empty() {
            continue;
        }
        if !first {
            out.push('\n');
        }
        first = false;
        let _ = write!(out, "\"{}\"  ", kib(f));
        for v in cells {
            let _ = write!(out, " {v} ");
        }
    }
    out.push('\n');
}

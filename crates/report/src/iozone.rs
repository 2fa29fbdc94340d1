//! IOzone's `-R` output, so scripts and spreadsheets built for IOzone keep working: per
//! configuration (one IOzone run) the preamble lines that apply, `iozone test complete.`,
//! `Excel output is below:` and per test a block titled and laid out as IOzone's dump_report
//! prints it, to the space: record sizes in KiB across, file sizes in KiB down, KiB/s in the
//! cells (fsbench's mean over runs). Before it, IOzone's normal table: its two header lines
//! and a row per file and record size with every test's KiB/s in IOzone's field widths.

use std::fmt::Write;

use super::matrix::Matrix;
use fsbench_measure::error::invalid;
use fsbench_model::measurement::DimValue;
use fsbench_model::results::SuiteResult;
use fsbench_workloads::iozone::{DIMENSIONS, IozoneParams, TESTS};

/// The suite's IOzone matrices: per workload whose figures are broken down by IOzone's
/// dimensions, its throughput matrix.
fn matrices(r: &SuiteResult) -> Vec<(String, Matrix<'_>)> {
    r.workload_records
        .iter()
        .map(|w| w.label.clone())
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

pub(crate) fn render(r: &SuiteResult) -> anyhow::Result<String> {
    let matrices = matrices(r);
    if matrices.is_empty() {
        return Err(invalid(
            "this suite has no IOzone-style matrix to export (run an iozone workload)",
        ));
    }
    let mut out = String::new();
    let typed = crate::typed_workloads(r);
    for (workload, m) in &matrices {
        let params = (typed.iter())
            .find(|(label, _)| label == workload)
            .and_then(|(_, w)| w.get::<IozoneParams>());
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
            normal_table(&mut out, m, config);
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

/// IOzone's test groups in its `func[]` order (`mix` at 8 is not fsbench's), each with the
/// printf widths of its cells and the blank it prints instead when the group was not asked
/// for (`test_output[]`, whose fread entry is a column narrower than its data).
const GROUPS: [(&[usize], usize); 11] = [
    (&[9, 9], 18),
    (&[9, 9], 18),
    (&[9, 9], 18),
    (&[9], 9),
    (&[10], 10),
    (&[10], 10),
    (&[9, 9], 18),
    (&[9, 9], 17),
    (&[], 0),
    (&[9, 9], 18),
    (&[8, 9], 18),
];

/// IOzone's normal table (its `print_header` for plain I/O, then `begin`'s rows): `%16lld%8lld`
/// file and record KiB, then each test group's rates, or its blank when the group was not
/// run. Groups after fread appear only when the suite ran pwrite or pread, as in a build with
/// `HAVE_PREAD`, whose header IOzone does not widen.
fn normal_table(out: &mut String, m: &Matrix<'_>, config: &str) {
    out.push_str(&header_line([
        " ", " ", " ", " ", " ", " ", "random", "random", "bkwd", "record", "stride", "", "", "",
        "",
    ]));
    out.push_str(&header_line([
        "kB", "reclen", "write", "rewrite", "read", "reread", "read", "write", "read", "rewrite",
        "read", "fwrite", "frewrite", "fread", "freread",
    ]));
    let tests: Vec<Test<'_>> = (m.tables.iter())
        .filter_map(|t| {
            let name = t.to_string();
            let group = TESTS.iter().position(|x| x.0 == name)?;
            let first = TESTS.iter().position(|x| x.1 == TESTS[group].1)?;
            Some((t, TESTS[group].1, group - first))
        })
        .collect();
    let last_group = tests.iter().map(|t| t.1).max().unwrap_or(0).max(8);
    if last_group > 8 {
        name_pread_columns(out, &tests, last_group);
    }
    for f in &m.rows {
        for rec in &m.cols {
            let rate = |group: u8, index: usize| {
                let (test, ..) = tests.iter().find(|t| t.1 == group && t.2 == index)?;
                m.get(config, test, f, rec).map(|s| s.mean as u64)
            };
            if !tests.iter().any(|t| rate(t.1, t.2).is_some()) {
                continue;
            }
            let _ = write!(out, "{:16}{:8}", kib(f), kib(rec));
            for (group, (widths, blank)) in GROUPS.iter().enumerate().take(last_group as usize + 1)
            {
                let group = group as u8;
                if (0..widths.len()).all(|i| rate(group, i).is_none()) {
                    let _ = write!(out, "{:blank$}", "");
                    continue;
                }
                for (i, width) in widths.iter().enumerate() {
                    // Record rewrite and stride read print " %9lld".
                    let (pad, width) = if *width == 10 { (" ", 9) } else { ("", *width) };
                    let _ = write!(out, "{pad}{:width$}", rate(group, i).unwrap_or(0));
                }
            }
            out.push('\n');
        }
    }
}

/// A test in the matrix: its name, its group in [`TESTS`] and its place in the group.
type Test<'a> = (&'a DimValue, u8, usize);

/// A line of the normal table's header, in IOzone's widths.
fn header_line(cells: [&str; 15]) -> String {
    let widths = [16, 8, 9, 9, 8, 10, 8, 9, 9, 9, 9, 9, 9, 9, 9];
    let mut line = String::new();
    for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
        // CONTROL_STRING3 puts a space before its 8th, 10th and 11th fields.
        if matches!(i, 7 | 9 | 10) {
            line.push(' ');
        }
        let _ = write!(line, "{cell:>width$}");
    }
    line + "\n"
}

/// IOzone does not name the pwrite and pread columns; fsbench does, on the header's last
/// line, above their data.
fn name_pread_columns(out: &mut String, tests: &[Test<'_>], last_group: u8) {
    let ran = |group: u8| tests.iter().any(|t| t.1 == group);
    let titled = out.lines().last().map_or(0, |l| l.chars().count());
    let start = 24
        + (0..9)
            .map(|g| match GROUPS[g] {
                (widths, _) if ran(g as u8) => widths.iter().sum::<usize>(),
                (_, blank) => blank,
            })
            .sum::<usize>();
    let mut names = String::new();
    for (group, labels) in [(9, ["pwrite", "repwrite"]), (10, ["pread", "repread"])] {
        if group > last_group as usize {
            break;
        }
        match GROUPS[group] {
            (widths, _) if ran(group as u8) => {
                for (label, width) in labels.iter().zip(widths.iter()) {
                    let _ = write!(names, "{label:>width$}");
                }
            }
            (_, blank) => {
                let _ = write!(names, "{:blank$}", "");
            }
        }
    }
    out.pop();
    let _ = writeln!(
        out,
        "{:pad$}{names}",
        "",
        pad = start.saturating_sub(titled)
    );
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

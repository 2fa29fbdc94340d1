//! Matrix figures in the terminal: per test a summary line (geometric mean, best and worst
//! cell), or with `--verbose` the whole matrix.

use super::*;
use fsbench_model::measurement::DimValue;
use fsbench_model::results::ceiling::HARNESS_PERCENT;

/// A matrix figure (IOzone's throughput): per first dimension (test) a table, the second
/// down and the third across, in MiB/s.
pub(super) fn render_matrix(
    out: &mut String,
    r: &SuiteResult,
    view: &View,
    workload: &str,
    configs: &[&str],
) {
    let style = view.style;
    let matrix = |harness: bool| {
        Matrix::of(
            (r.summaries.iter())
                .filter(|s| s.workload == workload && (s.metric == HARNESS_PERCENT) == harness)
                .map(|s| (s.config.clone(), s)),
        )
    };
    let Some(m) = matrix(false) else {
        return;
    };
    let (unit, scale) = crate::shown_unit(&m.unit);
    // On a terminal a line per test and configuration; the matrices with --verbose, in the
    // Markdown export, and cell by cell in `fsbench export`.
    if style == Style::Terminal && !view.verbose {
        let harness = matrix(true);
        render_matrix_summary(out, view, &m, harness.as_ref(), configs, unit, scale);
        if harness.is_none() {
            out.push_str(&view.item(0, &no_cell_ceiling(r, workload)));
        }
        return;
    }
    for table in &m.tables {
        let mut header = vec!["Configuration".to_string(), m.names[1].clone()];
        header.extend(m.cols.iter().map(ToString::to_string));
        let mut t = new_table(style, header);
        for c in configs {
            for row_value in &m.rows {
                let cells: Vec<_> = m
                    .cols
                    .iter()
                    .map(|col_value| m.get(c, table, row_value, col_value))
                    .collect();
                if cells.iter().all(Option::is_none) {
                    continue;
                }
                // A cell the matrix does not have (a record larger than the file) stays blank.
                let texts = mean_sd_column(&cells, scale)
                    .into_iter()
                    .zip(&cells)
                    .map(|(text, cell)| if cell.is_some() { text } else { String::new() });
                let mut row = vec![c.to_string(), row_value.to_string()];
                row.extend(texts);
                t.add_row(row);
            }
        }
        if t.row_count() == 0 {
            continue;
        }
        right_align(&mut t);
        fit(&mut t, view.width);
        out.push_str(&style.table(
            &format!(
                "{table}: {unit} (mean ± stddev), {} down, {} across:",
                m.names[1], m.names[2]
            ),
            &t,
        ));
    }
}

/// Why a matrix has no harness % per cell: no tmpfs ceiling was measured for the workload, or
/// the one cached has no cells.
fn no_cell_ceiling(r: &SuiteResult, workload: &str) -> String {
    let reason = if r.ceilings.iter().any(|c| c.workload == workload) {
        "the harness ceiling has no cells"
    } else {
        "no harness ceiling: it is measured on tmpfs, as root, for targets fsbench makes filesystems on, and the workload must run there"
    };
    format!("harness % per cell: n/a ({reason})")
}

/// The geometric mean of positive values (`None` without any).
fn geometric_mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .filter(|v| *v > 0.0)
        .fold((0.0, 0usize), |(sum, n), v| (sum + v.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

/// Per test (first dimension) and configuration: the geometric mean of the cells' means, the
/// best and worst cell, and the cells' harness % (geometric mean and largest) where known.
fn render_matrix_summary(
    out: &mut String,
    view: &View,
    m: &Matrix,
    harness: Option<&Matrix>,
    configs: &[&str],
    unit: &str,
    divisor: f64,
) {
    let mut header: Vec<String> = [
        m.names[0].as_str(),
        "Configuration",
        "Geometric mean",
        "Best cell",
        "Worst cell",
    ]
    .map(String::from)
    .to_vec();
    if harness.is_some() {
        header.push("Harness %".into());
    }
    let mut t = new_table(view.style, header);
    for table in &m.tables {
        for c in configs {
            let cells: Vec<(f64, String)> = m
                .rows
                .iter()
                .flat_map(|r| m.cols.iter().map(move |col| (r, col)))
                .filter_map(|(r, col)| {
                    let s = m.get(c, table, r, col)?;
                    Some((s.mean / divisor, format!("{r}/{col}")))
                })
                .collect();
            if cells.is_empty() {
                continue;
            }
            let decimals = column_decimals(cells.iter().map(|(v, _)| *v));
            let geometric = geometric_mean(cells.iter().map(|(v, _)| *v));
            let by_value = |a: &&(f64, String), b: &&(f64, String)| a.0.total_cmp(&b.0);
            let cell_text = |(v, at): &(f64, String)| format!("{} at {at}", fixed(*v, decimals));
            let best = cells.iter().max_by(by_value).map(cell_text);
            let worst = cells.iter().min_by(by_value).map(cell_text);
            let mut row = vec![
                table.to_string(),
                c.to_string(),
                geometric.map_or("-".into(), |g| fixed(g, decimals)),
                best.unwrap_or_default(),
                worst.unwrap_or_default(),
            ];
            if let Some(h) = harness {
                row.push(harness_text(m, h, c, table));
            }
            t.add_row(row);
        }
    }
    right_align(&mut t);
    fit(&mut t, view.width);
    out.push_str(&view.style.table(
        &format!(
            "{} in {unit}, mean over runs, per {} and configuration ({} / {} cells; \
             --verbose shows the matrices, `fsbench export` every cell){}:",
            m.metric,
            m.names[0],
            m.names[1],
            m.names[2],
            if harness.is_some() {
                "; harness %: each cell against the same cell on tmpfs (geometric mean, largest)"
            } else {
                ""
            }
        ),
        &t,
    ));
}

/// A configuration's harness % over one test's cells: their geometric mean and largest.
fn harness_text(m: &Matrix, harness: &Matrix, config: &str, table: &DimValue) -> String {
    let percents: Vec<f64> = (m.rows.iter())
        .flat_map(|r| m.cols.iter().map(move |col| (r, col)))
        .filter_map(|(r, col)| Some(harness.get(config, table, r, col)?.mean))
        .collect();
    let largest = percents.iter().copied().reduce(f64::max);
    match (geometric_mean(percents.iter().copied()), largest) {
        (Some(g), Some(max)) => format!("{g:.0}, max {max:.0}"),
        _ => "n/a".into(),
    }
}

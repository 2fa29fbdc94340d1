//! Reports of a suite's results behind one trait ([`formats::Report`]): terminal tables,
//! Markdown, CSV, JSON, HTML and the tools' own formats.

pub mod aging;
mod answer;
mod charts;
pub mod compare;
pub mod crash;
mod csv;
mod details;
pub mod fdtree;
mod ffsb;
mod filebench;
mod fio;
pub mod fit;
pub mod formats;
pub mod html;
mod io_sweep;
mod iozone;
mod json;
mod kept_output;
mod matrix;
mod mpi_ranks;
pub mod notes;
pub mod ranking;
pub mod stack;
mod table;
#[cfg(test)]
mod terminal_tests;
mod warnings;

/// The suite's workloads that this fsbench can read, typed, each with its recorded label:
/// for the reports of a workload's own (FFSB's, fio's, IOzone's), which need its settings.
fn typed_workloads(
    r: &fsbench_model::results::SuiteResult,
) -> Vec<(String, fsbench_workloads::Params)> {
    let typed = r.suite.workloads.iter().enumerate().filter_map(|(i, w)| {
        let p = fsbench_workloads::Params::of(w).ok()?;
        let label = r
            .workload_records
            .get(i)
            .map_or_else(|| p.label(), |w| w.label.clone());
        Some((label, p))
    });
    typed.collect()
}

/// The one unit rule of what people read (terminal, Markdown, HTML): data rates in MiB/s,
/// while the data (JSON, CSV, the database, `compare`'s JSON) keep their KiB/s. The unit
/// shown, and what divides a value to show it.
pub(crate) fn shown_unit(unit: &str) -> (&str, f64) {
    match unit {
        "KiB/s" => ("MiB/s", 1024.0),
        other => (other, 1.0),
    }
}

/// A summary in the unit it is shown in (see [`shown_unit`]).
pub(crate) fn shown_summary(
    s: &fsbench_model::results::Summary,
    divisor: f64,
) -> fsbench_model::results::Summary {
    let scale = |v: f64| v / divisor;
    fsbench_model::results::Summary {
        mean: scale(s.mean),
        stddev: s.stddev.map(scale),
        min: scale(s.min),
        max: scale(s.max),
        median: scale(s.median),
        ci95_low: s.ci95_low.map(scale),
        ci95_high: s.ci95_high.map(scale),
        values: s.values.iter().copied().map(scale).collect(),
        ..s.clone()
    }
}

/// A figure's name for people, in its shown unit: `throughput write (MiB/s) ↑`.
pub(crate) fn shown_label(key: &fsbench_stats::compare::FigureKey) -> String {
    let mut key = key.clone();
    key.unit = shown_unit(&key.unit).0.to_string();
    key.label()
}

/// A figure's mean over a configuration's runs, and how many runs: the summary of `metric`
/// at `dims` of `workload`'s `phase` on `config`.
fn mean_of(
    r: &fsbench_model::results::SuiteResult,
    config: &str,
    workload: &str,
    phase: &str,
    metric: &str,
    dims: &[fsbench_model::measurement::Dim],
) -> Option<(f64, usize)> {
    (r.summaries.iter())
        .find(|s| {
            s.config == config
                && s.workload == workload
                && s.phase == phase
                && s.metric == metric
                && s.dims == dims
        })
        .map(|s| (s.summary.mean, s.summary.n))
}

/// A figure with a precision that suits its size: 0.0123, 1.234, 12.35, 1,234.5.
pub fn figure(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    // Beyond what digits can show (the bounds of wide intervals): an exponent.
    if a >= 1e15 || (a > 0.0 && a < 1e-9) {
        format!("{v:.2e}")
    } else if a >= 1000.0 {
        fixed(v, 1)
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 0.01 || a == 0.0 {
        format!("{v:.3}")
    } else {
        // Three significant digits without an exponent: 0.00442.
        let decimals = (2.0 - a.log10().floor()).min(12.0) as usize;
        format!("{v:.decimals$}")
    }
}

/// The decimals that give the largest of `values` three significant digits: one precision
/// for a whole column, so that its numbers line up (26,141 · 0.278 · 0.0095).
pub fn column_decimals(values: impl IntoIterator<Item = f64>) -> usize {
    let largest = values
        .into_iter()
        .filter(|v| v.is_finite())
        .map(f64::abs)
        .fold(0.0, f64::max);
    if largest == 0.0 {
        return 0;
    }
    (2 - largest.log10().floor() as i32).clamp(0, 6) as usize
}

/// `v` with `decimals` decimals and thousands separators: 1,234.5.
pub fn fixed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let rounded = format!("{:.decimals$}", v.abs());
    let (int, frac) = rounded
        .split_once('.')
        .map_or((rounded.as_str(), String::new()), |(i, f)| {
            (i, format!(".{f}"))
        });
    let sign = if v < 0.0 && rounded.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        "-"
    } else {
        ""
    };
    format!(
        "{sign}{}{frac}",
        fsbench_model::units::group_thousands(int.parse().unwrap_or(0))
    )
}

#[cfg(test)]
mod tests {
    use super::{column_decimals, figure, fixed};

    #[test]
    fn a_column_shares_one_precision() {
        assert_eq!(column_decimals([26_140.9, 1_626.3]), 0);
        assert_eq!(column_decimals([0.278, 0.016]), 3);
        assert_eq!(column_decimals([0.00946, 0.014]), 4);
        assert_eq!(column_decimals([0.0]), 0);
        assert_eq!(fixed(26_140.9, 0), "26,141");
        assert_eq!(fixed(0.00946, 4), "0.0095");
        assert_eq!(fixed(-1234.56, 1), "-1,234.6");
        assert_eq!(fixed(-0.0001, 2), "0.00");
        assert_eq!(fixed(f64::INFINITY, 2), "-");
    }

    #[test]
    fn figures_read_at_a_glance() {
        assert_eq!(figure(0.5123), "0.512");
        assert_eq!(figure(12.345), "12.35");
        assert_eq!(figure(342.9), "342.9");
        assert_eq!(figure(70889.8), "70,889.8");
        assert_eq!(figure(-1234.5), "-1,234.5");
        assert_eq!(figure(0.0), "0.000");
        assert_eq!(figure(0.004423), "0.00442");
        assert_eq!(figure(0.0000123), "0.0000123");
        assert_eq!(figure(f64::NAN), "-");
        assert_eq!(figure(1.5e42), "1.50e42");
        assert_eq!(figure(2.0e-12), "2.00e-12");
    }
}

//! FFSB's own report for `fsbench ffsb PROFILE`, laid out as FFSB 6 prints it (main.c,
//! ffsb_op.c): per thread group when there are several, then the total, each with FFSB's
//! operation table, transactions per second and throughput, then the CPU lines. Every figure
//! is fsbench's mean over the configuration's successful runs; fsbench's statistics follow
//! in the usual tables.

use std::fmt::Write;

use fsbench_measure::error::invalid;
use fsbench_model::measurement::{Dim, DimValue};
use fsbench_model::results::SuiteResult;
use fsbench_workloads::ffsb::{FfsbParams, Op};

/// C's `%.3g`: three significant digits, trailing zeros dropped, an exponent for large and
/// small values.
fn g3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    let exponent = v.abs().log10().floor() as i32;
    // %g rounds first: 999.6 is printed as 1e+03.
    let rounded: f64 = format!("{v:.2e}").parse().unwrap_or(v);
    let exponent = exponent.max(rounded.abs().log10().floor() as i32);
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(-4..3).contains(&exponent) {
        let mantissa = trim(format!("{:.2}", rounded / 10f64.powi(exponent)));
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        trim(format!("{v:.*}", (2 - exponent) as usize))
    }
}

/// FFSB's `ffsb_printsize`: bytes (per second) in B, KB, MB or GB with `%.3g`.
fn printsize(bytes: f64) -> String {
    let units = [(1u64 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "KB")];
    for (size, unit) in units {
        if bytes >= size as f64 {
            return format!("{}{unit}", g3(bytes / size as f64));
        }
    }
    format!("{}B", g3(bytes))
}

/// `fsbench export --format ffsb`: the report, refused for a suite without an ffsb workload.
pub(crate) fn report(r: &SuiteResult, width: Option<u16>) -> anyhow::Result<String> {
    if !(crate::typed_workloads(r).iter()).any(|(_, w)| w.get::<FfsbParams>().is_some()) {
        return Err(invalid(
            "this suite has no ffsb workload to export as FFSB's report (run `fsbench ffsb PROFILE` or -w ffsb:...)",
        ));
    }
    Ok(render(r, width))
}

/// The report for every FFSB workload and configuration of `r`.
pub(crate) fn render(r: &SuiteResult, width: Option<u16>) -> String {
    let mut out = String::new();
    for (label, spec) in crate::typed_workloads(r) {
        let Some(params) = spec.get::<FfsbParams>() else {
            continue;
        };
        for c in &r.configurations {
            let config = &c.config.label;
            let mean =
                |metric: &str, dims: &[Dim]| crate::mean_of(r, config, &label, "run", metric, dims);
            let Some((runtime, n)) = mean("time", &[]) else {
                continue;
            };
            let _ = writeln!(
                out,
                "FFSB's report: {label} on {config}, means of {n} run(s)"
            );
            let _ = writeln!(out, "Benchmark took {runtime:.2} sec\n");
            let groups = params.groups.len();
            let mut blocks: Vec<(String, Vec<Dim>)> = (0..groups)
                .filter(|_| groups > 1)
                .map(|g| {
                    let dims = vec![Dim::new("thread group", DimValue::Count(g as u64))];
                    (format!("ThreadGroup {g}"), dims)
                })
                .collect();
            blocks.push(("Total Results".to_string(), Vec::new()));
            for (title, dims) in &blocks {
                let get = |metric: &str| mean(metric, dims).map(|(m, _)| m);
                let _ = writeln!(out, "{title}\n===============");
                out.push_str(&op_table(&get, width.is_some_and(|w| w < FFSB_WIDTH)));
                out.push('\n');
            }
            if let (Some(user), Some(system)) = (
                mean("cpu user", &[]).map(|m| m.0),
                mean("cpu system", &[]).map(|m| m.0),
            ) {
                let _ = writeln!(out, "\n{user:.1}% User   Time");
                let _ = writeln!(out, "{system:.1}% System Time");
                let _ = writeln!(out, "{:.1}% CPU Utilization\n", user + system);
            }
        }
    }
    out
}

/// How wide FFSB's operation table is, its tabs expanded: a terminal narrower than this gets
/// the same columns closer together.
const FFSB_WIDTH: u16 = 96;

/// One block of FFSB's results: the operation table (FFSB's layout, or the same columns
/// closer together when `narrow`), transactions per second, throughput.
fn op_table(get: &dyn Fn(&str) -> Option<f64>, narrow: bool) -> String {
    let mut out = String::new();
    if narrow {
        out.push_str("     Op Name   Transactions   Trans/sec  % Trans  % Op Weight  Throughput\n");
        out.push_str("     =======   ============   =========  =======  ===========  ==========\n");
    } else {
        out.push_str("             Op Name   Transactions\t Trans/sec\t% Trans\t    % Op Weight\t   Throughput\n");
        out.push_str("             =======   ============\t =========\t=======\t    ===========\t   ==========\n");
    }
    for op in Op::ALL {
        let name = op.name();
        let Some(tx) = get(&format!("{name} transactions")) else {
            continue;
        };
        let field = |what: &str| get(&format!("{name} {what}")).unwrap_or(0.0);
        let throughput = get(&format!("{name} op throughput")).map_or("NA".to_string(), |mib| {
            format!("{}/sec", printsize(mib * 1048576.0))
        });
        let (tx, rate) = (tx.round() as u64, field("tx/s"));
        let (share, weight) = (field("% trans"), field("% op weight"));
        let _ = if narrow {
            writeln!(
                out,
                "{name:>12} : {tx:>12} {rate:>11.2} {share:>7.3}% {weight:>11.3}% {throughput:>11}"
            )
        } else {
            writeln!(
                out,
                "{name:>20} : {tx:>12}\t{rate:>10.2}\t{share:>6.3}%\t\t{weight:>6.3}%\t  {throughput:>11}"
            )
        };
    }
    let _ = writeln!(
        out,
        "-\n{:.2} Transactions per Second\n",
        get("transactions/s").unwrap_or(0.0)
    );
    let read = get("read throughput");
    let write = get("write throughput");
    if read.is_some() || write.is_some() {
        out.push_str("Throughput Results\n===================\n");
    }
    if let Some(r) = read {
        let _ = writeln!(out, "Read Throughput: {}/sec", printsize(r * 1048576.0));
    }
    if let Some(w) = write {
        let _ = writeln!(out, "Write Throughput: {}/sec", printsize(w * 1048576.0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_as_ffsb_prints_them() {
        // printf("%.3g") of the same values, as FFSB's ffsb_printsize calls it.
        assert_eq!(g3(35.98), "36");
        assert_eq!(g3(96.69), "96.7");
        assert_eq!(g3(1.0), "1");
        assert_eq!(g3(1.5), "1.5");
        assert_eq!(g3(123.4), "123");
        assert_eq!(g3(999.6), "1e+03");
        assert_eq!(g3(1023.0), "1.02e+03");
        assert_eq!(g3(0.000123), "0.000123");
        assert_eq!(g3(0.0000123), "1.23e-05");
        assert_eq!(printsize(100.0 * 1048576.0), "100MB");
        assert_eq!(printsize(1.5 * 1073741824.0), "1.5GB");
        assert_eq!(printsize(512.0), "512B");
        assert_eq!(printsize(2048.0), "2KB");
    }

    #[test]
    fn a_narrow_terminal_gets_ffsbs_columns_closer_together() {
        let get = |name: &str| match name {
            "read transactions" => Some(2_272_952.0),
            "read tx/s" => Some(36_740.88),
            "read % trans" => Some(52.618),
            "read % op weight" => Some(40.7),
            "read op throughput" => Some(144.0),
            "transactions/s" => Some(69_826.35),
            _ => None,
        };
        let ffsb = op_table(&get, false);
        assert!(ffsb.contains("read : ") && ffsb.contains('\t'), "{ffsb}");
        let narrow = op_table(&get, true);
        assert!(!narrow.contains('\t'), "{narrow}");
        assert!(narrow.lines().all(|l| l.chars().count() <= 80), "{narrow}");
        for figure in [
            "2272952",
            "36740.88",
            "52.618%",
            "40.700%",
            "144MB/sec",
            "69826.35",
        ] {
            assert!(
                narrow.contains(figure) && ffsb.contains(figure),
                "{figure}: {narrow}"
            );
        }
    }
}

//! filebench's own summary for the personality workload (`fsbench filebench FILE.f`), laid
//! out as filebench 1.5 prints it (stats.c): the Per-Operation Breakdown, last-defined
//! flowop first, then the IO Summary. Every figure is fsbench's mean over the
//! configuration's successful runs; fsbench's statistics follow in the usual tables.

use std::fmt::Write;

use fsbench_measure::error::invalid;
use fsbench_model::measurement::{Dim, DimValue};
use fsbench_model::results::SuiteResult;
use fsbench_workloads::filebench::FilebenchParams;

/// The width of a breakdown line with its latency range; narrower terminals get the range
/// on a line of its own.
const LINE_WIDTH: u16 = 88;

/// `fsbench export --format filebench`: refused for a suite without a personality.
pub(crate) fn report(r: &SuiteResult, width: Option<u16>) -> anyhow::Result<String> {
    if !(crate::typed_workloads(r).iter()).any(|(_, w)| w.get::<FilebenchParams>().is_some()) {
        return Err(invalid(
            "this suite has no personality workload to export as filebench's summary (run `fsbench filebench FILE.f` or -w personality:...)",
        ));
    }
    Ok(render(r, width))
}

/// The summary of every personality workload and configuration of `r`.
pub(crate) fn render(r: &SuiteResult, width: Option<u16>) -> String {
    let mut out = String::new();
    let narrow = width.is_some_and(|w| w < LINE_WIDTH);
    for (label, spec) in crate::typed_workloads(r) {
        let Some(params) = spec.get::<FilebenchParams>() else {
            continue;
        };
        let mut names: Vec<&str> = Vec::new();
        for (_, _, f) in params.model.flowops() {
            if !names.contains(&f.name.as_str()) {
                names.push(&f.name);
            }
        }
        for c in &r.configurations {
            let config = &c.config.label;
            let mean =
                |metric: &str, dims: &[Dim]| crate::mean_of(r, config, &label, "run", metric, dims);
            let Some((ops, n)) = mean("ops", &[]) else {
                continue;
            };
            let _ = writeln!(
                out,
                "filebench's summary: {label} on {config}, means of {n} run(s)"
            );
            out.push_str("Per-Operation Breakdown\n");
            for name in names.iter().rev() {
                let at = [Dim::new("flowop", DimValue::Text(name.to_string()))];
                let get = |m: &str| mean(m, &at).map_or(0.0, |(v, _)| v);
                let _ = write!(
                    out,
                    "{name:<20} {:.0}ops {:8.0}ops/s {:5.1}mb/s {:8.3}ms/op",
                    get("flowop ops"),
                    get("flowop ops/s"),
                    get("flowop mb/s"),
                    get("flowop ms/op"),
                );
                let range = format!(
                    "[{:.3}ms - {:5.3}ms]",
                    get("flowop min ms"),
                    get("flowop max ms")
                );
                if narrow {
                    let _ = writeln!(out, "\n{:>21}{range}", "");
                } else {
                    let _ = writeln!(out, " {range}");
                }
            }
            let get = |m: &str| mean(m, &[]).map_or(0.0, |(v, _)| v);
            let _ = writeln!(
                out,
                "IO Summary: {:5.0} ops {:5.3} ops/s {:.0}/{:.0} rd/wr {:5.1}mb/s {:5.3}ms/op\n",
                ops,
                get("ops/s"),
                get("rd/s"),
                get("wr/s"),
                get("mb/s"),
                get("ms/op"),
            );
        }
    }
    out
}

//! The io workload against the parameters fio users sweep: where a suite runs io workloads
//! that differ only in `iodepth` (or only in `bs`), a chart of IOPS and one of p99 completion
//! latency per direction against that parameter, one line per configuration.

use maud::{Markup, PreEscaped, html};

use super::charts;
use fsbench_model::measurement::DimValue;
use fsbench_model::results::SuiteResult;
use fsbench_stats::compare::Column;
use fsbench_workloads::io::IoParams;

/// A swept parameter: its name, its value in a workload (`None`: not one value, as a
/// `bssplit`), and the workload with it set aside (what the others must share).
struct Parameter {
    name: &'static str,
    value: fn(&IoParams) -> Option<u64>,
    label: fn(u64) -> String,
    without: fn(&mut IoParams),
}

const PARAMETERS: [Parameter; 2] = [
    Parameter {
        name: "iodepth",
        value: |p| Some(u64::from(p.iodepth)),
        label: |v| v.to_string(),
        without: |p| p.iodepth = 0,
    },
    Parameter {
        name: "bs",
        value: |p| match p.bssplit.as_slice() {
            [(bs, _)] => Some(*bs),
            _ => None,
        },
        label: fsbench_model::units::compact_size,
        without: |p| p.bssplit.clear(),
    },
];

/// One chart's data: workloads (labels) in the parameter's order, with its values.
struct Sweep<'a> {
    parameter: &'a Parameter,
    points: Vec<(u64, String)>,
}

/// The sweeps of `suite`: io workloads alike but for one parameter, two values or more.
fn sweeps(suite: &SuiteResult) -> Vec<Sweep<'static>> {
    let io: Vec<(String, IoParams)> = (crate::typed_workloads(suite).into_iter())
        .filter_map(|(label, w)| Some((label, w.get::<IoParams>()?.clone())))
        .collect();
    let mut out = Vec::new();
    for parameter in &PARAMETERS {
        let mut groups: Vec<(IoParams, Vec<(u64, String)>)> = Vec::new();
        for (label, p) in &io {
            let Some(value) = (parameter.value)(p) else {
                continue;
            };
            let mut rest = p.clone();
            (parameter.without)(&mut rest);
            match groups.iter_mut().find(|(r, _)| *r == rest) {
                Some((_, points)) => points.push((value, label.clone())),
                None => groups.push((rest, vec![(value, label.clone())])),
            }
        }
        for (_, mut points) in groups {
            points.sort();
            points.dedup_by_key(|p| p.0);
            if points.len() >= 2 {
                out.push(Sweep { parameter, points });
            }
        }
    }
    out
}

/// The mean of `metric` of io's phase at these (name, text) dimensions.
fn mean(
    s: &SuiteResult,
    config: &str,
    workload: &str,
    metric: &str,
    dims: &[(&str, &str)],
) -> Option<f64> {
    let found = s.summaries.iter().find(|m| {
        m.config == config
            && m.workload == workload
            && m.phase == "io"
            && m.metric == metric
            && m.dims.len() == dims.len()
            && (m.dims.iter().zip(dims))
                .all(|(d, (n, v))| d.name == *n && d.value == DimValue::Text(v.to_string()))
    })?;
    Some(found.summary.mean)
}

/// The charts of every sweep in `suites`, for the configurations compared.
pub(crate) fn html_section(suites: &[SuiteResult], columns: &[Column]) -> Markup {
    let mut charts = Vec::new();
    for s in suites {
        let configs: Vec<(usize, &Column)> = (columns.iter().enumerate())
            .filter(|(_, c)| c.suite_id == s.id.unwrap_or(0))
            .collect();
        for sweep in sweeps(s) {
            let name = sweep.parameter.name;
            let values: Vec<String> = (sweep.points.iter())
                .map(|(v, _)| (sweep.parameter.label)(*v))
                .collect();
            let series =
                |f: &dyn Fn(&str, &str) -> Option<f64>| -> Vec<(usize, String, Vec<Option<f64>>)> {
                    (configs.iter())
                        .map(|(i, c)| {
                            let at = sweep.points.iter().map(|(_, w)| f(&c.config, w)).collect();
                            (*i, c.name(columns), at)
                        })
                        .collect()
                };
            let measured = |v: &[(usize, String, Vec<Option<f64>>)]| {
                v.iter().any(|(_, _, p)| p.iter().any(Option::is_some))
            };
            let iops = series(&|c, w| {
                let per: Vec<f64> = ["read", "write"]
                    .iter()
                    .filter_map(|d| mean(s, c, w, "iops", &[("direction", d)]))
                    .collect();
                (!per.is_empty()).then(|| per.iter().sum())
            });
            let title = format!("#{} io", s.id.unwrap_or(0));
            if measured(&iops) {
                charts.push(charts::sweep(
                    &format!("{title} IOPS"),
                    "IO/s",
                    name,
                    &values,
                    &iops,
                ));
            }
            for d in ["read", "write"] {
                let p99 = series(&|c, w| {
                    mean(s, c, w, "clat", &[("direction", d), ("percentile", "p99")])
                });
                if measured(&p99) {
                    let what = format!("{title} p99 {d} completion latency");
                    charts.push(charts::sweep(&what, "µs", name, &values, &p99));
                }
            }
        }
    }
    html! {
        @if !charts.is_empty() {
            h2 #io-sweeps { "io against iodepth and block size" }
            p { "Each point is a workload of the suite that differs from the others on its line only in the parameter across; IOPS of both directions summed, p99 of the completion latency (fio's clat) per direction." }
            @for c in &charts { figure { (PreEscaped(c)) } }
        }
    }
}

//! CSV export: one row per raw figure of every run (`kind = run`) and one per summary
//! (`kind = summary`), in long form so that any spreadsheet can pivot it.

use fsbench_model::measurement::{Dim, DimValue, Figure};
use fsbench_model::results::SuiteResult;
use fsbench_stats::summary::phase_metrics;

/// A figure's dimensions in one field: `test=write;file size=65536;record size=4096` (sizes
/// in bytes, so a spreadsheet can sort them).
fn dims_field(dims: &[Dim]) -> String {
    let parts: Vec<String> = dims
        .iter()
        .map(|d| match &d.value {
            DimValue::Bytes(n) | DimValue::Count(n) => format!("{}={n}", d.name),
            DimValue::Text(t) => format!("{}={t}", d.name),
        })
        .collect();
    parts.join(";")
}

const HEADER: [&str; 20] = [
    "kind",
    "suite",
    "config",
    "workload",
    "run",
    "status",
    "phase",
    "metric",
    "unit",
    "value",
    "n",
    "mean",
    "stddev",
    "min",
    "median",
    "max",
    "cv_percent",
    "ci95_low",
    "ci95_high",
    // Last, so that readers of the columns before it need no change.
    "dims",
];

pub(crate) fn render(r: &SuiteResult) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(HEADER)?;
    let id = r.id.map_or(String::new(), |i| i.to_string());
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for run in &r.runs {
        let mut figures: Vec<(String, Figure)> = Vec::new();
        for (p, info) in run.phases.iter().zip(r.phases_of(run)) {
            for f in phase_metrics(p, info) {
                figures.push((p.name.clone(), f));
            }
        }
        for (metric, v) in [
            ("mkfs", run.mkfs_secs),
            ("unmount", run.unmount_secs),
            ("fsck", run.fsck.as_ref().map(|f| f.secs)),
        ] {
            if let Some(v) = v {
                figures.push(("lifecycle".into(), Figure::new(metric, "s", false, v)));
            }
        }
        let mut status = serde_json::to_string(&run.status)?
            .trim_matches('"')
            .to_string();
        if run.incomplete.is_some() {
            status.push_str(" (incomplete tree)");
        }
        for (phase, f) in figures {
            let mut row = vec![
                "run".to_string(),
                id.clone(),
                run.config.clone(),
                run.workload.clone(),
                run.run.to_string(),
                status.clone(),
                phase,
                f.name,
                f.unit,
                f.value.to_string(),
            ];
            row.resize(HEADER.len() - 1, String::new());
            row.push(dims_field(&f.dims));
            w.write_record(&row)?;
        }
    }
    for s in &r.summaries {
        let m = &s.summary;
        w.write_record([
            "summary".to_string(),
            id.clone(),
            s.config.clone(),
            s.workload.clone(),
            String::new(),
            String::new(),
            s.phase.clone(),
            s.metric.clone(),
            s.unit.clone(),
            String::new(),
            m.n.to_string(),
            m.mean.to_string(),
            opt(m.stddev),
            m.min.to_string(),
            m.median.to_string(),
            m.max.to_string(),
            opt(m.cv_percent),
            opt(m.ci95_low),
            opt(m.ci95_high),
            dims_field(&s.dims),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

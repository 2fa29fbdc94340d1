//! A figure against a parameter the suite varied (io's `iodepth`, `bs`): the parameter's
//! values evenly spaced across, one line per configuration, on the time charts' frame.

use super::Axis;
use super::time::{TimeFrame, XAxis};

/// `title`'s `unit` against `parameter`, whose values label the x axis in order; `series`:
/// per configuration (its color index and name) its value at each parameter value, if any.
pub(crate) fn sweep(
    title: &str,
    unit: &str,
    parameter: &str,
    values: &[String],
    series: &[(usize, String, Vec<Option<f64>>)],
) -> String {
    let top = series
        .iter()
        .flat_map(|(_, _, v)| v.iter().flatten())
        .fold(0.0f64, |a, b| a.max(*b));
    let y = Axis::to(top.max(f64::MIN_POSITIVE));
    let y_labels: Vec<(f64, String)> = (y.values().into_iter().enumerate())
        .map(|(k, label)| (k as f64 / y.ticks as f64, label))
        .collect();
    // Each value at the middle of its slot, so the first and last are off the frame's edges.
    let x = XAxis {
        end: values.len() as f64,
        ticks: (values.iter().enumerate())
            .map(|(i, v)| (i as f64 + 0.5, v.clone()))
            .collect(),
        title: parameter.to_string(),
    };
    let legend: Vec<(usize, String)> = series.iter().map(|(c, n, _)| (*c, n.clone())).collect();
    let heading = format!("{title} against {parameter} (one line per configuration)");
    let mut frame = TimeFrame::new("sweep-chart", &heading, &legend, &y_labels, unit, x);
    for (config, name, points) in series {
        // One line through the values measured (a dot where only one was).
        let at: Vec<(f64, f64)> = (points.iter().enumerate())
            .filter_map(|(i, v)| Some((i as f64 + 0.5, (*v)? / y.end())))
            .collect();
        let label: Vec<String> = (values.iter().zip(points))
            .filter_map(|(p, v)| Some(format!("{parameter}={p}: {}", super::figure((*v)?))))
            .collect();
        frame.line(*config, &format!("{name}: {}", label.join(", ")), &at, None);
    }
    frame.doc.to_string()
}

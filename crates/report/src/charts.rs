//! Inline SVG charts for the HTML report: horizontal bars with 95% CI error bars, strip plots
//! of every run, progress curves and latency over time (time.rs), a figure against a
//! parameter (sweep.rs), heat maps. Built with the `svg` crate, which escapes every text node.

use svg::Document;
use svg::node::element::{Circle, Group, Line, Rectangle, Text, Title};

mod sweep;
mod time;
pub(crate) use sweep::sweep;
pub(crate) use time::{LatencyRuns, latency, progress};

use super::figure;
use fsbench_model::results::Summary;

/// Colors of configurations, in order; chosen to stay distinct in print and for color vision
/// deficiencies (Okabe–Ito).
pub(crate) const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
];

pub(crate) fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The report's widest content (its CSS `max-width`): a chart this wide is drawn at its own
/// size there, so its 13-pixel text reads as the tables' text does, and shrinks with a
/// narrower window (never grows past it).
pub(super) const WIDTH: f64 = 1100.0;
const LABEL_WIDTH: f64 = 300.0;
const VALUE_WIDTH: f64 = 200.0;
const ROW: f64 = 26.0;
/// Where a per-configuration chart's first row starts, below its heading.
const TOP: f64 = 30.0;
/// Space between the plot's end and the values: a whisker cut at the axis's end, or the dot
/// of a run at it, never runs into its row's value label.
const GAP: f64 = 24.0;
/// The value axis's width in a per-configuration chart, between the labels and the values.
const PLOT: f64 = WIDTH - LABEL_WIDTH - VALUE_WIDTH - GAP;
/// Where a row's value label starts.
const VALUE_X: f64 = WIDTH - VALUE_WIDTH + 8.0;
/// Whiskers past this multiple of the largest value (a 2-run interval can be astronomic) are
/// cut at the axis's end, so they do not squash every bar to nothing.
const WHISKER_LIMIT: f64 = 3.0;

pub(super) fn text(x: f64, y: f64, content: &str) -> Text {
    Text::new(content)
        .set("x", x)
        .set("y", y)
        .set("font-size", 13)
        .set("font-family", "sans-serif")
}

/// Up to 40 characters of a label, so long configuration names do not push the bars away.
pub(super) fn short(label: &str) -> String {
    if label.chars().count() > 40 {
        label.chars().take(39).chain(['…']).collect()
    } else {
        label.to_string()
    }
}

/// An SVG document `width` × `height` that scales down with the page but never up (its
/// text keeps its size).
pub(super) fn document(class: &str, width: f64, height: f64) -> Document {
    Document::new()
        .set("viewBox", (0, 0, width, height))
        .set("width", width)
        .set("height", height)
        .set("style", format!("max-width: {width}px"))
        .set("class", format!("chart {class}"))
        .set("role", "img")
}

/// A chart's SVG document, `WIDTH` wide: its class, tooltip title and bold heading.
fn frame(class: &str, height: f64, tooltip: &str, heading: &str) -> Document {
    document(class, WIDTH, height)
        .add(Title::new(tooltip))
        .add(text(0.0, 16.0, heading).set("font-weight", "bold"))
}

/// A per-configuration chart's document: its heading, `rows` rows from [`TOP`] down, and the
/// axis under them.
fn rows_frame(class: &str, rows: usize, tooltip: &str, heading: &str) -> Document {
    frame(class, TOP + ROW * rows as f64 + 30.0, tooltip, heading)
}

/// A per-configuration chart finished: the value axis from 0 to `axis`'s end under its `rows`
/// rows, and the line its bars or dots start from.
fn with_axis(doc: Document, rows: usize, axis: &Axis, unit: &str) -> String {
    let axis_y = TOP + ROW * rows as f64 + 4.0;
    doc.add(
        Line::new()
            .set("x1", LABEL_WIDTH)
            .set("y1", TOP)
            .set("x2", LABEL_WIDTH)
            .set("y2", axis_y)
            .set("stroke", "#666"),
    )
    .add(axis.labels(axis_y, unit))
    .to_string()
}

/// A row of a per-configuration chart, starting with its (shortened) label at height `y`.
fn row_label(label: &str, y: f64) -> Group {
    Group::new().add(text(0.0, y + 15.0, &short(label)).add(Title::new(label)))
}

/// One horizontal bar per configuration (its color's index, its name, its figure): the mean,
/// with the 95% CI as an error bar.
pub(crate) fn bars(
    title: &str,
    unit: &str,
    higher_is_better: bool,
    bars: &[(usize, String, Option<&Summary>)],
) -> String {
    let largest = |f: fn(&Summary) -> f64| {
        bars.iter()
            .filter_map(|(_, _, s)| s.map(f))
            .fold(0.0f64, f64::max)
    };
    let values = largest(|s| s.mean.max(s.max));
    let max = largest(|s| s.ci95_high.unwrap_or(s.mean)).min(WHISKER_LIMIT * values);
    let axis = Axis::to(max.max(values));
    let scale = PLOT / axis.end();
    let direction = if higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    };
    let mut doc = rows_frame(
        "bar-chart",
        bars.len(),
        &format!("{title} ({unit})"),
        &format!("{title} ({unit}, {direction}; bars: mean, whiskers: 95% CI)"),
    );
    for (i, (color_index, label, summary)) in bars.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let mut row = row_label(label, y);
        match summary {
            Some(s) => {
                let w = (s.mean * scale).max(0.5);
                row = row.add(
                    Rectangle::new()
                        .set("x", LABEL_WIDTH)
                        .set("y", y + 3.0)
                        .set("width", w)
                        .set("height", ROW - 8.0)
                        .set("fill", color(*color_index))
                        .add(Title::new(format!(
                            "{label}: mean {} {unit}, n = {}",
                            figure(s.mean),
                            s.n
                        ))),
                );
                if let (Some(lo), Some(hi)) = (s.ci95_low, s.ci95_high) {
                    for line in whisker(lo, hi, &axis, scale, y) {
                        row = row.add(line);
                    }
                }
                let value = match s.stddev {
                    Some(sd) => format!("{} ± {} σ", figure(s.mean), figure(sd)),
                    None => figure(s.mean),
                };
                row = row.add(text(VALUE_X, y + 15.0, &value));
            }
            None => row = row.add(text(LABEL_WIDTH, y + 15.0, "no data")),
        }
        doc = doc.add(row);
    }
    with_axis(doc, bars.len(), &axis, unit)
}

/// The 95% CI's error bar over a bar at height `y`, cut (no end cap, going on past the
/// axis) where it reaches beyond the axis.
fn whisker(lo: f64, hi: f64, axis: &Axis, scale: f64, y: f64) -> [Line; 3] {
    let cut = hi > axis.end();
    let (x1, x2, yc) = (
        LABEL_WIDTH + lo.clamp(0.0, axis.end()) * scale,
        LABEL_WIDTH + hi.min(axis.end()) * scale,
        y + ROW / 2.0 - 1.0,
    );
    let cap = if cut { 0.0 } else { 6.0 };
    [
        (x1, yc, x2, yc),
        (x1, yc - 6.0, x1, yc + 6.0),
        (x2, yc - cap, x2, yc + cap),
    ]
    .map(|(xa, ya, xb, yb)| {
        Line::new()
            .set("x1", xa)
            .set("y1", ya)
            .set("x2", xb)
            .set("y2", yb)
            .set("stroke", "#222")
            .set("stroke-width", 1.5)
            .set("class", "error-bar")
    })
}

/// Every run of every configuration as a dot on one axis from 0, a row per configuration,
/// in run order from light to dark: what the mean and its interval summarize. Rows as in
/// [`bars`].
pub(crate) fn strip(title: &str, unit: &str, rows: &[(usize, String, Option<&Summary>)]) -> String {
    let max = rows
        .iter()
        .filter_map(|(_, _, s)| s.map(|s| s.max))
        .fold(0.0f64, f64::max);
    let axis = Axis::to(max);
    let scale = PLOT / axis.end();
    let mut doc = rows_frame(
        "strip-chart",
        rows.len(),
        &format!("{title} ({unit}): every run"),
        &format!("{title} ({unit}): every run, in run order (light → dark)"),
    );
    for (i, (color_index, label, summary)) in rows.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let mut row = row_label(label, y);
        let values = summary.map_or(&[][..], |s| s.values.as_slice());
        for (run, v) in values.iter().enumerate() {
            let shade = 0.35 + 0.65 * (run + 1) as f64 / values.len() as f64;
            row = row.add(
                Circle::new()
                    .set("cx", LABEL_WIDTH + v.max(0.0) * scale)
                    .set("cy", y + ROW / 2.0 - 1.0)
                    .set("r", 4)
                    .set("fill", color(*color_index))
                    .set("fill-opacity", shade)
                    .set("stroke", "#222")
                    .set("stroke-width", 0.5)
                    .add(Title::new(format!(
                        "{label} run {}: {} {unit}",
                        run + 1,
                        figure(*v)
                    ))),
            );
        }
        let note = match values.len() {
            0 => "no data".to_string(),
            1 => "1 run".to_string(),
            n => format!("{n} runs"),
        };
        row = row.add(text(VALUE_X, y + 15.0, &note));
        doc = doc.add(row);
    }
    with_axis(doc, rows.len(), &axis, unit)
}

/// A value axis from 0: ticks every 1, 2 or 5 × 10^k, four to six of them, the last at or
/// above the largest value (0, 2, 4, 6, 8, 10 for 8.046).
pub(super) struct Axis {
    step: f64,
    pub(super) ticks: usize,
}

impl Axis {
    pub(super) fn to(max: f64) -> Axis {
        let step = nice_ceiling(max / 5.0);
        let ticks = ((max / step).ceil() as usize).max(1);
        Axis { step, ticks }
    }

    pub(super) fn end(&self) -> f64 {
        self.step * self.ticks as f64
    }

    /// The tick values as labels: as many decimals as the step needs (none for whole steps).
    pub(super) fn values(&self) -> Vec<String> {
        let decimals = (-self.step.log10().floor()).max(0.0) as usize;
        (0..=self.ticks)
            .map(|i| super::fixed(self.step * i as f64, decimals))
            .collect()
    }

    /// The tick labels under the plot ([`PLOT`] wide), the last with the unit.
    fn labels(&self, y: f64, unit: &str) -> Group {
        let values = self.values();
        let last = values.len() - 1;
        values
            .into_iter()
            .enumerate()
            .fold(Group::new(), |g, (i, v)| {
                let x = LABEL_WIDTH + PLOT * i as f64 / self.ticks as f64;
                let label = if i == last { format!("{v} {unit}") } else { v };
                let anchor = if i == last { "start" } else { "middle" };
                g.add(
                    Line::new()
                        .set("x1", x)
                        .set("y1", y)
                        .set("x2", x)
                        .set("y2", y + 4.0)
                        .set("stroke", "#666"),
                )
                .add(text(x, y + 16.0, &label).set("text-anchor", anchor))
            })
    }
}

/// "Nice" axis maximum: 1, 2 or 5 times a power of ten, at least `v`.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|c| *c >= v)
        .unwrap_or(10.0 * p)
}

/// A heat map of a throughput matrix: file sizes down, record sizes across, each cell colored
/// by its value on a log scale (light = slow, dark = fast) and labelled with it.
/// A heat map of one matrix: `axes` names its rows' and columns' dimensions, `rows` and
/// `cols` label them, `value(row, col)` by position.
pub(crate) fn heatmap(
    title: &str,
    unit: &str,
    axes: [&str; 2],
    rows: &[String],
    cols: &[String],
    value: &dyn Fn(usize, usize) -> Option<f64>,
) -> String {
    let (files, records) = (rows, cols);
    let (left, top, cw, ch) = (60.0, 40.0, 62.0, 22.0);
    let width = (left + cw * records.len() as f64 + 10.0).max(460.0);
    let height = top + ch * files.len() as f64 + 10.0;
    let values: Vec<f64> = files
        .iter()
        .enumerate()
        .flat_map(|(i, _)| (0..records.len()).filter_map(move |j| value(i, j)))
        .filter(|v| *v > 0.0)
        .collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    let mut doc = document("heatmap", width, height)
        .add(Title::new(format!("{title} ({unit})")))
        .add(
            text(
                0.0,
                14.0,
                &format!("{title} ({unit}); rows: {}, columns: {}", axes[0], axes[1]),
            )
            .set("font-weight", "bold"),
        );
    for (j, r) in records.iter().enumerate() {
        doc = doc.add(text(left + cw * j as f64 + 4.0, top - 6.0, r));
    }
    for (i, f) in files.iter().enumerate() {
        let y = top + ch * i as f64;
        doc = doc.add(text(4.0, y + 15.0, f));
        for (j, r) in records.iter().enumerate() {
            let Some(v) = value(i, j) else { continue };
            let t = if hi > lo && v > 0.0 {
                (v.ln() - lo.ln()) / (hi.ln() - lo.ln())
            } else {
                1.0
            };
            // From pale to the palette's blue.
            let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
            let fill = format!(
                "#{:02x}{:02x}{:02x}",
                mix(235.0, 0.0),
                mix(243.0, 114.0),
                mix(250.0, 178.0)
            );
            let ink = if t > 0.55 { "#fff" } else { "#111" };
            let x = left + cw * j as f64;
            doc = doc
                .add(
                    Rectangle::new()
                        .set("x", x)
                        .set("y", y)
                        .set("width", cw - 2.0)
                        .set("height", ch - 2.0)
                        .set("fill", fill)
                        .add(Title::new(format!("{f} / {r}: {} {unit}", figure(v)))),
                )
                .add(
                    text(x + 3.0, y + 15.0, &figure(v))
                        .set("fill", ink)
                        .set("font-size", 10),
                );
        }
    }
    doc.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_bars_scaled() {
        let s = fsbench_stats::summarize(&[10.0, 12.0, 11.0]).unwrap();
        let svg = bars(
            "Rate <x>",
            "files/s",
            true,
            &[
                (0, "<script>alert(1)</script>".into(), Some(&s)),
                (1, "b".into(), None),
            ],
        );
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"));
        assert_eq!(svg.matches("class=\"error-bar\"").count(), 3);
        assert!(svg.contains("no data"));
    }

    #[test]
    fn whiskers_and_dots_stay_clear_of_the_value_labels() {
        // Two runs far apart: an interval past the axis's end, cut there; a run at the end.
        let wide = fsbench_stats::summarize(&[1.0, 100.0]).unwrap();
        let steady = fsbench_stats::summarize(&[99.0, 100.0, 101.0]).unwrap();
        let rows = [
            (0, "a".to_string(), Some(&wide)),
            (1, "b".into(), Some(&steady)),
        ];
        for svg in [
            bars("rate", "MiB/s", true, &rows),
            strip("rate", "MiB/s", &rows),
        ] {
            let reach = |attribute: &str, extra: f64| {
                (svg.split(&format!(" {attribute}=\"")).skip(1))
                    .filter_map(|rest| rest.split('"').next()?.parse::<f64>().ok())
                    .map(|x| x + extra)
                    .fold(0.0, f64::max)
            };
            // Lines end at x2; a dot reaches its radius (4) past its centre.
            let right = reach("x2", 0.0).max(reach("cx", 4.0));
            assert!(
                right > LABEL_WIDTH + PLOT - 1.0,
                "nothing reached the end: {svg}"
            );
            assert!(VALUE_X - right >= 12.0, "{right} vs {VALUE_X}: {svg}");
        }
    }

    #[test]
    fn heatmap_has_a_cell_per_value() {
        let svg = heatmap(
            "write",
            "MiB/s",
            ["file size", "record size"],
            &["1M".into(), "4M".into()],
            &["4K".into(), "64K".into()],
            &|i, _| (i == 0).then_some(10.0),
        );
        assert!(svg.contains("rows: file size, columns: record size"));
        assert_eq!(svg.matches("<rect").count(), 2);
        assert!(svg.contains("1M") && svg.contains("64K"));
    }

    #[test]
    fn axes_tick_at_round_numbers() {
        assert_eq!(Axis::to(8.046).values(), ["0", "2", "4", "6", "8", "10"]);
        assert_eq!(Axis::to(0.37).values(), ["0.0", "0.1", "0.2", "0.3", "0.4"]);
        assert_eq!(Axis::to(26_140.0).values().last().unwrap(), "30,000");
        assert_eq!(Axis::to(0.0).values(), ["0", "1"]);
    }

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(3.2), 5.0);
        assert_eq!(nice_ceiling(12.0), 20.0);
        assert_eq!(nice_ceiling(1000.0), 1000.0);
    }
}

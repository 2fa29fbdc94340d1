//! Charts over a phase's time: the units completed (progress) and the latency of its calls
//! per interval, drawn on the same frame and time axis so that one sits under the other.

use svg::Document;
use svg::node::element::{Circle, Group, Line, Polygon, Polyline, Rectangle, Title};

use super::{Axis, WIDTH, color, document, short, text};
use fsbench_model::measurement::LatencyTimeline;

/// The plot's margins and height.
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const BOTTOM: f64 = 40.0;
const PLOT_HEIGHT: f64 = 220.0;

/// The horizontal axis of a [`TimeFrame`]: its extent, its labelled ticks and its title.
pub(super) struct XAxis {
    pub(super) end: f64,
    pub(super) ticks: Vec<(f64, String)>,
    pub(super) title: String,
}

impl XAxis {
    /// Seconds from 0 to a round value past `max_secs`.
    fn seconds(max_secs: f64) -> XAxis {
        let time = Axis::to(max_secs);
        let ticks = (time.values().into_iter().enumerate())
            .map(|(k, label)| (time.end() * k as f64 / time.ticks as f64, label))
            .collect();
        XAxis {
            end: time.end(),
            ticks,
            title: "seconds".into(),
        }
    }
}

/// A chart with lines over an x axis (time, or a parameter's values): heading, legend of
/// configurations, horizontal grid lines with `y_labels` (fractions of the height from the
/// bottom) and the x axis below.
pub(super) struct TimeFrame {
    pub(super) doc: Document,
    top: f64,
    width: f64,
    x_end: f64,
}

impl TimeFrame {
    pub(super) fn new(
        class: &str,
        heading: &str,
        legend: &[(usize, String)],
        y_labels: &[(f64, String)],
        y_unit: &str,
        x: XAxis,
    ) -> TimeFrame {
        let top = 30.0 + 16.0 * legend.len().div_ceil(3) as f64;
        let width = WIDTH - LEFT - RIGHT;
        let mut doc = document(class, WIDTH, top + PLOT_HEIGHT + BOTTOM)
            .add(Title::new(heading))
            .add(text(0.0, 16.0, heading).set("font-weight", "bold"));
        for (i, (color_index, name)) in legend.iter().enumerate() {
            let (x, y) = (LEFT + (i % 3) as f64 * 340.0, 30.0 + (i / 3) as f64 * 16.0);
            doc = doc
                .add(
                    Rectangle::new()
                        .set("x", x)
                        .set("y", y - 9.0)
                        .set("width", 10)
                        .set("height", 10)
                        .set("fill", color(*color_index)),
                )
                .add(text(x + 14.0, y, &short(name)));
        }
        for (fraction, label) in y_labels {
            let y = top + PLOT_HEIGHT - PLOT_HEIGHT * fraction;
            doc = doc
                .add(horizontal(y, LEFT, LEFT + width, "#ddd"))
                .add(text(LEFT - 6.0, y + 4.0, label).set("text-anchor", "end"));
        }
        for (at, label) in &x.ticks {
            let x = LEFT + width * at / x.end;
            doc = doc.add(text(x, top + PLOT_HEIGHT + 16.0, label).set("text-anchor", "middle"));
        }
        doc = doc
            .add(text(
                LEFT + width / 2.0 - 30.0,
                top + PLOT_HEIGHT + 34.0,
                &x.title,
            ))
            .add(text(4.0, top - 6.0, y_unit))
            .add(horizontal(top + PLOT_HEIGHT, LEFT, LEFT + width, "#666"))
            .add(
                Line::new()
                    .set("x1", LEFT)
                    .set("y1", top)
                    .set("x2", LEFT)
                    .set("y2", top + PLOT_HEIGHT)
                    .set("stroke", "#666"),
            );
        TimeFrame {
            doc,
            top,
            width,
            x_end: x.end,
        }
    }

    /// The point at `x` and `fraction` of the height.
    fn at(&self, x: f64, fraction: f64) -> (f64, f64) {
        (
            LEFT + x / self.x_end * self.width,
            self.top + PLOT_HEIGHT - fraction * PLOT_HEIGHT,
        )
    }

    /// A run's line (a dot when it has one point), its tooltip `label`.
    pub(super) fn line(
        &mut self,
        config: usize,
        label: &str,
        points: &[(f64, f64)],
        dash: Option<&str>,
    ) {
        let coords: Vec<String> = points
            .iter()
            .map(|(s, f)| {
                let (x, y) = self.at(*s, *f);
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let line: svg::node::element::Element = match points {
            [] => return,
            [(s, f)] => {
                let (x, y) = self.at(*s, *f);
                Circle::new()
                    .set("cx", x)
                    .set("cy", y)
                    .set("r", 2)
                    .set("fill", color(config))
                    .into()
            }
            _ => {
                let mut line = Polyline::new()
                    .set("points", coords.join(" "))
                    .set("fill", "none")
                    .set("stroke", color(config))
                    .set("stroke-width", 1.5)
                    .set("opacity", 0.8);
                if let Some(dash) = dash {
                    line = line.set("stroke-dasharray", dash);
                }
                line.into()
            }
        };
        use svg::Node;
        self.doc
            .append(Group::new().add(Title::new(label)).add(line));
    }
}

impl TimeFrame {
    /// A shaded band in `config`'s color through (x, low, high) points, left to right.
    fn band(&mut self, config: usize, points: &[(f64, f64, f64)]) {
        if points.len() < 2 {
            return;
        }
        let upper = points.iter().map(|(x, _, high)| self.at(*x, *high));
        let lower = points.iter().rev().map(|(x, low, _)| self.at(*x, *low));
        let coords: Vec<String> = (upper.chain(lower))
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        use svg::Node;
        self.doc.append(
            Polygon::new()
                .set("points", coords.join(" "))
                .set("fill", color(config))
                .set("opacity", 0.2)
                .set("class", "band"),
        );
    }
}

fn horizontal(y: f64, x1: f64, x2: f64, stroke: &str) -> Line {
    Line::new()
        .set("x1", x1)
        .set("y1", y)
        .set("x2", x2)
        .set("y2", y)
        .set("stroke", stroke)
}

/// Units completed over time, one line per run, colored by configuration: stalls show as
/// flat stretches (the lkml article's files-removed-against-time plot). `max_secs` is the
/// time axis's extent, shared with the latency chart below it; `per` what a line is.
pub(crate) fn progress(
    title: &str,
    unit: &str,
    per: &str,
    series: &[(usize, String, &[[u64; 2]])],
    legend: &[(usize, String)],
    max_secs: f64,
) -> String {
    // Units are whole: a step below 1 would label fractions of a file.
    let unit_axis = Axis::to(
        series
            .iter()
            .flat_map(|(_, _, s)| s.iter().map(|p| p[1]))
            .max()
            .unwrap_or(0)
            .max(5) as f64,
    );
    let y_labels: Vec<(f64, String)> = (unit_axis.values().into_iter().enumerate())
        .map(|(k, label)| (k as f64 / unit_axis.ticks as f64, label))
        .collect();
    let mut frame = TimeFrame::new(
        "progress-chart",
        &format!("{title}: {unit} completed over time (one line per {per})"),
        legend,
        &y_labels,
        unit,
        XAxis::seconds(max_secs),
    );
    for (config, label, samples) in series {
        let points: Vec<(f64, f64)> = samples
            .iter()
            .map(|p| (p[0] as f64 / 1000.0, p[1] as f64 / unit_axis.end()))
            .collect();
        frame.line(*config, label, &points, None);
    }
    frame.doc.to_string()
}

/// A latency as a person reads it on an axis: `100 ns`, `10 µs`, `1 s`.
fn latency_label(ns: f64) -> String {
    match ns {
        v if v >= 1e9 => format!("{} s", v / 1e9),
        v if v >= 1e6 => format!("{} ms", v / 1e6),
        v if v >= 1e3 => format!("{} µs", v / 1e3),
        v => format!("{v} ns"),
    }
}

/// Which latency of an interval a line draws.
type Pick = fn(&fsbench_model::measurement::LatencyPoint) -> u64;

/// One configuration's runs of a phase for [`latency`]: its color, name and each run's
/// label and timeline, in order of the runs' phase times (the middle one is drawn).
pub(crate) struct LatencyRuns<'a> {
    pub config: usize,
    pub name: String,
    pub runs: Vec<(String, &'a LatencyTimeline)>,
}

/// The latency of the calls per interval on a log scale, under the phase's progress curve:
/// one small multiple per configuration, on one scale, so that ten runs of three of them are
/// not thirty tangled lines. Each draws its median run (p50 dotted, p99 dashed, max solid:
/// a stall shows as a spike where it ended) over a band that spans every run's p99.
pub(crate) fn latency(title: &str, configs: &[LatencyRuns<'_>], max_secs: f64) -> Vec<String> {
    let values = || {
        (configs.iter().flat_map(|c| c.runs.iter()))
            .flat_map(|(_, t)| t.points.iter())
            .filter(|p| p.calls > 0)
    };
    let low = values().map(|p| p.p50_ns.max(1)).min().unwrap_or(1) as f64;
    let high = values().map(|p| p.max_ns.max(1)).max().unwrap_or(1) as f64;
    // Whole decades, at least one.
    let (from, to) = (
        low.log10().floor(),
        high.log10().ceil().max(low.log10().floor() + 1.0),
    );
    let fraction = |ns: u64| ((ns.max(1) as f64).log10() - from) / (to - from);
    let y_labels: Vec<(f64, String)> = (from as i32..=to as i32)
        .map(|d| {
            let ns = 10f64.powi(d);
            ((d as f64 - from) / (to - from), latency_label(ns))
        })
        .collect();
    configs
        .iter()
        .filter(|c| !c.runs.is_empty())
        .map(|c| {
            let (label, timeline) = &c.runs[c.runs.len() / 2];
            let heading = match c.runs.len() {
                1 => format!(
                    "{title}: latency per interval (p50 dotted, p99 dashed, max solid; log scale)"
                ),
                n => format!(
                    "{title}: latency per interval, median run ({label}; p50 dotted, p99 dashed, max solid; band: p99 of all {n} runs; log scale)"
                ),
            };
            let mut frame = TimeFrame::new(
                "latency-chart",
                &heading,
                &[(c.config, c.name.clone())],
                &y_labels,
                "latency",
                XAxis::seconds(max_secs),
            );
            if c.runs.len() > 1 {
                frame.band(c.config, &p99_band(&c.runs, &fraction));
            }
            let width = timeline.interval_ms as f64 / 1000.0;
            // An interval where no call ended has no latency: the line skips it.
            let points = |pick: Pick| -> Vec<(f64, f64)> {
                (timeline.points.iter().enumerate())
                    .filter(|(_, p)| p.calls > 0)
                    .map(|(i, p)| ((i as f64 + 0.5) * width, fraction(pick(p))))
                    .collect()
            };
            let lines: [(&str, Pick, Option<&str>); 3] = [
                ("p50", |p| p.p50_ns, Some("2 3")),
                ("p99", |p| p.p99_ns, Some("6 3")),
                ("max", |p| p.max_ns, None),
            ];
            for (name, pick, dash) in lines {
                frame.line(c.config, &format!("{label} {name}"), &points(pick), dash);
            }
            frame.doc.to_string()
        })
        .collect()
}

/// Per interval where some run's calls ended: its time and the lowest and highest p99 of
/// the runs there, as fractions of the plot's height.
fn p99_band(
    runs: &[(String, &LatencyTimeline)],
    fraction: &dyn Fn(u64) -> f64,
) -> Vec<(f64, f64, f64)> {
    let intervals = (runs.iter())
        .map(|(_, t)| t.points.len())
        .max()
        .unwrap_or(0);
    let width = runs
        .first()
        .map_or(0.1, |(_, t)| t.interval_ms as f64 / 1000.0);
    (0..intervals)
        .filter_map(|i| {
            let p99s = (runs.iter())
                .filter_map(|(_, t)| t.points.get(i).filter(|p| p.calls > 0))
                .map(|p| p.p99_ns);
            let (low, high) = p99s.fold(None, |range: Option<(u64, u64)>, v| {
                Some(range.map_or((v, v), |(l, h)| (l.min(v), h.max(v))))
            })?;
            Some(((i as f64 + 0.5) * width, fraction(low), fraction(high)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_model::measurement::LatencyPoint;

    #[test]
    fn progress_draws_one_line_per_run() {
        let a: &[[u64; 2]] = &[[0, 0], [100, 50], [200, 100]];
        let b: &[[u64; 2]] = &[[0, 0], [150, 100]];
        let svg = progress(
            "p",
            "files",
            "run",
            &[(0, "r1".into(), a), (1, "r2".into(), b)],
            &[(0, "x".into()), (1, "y".into())],
            0.2,
        );
        assert_eq!(svg.matches("<polyline").count(), 2);
    }

    #[test]
    fn a_stall_is_drawn_as_a_spike_where_it_ended() {
        let point = |max_ns| LatencyPoint {
            calls: 100,
            p50_ns: 10_000,
            p99_ns: 20_000,
            max_ns,
        };
        let mut points = vec![point(30_000); 20];
        points[12] = point(2_000_000_000);
        let timeline = LatencyTimeline {
            interval_ms: 100,
            points,
        };
        let one = LatencyRuns {
            config: 0,
            name: "ext4".into(),
            runs: vec![("ext4 run 1".into(), &timeline)],
        };
        let svgs = latency("rm", &[one], 2.0);
        let svg = &svgs[0];
        // Three lines (p50, p99, max); decades from 10 µs to 10 s.
        assert_eq!(svg.matches("<polyline").count(), 3, "{svg}");
        assert!(
            svg.contains("\n10 µs\n") && svg.contains("\n10 s\n"),
            "{svg}"
        );
        // The max line's highest point is at 1.25 s: x = 80 + 1.25 / 2 × 1000.
        let max_line = svg.split("ext4 run 1 max").nth(1).unwrap();
        let coords = max_line.split("points=\"").nth(1).unwrap();
        let peak = coords
            .split(['"', ' '])
            .take(20)
            .filter_map(|c| c.split_once(','))
            .map(|(x, y)| (x.parse::<f64>().unwrap(), y.parse::<f64>().unwrap()))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert_eq!(peak.0, 705.0, "{coords}");
    }

    #[test]
    fn many_runs_make_one_small_multiple_per_configuration_with_its_median_run_and_a_band() {
        let point = |p99_ns| LatencyPoint {
            calls: 10,
            p50_ns: 1_000,
            p99_ns,
            max_ns: p99_ns * 2,
        };
        let timelines: Vec<LatencyTimeline> = (1..=12)
            .map(|k| LatencyTimeline {
                interval_ms: 100,
                points: vec![point(k * 10_000); 10],
            })
            .collect();
        let configs: Vec<LatencyRuns> = (0..3)
            .map(|c| LatencyRuns {
                config: c,
                name: format!("fs{c}"),
                runs: (timelines.iter().enumerate())
                    .map(|(k, t)| (format!("fs{c} run {}", k + 1), t))
                    .collect(),
            })
            .collect();
        let svgs = latency("rm", &configs, 1.0);
        // 3 charts of 3 lines each, not 36 runs × 3 lines in one.
        assert_eq!(svgs.len(), 3);
        for (c, svg) in svgs.iter().enumerate() {
            assert_eq!(svg.matches("<polyline").count(), 3, "{svg}");
            assert_eq!(svg.matches("class=\"band\"").count(), 1, "{svg}");
            // The middle of 12 runs (in phase-time order) is the 7th.
            assert!(svg.contains(&format!("median run (fs{c} run 7;")), "{svg}");
            assert!(svg.contains("band: p99 of all 12 runs"), "{svg}");
        }
    }
}

//! What each configuration's crash states showed, beside (never inside) its speed: the
//! answer names every configuration that lost promised data; `show` lists the checks;
//! `compare` and `rank` add a safety line under their tables.

use std::fmt::Write;

use crate::fit::View;
use fsbench_model::results::SuiteResult;
use fsbench_model::results::crash::{CrashSummary, total};
use fsbench_stats::compare::Column;

/// The configurations of `r` whose states were checked, with their checks as one.
fn checked(r: &SuiteResult) -> Vec<(&str, CrashSummary)> {
    (r.configurations.iter())
        .filter_map(|c| Some((c.config.label.as_str(), total(&c.crash)?)))
        .collect()
}

/// The answer's crash line: every configuration that lost promised data is named, whatever
/// its speed; the others with the states behind their zero.
pub(crate) fn answer_lines(r: &SuiteResult) -> Vec<String> {
    let all = checked(r);
    if all.is_empty() {
        return Vec::new();
    }
    let lost: Vec<String> = (all.iter())
        .filter(|(_, s)| s.loses_data())
        .map(|(label, s)| {
            format!(
                "{label} LOST promised (fsync'ed) data in {} of {} crash states",
                s.lost, s.states
            )
        })
        .collect();
    let kept: Vec<String> = (all.iter())
        .filter(|(_, s)| !s.loses_data() && s.error.is_none() && s.promises > 0)
        .map(|(label, s)| format!("{label} 0 of {}", s.states))
        .collect();
    let mut parts = lost;
    if !kept.is_empty() {
        parts.push(format!("no loss in {}", kept.join(", ")));
    }
    let unchecked: Vec<&str> = (all.iter())
        .filter(|(_, s)| s.error.is_some() || s.promises == 0)
        .map(|(label, _)| *label)
        .collect();
    if !unchecked.is_empty() {
        parts.push(format!(
            "no promise checked for {} (consistency only, or not checked)",
            unchecked.join(", ")
        ));
    }
    vec![format!("crash safety — {}", parts.join("; "))]
}

/// `show`'s section: each check in a few lines.
pub(crate) fn render(out: &mut String, r: &SuiteResult, view: &View) {
    let any = r.configurations.iter().any(|c| !c.crash.is_empty());
    if !any {
        return;
    }
    out.push_str(
        &view
            .style
            .heading("Crash states (a recorded run of each workload; not among the speed figures)"),
    );
    for c in &r.configurations {
        for s in &c.crash {
            out.push_str(&view.item(1, &format!("{} {}", c.config.label, s.workload)));
            for line in lines(s, view.verbose) {
                out.push_str(&view.item(3, &line));
            }
        }
    }
}

/// One check as lines: the verdict with its state count, then how the states were chosen,
/// what was lost, and the recording's cost.
fn lines(s: &CrashSummary, verbose: bool) -> Vec<String> {
    if let Some(e) = &s.error {
        return vec![format!("not checked: {e}")];
    }
    let mut out = vec![format!(
        "{} states: {} did not mount, {} inconsistent after recovery, {} lost promised data{}",
        s.states,
        s.unmountable,
        s.inconsistent,
        s.lost,
        if s.promises == 0 {
            " (the workload promised nothing: consistency only)"
        } else {
            ""
        }
    )];
    let mut how = format!(
        "{} crash points from a log of {} records ({} flushes, {}), seed {}",
        s.points,
        s.records,
        s.flushes,
        fsbench_model::units::format_bytes(s.log_bytes),
        s.seed
    );
    if s.time_limited {
        let _ = write!(
            how,
            "; time bound reached: {} of {} planned",
            s.states, s.planned
        );
    }
    out.push(how);
    if s.errors > 0 {
        out.push(format!("{} states could not be checked", s.errors));
    }
    let shown = if verbose { s.lost_files.len() } else { 3 };
    for loss in s.lost_files.iter().take(shown) {
        out.push(format!("lost: {loss}"));
    }
    if let Some(cost) = s.cost {
        out.push(format!("recording cost: {cost:.2} × the plain runs' time"));
    }
    if let Some(kept) = &s.kept {
        out.push(format!("kept in {kept} (fsbench crash show)"));
    }
    out
}

/// The safety line under `compare`'s and `rank`'s tables: each column's states lost, with
/// their count; never part of the speed points.
pub fn column_lines(suites: &[SuiteResult], columns: &[Column]) -> Vec<String> {
    let cells: Vec<String> = (columns.iter())
        .filter_map(|col| {
            let suite = suites.iter().find(|s| s.id == Some(col.suite_id))?;
            let info = (suite.configurations.iter()).find(|c| c.config.label == col.config)?;
            let s = total(&info.crash)?;
            Some(format!("{}: {}", col.name(columns), s.safety_cell()))
        })
        .collect();
    match cells.is_empty() {
        true => Vec::new(),
        false => vec![format!(
            "Crash safety (states that lost promised data; not in the points): {}",
            cells.join("; ")
        )],
    }
}

/// The HTML section: speed against states that lost promised data, one point per
/// configuration, and the table behind it.
pub(crate) fn html_section(suites: &[SuiteResult], columns: &[Column]) -> maud::Markup {
    use maud::{PreEscaped, html};
    let points: Vec<Point> = (columns.iter().enumerate())
        .filter_map(|(i, col)| point(suites, columns, i, col))
        .collect();
    if points.is_empty() {
        return html! {};
    }
    html! {
        h2 #crash { "Crash safety" }
        p { "Each configuration's crash states: rebuilt from a recorded run's block log (every write and flush the filesystem sent), recovered by mounting, checked by fsck and against what the workload's fsyncs promised. Speed is the plain runs' (the recorded run is not among them): the mean time of a run's phases, as a fraction of the fastest's." }
        (PreEscaped(scatter(&points)))
        table {
            tr { th { "Configuration" } th { "speed" } th { "states" } th { "lost data" } th { "did not mount" } th { "inconsistent" } th { "recording cost" } }
            @for p in &points {
                tr {
                    td { (p.name) } td { (format!("{:.2}", p.speed)) } td { (p.check.states) }
                    td { (p.check.lost) } td { (p.check.unmountable) } td { (p.check.inconsistent) }
                    td { (p.check.cost.map_or("-".to_string(), |c| format!("{c:.2} ×"))) }
                }
            }
        }
    }
}

struct Point {
    name: String,
    color: usize,
    /// The fastest configuration's mean run time over this one's (1 is the fastest).
    speed: f64,
    check: CrashSummary,
}

/// Column `i`'s point: its crash check and its mean run time (set relative afterwards).
fn point(suites: &[SuiteResult], columns: &[Column], i: usize, col: &Column) -> Option<Point> {
    let suite = suites.iter().find(|s| s.id == Some(col.suite_id))?;
    let info = (suite.configurations.iter()).find(|c| c.config.label == col.config)?;
    let check = total(&info.crash)?;
    let runs: Vec<f64> = (suite.runs.iter())
        .filter(|r| r.config == col.config && r.status == fsbench_model::results::RunStatus::Ok)
        .map(|r| r.phases.iter().map(|p| p.measurement.elapsed_secs()).sum())
        .collect();
    let secs = runs.iter().sum::<f64>() / runs.len().max(1) as f64;
    Some(Point {
        name: col.name(columns),
        color: i,
        speed: secs,
        check,
    })
}

/// The scatter as SVG: lost-data states (% of those checked) across, speed up.
fn scatter(points: &[Point]) -> String {
    let fastest = (points.iter().map(|p| p.speed))
        .filter(|s| *s > 0.0)
        .fold(f64::INFINITY, f64::min);
    let (w, h, m) = (560.0, 300.0, 50.0);
    let mut svg = format!(
        r#"<svg class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">"#
    );
    let _ = write!(
        svg,
        r#"<line x1="{m}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="gray"/><line x1="{m}" y1="{m}" x2="{m}" y2="{y0}" stroke="gray"/><text x="{cx}" y="{ty}" text-anchor="middle" font-size="12">states that lost promised data (% of those checked)</text><text x="14" y="{cy}" font-size="12" transform="rotate(-90 14 {cy})" text-anchor="middle">speed (fastest = 1)</text>"#,
        y0 = h - m,
        x1 = w - m,
        cx = w / 2.0,
        ty = h - 12.0,
        cy = h / 2.0
    );
    for tick in [0.0, 50.0, 100.0] {
        let x = m + tick / 100.0 * (w - 2.0 * m);
        let _ = write!(
            svg,
            r#"<text x="{x}" y="{}" font-size="10" text-anchor="middle">{tick}%</text>"#,
            h - m + 14.0
        );
    }
    for p in points {
        let lost = match p.check.states {
            0 => 0.0,
            n => 100.0 * f64::from(p.check.lost) / f64::from(n),
        };
        let speed = if p.speed > 0.0 {
            fastest / p.speed
        } else {
            0.0
        };
        let x = m + lost / 100.0 * (w - 2.0 * m);
        let y = h - m - speed * (h - 2.0 * m);
        let name = p.name.replace('&', "&amp;").replace('<', "&lt;");
        let _ = write!(
            svg,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="6" fill="{}"><title>{name}: {} of {} states lost data, speed {speed:.2}</title></circle><text x="{:.1}" y="{:.1}" font-size="11">{name}</text>"#,
            crate::charts::color(p.color),
            p.check.lost,
            p.check.states,
            x + 8.0,
            y - 8.0
        );
    }
    svg.push_str("</svg>");
    svg
}

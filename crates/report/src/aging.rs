//! Aged and filled filesystems in the reports: what preparing each configuration did, how
//! fragmented its free space was, and each phase's rate against the fill level.

use std::collections::BTreeMap;
use std::fmt::Write;

use maud::{Markup, PreEscaped, html};

use fsbench_model::aging::{Preparation, Probe};
use fsbench_model::results::SuiteResult;
use fsbench_model::units::format_bytes;

fn probe_text(p: &Option<Probe>) -> String {
    p.map_or("-".into(), |p| p.fragments.to_string())
}

/// The half-free-space probe (records from before it have none).
fn half_probe_text(p: &Option<Probe>) -> String {
    p.filter(|p| p.half_bytes > 0)
        .map_or("-".into(), |p| p.half_fragments.to_string())
}

/// One line: what preparing a run's filesystem did.
pub fn summary(prep: &Preparation) -> String {
    let mut parts = Vec::new();
    if let Some(a) = &prep.aging {
        parts.push(format!(
            "aged ({}, seed {}) in {:.1} s: {} written, {:.1}% used (target {:.0}%), {} files in {} dirs",
            a.profile,
            a.seed,
            a.secs,
            format_bytes(a.bytes_written),
            a.util_percent,
            a.target_util_percent,
            a.files,
            a.dirs
        ));
    }
    if let Some(f) = &prep.fill {
        parts.push(format!(
            "filled to {}% in {:.1} s ({:.1}% used, {} free)",
            f.level_percent,
            f.secs,
            f.util_percent,
            format_bytes(f.free_bytes)
        ));
    }
    parts.push(format!(
        "free-space probe (fragments, fresh → prepared) 10%: {} → {}, 50%: {} → {}",
        probe_text(&prep.probe_fresh),
        probe_text(&prep.probe_prepared),
        half_probe_text(&prep.probe_fresh),
        half_probe_text(&prep.probe_prepared)
    ));
    match &prep.template {
        Some(t) if t.copy.is_empty() => parts.push(format!("template {}", t.checksum)),
        Some(t) => parts.push(format!(
            "template {}{} ({} in {:.2} s)",
            t.checksum,
            if t.made_here { " made by this run" } else { "" },
            t.copy,
            t.copy_secs
        )),
        None => {}
    }
    if prep.in_place {
        parts.push("prepared again before this run (no image to copy)".into());
    }
    parts.join("; ")
}

/// Per configuration (and workload, where one ages by itself): the first preparation of its
/// runs. `(label, preparation, runs that share its template and started from its tree)`.
fn prepared(r: &SuiteResult) -> Vec<(String, &Preparation, usize)> {
    let mut out: Vec<(String, &Preparation, usize)> = Vec::new();
    // The workloads that age by themselves (their rows say so) were aged per workload.
    let own_aging: Vec<String> = (crate::typed_workloads(r).into_iter())
        .filter(|(_, w)| w.age_profile().is_some())
        .map(|(label, _)| label)
        .collect();
    for run in &r.runs {
        let Some(prep) = &run.preparation else {
            continue;
        };
        let label = if prep.aging.is_some() && own_aging.contains(&run.workload) {
            format!("{} {}", run.config, run.workload)
        } else {
            run.config.clone()
        };
        match out.iter_mut().find(|(l, _, _)| *l == label) {
            Some((_, first, same)) => {
                if first.tree_digest == prep.tree_digest {
                    *same += 1;
                }
            }
            None => out.push((label, prep, 1)),
        }
    }
    out
}

/// The terminal's and Markdown's lines: one per prepared configuration, then (verbose) the
/// filesystems' own free-space views.
pub(crate) fn lines(r: &SuiteResult, verbose: bool) -> Vec<String> {
    let mut out = Vec::new();
    for (label, prep, same) in prepared(r) {
        out.push(format!("{label}: {}", summary(prep)));
        if let Some(d) = &prep.tree_digest {
            out.push(format!("  starting tree {d}, the same in {same} run(s)"));
        }
        if verbose {
            for view in &prep.native {
                out.push(format!("  $ {}", view.command));
                out.extend(view.output.lines().map(|l| format!("    {l}")));
            }
        }
    }
    out
}

/// A run's free-space probe after its phases, as the console says it.
pub fn after_run_text(p: &Probe) -> String {
    format!(
        "free space after the run in {} / {} fragments (10% / 50% of it)",
        p.fragments,
        half_probe_text(&Some(*p))
    )
}

/// The free-space probes after the runs of one configuration and workload, beside the
/// probe its runs started from (an aged or filled filesystem's; none for a fresh one).
struct AfterRuns<'a> {
    config: &'a str,
    workload: &'a str,
    prepared: Option<Probe>,
    after: Vec<Probe>,
}

fn after_runs(r: &SuiteResult) -> Vec<AfterRuns<'_>> {
    let mut out: Vec<AfterRuns> = Vec::new();
    for run in &r.runs {
        let Some(probe) = run.probe_after else {
            continue;
        };
        let prepared = run.preparation.as_ref().and_then(|p| p.probe_prepared);
        let place = out
            .iter()
            .position(|a| a.config == run.config && a.workload == run.workload);
        match place {
            Some(i) => out[i].after.push(probe),
            None => out.push(AfterRuns {
                config: &run.config,
                workload: &run.workload,
                prepared,
                after: vec![probe],
            }),
        }
    }
    out
}

/// `3` or `2–5`: the fewest and most fragments of the runs.
fn range(values: impl Iterator<Item = u64> + Clone) -> String {
    let (lo, hi) = (values.clone().min(), values.max());
    match (lo, hi) {
        (Some(lo), Some(hi)) if lo == hi => lo.to_string(),
        (Some(lo), Some(hi)) => format!("{lo}–{hi}"),
        _ => "-".into(),
    }
}

impl AfterRuns<'_> {
    /// `10%: 3 → 2–4, 50%: 9 → 8–12` (prepared → after the runs), or only the runs'.
    fn text(&self) -> String {
        let tenth = range(self.after.iter().map(|p| p.fragments));
        let half = range(
            self.after
                .iter()
                .filter(|p| p.half_bytes > 0)
                .map(|p| p.half_fragments),
        );
        match self.prepared {
            Some(_) => format!(
                "10%: {} → {tenth}, 50%: {} → {half}",
                probe_text(&self.prepared),
                half_probe_text(&self.prepared)
            ),
            None => format!("10%: {tenth}, 50%: {half}"),
        }
    }

    fn what(&self) -> String {
        let n = self.after.len();
        match self.prepared {
            Some(_) => format!("fragments, prepared → after each of {n} run(s)"),
            None => format!("fragments after each of {n} run(s)"),
        }
    }
}

/// The terminal's and Markdown's lines of the probes after the runs (`probe_after`): one per
/// configuration and workload.
pub(crate) fn after_lines(r: &SuiteResult) -> Vec<String> {
    after_runs(r)
        .iter()
        .map(|a| format!("{} · {}: {} ({})", a.config, a.workload, a.text(), a.what()))
        .collect()
}

/// A phase's mean rate per fill level, per configuration without its level: `(base label,
/// workload, phase, unit) → level → mean`, in the order the phases ran.
type Curves = Vec<((String, String, String, String), BTreeMap<u8, f64>)>;

fn curves(r: &SuiteResult) -> Curves {
    let mut out = Curves::new();
    for c in &r.configurations {
        let Some(level) = c.config.fill else {
            continue;
        };
        let base = c.config.label.strip_suffix(&format!(" @ {level}%"));
        let base = base.unwrap_or(&c.config.label).to_string();
        let rates = r
            .summaries
            .iter()
            .filter(|s| s.config == c.config.label && s.metric == "rate" && s.dims.is_empty());
        for s in rates {
            let key = (
                base.clone(),
                s.workload.clone(),
                s.phase.clone(),
                s.unit.clone(),
            );
            let place = out.iter().position(|(k, _)| *k == key);
            let place = place.unwrap_or_else(|| {
                out.push((key, BTreeMap::new()));
                out.len() - 1
            });
            out[place].1.insert(level, s.summary.mean);
        }
    }
    out.retain(|(_, levels)| levels.len() > 1);
    // Grouped by configuration and workload, phases in the order they ran (a stable sort).
    out.sort_by(|a, b| (&a.0.0, &a.0.1).cmp(&(&b.0.0, &b.0.1)));
    out
}

/// The fill-level table: per configuration and workload, a phase per row and a level per
/// column (means; fits 80 columns for up to five levels).
pub(crate) fn fill_table(r: &SuiteResult) -> Vec<String> {
    let curves = curves(r);
    let mut levels: Vec<u8> = curves.iter().flat_map(|(_, l)| l.keys().copied()).collect();
    levels.sort_unstable();
    levels.dedup();
    if curves.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut group = None;
    for ((base, workload, phase, unit), by_level) in &curves {
        if group != Some((base, workload)) {
            group = Some((base, workload));
            let mut header = format!("{:<34}", clip(&format!("{base} · {workload}"), 33));
            for l in &levels {
                let _ = write!(header, "{:>9}", format!("{l}%"));
            }
            out.push(header);
        }
        let mut row = format!("  {:<32}", clip(&format!("{phase} ({unit})"), 31));
        for l in &levels {
            let cell = by_level.get(l).map_or("-".into(), |v| super::figure(*v));
            let _ = write!(row, "{cell:>9}");
        }
        out.push(row);
    }
    out
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width - 1).collect();
    format!("{kept}…")
}

/// The HTML report's section: the preparation of every configuration, the native views and
/// a curve of each phase's rate against the fill level.
pub(crate) fn html_section(suites: &[SuiteResult]) -> Markup {
    let prepared: Vec<_> = suites
        .iter()
        .flat_map(|s| prepared(s).into_iter().map(move |p| (s.id, p)))
        .collect();
    let curves: Vec<Curves> = suites.iter().map(curves).collect();
    let after: Vec<_> = suites
        .iter()
        .flat_map(|s| after_runs(s).into_iter().map(move |a| (s.id, a)))
        .collect();
    let aged = !prepared.is_empty() || curves.iter().any(|c| !c.is_empty());
    html! {
        @if aged { h2 #aging { "Aged and filled filesystems" } }
        @if !prepared.is_empty() {
            table {
                tr { th { "Suite" } th { "Configuration" } th { "Preparation" } th { "Free-space probe (fragments of 10% / 50% of the free space): fresh → prepared" } }
                @for (id, (label, prep, same)) in &prepared {
                    tr {
                        td { (id.unwrap_or(0)) }
                        td { (label) }
                        td { (summary(prep)) @if let Some(d) = &prep.tree_digest { br; "starting tree " code { (d) } ", the same in " (same) " run(s)" } }
                        td { "10%: " (probe_text(&prep.probe_fresh)) " → " (probe_text(&prep.probe_prepared)) br;
                             "50%: " (half_probe_text(&prep.probe_fresh)) " → " (half_probe_text(&prep.probe_prepared)) }
                    }
                    @for view in &prep.native {
                        tr { td {} td {} td colspan="2" { details { summary { code { (view.command) } } pre { (view.output) } } } }
                    }
                }
            }
        }
        @for c in &curves {
            @for (key, by_level) in c {
                figure {
                    (PreEscaped(curve_svg(by_level)))
                    figcaption { (key.0) " · " (key.1) " " (key.2) ": " (key.3) " against the fill level (% used)" }
                }
            }
        }
        @if !after.is_empty() {
            h2 #probe-after { "Free space after the runs" }
            p { "The free-space probe after each run's phases, before its last unmount: the fragments of a file of 10% and of 50% of the free space, the fewest–most over the runs, beside the probe of the prepared filesystem the runs started from." }
            table {
                tr { th { "Suite" } th { "Configuration" } th { "Workload" } th { "Free-space probe" } }
                @for (id, a) in &after {
                    tr { td { (id.unwrap_or(0)) } td { (a.config) } td { (a.workload) } td { (a.text()) " (" (a.what()) ")" } }
                }
            }
        }
    }
}

/// A line of rate against fill level, with its points labelled.
fn curve_svg(by_level: &BTreeMap<u8, f64>) -> String {
    let (w, h, pad) = (420.0, 180.0, 40.0);
    let top = by_level
        .values()
        .copied()
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let x = |l: u8| pad + (w - 2.0 * pad) * f64::from(l) / 100.0;
    let y = |v: f64| h - pad + (2.0 * pad - h) * v / top;
    let points: Vec<String> = by_level
        .iter()
        .map(|(l, v)| format!("{:.1},{:.1}", x(*l), y(*v)))
        .collect();
    let mut svg = format!(
        r##"<svg class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg"><line x1="{pad}" y1="{b}" x2="{r}" y2="{b}" stroke="#888"/><line x1="{pad}" y1="{pad}" x2="{pad}" y2="{b}" stroke="#888"/><polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{}"/>"##,
        points.join(" "),
        b = h - pad,
        r = w - pad
    );
    for (l, v) in by_level {
        let _ = write!(
            svg,
            r##"<circle cx="{:.1}" cy="{:.1}" r="3" fill="#1f77b4"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text><text x="{:.1}" y="{}" font-size="10" text-anchor="middle">{l}%</text>"##,
            x(*l),
            y(*v),
            x(*l),
            y(*v) - 6.0,
            super::figure(*v),
            x(*l),
            h - pad + 14.0
        );
    }
    svg.push_str("</svg>");
    svg
}

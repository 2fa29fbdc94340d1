//! Side-by-side comparison of configurations as text: the table, what its words mean, the
//! corrections applied, and one line per phase that answers the question (computed in
//! [`fsbench_stats::compare`]).

use super::figure;
use super::fit::{fit, rendered_width, wrap};
use fsbench_stats::compare::{Answer, Cell, Column, Comparison, Role, Row, Verdict};
use fsbench_stats::difference::TestMethod;

/// A p-value as printed: `p < 0.001` or `p = 0.016`.
pub(crate) fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// What the cells and verdict words mean, for the table's caption (terminal and HTML).
pub(crate) fn legend(comparison: &Comparison, baseline: &str) -> String {
    let noise = comparison.noise_percent;
    format!(
        "Baseline: {baseline}. Cells: mean ± σ (sample standard deviation), [95% CI of the mean]; \
         difference to the baseline (ratio of geometric means − 1) [its 95% CI, not adjusted for the number of tests]; \
         p-value after correction (so an interval may exclude 0 while the corrected p is above {}).\n\
         ▲ better / ▼ worse: significant (corrected p < {}) and |difference| ≥ {noise}%; \
         ≈ same: the difference's 95% CI lies within ±{noise}%; \
         ? undecided: neither, with the runs there are (about how many runs per side would tell). \
         A phase's verdict is its rate's (its time's without one); time and MiB/s share it. ↑/↓ = higher/lower is better.",
        comparison.alpha, comparison.alpha
    )
}

/// The corrections applied, e.g. `Holm over 6 phase verdicts; Benjamini–Hochberg over 3,410 matrix cells`.
pub(crate) fn corrections_text(comparison: &Comparison) -> String {
    let families: Vec<String> = comparison
        .families
        .iter()
        .map(|f| {
            format!(
                "{} over {} {}",
                f.correction.name(),
                f.tests,
                f.role.describe()
            )
        })
        .collect();
    if families.is_empty() {
        "No tests: every configuration needs at least 2 runs.".into()
    } else {
        format!("Corrections for multiple tests: {}.", families.join("; "))
    }
}

/// The comparison as a terminal table, then the one-line answers: the phases' verdicts
/// alone, or with `details` every figure (times, CPU, the workloads' own). With a
/// terminal's `width`, a table wider than it becomes one row per phase and configuration,
/// and the text wraps at words; without one (a pipe, a file), the full layout.
pub fn render(
    columns: &[Column],
    comparison: &Comparison,
    width: Option<u16>,
    details: bool,
) -> String {
    let rows: Vec<&Row> = (comparison.rows.iter())
        .filter(|r| details || r.role == Role::Primary)
        .collect();
    let left_out = comparison.rows.len() - rows.len();
    use comfy_table::{CellAlignment, Table, presets};
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    let mut header = vec!["Workload".to_string(), "Phase".into(), "Figure".into()];
    header.extend(columns.iter().map(|c| c.name(columns)));
    t.set_header(header);
    for r in &rows {
        let k = &r.key;
        let mut row = vec![k.workload.clone(), k.phase.clone(), super::shown_label(k)];
        let divisor = super::shown_unit(&k.unit).1;
        for cell in &r.cells {
            row.push(match cell {
                None => "-".into(),
                Some(c) => cell_text(c, divisor),
            });
        }
        t.add_row(row);
    }
    for i in 3..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let table = match width {
        Some(w) if rendered_width(&t) > usize::from(w) => narrow_table(columns, &rows, w),
        _ => t,
    };
    let answers = answers_text(columns, comparison)
        .lines()
        .map(|l| wrap(l.trim_start(), width, l.len() - l.trim_start().len(), 6))
        .collect::<String>();
    let more = match left_out {
        0 => String::new(),
        n => wrap(
            &format!(
                "\n{n} more figures (times, throughput, CPU, sync, the workloads' own) and \
                 their verdicts: `--details`"
            ),
            width,
            0,
            2,
        ),
    };
    format!(
        "{}{table}\n{}{answers}{more}",
        wrap(
            &legend(comparison, &columns[comparison.baseline].name(columns)),
            width,
            0,
            0
        ),
        wrap(&corrections_text(comparison), width, 0, 2),
    )
}

/// The comparison for a narrow terminal: per figure, one row per configuration with its
/// mean ± σ and the 95% CI of the mean, difference to the baseline and verdict, wrapped to
/// `width` where even that is too wide.
fn narrow_table(columns: &[Column], rows: &[&Row], width: u16) -> comfy_table::Table {
    use comfy_table::{Table, presets};
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "Phase, figure",
        "Config",
        "Mean ± σ [95% CI]",
        "Difference",
        "Verdict",
    ]);
    let names = names(columns);
    // The workload is named only where there are several.
    let workloads = rows.iter().map(|r| &r.key.workload);
    let several = workloads
        .clone()
        .any(|w| Some(w) != rows.first().map(|r| &r.key.workload));
    for r in rows {
        let k = &r.key;
        for (i, cell) in r.cells.iter().enumerate() {
            let label = if i == 0 && several {
                format!("{}\n{}\n{}", k.workload, k.phase, super::shown_label(k))
            } else if i == 0 {
                format!("{}\n{}", k.phase, super::shown_label(k))
            } else {
                String::new()
            };
            let Some(c) = cell else {
                t.add_row(vec![label, names[i].clone(), "-".into()]);
                continue;
            };
            let shown = super::shown_summary(&c.summary, super::shown_unit(&k.unit).1);
            let mut mean = mean_sd(&shown).replace(" ± ", "\n± ");
            if let (Some(lo), Some(hi)) = (shown.ci95_low, shown.ci95_high) {
                mean.push_str(&format!("\n[{} – {}]", figure(lo), figure(hi)));
            }
            let (diff, verdict) = if c.verdict == Verdict::Baseline {
                ("baseline".to_string(), String::new())
            } else {
                let diff = c.diff_percent().map_or("-".into(), |(d, lo, hi)| {
                    format!("{d:+.1}%\n[{lo:+.1}, {hi:+.1}]")
                });
                let p = c.p_adjusted.map_or("-".into(), p_text);
                let verdict = match (c.verdict, c.runs_needed) {
                    (Verdict::Undecided, Some(n)) => format!("? ~{n} runs"),
                    (Verdict::Undecided, None) => "? many runs".into(),
                    (v, _) => v.marker().to_string(),
                };
                (format!("{diff}\n{p}"), verdict)
            };
            t.add_row(vec![label, names[i].clone(), mean, diff, verdict]);
        }
    }
    for i in [2, 3] {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    fit(&mut t, Some(width));
    t
}

/// The one-line answers, one per phase and compared configuration, under a heading.
pub(crate) fn answers_text(columns: &[Column], comparison: &Comparison) -> String {
    let answers = comparison.answers();
    if answers.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nAnswers, per phase:\n");
    for a in &answers {
        out.push_str(&format!(
            "  {}\n",
            answer_line(&names(columns), comparison, a)
        ));
    }
    out
}

/// A factor as read: 3.45, 1.004, 12.3.
fn factor(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.3}")
    } else {
        figure(v)
    }
}

/// One phase's answer, as hyperfine gives it: `tree dir-create: xfs 3.450 × faster than
/// ext4 (95% CI 3.330–3.570; p < 0.001 after correction; 10 runs each)` (`#ID` before each
/// configuration when several suites are compared). `names` are the compared columns'.
/// The columns' names, each among all of them.
pub fn names(columns: &[Column]) -> Vec<String> {
    columns.iter().map(|c| c.name(columns)).collect()
}

pub fn answer_line(names: &[String], comparison: &Comparison, a: &Answer) -> String {
    let (name, base) = (&names[a.column], &names[comparison.baseline]);
    let runs = if a.runs[0] == a.runs[1] {
        format!("{} runs each", a.runs[0])
    } else {
        format!("{} and {} runs", a.runs[0], a.runs[1])
    };
    let (ratio, low, high, word) = if a.speedup >= 1.0 {
        (a.speedup, a.speedup_low, a.speedup_high, "faster")
    } else {
        (
            1.0 / a.speedup,
            1.0 / a.speedup_high,
            1.0 / a.speedup_low,
            "slower",
        )
    };
    let interval = format!("95% CI {}–{} unadjusted", factor(low), factor(high));
    let p = p_text(a.p_adjusted);
    let what = match a.verdict {
        Verdict::Same => format!(
            "{name} ≈ {base}: {} × {word} ({interval}, within ±{}%; {runs})",
            factor(ratio),
            comparison.noise_percent
        ),
        Verdict::Undecided => format!(
            "? undecided: {name} {} × {word} than {base} ({interval}; {p} after correction; {runs}; {})",
            factor(ratio),
            runs_needed_text(a.runs_needed)
        ),
        _ => format!(
            "{} {name} {} × {word} than {base} ({interval}; {p} after correction; {runs})",
            a.verdict.symbol(),
            factor(ratio),
        ),
    };
    format!("{} {}: {what}", a.workload, a.phase)
}

fn runs_needed_text(n: Option<usize>) -> String {
    match n {
        Some(n) => format!("need about {n} to tell"),
        None => format!(
            "more than {} runs would be needed",
            fsbench_stats::difference::MAX_RUNS_ESTIMATE
        ),
    }
}

/// `mean ± σ`, or the mean alone from one run.
fn mean_sd(s: &fsbench_model::results::Summary) -> String {
    match s.stddev {
        Some(sd) => format!("{} ± {}", figure(s.mean), figure(sd)),
        None => figure(s.mean),
    }
}

/// A cell as text, its figures divided by `divisor` (its shown unit's): mean ± σ and the CI,
/// then difference, p-value and verdict.
pub(crate) fn cell_text(c: &Cell, divisor: f64) -> String {
    let s = &super::shown_summary(&c.summary, divisor);
    let mut text = mean_sd(s);
    if let (Some(lo), Some(hi)) = (s.ci95_low, s.ci95_high) {
        text.push_str(&format!("\n[{} – {}]", figure(lo), figure(hi)));
    }
    if c.verdict == Verdict::Baseline {
        return text;
    }
    let diff = c.diff_percent().map_or("-".into(), |(d, lo, hi)| {
        format!("{d:+.1}% [{lo:+.1}, {hi:+.1}]")
    });
    let mut p = c.p_adjusted.map_or("-".into(), p_text);
    // Welch's t on logs is the rule; say when another test gave the p-value.
    if let Some(d) = c
        .difference
        .as_ref()
        .filter(|d| d.test != TestMethod::WelchLog)
    {
        p.push_str(&format!(" ({})", d.test.name()));
    }
    let verdict = match c.verdict {
        Verdict::Undecided => format!(
            "{} ({} runs; {})",
            c.verdict.marker(),
            c.summary.n,
            runs_needed_text(c.runs_needed)
        ),
        v => v.marker().to_string(),
    };
    text.push_str(&format!("\n{diff} {p}\n{verdict}"));
    text
}

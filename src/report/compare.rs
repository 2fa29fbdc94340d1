//! Side-by-side comparison of configurations as a terminal table: mean ± 95% CI, difference
//! against a baseline, Welch's t-test, and a verdict (computed in [`crate::stats::compare`]).

use super::figure;
use crate::stats::compare::{ALPHA, Cell, Column, Row, Verdict};

/// The comparison as a terminal table.
pub fn render(columns: &[Column], rows: &[Row], baseline: usize, noise_percent: f64) -> String {
    use comfy_table::{CellAlignment, Table, presets};
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    let mut header = vec!["Workload".to_string(), "Phase".into(), "Figure".into()];
    header.extend(columns.iter().map(Column::name));
    t.set_header(header);
    for r in rows {
        let k = &r.key;
        let mut row = vec![
            k.workload.clone(),
            k.phase.clone(),
            format!(
                "{} ({}) {}",
                k.metric,
                k.unit,
                if k.higher_is_better { "↑" } else { "↓" }
            ),
        ];
        for cell in &r.cells {
            row.push(match cell {
                None => "-".into(),
                Some(c) => cell_text(c),
            });
        }
        t.add_row(row);
    }
    for i in 3..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!(
        "Baseline: {}. Cells: mean ± 95% CI half-width; difference to the baseline; Welch's t-test p-value.\n\
         ▲/▼ = significantly better/worse (p < {ALPHA} and |difference| ≥ {noise_percent}%); ≈ = within noise. ↑/↓ = higher/lower is better.\n{t}\n",
        columns[baseline].name()
    )
}

/// A cell as text: mean ± CI half-width, then difference, p-value and verdict.
pub fn cell_text(c: &Cell) -> String {
    let s = &c.summary;
    let mut text = match s.ci95_half_width() {
        Some(h) => format!("{} ± {}", figure(s.mean), figure(h)),
        None => figure(s.mean),
    };
    if c.verdict != Verdict::Baseline {
        let diff = c.diff_percent.map_or("-".into(), |d| format!("{d:+.1}%"));
        let p = c.p_value.map_or("-".into(), |p| {
            if p < 0.001 {
                "p<0.001".into()
            } else {
                format!("p={p:.3}")
            }
        });
        text.push_str(&format!("\n{diff} {p} {}", c.verdict.marker()));
    }
    text
}

//! The placement-points table of [`crate::stats::rank`].

use comfy_table::{CellAlignment, Table, presets};

use super::figure;
use crate::stats::compare::Column;
use crate::stats::rank::Ranking;

pub fn render(r: &Ranking) -> String {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    let mut header = vec!["Discipline".to_string()];
    header.extend(r.columns.iter().map(Column::name));
    t.set_header(header);
    let num = |v: f64| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    for d in &r.disciplines {
        let k = &d.key;
        let mut row = vec![format!(
            "{} {} {} ({})",
            k.workload, k.phase, k.metric, k.unit
        )];
        for e in &d.entries {
            row.push(e.map_or("-".into(), |(mean, place, points)| {
                format!(
                    "{} · place {} · {} pts",
                    figure(mean),
                    num(place),
                    num(points)
                )
            }));
        }
        t.add_row(row);
    }
    let mut total = vec!["Total points".to_string()];
    total.extend(r.totals.iter().map(|v| num(*v)));
    t.add_row(total);
    for i in 1..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut order: Vec<usize> = (0..r.columns.len()).collect();
    order.sort_by(|a, b| r.totals[*b].total_cmp(&r.totals[*a]));
    let standings: Vec<String> = order
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            format!(
                "{}. {} — {} points",
                i + 1,
                r.columns[c].name(),
                num(r.totals[c])
            )
        })
        .collect();
    format!(
        "Placement points: in each discipline place p of k configurations earns k − p + 1 points (ties share their places).\n{t}\n{}\n",
        standings.join("\n")
    )
}

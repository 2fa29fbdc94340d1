//! The ranking table of [`fsbench_stats::rank`]: per discipline every place and which
//! differences were significant, then the totals.

use comfy_table::{CellAlignment, Table, presets};

use super::compare::p_text;
use super::figure;
use super::fit::{fit, rendered_width, wrap};
use fsbench_stats::rank::{Placing, Ranking};

/// The ranking as text. With a terminal's `width`, a table wider than it becomes one row per
/// discipline and configuration, and the text wraps at words; without one, the full layout.
pub fn render(r: &Ranking, width: Option<u16>) -> String {
    let places = places(r);
    let significant = significant(r);
    let t = wide_table(r, &places, &significant);
    let t = match width {
        Some(w) if rendered_width(&t) > usize::from(w) => narrow_table(r, &places, &significant, w),
        _ => t,
    };
    let how = match r.placing {
        Placing::Significance => {
            "Places by significance: one discipline per phase (its rate, or its time without one); \
             sorted by mean, a configuration shares the place of the best one it is not significantly \
             worse than (pairwise Welch's t on logs, Holm-corrected within the discipline, p < 0.05). \
             Place p of k earns k − p + 1 points; shared places share their average."
        }
        Placing::EqualFooting => {
            "Equal-footing placement points (the seed article's): places by mean alone, one discipline \
             per phase; place p of k earns k − p + 1 points (ties share their places).\n\
             Warning: these points ignore noise: a difference far inside the runs' spread earns a full place."
        }
    };
    format!(
        "{}{}{t}\n{}\n{}",
        wrap(how, width, 0, 0),
        wrap(&weights_text(r), width, 0, 2),
        standings(r).join("\n"),
        wrap(&uneven_warning(r), width, 0, 2)
    )
}

/// Per discipline, each configuration's place as shown: `-` where it has none, a shared
/// place as the places it spans (their average is its place).
fn places(r: &Ranking) -> Vec<Vec<String>> {
    (r.disciplines.iter())
        .map(|d| {
            (d.entries.iter())
                .map(|e| {
                    e.map_or("-".into(), |(_, place, _)| {
                        let sharing = d.entries.iter().flatten().filter(|o| o.1 == place).count();
                        let span = (sharing as f64 - 1.0) / 2.0;
                        if sharing > 1 {
                            format!("{}–{}", num(place - span), num(place + span))
                        } else {
                            num(place)
                        }
                    })
                })
                .collect()
        })
        .collect()
}

/// Per discipline, its significant differences (`a > b (p)`), one a line.
fn significant(r: &Ranking) -> Vec<String> {
    (r.disciplines.iter())
        .map(|d| {
            let pairs: Vec<String> = (d.significant.iter())
                .map(|s| {
                    format!(
                        "{} > {} ({})",
                        r.columns[s.better].config,
                        r.columns[s.worse].config,
                        p_text(s.p_adjusted)
                    )
                })
                .collect();
            if d.tests == 0 {
                "no tests (fewer than 2 runs)".into()
            } else if pairs.is_empty() {
                format!("none of {} pairs", d.tests)
            } else {
                pairs.join("\n")
            }
        })
        .collect()
}

/// The full layout: a row per discipline, a column per configuration, and the totals.
fn wide_table(r: &Ranking, places: &[Vec<String>], significant: &[String]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    let mut header = vec!["Discipline".to_string()];
    header.extend(r.columns.iter().map(|c| c.name(&r.columns)));
    header.push("Significant differences".into());
    t.set_header(header);
    for (i, d) in r.disciplines.iter().enumerate() {
        let k = &d.key;
        let mut row = vec![format!(
            "{} {} {} ({}){}",
            k.workload,
            k.phase,
            k.metric,
            k.unit,
            weight_mark(d.weight)
        )];
        for (e, place) in d.entries.iter().zip(&places[i]) {
            row.push(e.map_or("-".into(), |(mean, _, points)| {
                let word = if place.contains('–') {
                    "places"
                } else {
                    "place"
                };
                format!("{} · {word} {place} · {} pts", figure(mean), num(points))
            }));
        }
        row.push(significant[i].clone());
        t.add_row(row);
    }
    let mut total = vec!["Total points".to_string()];
    total.extend(r.totals.iter().map(|v| num(*v)));
    t.add_row(total);
    for i in 1..t.column_count().saturating_sub(1) {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// The configurations by total points, best first; equal totals share a standing.
fn standings(r: &Ranking) -> Vec<String> {
    let mut order: Vec<usize> = (0..r.columns.len()).collect();
    order.sort_by(|a, b| r.totals[*b].total_cmp(&r.totals[*a]));
    (order.iter())
        .map(|&c| {
            let ahead = r.totals.iter().filter(|t| **t > r.totals[c]).count();
            format!(
                "{}. {} — {} points",
                ahead + 1,
                r.columns[c].name(&r.columns),
                num(r.totals[c])
            )
        })
        .collect()
}

/// ` × 3` after a weighted discipline's name; nothing for a weight of 1.
fn weight_mark(weight: f64) -> String {
    if weight == 1.0 {
        String::new()
    } else {
        format!(" × {weight}")
    }
}

/// The weights the totals were made with, said before the table (empty: none given).
fn weights_text(r: &Ranking) -> String {
    let mut weighted: Vec<String> = Vec::new();
    for d in r.disciplines.iter().filter(|d| d.weight != 1.0) {
        let said = format!("{} × {}", d.key.phase, d.weight);
        if !weighted.contains(&said) {
            weighted.push(said);
        }
    }
    if weighted.is_empty() {
        return String::new();
    }
    format!(
        "Weighted (--weight): {}; every other phase × 1. A place's points count times its \
         phase's weight in the totals.",
        weighted.join(", ")
    )
}

/// A number of places or points: `2`, `2.5`.
fn num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The ranking for a narrow terminal: per discipline, one row per configuration (mean,
/// place, points), the significant differences under the discipline's name.
fn narrow_table(r: &Ranking, places: &[Vec<String>], significant: &[String], width: u16) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    t.set_header(["Discipline", "Config", "Mean", "Place", "Points"]);
    for (i, d) in r.disciplines.iter().enumerate() {
        let k = &d.key;
        for (c, e) in d.entries.iter().enumerate() {
            let label = if c == 0 {
                format!(
                    "{} {}\n{} ({}){}\nsignificant: {}",
                    k.workload,
                    k.phase,
                    k.metric,
                    k.unit,
                    weight_mark(d.weight),
                    significant[i]
                )
            } else {
                String::new()
            };
            let name = r.columns[c].name(&r.columns);
            t.add_row(match e {
                Some((mean, _, points)) => {
                    vec![
                        label,
                        name,
                        figure(*mean),
                        places[i][c].clone(),
                        num(*points),
                    ]
                }
                None => vec![label, name, "-".into()],
            });
        }
    }
    for (c, total) in r.totals.iter().enumerate() {
        let label = if c == 0 { "Total points" } else { "" };
        t.add_row(vec![
            label.to_string(),
            r.columns[c].name(&r.columns),
            String::new(),
            String::new(),
            num(*total),
        ]);
    }
    for i in 2..5 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    fit(&mut t, Some(width));
    t
}

/// Totals over different numbers of disciplines (suites of different workloads) do not
/// compare: say so, with each configuration's count.
fn uneven_warning(r: &Ranking) -> String {
    let counts: Vec<usize> = (0..r.columns.len())
        .map(|c| {
            r.disciplines
                .iter()
                .filter(|d| d.entries[c].is_some())
                .count()
        })
        .collect();
    if counts.iter().all(|&n| n == counts[0]) {
        return String::new();
    }
    let each: Vec<String> = (r.columns.iter().zip(&counts))
        .map(|(c, n)| format!("{} {n}", c.name(&r.columns)))
        .collect();
    format!(
        "Warning: the configurations were ranked in different numbers of disciplines ({}): \
         their totals do not compare; rank suites of the same workloads together.\n",
        each.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_model::results::{MetricSummary, SuiteResult};
    use fsbench_stats::compare::Column;
    use fsbench_stats::rank::{Placing, rank};

    #[test]
    fn points_by_place_with_ties() {
        let mut s = SuiteResult::for_tests();
        s.id = Some(7);
        let fig = |config: &str, phase: &str, metric: &str, hib: bool, v: f64| MetricSummary {
            config: config.into(),
            workload: "w".into(),
            phase: phase.into(),
            metric: metric.into(),
            dims: Vec::new(),
            unit: "u".into(),
            higher_is_better: hib,
            summary: fsbench_stats::summarize(&[v]).unwrap(),
        };
        s.summaries = vec![
            fig("a", "p1", "rate", true, 30.0),
            fig("b", "p1", "rate", true, 20.0),
            fig("c", "p1", "rate", true, 10.0),
            fig("a", "p2", "rate", true, 5.0),
            fig("b", "p2", "rate", true, 5.0),
            fig("c", "p2", "rate", true, 9.0),
            fig("a", "p2", "time", false, 1.0),
        ];
        let cols = ["a", "b", "c"]
            .map(|c| Column {
                suite_id: 7,
                config: c.into(),
            })
            .to_vec();
        let r = rank(
            std::slice::from_ref(&s),
            cols.clone(),
            Placing::EqualFooting,
        );
        assert_eq!(r.disciplines.len(), 2, "time is not a discipline");
        // One family alone: p2's points only.
        let mut other = s.clone();
        for f in &mut other.summaries {
            if f.phase == "p2" {
                f.workload = "w2".into();
            }
        }
        let two = rank(
            std::slice::from_ref(&other),
            cols.clone(),
            Placing::EqualFooting,
        );
        assert_eq!(two.workloads(), ["w", "w2"]);
        assert_eq!(two.of_workload("w2").totals, [1.5, 1.5, 3.0]);
        assert_eq!(two.of_workload("w").totals, [3.0, 2.0, 1.0]);
        assert_eq!(two.totals, r.totals);
        // p1: a 3, b 2, c 1. p2: c 3, a and b tie for places 2-3: 1.5 each.
        assert_eq!(r.totals, [4.5, 3.5, 4.0]);
        assert_eq!(r.disciplines[1].entries[0], Some((5.0, 2.5, 1.5)));
        let text = render(&r, None);
        // One suite: its `#ID` would tell nothing apart.
        assert!(text.contains("1. a — 4.5 points"), "{text}");
        assert!(!text.contains("different numbers of disciplines"), "{text}");
        // Without c's p2, c's total comes from one discipline and the others' from two.
        s.summaries
            .retain(|f| !(f.config == "c" && f.phase == "p2"));
        let r = rank(&[s], cols, Placing::EqualFooting);
        let text = render(&r, None);
        assert!(
            text.contains("different numbers of disciplines (a 2, b 2, c 1)"),
            "{text}"
        );
    }
}

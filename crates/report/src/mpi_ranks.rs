//! The HTML report's charts of MPI ranks: stragglers stand out.

use maud::{Markup, PreEscaped, html};

use super::charts;
use fsbench_model::measurement::DimValue;
use fsbench_model::results::SuiteResult;
use fsbench_model::workload::PhaseInfo;
use fsbench_stats::compare::{Column, FigureKey};

/// Under MPI: per configuration, every rank's rate in the phase (mean over runs, 95% CI), so
/// that stragglers stand out.
pub(super) fn rank_charts(
    suites: &[SuiteResult],
    columns: &[Column],
    keys: &[FigureKey],
    workload: &str,
    phase: &str,
) -> Markup {
    let rank_of = |k: &FigureKey| match k.dims.as_slice() {
        [d] if d.name == "rank" => match d.value {
            DimValue::Count(r) => Some(r),
            _ => None,
        },
        _ => None,
    };
    let mut ranks: Vec<(u64, &FigureKey)> = keys
        .iter()
        .filter(|k| k.workload == workload && k.phase == phase && k.metric == "rank-rate")
        .filter_map(|k| Some((rank_of(k)?, k)))
        .collect();
    ranks.sort_by_key(|(r, _)| *r);
    if ranks.is_empty() {
        return html! {};
    }
    html! {
        div.charts {
            @for (i, col) in columns.iter().enumerate() {
                @let rows: Vec<_> = ranks.iter().map(|(r, k)| (i, format!("rank {r}"), col.summary(suites, k))).collect();
                @if rows.iter().any(|r| r.2.is_some()) {
                    figure { (PreEscaped(charts::bars(&format!("{phase} per rank, {}", col.name(columns)), &ranks[0].1.unit, true, &rows))) }
                }
            }
        }
    }
}

/// Under MPI: per configuration, every rank's progress over its last run's phase, from the
/// common start, one line per rank, so first-done and last-done ranks and stalls of one
/// client show; the caption names the first and the last rank done.
pub(super) fn rank_progress(
    suites: &[SuiteResult],
    columns: &[Column],
    workload: &str,
    info: &PhaseInfo,
) -> Markup {
    let charts: Vec<(String, Option<String>)> = (columns.iter())
        .filter_map(|col| {
            let run = col.runs(suites, workload).into_iter().last()?;
            let phase = run.phases.iter().find(|p| p.name == info.name)?;
            let ranks = &phase.rank_progress;
            if ranks.len() < 2 {
                return None;
            }
            let series: Vec<(usize, String, &[[u64; 2]])> = (ranks.iter().enumerate())
                .map(|(r, s)| (r, format!("rank {r}"), s.as_slice()))
                .collect();
            let legend: Vec<(usize, String)> =
                (0..ranks.len()).map(|r| (r, format!("rank {r}"))).collect();
            let ends: Vec<u64> = ranks.iter().map(|s| s.last().map_or(0, |p| p[0])).collect();
            let secs = ends.iter().copied().max().unwrap_or(0) as f64 / 1000.0;
            let title = format!(
                "{} per rank, {} run {}",
                info.name,
                col.name(columns),
                run.run
            );
            let svg = charts::progress(&title, &info.unit, "rank", &series, &legend, secs);
            Some((svg, done_caption(&ends)))
        })
        .collect();
    html! {
        @if !charts.is_empty() {
            div.charts {
                @for (svg, caption) in &charts {
                    figure {
                        (PreEscaped(svg))
                        @if let Some(c) = caption { figcaption { (c) } }
                    }
                }
            }
        }
    }
}

/// "rank 2 done first at 0.41 s, rank 0 last at 0.97 s (2.4× later)" from each rank's end.
fn done_caption(ends_ms: &[u64]) -> Option<String> {
    let (first, first_ms) = ends_ms.iter().enumerate().min_by_key(|(_, e)| **e)?;
    let (last, last_ms) = ends_ms.iter().enumerate().max_by_key(|(_, e)| **e)?;
    let later = match *first_ms {
        0 => String::new(),
        f => format!(" ({:.1}× later)", *last_ms as f64 / f as f64),
    };
    Some(format!(
        "rank {first} done first at {:.2} s, rank {last} last at {:.2} s{later}",
        *first_ms as f64 / 1000.0,
        *last_ms as f64 / 1000.0
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_caption_names_the_first_and_the_last_rank_done() {
        assert_eq!(
            super::done_caption(&[970, 410, 600]).as_deref(),
            Some("rank 1 done first at 0.41 s, rank 0 last at 0.97 s (2.4× later)")
        );
        assert_eq!(super::done_caption(&[]), None);
    }
}

//! The HTML report's charts of MPI ranks: stragglers stand out.

use maud::{Markup, PreEscaped, html};

use super::charts;
use crate::measure::DimValue;
use crate::results::SuiteResult;
use crate::stats::compare::{Column, FigureKey};

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

//! One phase's record from every rank's: mdtest's and IO500's aggregate rate (Σ items ÷ the
//! slowest rank's phase time), IOR's bandwidth (Σ bytes ÷ latest end − earliest start), the
//! per-rank spread as figures with a `rank` dimension, merged latency histograms and errors.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use fsbench_measure::measure::LatencySummaryExt;
use fsbench_measure::phase_progress::SAMPLE_INTERVAL;
use fsbench_measure::shape;
use fsbench_model::measurement::{
    Dim, DimValue, Figure, LatencySummary, PhaseMeasurement, PhaseShape, ThreadsDone,
};
use fsbench_model::results::PhaseRecord;
use fsbench_model::workload::PhaseInfo;
use fsbench_workloads::tree::Agreed;

use super::comm::Exchanged;

/// One rank's phase, as it sends it to rank 0.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RankPhase {
    /// Its rank: where rank 0 got it from (not sent).
    #[serde(skip)]
    pub(crate) rank: usize,
    pub(crate) record: PhaseRecord,
    /// Wall-clock (CLOCK_REALTIME) start and end, ns: ranks on different nodes share no other.
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    /// Whose files the rank acted on (its own, or another rank's under shift).
    pub(crate) acted_on: usize,
    /// The stonewall of a stonewalled phase (file create).
    #[serde(default)]
    pub(crate) stonewall: Option<Agreed>,
    /// The phase failed on this rank: its record is what it did up to its failure.
    #[serde(default)]
    pub(crate) failed: bool,
}

/// What the aggregate needs besides the ranks' phases.
pub(crate) struct Context<'a> {
    pub(crate) info: &'a PhaseInfo,
    /// Every rank's host, by rank.
    pub(crate) hosts: &'a [String],
    /// The ranks that failed the phase without a record of it (before its work ran, or before
    /// it recorded any), with their errors: left out of the figures, named in the notes.
    pub(crate) missing: &'a [(usize, String)],
    /// The stonewall's deadline (`--stonewall`), for the notes.
    pub(crate) stonewall_secs: Option<f64>,
}

/// The phase's record from the exchange after it (`all`: every rank's serialized
/// [`RankPhase`], or a failed rank's error with what it did up to its failure, if anything),
/// where the phase is kept: every rank sent a record, or a failed rank sent what it did up to
/// its failure (the phase failed after its work ran; the ranks that failed without a record
/// are left out, named in a note). Where no failed rank sent a record (each failed before
/// its work ran, or before it recorded any), the phase is not kept, as without MPI.
pub(crate) fn exchanged(
    all: &Exchanged,
    info: &PhaseInfo,
    hosts: &[String],
    stonewall_secs: Option<f64>,
) -> serde_json::Result<Option<PhaseRecord>> {
    let mut missing = Vec::new();
    let mut ranks = Vec::new();
    for (r, bytes) in all.payloads.iter().enumerate() {
        match all.failed.iter().find(|(f, _)| *f == r) {
            Some((_, error)) if bytes.is_empty() => missing.push((r, error.clone())),
            _ => ranks.push(RankPhase {
                rank: r,
                ..serde_json::from_slice(bytes)?
            }),
        }
    }
    let cx = Context {
        info,
        hosts,
        missing: &missing,
        stonewall_secs,
    };
    let kept = missing.is_empty() || ranks.iter().any(|r| r.failed);
    Ok(kept.then(|| aggregate(&ranks, &cx)))
}

/// Slowest ranks named in a note.
const SLOWEST_NAMED: usize = 3;
/// Failure samples kept across ranks, as one rank keeps.
const FAILURES_KEPT: usize = 10;

/// The phase's record for the run: totals over the ranks that sent one, the slowest rank's
/// time. Where the phase failed on some ranks, their records are what they did up to their
/// failure (ranks that failed without one sent none), and the record says so.
pub(crate) fn aggregate(ranks: &[RankPhase], cx: &Context<'_>) -> PhaseRecord {
    let records: Vec<&PhaseRecord> = ranks.iter().map(|r| &r.record).collect();
    let measurement = summed_measurement(ranks);
    let first_start = ranks.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let progress = summed_progress(ranks, first_start);
    // First-done: the moment the first rank finished, from the earliest start.
    let offsets = offsets_ms(ranks, first_start);
    let first_done = ends_ms(ranks, &offsets).min().unwrap_or(0);
    let threads = (ranks.len() >= 2).then(|| {
        ThreadsDone::new(
            ranks.len() as u32,
            (
                first_done as f64 / 1e3,
                total_at(ranks, &offsets, first_done),
            ),
            (measurement.elapsed_secs(), measurement.ops),
        )
    });
    let mut figures = rank_figures(ranks, cx);
    // A failed rank made none of the workload's own figures: totals over the others would
    // pass for the phase's.
    let whole = !ranks.iter().any(|r| r.failed) && cx.missing.is_empty();
    figures.extend(workload_figures(ranks, whole));
    let mut notes = notes(ranks, cx);
    for rank in ranks {
        let r = rank.rank;
        notes.extend(rank.record.notes.iter().map(|n| format!("rank {r}: {n}")));
    }
    notes.dedup();
    PhaseRecord {
        name: records[0].name.clone(),
        idle: records
            .iter()
            .all(|r| r.idle.is_some())
            .then(|| records[0].idle.clone())
            .flatten(),
        shape: PhaseShape {
            steady: shape::steady_state(&progress),
            threads,
            harness_percent: None,
        },
        measurement,
        caches_dropped: records.iter().all(|r| r.caches_dropped),
        sync_after_ns: None,
        rank_progress: aligned_progress(ranks, first_start, cx.hosts.len()),
        progress,
        figures,
        notes,
        unsupported: records.iter().find_map(|r| r.unsupported.clone()),
    }
}

/// The ranks' measurements as one: counts and CPU summed, latencies merged, errors added,
/// the slowest rank's time and latency timeline.
fn summed_measurement(ranks: &[RankPhase]) -> PhaseMeasurement {
    let m: Vec<&PhaseMeasurement> = ranks.iter().map(|r| &r.record.measurement).collect();
    let sum = |f: fn(&PhaseMeasurement) -> u64| m.iter().map(|m| f(m)).sum::<u64>();
    let mut latency = BTreeMap::new();
    for op in m.iter().flat_map(|m| m.latency.keys()) {
        if latency.contains_key(op) {
            continue;
        }
        if let Some(merged) = LatencySummary::merge(m.iter().filter_map(|m| m.latency.get(op))) {
            latency.insert(op.clone(), merged);
        }
    }
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for (e, n) in m.iter().flat_map(|m| &m.errors) {
        *errors.entry(e.clone()).or_default() += n;
    }
    let failures = (m.iter().zip(ranks))
        .flat_map(|(m, p)| m.failures.iter().map(|f| format!("rank {}: {f}", p.rank)))
        .take(FAILURES_KEPT)
        .collect();
    PhaseMeasurement {
        elapsed_ns: m.iter().map(|m| m.elapsed_ns).max().unwrap_or(0),
        ops: sum(|m| m.ops),
        bytes: sum(|m| m.bytes),
        cpu_user_ns: sum(|m| m.cpu_user_ns),
        cpu_system_ns: sum(|m| m.cpu_system_ns),
        latency,
        errors,
        refused: sum(|m| m.refused),
        failures,
        // Percentiles of several ranks' intervals cannot be merged: the slowest rank's, the
        // one whose stalls set the phase's time.
        latency_timeline: m
            .iter()
            .max_by_key(|m| m.elapsed_ns)
            .map(|m| m.latency_timeline.clone())
            .unwrap_or_default(),
        jobs: m.iter().flat_map(|m| m.jobs.iter().cloned()).collect(),
        logs: Default::default(),
    }
}

fn rank_dim(rank: usize) -> [Dim; 1] {
    [Dim::new("rank", DimValue::Count(rank as u64))]
}

/// Units per second of one rank's phase.
fn rank_rate(m: &PhaseMeasurement) -> f64 {
    m.ops as f64 / m.elapsed_secs().max(1e-9)
}

/// Every rank's items, time and rate; their spread; the start skew; IOR's bandwidth; the
/// stonewall's counts and rate.
fn rank_figures(ranks: &[RankPhase], cx: &Context<'_>) -> Vec<Figure> {
    let unit = format!("{}/s", cx.info.unit);
    let first_start = ranks.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let mut figures = Vec::new();
    for rank in ranks {
        let m = &rank.record.measurement;
        let at = rank_dim(rank.rank);
        // When the rank started and ended, from the earliest start: the IOR aggregates' span.
        let since = |ns: u64| (ns - first_start) as f64 / 1e9;
        figures.push(Figure::new("rank-start", "s", false, since(rank.start_ns)).at(&at));
        figures.push(Figure::new("rank-end", "s", false, since(rank.end_ns)).at(&at));
        figures.push(Figure::new("rank-items", &cx.info.unit, true, m.ops as f64).at(&at));
        figures.push(Figure::new("rank-time", "s", false, m.elapsed_secs()).at(&at));
        if cx.info.has_rate {
            figures.push(Figure::new("rank-rate", &unit, true, rank_rate(m)).at(&at));
        }
    }
    let rates: Vec<f64> = ranks
        .iter()
        .map(|r| rank_rate(&r.record.measurement))
        .collect();
    if cx.info.has_rate && !rates.is_empty() {
        let n = rates.len() as f64;
        let mean = rates.iter().sum::<f64>() / n;
        let var = rates.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let max = rates.iter().copied().fold(0.0, f64::max);
        for (name, value) in [
            ("rank-rate-min", min),
            ("rank-rate-max", max),
            ("rank-rate-mean", mean),
        ] {
            figures.push(Figure::new(name, &unit, true, value));
        }
        figures.push(Figure::new("rank-rate-stddev", &unit, false, var.sqrt()));
    }
    let last_start = ranks.iter().map(|r| r.start_ns).max().unwrap_or(0);
    let last_end = ranks.iter().map(|r| r.end_ns).max().unwrap_or(0);
    figures.push(Figure::new(
        "start-skew",
        "s",
        false,
        (last_start - first_start) as f64 / 1e9,
    ));
    if cx.info.moves_data {
        // IOR's aggregates: what all ranks moved over the span from the earliest start to
        // the latest end (the ranks start together, after a barrier).
        let sum = |f: fn(&PhaseMeasurement) -> u64| -> f64 {
            ranks.iter().map(|r| f(&r.record.measurement)).sum::<u64>() as f64
        };
        let span = last_end.saturating_sub(first_start).max(1) as f64 / 1e9;
        figures.push(Figure::new(
            "bandwidth-ior",
            "KiB/s",
            true,
            sum(|m| m.bytes) / 1024.0 / span,
        ));
        figures.push(Figure::new("rate-ior", &unit, true, sum(|m| m.ops) / span));
    }
    let stonewalls: Option<Vec<(usize, Agreed)>> =
        ranks.iter().map(|r| Some((r.rank, r.stonewall?))).collect();
    if let Some(walls) = stonewalls.filter(|w| !w.is_empty()) {
        figures.extend(stonewall_figures(&walls, cx));
    }
    figures
}

/// mdtest's stonewall figures: each rank's count at the deadline, their min and max (before
/// wear-out), the count after it, and `rate-stonewall` = Σ counts at the deadline ÷ the time
/// the last rank stopped (mdtest's stonewall time: the deadline, or the end if all finished
/// before it).
fn stonewall_figures(walls: &[(usize, Agreed)], cx: &Context<'_>) -> Vec<Figure> {
    let unit: &str = &cx.info.unit;
    let mut figures: Vec<Figure> = walls
        .iter()
        .map(|(r, w)| {
            Figure::new("rank-stonewall-items", unit, true, w.reached as f64).at(&rank_dim(*r))
        })
        .collect();
    let walls: Vec<&Agreed> = walls.iter().map(|(_, w)| w).collect();
    let reached = walls.iter().map(|w| w.reached);
    let min = reached.clone().min().unwrap_or(0);
    let max = reached.clone().max().unwrap_or(0);
    let stopped = walls.iter().map(|w| w.secs).fold(0.0, f64::max);
    let after = walls.iter().map(|w| w.items).max().unwrap_or(0);
    figures.extend([
        Figure::new("stonewall-items-min", unit, true, min as f64),
        Figure::new("stonewall-items-max", unit, true, max as f64),
        Figure::new("stonewall-items-wear-out", unit, true, after as f64),
        Figure::new("stonewall-time", "s", false, stopped),
        Figure::new(
            "rate-stonewall",
            &format!("{unit}/s"),
            true,
            reached.sum::<u64>() as f64 / stopped.max(1e-9),
        ),
    ]);
    figures
}

/// The workload's own figures: each rank's under its `rank`, and, where every rank ran the
/// phase `whole`, over ranks (rates summed, anything else averaged) under the figure's own
/// dimensions.
fn workload_figures(ranks: &[RankPhase], whole: bool) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut totals: Vec<(Figure, usize)> = Vec::new();
    for rank in ranks {
        for f in &rank.record.figures {
            let mut dims = rank_dim(rank.rank).to_vec();
            dims.extend(f.dims.iter().cloned());
            out.push(f.clone().at(&dims));
            match totals
                .iter_mut()
                .find(|(t, _)| t.name == f.name && t.dims == f.dims)
            {
                Some((t, n)) => {
                    t.value += f.value;
                    *n += 1;
                }
                None => totals.push((f.clone(), 1)),
            }
        }
    }
    for (mut total, n) in totals.into_iter().filter(|_| whole) {
        if !total.unit.ends_with("/s") {
            total.value /= n as f64;
        }
        out.push(total);
    }
    out
}

/// What a reader must know: how the aggregate is computed, who was slowest, what shift did.
fn notes(ranks: &[RankPhase], cx: &Context<'_>) -> Vec<String> {
    let mut hosts = cx.hosts.to_vec();
    hosts.sort();
    hosts.dedup();
    let mut notes = vec![format!(
        "{} MPI ranks on {} node(s): rate = Σ items ÷ the slowest rank's phase time (mdtest, IO500)",
        cx.hosts.len(),
        hosts.len()
    )];
    notes.extend(failure_notes(ranks, cx));
    let mut by_time: Vec<&RankPhase> = ranks.iter().collect();
    by_time.sort_by_key(|p| std::cmp::Reverse(p.record.measurement.elapsed_ns));
    let slowest: Vec<String> = by_time
        .iter()
        .take(SLOWEST_NAMED.min(ranks.len().saturating_sub(1)))
        .map(|p| {
            let (r, m) = (p.rank, &p.record.measurement);
            format!(
                "rank {r} on {} ({:.3} s, {:.0} {}/s)",
                cx.hosts[r],
                m.elapsed_secs(),
                rank_rate(m),
                cx.info.unit
            )
        })
        .collect();
    if !slowest.is_empty() {
        notes.push(format!("slowest: {}", slowest.join(", ")));
    }
    let shifted: Vec<String> = ranks
        .iter()
        .filter(|p| p.acted_on != p.rank)
        .map(|p| format!("{}→{}", p.rank, p.acted_on))
        .collect();
    if !shifted.is_empty() {
        notes.push(format!(
            "ranks acted on other ranks' files (shift; defeats client caches): {}",
            shifted.join(", ")
        ));
    }
    if let (Some(secs), true) = (
        cx.stonewall_secs,
        ranks.iter().any(|r| r.stonewall.is_some()),
    ) {
        notes.push(format!(
            "stonewall {secs} s (mdtest -W): every rank stopped creating at {secs} s; rate-stonewall = Σ files made by then ÷ the time the last rank stopped; the ranks then went on to the most any had made (wear-out, in the phase's time), and the later phases act on that many files of each rank"
        ));
    }
    notes
}

/// Where the phase failed: the ranks whose figures are what they did up to their failure,
/// and each rank that failed without a record (none of its figures), with its error.
fn failure_notes(ranks: &[RankPhase], cx: &Context<'_>) -> Vec<String> {
    let who = |r: usize| format!("rank {r} on {}", cx.hosts[r]);
    let failed: Vec<String> = (ranks.iter())
        .filter(|p| p.failed)
        .map(|p| who(p.rank))
        .collect();
    let mut notes = Vec::new();
    if !failed.is_empty() {
        notes.push(format!(
            "the phase failed on {}: a failed rank's figures are what it did up to its failure (its error is in its note), the others' their whole phase; the workload's own figures are per rank only",
            failed.join(", ")
        ));
    }
    notes.extend(cx.missing.iter().map(|(r, error)| {
        format!(
            "the phase failed on {} without a record of what it did: none of its figures; its error: {error}",
            who(*r)
        )
    }));
    notes
}

/// Units done by `ms` after the start in a progress series (the last sample at or before it).
fn units_at(progress: &[[u64; 2]], ms: u64) -> u64 {
    progress
        .iter()
        .take_while(|s| s[0] <= ms)
        .last()
        .map_or(0, |s| s[1])
}

/// Each rank's start after the earliest, in ms.
fn offsets_ms(ranks: &[RankPhase], first_start: u64) -> Vec<u64> {
    ranks
        .iter()
        .map(|r| (r.start_ns - first_start) / 1_000_000)
        .collect()
}

/// Each rank's end after the earliest start, in ms, from its start's offset (see
/// [`offsets_ms`]).
fn ends_ms<'a>(ranks: &'a [RankPhase], offsets: &'a [u64]) -> impl Iterator<Item = u64> + 'a {
    (ranks.iter().zip(offsets)).map(|(r, o)| o + r.record.measurement.elapsed_ns / 1_000_000)
}

/// Units all ranks had done `t` ms after the earliest start: a finished rank all of its own.
fn total_at(ranks: &[RankPhase], offsets: &[u64], t: u64) -> u64 {
    ranks
        .iter()
        .zip(offsets)
        .map(|(r, &o)| match t.checked_sub(o) {
            None => 0,
            Some(local) if local >= r.record.measurement.elapsed_ns / 1_000_000 => {
                r.record.measurement.ops
            }
            Some(local) => units_at(&r.record.progress, local),
        })
        .sum()
}

/// Each of the `size` ranks' own progress, by rank, its times shifted to the earliest rank's
/// start (none for a rank that sent no record).
fn aligned_progress(ranks: &[RankPhase], first_start: u64, size: usize) -> Vec<Vec<[u64; 2]>> {
    let size = (ranks.iter().map(|r| r.rank + 1)).fold(size, usize::max);
    let mut series = vec![Vec::new(); size];
    for (r, o) in ranks.iter().zip(offsets_ms(ranks, first_start)) {
        series[r.rank] = r.record.progress.iter().map(|s| [s[0] + o, s[1]]).collect();
    }
    series
}

/// Every rank's progress, shifted to the earliest start and summed on the sampling grid.
fn summed_progress(ranks: &[RankPhase], first_start: u64) -> Vec<[u64; 2]> {
    let step = SAMPLE_INTERVAL.as_millis() as u64;
    let offsets = offsets_ms(ranks, first_start);
    let end = ends_ms(ranks, &offsets).max().unwrap_or(0);
    let mut series: Vec<[u64; 2]> = (0..=end / step)
        .map(|i| [i * step, total_at(ranks, &offsets, i * step)])
        .collect();
    series.push([end, total_at(ranks, &offsets, end)]);
    series.dedup_by_key(|s| s[0]);
    series
}

#[cfg(test)]
mod tests;

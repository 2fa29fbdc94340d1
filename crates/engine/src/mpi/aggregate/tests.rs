use std::sync::Arc;

use super::*;
use fsbench_measure::measure::{OpKind, PhaseRecorder, Progress};

/// A rank's phase of `ops` units over `ms` milliseconds, started `start_ms` after time 0.
fn rank(ops: u64, ms: u64, start_ms: u64, errors: &[rustix::io::Errno]) -> RankPhase {
    let mut rec = PhaseRecorder::start("file-create", Arc::new(Progress::default()));
    for _ in 0..ops {
        rec.record(OpKind::Create, Ok(())).unwrap();
        rec.unit_done(10).unwrap();
    }
    for e in errors {
        rec.record::<()>(OpKind::Create, Err(*e)).unwrap();
    }
    let mut measurement = rec.finish();
    measurement.elapsed_ns = ms * 1_000_000;
    let start_ns = start_ms * 1_000_000;
    RankPhase {
        rank: 0,
        record: PhaseRecord {
            name: "file-create".into(),
            measurement,
            caches_dropped: true,
            sync_after_ns: None,
            // Half the units by half the time, all by the end.
            progress: vec![[0, 0], [ms / 2, ops / 2], [ms, ops]],
            rank_progress: Vec::new(),
            figures: vec![Figure::new("extents", "", false, 1.0)],
            notes: Vec::new(),
            unsupported: None,
            idle: None,
            shape: PhaseShape::default(),
        },
        start_ns,
        end_ns: start_ns + ms * 1_000_000,
        acted_on: 0,
        stonewall: None,
        failed: false,
    }
}

/// `ranks` numbered 0, 1, … as rank 0 gets them.
fn numbered<const N: usize>(mut ranks: [RankPhase; N]) -> [RankPhase; N] {
    for (r, p) in ranks.iter_mut().enumerate() {
        p.rank = r;
    }
    ranks
}

fn figure(record: &PhaseRecord, name: &str, rank: Option<u64>) -> f64 {
    record
        .figures
        .iter()
        .find(|f| {
            f.name == name
                && match rank {
                    Some(r) => f.dims == [Dim::new("rank", DimValue::Count(r))],
                    None => f.dims.is_empty(),
                }
        })
        .unwrap_or_else(|| panic!("no figure {name} {rank:?}"))
        .value
}

#[test]
fn aggregate_rate_is_total_items_over_the_slowest_rank() {
    let info = PhaseInfo::fixed("file-create", "files", true);
    let hosts = vec!["a".to_string(), "a".to_string(), "b".to_string()];
    let cx = Context {
        info: &info,
        hosts: &hosts,
        missing: &[],
        stonewall_secs: Some(0.5),
    };
    let mut ranks = numbered([
        rank(100, 1000, 0, &[]),
        rank(100, 2000, 10, &[rustix::io::Errno::EXIST]),
        rank(100, 4000, 30, &[rustix::io::Errno::EXIST]),
    ]);
    // Stopped at 0.5 s with 50, 20 and 10 files made; the last to stop at 0.51 s.
    for (r, (reached, secs)) in [(50, 0.5), (20, 0.51), (10, 0.5)].into_iter().enumerate() {
        ranks[r].stonewall = Some(Agreed {
            reached,
            secs,
            items: 50,
        });
    }
    let a = aggregate(&ranks, &cx);
    // Ends 1000, 2010 and 4030 ms after the first start: the first done at 1 s, the summed
    // progress ending with the last, all 300 files made.
    let threads = a.shape.threads.as_ref().expect("three ranks");
    assert_eq!(threads.first_done_secs, 1.0);
    assert_eq!(a.progress.last(), Some(&[4030, 300]));
    assert_eq!(a.measurement.ops, 300);
    assert_eq!(a.measurement.bytes, 3000);
    assert_eq!(a.measurement.elapsed_ns, 4_000_000_000);
    assert_eq!(a.measurement.ops_per_sec(), 75.0);
    assert_eq!(a.measurement.errors["EEXIST"], 2);
    assert_eq!(a.measurement.latency["create"].count, 302);
    assert_eq!(figure(&a, "rank-items", Some(2)), 100.0);
    assert_eq!(figure(&a, "rank-rate", Some(0)), 100.0);
    assert_eq!(figure(&a, "rank-rate-min", None), 25.0);
    assert_eq!(figure(&a, "rank-rate-max", None), 100.0);
    assert!((figure(&a, "start-skew", None) - 0.03).abs() < 1e-9);
    // IOR: all bytes over the latest end minus the earliest start.
    assert!((figure(&a, "bandwidth-ior", None) - 3000.0 / 1024.0 / 4.03).abs() < 1e-9);
    // The counts at the deadline, the count after wear-out, Σ counts ÷ the last stop.
    assert_eq!(figure(&a, "stonewall-items-max", None), 50.0);
    assert_eq!(figure(&a, "stonewall-items-min", None), 10.0);
    assert_eq!(figure(&a, "rank-stonewall-items", Some(1)), 20.0);
    assert_eq!(figure(&a, "stonewall-items-wear-out", None), 50.0);
    assert_eq!(figure(&a, "stonewall-time", None), 0.51);
    assert!((figure(&a, "rate-stonewall", None) - 80.0 / 0.51).abs() < 1e-9);
    assert!(a.notes.iter().any(|n| n.contains("wear-out")));
    // A workload figure per rank, and averaged over ranks.
    assert_eq!(a.figures.iter().filter(|f| f.name == "extents").count(), 4);
    // The summed series ends at every unit, at the slowest rank's end from the common start.
    assert_eq!(*a.progress.last().unwrap(), [4030, 300]);
    // Each rank's own series, shifted to the common start.
    assert_eq!(a.rank_progress[2], [[30, 0], [2030, 50], [4030, 100]]);
    let threads = a.shape.threads.unwrap();
    assert_eq!(threads.threads, 3);
    assert!(a.notes.iter().any(|n| n.contains("slowest: rank 2 on b")));
}

#[test]
fn a_phase_that_failed_on_one_rank_keeps_every_ranks_figures_and_says_where_it_failed() {
    let info = PhaseInfo::fixed("io", "ios", true);
    let hosts = vec!["a".to_string(), "b".to_string()];
    let cx = Context {
        info: &info,
        hosts: &hosts,
        missing: &[],
        stonewall_secs: None,
    };
    // Rank 1 failed 500 ms in with 40 units done: what it did up to then, no figures of the
    // workload's own (they are made after a phase that ends well), a note with its error.
    let mut failed = rank(40, 500, 5, &[]);
    failed.failed = true;
    failed.record.figures.clear();
    failed.record.notes = vec!["the phase failed: verify: bad magic header".into()];
    let a = aggregate(&numbered([rank(100, 1000, 0, &[]), failed]), &cx);
    assert_eq!(a.measurement.ops, 140);
    assert_eq!(a.measurement.bytes, 1400);
    assert_eq!(a.measurement.elapsed_ns, 1_000_000_000);
    assert_eq!(figure(&a, "rank-items", Some(0)), 100.0);
    assert_eq!(figure(&a, "rank-items", Some(1)), 40.0);
    assert_eq!(figure(&a, "rank-time", Some(1)), 0.5);
    assert!((figure(&a, "bandwidth-ior", None) - 1400.0 / 1024.0 / 1.0).abs() < 1e-9);
    let said = |needle: &str| a.notes.iter().any(|n| n.contains(needle));
    assert!(said("the phase failed on rank 1 on b: "), "{:?}", a.notes);
    assert!(said("rank 1: the phase failed: verify: bad magic header"));
    // Rank 0's own figure under its rank; no total over ranks that passes for the phase's.
    let extents: Vec<&Figure> = a.figures.iter().filter(|f| f.name == "extents").collect();
    assert_eq!(extents.len(), 1);
    assert_eq!(extents[0].dims, rank_dim(0));
    // A phase where every rank ended well says nothing of a failure.
    let ok = aggregate(
        &numbered([rank(100, 1000, 0, &[]), rank(40, 500, 5, &[])]),
        &cx,
    );
    assert!(!ok.notes.iter().any(|n| n.contains("failed")));
    assert_eq!(ok.figures.iter().filter(|f| f.name == "extents").count(), 3);
}

/// Rank `rank`'s phase, failed after `ops` units with `error`, as it sends it to rank 0.
fn partial(rank: usize, ops: u64, error: &str) -> (Vec<u8>, (usize, String)) {
    let mut p = self::rank(ops, 500, 5, &[]);
    p.failed = true;
    p.record.figures.clear();
    p.record.notes = vec![format!("the phase failed: {error}")];
    (serde_json::to_vec(&p).unwrap(), (rank, error.to_string()))
}

#[test]
fn a_phase_one_rank_failed_after_its_work_and_another_before_is_kept_naming_both() {
    let info = PhaseInfo::fixed("io", "ios", true);
    let hosts = vec!["a".to_string(), "b".to_string(), "c".to_string()];
    // Rank 0 failed before its jobs ran (no record), rank 1 after 40 units, rank 2 ended well.
    let (sent, failed_1) = partial(1, 40, "io: verify: bad magic header");
    let failed_0 = (0, "io: cannot open data: EACCES".to_string());
    let whole = serde_json::to_vec(&rank(100, 1000, 0, &[])).unwrap();
    let all = Exchanged {
        payloads: vec![Vec::new(), sent.clone(), whole.clone()],
        error: Some(anyhow::anyhow!("rank 0 and 1 failed")),
        failed: vec![failed_0, failed_1.clone()],
    };
    let a = exchanged(&all, &info, &hosts, None)
        .unwrap()
        .expect("the phase is kept");
    // Ranks 1 and 2's figures under their own ranks; none of rank 0's.
    assert_eq!(a.measurement.ops, 140);
    assert_eq!(figure(&a, "rank-items", Some(1)), 40.0);
    assert_eq!(figure(&a, "rank-items", Some(2)), 100.0);
    let at_rank_0 = Dim::new("rank", DimValue::Count(0));
    assert!(!a.figures.iter().any(|f| f.dims.contains(&at_rank_0)));
    assert!(
        a.figures
            .iter()
            .all(|f| f.name != "extents" || !f.dims.is_empty())
    );
    // Each rank's progress by rank: none for rank 0.
    assert_eq!(a.rank_progress.len(), 3);
    assert!(a.rank_progress[0].is_empty() && !a.rank_progress[1].is_empty());
    // Both failures named, each with its rank; the ranks counted are all three.
    let said = |needle: &str| a.notes.iter().any(|n| n.contains(needle));
    assert!(said("3 MPI ranks on 3 node(s)"), "{:?}", a.notes);
    assert!(said("the phase failed on rank 1 on b: "), "{:?}", a.notes);
    assert!(said(
        "rank 1: the phase failed: io: verify: bad magic header"
    ));
    assert!(
        said(
            "the phase failed on rank 0 on a without a record of what it did: none of its figures; its error: io: cannot open data: EACCES"
        ),
        "{:?}",
        a.notes
    );
    // Both ranks failed with a partial record: kept, as before.
    let (sent_0, failed_0) = partial(0, 10, "io: verify: bad magic header");
    let both = Exchanged {
        payloads: vec![sent_0, sent, whole.clone()],
        error: Some(anyhow::anyhow!("rank 0 and 1 failed")),
        failed: vec![failed_0, failed_1],
    };
    let kept = exchanged(&both, &info, &hosts, None).unwrap().unwrap();
    assert_eq!(figure(&kept, "rank-items", Some(0)), 10.0);
    // Where no failed rank sent a record, the phase is not kept, as without MPI.
    let before = Exchanged {
        payloads: vec![Vec::new(), whole.clone(), whole],
        error: Some(anyhow::anyhow!("rank 0 failed")),
        failed: vec![(0, "io: cannot open data: EACCES".to_string())],
    };
    assert!(exchanged(&before, &info, &hosts, None).unwrap().is_none());
}

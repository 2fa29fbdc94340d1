//! Which crash states are checked, and how each is built from the log.
//!
//! A crash at log position `T` leaves on the device everything written before the last
//! flush before `T`, and any subset of the writes between that flush and `T` (a device may
//! persist them in any order). The crash points are: just before each flush (the writes of
//! its epoch pending), each moment a durability call returned (what it promised must be
//! there), and the end of the log. At each point the state with every pending write comes
//! first; then, round after round over the points, ALICE's drop-one and swap-two (one write
//! lost, or two persisted out of order), seeded random subsets, and torn writes (some 512-byte
//! sectors of one write) where asked for, until `limit` states. Everything is seeded:
//! the same log, facts and seed give the same states.

use serde::{Deserialize, Serialize};

use super::log::{Kind, Record};
use fsbench_workloads::oracle::Fact;

/// How a state's pending writes are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum How {
    /// Every pending write, in order: the device persisted all it was sent.
    InOrder,
    /// All but pending write `n`.
    DropOne(usize),
    /// Pending writes before `n`, and `n + 1`, but not `n`: the two reordered, crash between.
    SwapTwo(usize),
    /// Each pending write kept or lost by a generator seeded with this.
    Random(u64),
    /// A random subset, and one of its writes torn: some of its sectors only.
    Torn(u64),
}

/// One crash state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateSpec {
    pub id: u32,
    /// The crash point: the log position of the crash.
    pub at: u64,
    /// Records applied whole: up to and including the last flush before `at`.
    pub durable: usize,
    /// Records sent before `at`: those from `durable` on are pending.
    pub upto: usize,
    pub how: How,
}

impl StateSpec {
    pub fn describe(&self) -> String {
        let pending = self.upto - self.durable;
        let how = match self.how {
            How::InOrder => "all pending writes".to_string(),
            How::DropOne(n) => format!("pending write {n} lost"),
            How::SwapTwo(n) => format!("pending write {} persisted before {n}", n + 1),
            How::Random(_) => "a random subset of the pending writes".to_string(),
            How::Torn(_) => "a random subset, one write torn".to_string(),
        };
        format!(
            "crash at log position {}: {} records durable, {pending} pending, {how}",
            self.at, self.durable
        )
    }

    /// Which pending writes the state keeps (indices from `durable`), and for a torn write
    /// which of its sectors: `(index, seed)`.
    pub fn selection(&self) -> (Vec<bool>, Option<(usize, u64)>) {
        let pending = self.upto - self.durable;
        let mut keep = vec![true; pending];
        let mut torn = None;
        match self.how {
            How::InOrder => {}
            How::DropOne(n) => keep[n] = false,
            How::SwapTwo(n) => {
                keep.iter_mut().skip(n).for_each(|k| *k = false);
                keep[n + 1] = true;
            }
            How::Random(seed) | How::Torn(seed) => {
                let mut rng = fastrand::Rng::with_seed(seed);
                keep.iter_mut().for_each(|k| *k = rng.bool());
                if matches!(self.how, How::Torn(_)) {
                    let kept: Vec<usize> = (0..pending).filter(|&i| keep[i]).collect();
                    if !kept.is_empty() {
                        torn = Some((kept[rng.usize(..kept.len())], rng.u64(..)));
                    }
                }
            }
        }
        (keep, torn)
    }
}

/// A crash point and its place in the log.
#[derive(Debug, Clone, Copy)]
struct Point {
    at: u64,
    durable: usize,
    upto: usize,
}

/// The crash points of `records`, from the workload's start (the facts' `Start`) on.
fn points(records: &[Record], facts: &[Fact]) -> Vec<Point> {
    let start = facts
        .iter()
        .find_map(|f| matches!(f, Fact::Start { .. }).then(|| f.at()))
        .unwrap_or(0);
    let mut ats: Vec<u64> = records
        .iter()
        .filter(|r| r.kind == Kind::Flush)
        .map(|r| r.end - super::log::RECORD_HEAD as u64)
        .chain(
            facts
                .iter()
                .filter(|f| matches!(f, Fact::File { .. } | Fact::Entries { .. }))
                .map(Fact::at),
        )
        .chain(records.last().map(|r| r.end))
        .filter(|&at| at >= start)
        .collect();
    ats.sort_unstable();
    ats.dedup();
    ats.into_iter()
        .map(|at| {
            let upto = records.partition_point(|r| r.end <= at);
            let durable = records[..upto]
                .iter()
                .rposition(|r| r.kind == Kind::Flush)
                .map_or(0, |i| i + 1);
            Point { at, durable, upto }
        })
        .collect()
}

/// Up to `limit` states of `records`, seeded with `seed`; `torn` adds torn writes.
pub fn choose(
    records: &[Record],
    facts: &[Fact],
    limit: usize,
    seed: u64,
    torn: bool,
) -> Vec<StateSpec> {
    let points = points(records, facts);
    let mut states = Vec::new();
    let push = |states: &mut Vec<StateSpec>, p: &Point, how| {
        states.push(StateSpec {
            id: states.len() as u32,
            at: p.at,
            durable: p.durable,
            upto: p.upto,
            how,
        });
    };
    // In-order states rarely lose anything: at most a quarter of the budget, spread evenly
    // over the points (the last one always in).
    let in_order = points.len().min((limit / 4).max(1));
    for i in 0..in_order {
        let p = &points[(i + 1) * points.len() / in_order - 1];
        push(&mut states, p, How::InOrder);
    }
    let with_pending: Vec<&Point> = points.iter().filter(|p| p.upto > p.durable).collect();
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut round = 0usize;
    while states.len() < limit && !with_pending.is_empty() && round < 64 {
        for (i, p) in with_pending.iter().enumerate() {
            if states.len() >= limit {
                break;
            }
            let pending = p.upto - p.durable;
            // The kinds rotate over the points too: a small budget still has every kind.
            let how = match ((round + i) % 4, pending) {
                (1, n) => How::DropOne(rng.usize(..n)),
                (2, n) if n >= 2 => How::SwapTwo(rng.usize(..n - 1)),
                (3, _) if torn => How::Torn(rng.u64(..)),
                _ => How::Random(rng.u64(..)),
            };
            push(&mut states, p, how);
        }
        round += 1;
    }
    states
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: Kind, end: u64) -> Record {
        Record {
            kind,
            offset: 0,
            len: 0,
            data_at: end,
            end,
        }
    }

    #[test]
    fn states_are_bounded_seeded_and_cover_every_point() {
        // W W F W W W F W, the workload from the start.
        let kinds = [
            Kind::Write,
            Kind::Write,
            Kind::Flush,
            Kind::Write,
            Kind::Write,
            Kind::Write,
            Kind::Flush,
            Kind::Write,
        ];
        let records: Vec<Record> = (kinds.iter().enumerate())
            .map(|(i, k)| record(*k, 100 + 17 * (i as u64 + 1)))
            .collect();
        let facts = [Fact::Start { at: 0 }];
        let a = choose(&records, &facts, 40, 7, true);
        assert_eq!(a, choose(&records, &facts, 40, 7, true), "not reproducible");
        assert_ne!(a, choose(&records, &facts, 40, 8, true));
        assert!(a.len() <= 40 && a.len() > 10);
        assert_eq!(choose(&records, &facts, 5, 7, false).len(), 5);
        // Points: before each flush (2 and 3 pending), the end (1 pending).
        let ats: std::collections::BTreeSet<u64> = a.iter().map(|s| s.at).collect();
        assert_eq!(ats.len(), 3);
        for s in &a {
            assert!(
                records[s.durable..s.upto]
                    .iter()
                    .all(|r| r.kind != Kind::Flush)
            );
            let (keep, _) = s.selection();
            assert_eq!(keep.len(), s.upto - s.durable);
            if let How::SwapTwo(n) = s.how {
                assert!(!keep[n] && keep[n + 1]);
            }
        }
    }
}

//! What a worker's recorder measured, in a form that crosses from a worker process to the
//! phase's process (a pipe) and becomes a recorder again there, to be absorbed as a worker
//! thread's is: histograms in HdrHistogram's V2 encoding, the latency timeline's buckets
//! sparse (most are empty).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use serde::{Deserialize, Serialize};

use super::timeline::TimelineTally;
use super::{OpKind, PhaseRecorder, Progress};

/// A worker recorder's counts, errors, histograms and timeline.
#[derive(Debug, Serialize, Deserialize)]
pub struct Tally {
    ops: u64,
    bytes: u64,
    refused: u64,
    errors: Vec<(i32, u64)>,
    last_errno: i32,
    failures: Vec<String>,
    /// Per operation type (its index in [`OpKind::ALL`]), base64 of the V2 encoding.
    histograms: Vec<(usize, String)>,
    merged: Vec<(String, String)>,
    timeline: TimelineTally,
}

fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing to memory cannot fail");
    super::BASE64.encode(bytes)
}

fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = (super::BASE64.decode(text)).map_err(|e| format!("a histogram's base64: {e}"))?;
    let full: Histogram<u64> = (Deserializer::new().deserialize(&mut bytes.as_slice()))
        .map_err(|e| format!("a histogram's encoding: {e:?}"))?;
    compact(&full)
}

/// `full`'s counts in a histogram that reaches only its largest value and grows as more is
/// added. Decoded, a histogram has counts for its whole range (to an hour: 256 KiB, every
/// one written); the phase's process holds every worker's until the last has ended, and
/// 128 io job copies of 13 histograms each held 412 MiB of them.
fn compact(full: &Histogram<u64>) -> Result<Histogram<u64>, String> {
    super::regrown(full, full.max())
}

/// `#[serde(with = ...)]` for a latency histogram that crosses between processes (in
/// HdrHistogram's V2 encoding, base64); `pair` for two of them.
pub mod histogram_serde {
    use hdrhistogram::Histogram;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::encode(h))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
        let text = String::deserialize(d)?;
        super::decode(&text).map_err(serde::de::Error::custom)
    }

    pub mod pair {
        use hdrhistogram::Histogram;
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        pub fn serialize<S: Serializer>(h: &[Histogram<u64>; 2], s: S) -> Result<S::Ok, S::Error> {
            [super::super::encode(&h[0]), super::super::encode(&h[1])].serialize(s)
        }

        pub fn deserialize<'de, D>(d: D) -> Result<[Histogram<u64>; 2], D::Error>
        where
            D: Deserializer<'de>,
        {
            let [a, b] = <[String; 2]>::deserialize(d)?;
            let decode = |t: &str| super::super::decode(t).map_err(serde::de::Error::custom);
            Ok([decode(&a)?, decode(&b)?])
        }
    }
}

impl PhaseRecorder {
    /// Everything this (worker's) recorder measured, for [`PhaseRecorder::worker_from`].
    pub fn tally(self) -> Tally {
        Tally {
            ops: self.ops,
            bytes: self.bytes,
            refused: self.refused,
            errors: self.errors.into_iter().collect(),
            last_errno: self.last_errno,
            failures: self.failures,
            histograms: (self.histograms.iter().enumerate())
                .filter_map(|(i, h)| Some((i, encode(h.as_ref()?))))
                .collect(),
            merged: (self.merged.iter())
                .map(|(name, h)| (name.clone(), encode(h)))
                .collect(),
            timeline: self.timeline.tally(),
        }
    }

    /// A worker recorder of this phase holding what `tally` says, ready for
    /// [`PhaseRecorder::absorb`]; an error for a tally that does not decode.
    pub fn worker_from(&self, tally: Tally) -> Result<PhaseRecorder, String> {
        let mut rec = self.worker(Arc::new(Progress::default()));
        for (i, text) in tally.histograms {
            let slot = (rec.histograms.get_mut(i))
                .ok_or_else(|| format!("operation type {i} of {}", OpKind::ALL.len()))?;
            *slot = Some(decode(&text)?);
        }
        rec.merged = (tally.merged.into_iter())
            .map(|(name, text)| Ok((name, decode(&text)?)))
            .collect::<Result<BTreeMap<_, _>, String>>()?;
        rec.errors = tally.errors.into_iter().collect();
        rec.last_errno = tally.last_errno;
        rec.failures = tally.failures;
        rec.refused = tally.refused;
        rec.ops = tally.ops;
        rec.bytes = tally.bytes;
        rec.timeline = super::timeline::Timeline::from_tally(tally.timeline)?;
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use rustix::io::Errno;

    use super::super::LatencySummaryExt;
    use super::*;
    use fsbench_model::measurement::LatencySummary;

    #[test]
    fn a_tally_absorbs_as_the_recorder_it_came_from() {
        let phase = || PhaseRecorder::start("p", Arc::new(Progress::default()));
        // Calls placed in time (the timeline compares exactly), and a failed one (a lap of
        // the clock's: its latency differs between two recorders).
        let placed = |parent: &PhaseRecorder| {
            let mut w = parent.worker(Arc::new(Progress::default()));
            for n in 0..1000u64 {
                w.record_ended_at(OpKind::Write, n * 1_000_000, 1000 + n);
                w.unit_done(4096).unwrap();
            }
            let mut h = super::super::new_histogram();
            h.record(77).unwrap();
            w.add_latency("txn", &h);
            w
        };
        let failed = |parent: &PhaseRecorder| {
            let mut w = parent.worker(Arc::new(Progress::default()));
            let _ = w.record::<()>(OpKind::Create, Err(Errno::EXIST));
            w.note_failure(|| "f".into());
            w
        };
        let cross = |parent: &PhaseRecorder, w: PhaseRecorder| {
            let text = serde_json::to_string(&w.tally()).unwrap();
            parent
                .worker_from(serde_json::from_str(&text).unwrap())
                .unwrap()
        };
        let (mut direct, mut crossed) = (phase(), phase());
        direct.absorb_with_timeline(placed(&direct));
        direct.absorb(failed(&direct));
        crossed.absorb_with_timeline(cross(&crossed, placed(&crossed)));
        crossed.absorb(cross(&crossed, failed(&crossed)));
        assert_eq!(crossed.progress.done.load(Ordering::Relaxed), 1000);
        let (a, b) = (direct.finish(), crossed.finish());
        assert_eq!((b.ops, b.bytes), (1000, 4096 * 1000));
        assert_eq!(a.errors, b.errors);
        assert_eq!(b.failures, ["EEXIST: f"]);
        assert_eq!(
            a.latency.keys().collect::<Vec<_>>(),
            ["create", "txn", "write"]
        );
        assert_eq!(b.latency["create"].count, 1);
        for op in ["txn", "write"] {
            let (x, y) = (
                a.latency[op].decode().unwrap(),
                b.latency[op].decode().unwrap(),
            );
            let counts = |h: &Histogram<u64>| {
                h.iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(counts(&x), counts(&y), "{op}");
            assert_eq!(a.latency[op].p99_ns, b.latency[op].p99_ns, "{op}");
        }
        assert!(b.latency_timeline.points.len() > 5);
        assert_eq!(a.latency_timeline.points, b.latency_timeline.points);
    }

    /// A histogram crossing between processes keeps every count and statistic, holds counts
    /// only up to its largest value, and takes larger values added later.
    #[test]
    fn a_decoded_histogram_is_as_recorded_and_holds_only_what_it_needs() {
        let mut full = super::super::new_histogram();
        for ns in (1..20_000u64).map(|i| i * 37 + i * i % 5_000_000) {
            full.record(ns).unwrap();
        }
        let mut decoded = decode(&encode(&full)).unwrap();
        assert_eq!(
            (decoded.len(), decoded.max(), decoded.min()),
            (full.len(), full.max(), full.min())
        );
        assert_eq!(decoded.mean(), full.mean());
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(
                decoded.value_at_quantile(q),
                full.value_at_quantile(q),
                "{q}"
            );
        }
        assert!(
            decoded.distinct_values() * 2 < full.distinct_values(),
            "not compact"
        );
        // An hour's latency added later still counts, as in the full range.
        decoded.record(3_000_000_000_000).unwrap();
        full.record(3_000_000_000_000).unwrap();
        assert_eq!(decoded.value_at_quantile(1.0), full.value_at_quantile(1.0));
        let empty = decode(&encode(&super::super::new_histogram())).unwrap();
        assert!(empty.is_empty());
        let mut sum = super::super::new_histogram();
        sum.add(&decoded).unwrap();
        assert_eq!(sum.len(), full.len());
        // Stored as it came (its range to its largest value), it merges with any other,
        // whichever comes first.
        let mut small = super::super::new_histogram();
        small.record(100).unwrap();
        let small = LatencySummary::of(&decode(&encode(&small)).unwrap());
        let big = LatencySummary::of(&full);
        for parts in [[&small, &big], [&big, &small]] {
            let merged = LatencySummary::merge(parts).unwrap();
            assert_eq!((merged.count, merged.min_ns), (full.len() + 1, full.min()));
            assert_eq!(merged.max_ns, full.max());
        }
    }

    #[test]
    fn a_damaged_tally_is_refused() {
        let parent = PhaseRecorder::start("p", Arc::new(Progress::default()));
        let mut tally = parent.worker(Arc::new(Progress::default())).tally();
        tally
            .histograms
            .push((99, encode(&super::super::new_histogram())));
        assert!(parent.worker_from(tally).is_err());
    }
}

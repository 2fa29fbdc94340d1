//! A latency as fio reports it, from fsbench's stored histograms (several threads' or runs'
//! merged): count, min, max, mean, standard deviation, fio's buckets (its percentiles and
//! json+ `bins`) and fio's latency distribution (`lat (usec)   : 50=…%`). fsbench keeps
//! each latency to three significant digits, so min, max and mean are fio's within 0.1%.

use fsbench_model::measurement::LatencySummary;

use super::plat::{buckets, percentiles, plat_value};
use crate::measure::LatencySummaryExt;

/// One latency's figures in nanoseconds.
#[derive(Debug, Clone, Default)]
pub struct FioLatency {
    pub n: u64,
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub stdev: f64,
    /// Counts in fio's buckets ([`super::plat::PLAT_NR`] of them).
    pub buckets: Vec<u64>,
    /// fio's distribution: below 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000 ns; the same in
    /// µs; below 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000 ms and 2000 ms or more.
    pub nsec: [u64; 10],
    pub usec: [u64; 10],
    pub msec: [u64; 12],
}

/// fio's distribution bounds (`io_u_mark_lat_*`), each an upper bound excluded.
const BOUNDS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];

fn bucket_below(v: u64) -> usize {
    BOUNDS
        .iter()
        .position(|b| v < *b)
        .unwrap_or(BOUNDS.len() - 1)
}

impl FioLatency {
    /// Every part's latencies together; `None` when there are none (or a histogram is
    /// damaged).
    pub fn merged<'a>(parts: impl IntoIterator<Item = &'a LatencySummary>) -> Option<FioLatency> {
        let h = LatencySummary::merge(parts)?.decode()?;
        if h.is_empty() {
            return None;
        }
        let mut out = FioLatency {
            n: h.len(),
            min: h.min(),
            max: h.max(),
            mean: h.mean(),
            stdev: 0.0,
            buckets: buckets(&h),
            ..FioLatency::default()
        };
        // The sample standard deviation, as fio's (its `S / (n - 1)`).
        let mut squares = 0.0;
        for v in h.iter_recorded() {
            let value = h.median_equivalent(v.value_iterated_to());
            let count = v.count_at_value();
            squares += (value as f64 - out.mean).powi(2) * count as f64;
            match value {
                v if v < 1000 => out.nsec[bucket_below(v)] += count,
                v if v < 1_000_000 => out.usec[bucket_below(v / 1000)] += count,
                v => {
                    let ms = v / 1_000_000;
                    let i = match ms {
                        ms if ms < 1000 => bucket_below(ms),
                        ms if ms < 2000 => 10,
                        _ => 11,
                    };
                    out.msec[i] += count;
                }
            }
        }
        if out.n > 1 {
            out.stdev = (squares / (out.n - 1) as f64).sqrt();
        }
        Some(out)
    }

    /// fio's percentiles (`list` sorted), in nanoseconds.
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        percentiles(&self.buckets, list)
    }

    /// fio's json+ `bins`: each bucket that has latencies, its value and count.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (self.buckets.iter().enumerate())
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (plat_value(i), *n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::new_histogram;

    #[test]
    fn figures_and_distribution_are_fio_s() {
        let mut h = new_histogram();
        for v in [500, 1_500, 45_000, 2_500_000, 3_000_000_000] {
            h.record(v).unwrap();
        }
        let l = FioLatency::merged([&LatencySummary::of(&h)]).unwrap();
        assert_eq!(l.n, 5);
        assert!(l.min.abs_diff(500) <= 1 && l.max.abs_diff(3_000_000_000) < 3_000_000);
        assert_eq!(l.nsec[8], 1, "500 ns: below 750");
        assert_eq!(l.usec[0], 1, "1.5 µs: below 2");
        assert_eq!(l.usec[4], 1, "45 µs: below 50");
        assert_eq!(l.msec[1], 1, "2.5 ms: below 4");
        assert_eq!(l.msec[11], 1, "3 s: 2000 ms or more");
        assert_eq!(l.bins().map(|(_, n)| n).sum::<u64>(), 5);
        let p = l.percentiles(&[50.0, 100.0]);
        assert!(p[0].abs_diff(45_000) < 45_000 / 64 && p[1] >= 2_900_000_000);
    }
}

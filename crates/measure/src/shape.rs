//! The steady state of a phase from its progress series: where warm-up ends and the rate
//! after it (MSER-5). The records (and elbencho's first-done / last-done of several threads)
//! are the model's.

use fsbench_model::measurement::SteadyState;

/// Observations per batch: MSER-5 works on means of 5 consecutive intervals.
const BATCH: usize = 5;
/// Fewer batches than this (4 s of 100 ms samples) are too few to tell warm-up from noise.
const MIN_BATCHES: usize = 8;
/// MSER's statistic is unstable over the last few batches; at least this many are kept.
const MIN_KEPT: usize = 4;
/// Intervals shorter than this (the last, cut by the phase's end) are left out.
const MIN_INTERVAL_MS: u64 = 50;

/// One interval of the series: its start and end (ms) and units completed in it.
#[derive(Debug, Clone, Copy)]
struct Interval {
    start_ms: u64,
    end_ms: u64,
    units: u64,
}

impl Interval {
    fn rate(&self) -> f64 {
        self.units as f64 * 1000.0 / (self.end_ms - self.start_ms) as f64
    }
}

fn intervals(progress: &[[u64; 2]]) -> Vec<Interval> {
    progress
        .windows(2)
        .filter(|w| w[1][0] >= w[0][0] + MIN_INTERVAL_MS)
        .map(|w| Interval {
            start_ms: w[0][0],
            end_ms: w[1][0],
            units: w[1][1].saturating_sub(w[0][1]),
        })
        .collect()
}

/// MSER's truncation of `batches`: the `d` minimizing the sum of squared deviations of
/// `batches[d..]` from their mean over `(n - d)²`, for `d` keeping at least [`MIN_KEPT`].
fn mser_truncation(batches: &[f64]) -> usize {
    let n = batches.len();
    let mut best = (f64::INFINITY, 0);
    for d in 0..=n.saturating_sub(MIN_KEPT) {
        let kept = &batches[d..];
        let k = kept.len() as f64;
        let mean = kept.iter().sum::<f64>() / k;
        let squares: f64 = kept.iter().map(|x| (x - mean).powi(2)).sum();
        let statistic = squares / (k * k);
        if statistic < best.0 {
            best = (statistic, d);
        }
    }
    best.1
}

/// MSER-5 on `progress` ([ms since start, units done] samples every 100 ms). `None` when the
/// series is too short, or tells nothing before its end: a phase that counts its units only
/// when it is over (a command's items) has no shape, and a "steady rate" of 0 would be noise.
pub fn steady_state(progress: &[[u64; 2]]) -> Option<SteadyState> {
    let intervals = intervals(progress);
    let (_, before_last) = intervals.split_last()?;
    if before_last.iter().all(|i| i.units == 0) {
        return None;
    }
    let batches: Vec<&[Interval]> = intervals.chunks_exact(BATCH).collect();
    if batches.len() < MIN_BATCHES {
        return None;
    }
    let means: Vec<f64> = batches
        .iter()
        .map(|b| b.iter().map(Interval::rate).sum::<f64>() / BATCH as f64)
        .collect();
    let d = mser_truncation(&means);
    let first = batches[d][0];
    let last = batches[batches.len() - 1][BATCH - 1];
    let units: u64 = batches[d..]
        .iter()
        .flat_map(|b| b.iter())
        .map(|i| i.units)
        .sum();
    let origin = batches[0][0].start_ms;
    Some(SteadyState {
        reached: d <= batches.len() / 2,
        warmup_secs: (first.start_ms - origin) as f64 / 1000.0,
        rate: units as f64 * 1000.0 / (last.end_ms - first.start_ms) as f64,
        batches: batches.len(),
        truncated_batches: d,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in [-1, 1] (an LCG), so the tests' series are the same every time.
    fn noise(seed: &mut u64) -> f64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 33) as f64 / (1u64 << 31) as f64) * 2.0 - 1.0
    }

    /// A progress series of 100 ms samples from per-interval rates (units/s).
    fn series(rates: &[f64]) -> Vec<[u64; 2]> {
        let mut done = 0.0;
        let mut out = vec![[0, 0]];
        for (i, r) in rates.iter().enumerate() {
            done += r / 10.0;
            out.push([(i as u64 + 1) * 100, done.round() as u64]);
        }
        out
    }

    fn plateau(n: usize, level: f64, spread: f64, seed: &mut u64) -> Vec<f64> {
        (0..n).map(|_| level + spread * noise(seed)).collect()
    }

    #[test]
    fn a_ramp_then_a_plateau_is_cut_where_the_plateau_starts() {
        let mut seed = 1;
        // 3 s ramp from 0 to 1000 units/s, then 12 s at 1000 ± 5%.
        let mut rates: Vec<f64> = (0..30).map(|i| 1000.0 * i as f64 / 30.0).collect();
        rates.extend(plateau(120, 1000.0, 50.0, &mut seed));
        let s = steady_state(&series(&rates)).unwrap();
        assert!(s.reached, "{s:?}");
        assert!(
            (2.5..=4.0).contains(&s.warmup_secs),
            "warm-up {} s",
            s.warmup_secs
        );
        assert!((s.rate - 1000.0).abs() < 20.0, "steady rate {}", s.rate);
        // The whole phase's rate is dragged down by the ramp; the steady one is not.
        let whole = rates.iter().sum::<f64>() / rates.len() as f64;
        assert!(whole < 950.0 && s.rate > 980.0, "{whole} vs {}", s.rate);
    }

    #[test]
    fn a_stall_at_the_start_is_warm_up() {
        let mut seed = 7;
        let mut rates = vec![0.0; 20];
        rates.extend(plateau(80, 500.0, 25.0, &mut seed));
        let s = steady_state(&series(&rates)).unwrap();
        assert!(s.reached, "{s:?}");
        assert!(
            (s.warmup_secs - 2.0).abs() < 0.01,
            "warm-up {}",
            s.warmup_secs
        );
        assert!((s.rate - 500.0).abs() < 15.0, "{}", s.rate);
    }

    #[test]
    fn a_stall_in_the_second_half_means_no_steady_state() {
        let mut seed = 3;
        let mut rates = plateau(60, 800.0, 40.0, &mut seed);
        rates.extend(vec![0.0; 20]);
        rates.extend(plateau(25, 800.0, 40.0, &mut seed));
        let s = steady_state(&series(&rates)).unwrap();
        assert!(!s.reached, "{s:?}");
        assert!(s.truncated_batches > s.batches / 2, "{s:?}");
    }

    #[test]
    fn pure_noise_is_steady_from_the_start() {
        let mut seed = 11;
        let rates = plateau(200, 300.0, 150.0, &mut seed);
        let s = steady_state(&series(&rates)).unwrap();
        assert!(s.reached, "{s:?}");
        assert!(s.warmup_secs <= 2.0, "{s:?}");
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        assert!((s.rate - mean).abs() / mean < 0.05, "{} vs {mean}", s.rate);
    }

    #[test]
    fn a_phase_counted_only_at_its_end_has_no_steady_state() {
        let mut rates = vec![0.0; 99];
        rates.push(20_000.0);
        assert_eq!(steady_state(&series(&rates)), None);
    }

    #[test]
    fn a_short_series_is_not_judged() {
        assert_eq!(steady_state(&series(&[100.0; 30])), None);
        assert_eq!(steady_state(&[]), None);
    }
}

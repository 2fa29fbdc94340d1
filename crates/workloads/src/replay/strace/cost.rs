//! What strace added to each call it stopped, read from the capture's own timing: the time
//! from one call's end (its start and `-T` duration) to the next call's start, whichever
//! threads made them (strace handles one stop at a time). Most of a syscall-heavy program's
//! calls follow each other with next to nothing between them, so these gaps are strace's
//! cost per stop plus a little; their mean without the longest 1% (the program computing, its
//! threads all waiting) is that cost at the load the program ran under, which a calibration
//! on another program, before or after, does not see.
//!
//! The gap leaves out the call's own time in the kernel, which a start-to-start interval
//! would count as strace's: a Python loop of creates, renames and symlinks on ext4 (a third
//! of its calls 300 µs long) was estimated at a tenth of its own time. A `-T` duration still
//! holds strace's wake-up at the call's exit stop: the median duration is taken as that
//! share, added back to each gap (most calls take the kernel next to nothing: dd's median is
//! 15 µs, its quickest 12). A program whose calls are mostly slow gets part of their time
//! taken as strace's, as every call's was before. After a call left unfinished (another
//! thread's stop came before its end) the interval is from its start, as its end is not yet
//! known.

use super::syntax::{Line, split_line};

/// Intervals up to this many µs are counted exactly; longer ones count as this long.
const LONGEST_US: usize = 4096;
/// The share of intervals, shortest first, whose mean is taken.
const KEPT: f64 = 0.99;
/// The share of durations, shortest first, whose longest is taken as strace's share of each.
const STRACES_SHARE: f64 = 0.5;
/// Fewer intervals than this say too little (the caller keeps its calibration).
const FEWEST: u64 = 1000;

/// Gaps and intervals between the calls, and the calls' durations, in fixed histograms of µs.
pub struct StopCost {
    /// The last call's start and, where its line had it, its duration.
    last: Option<(u64, Option<u64>)>,
    /// From a call's end to the next call's start.
    gaps: Vec<u64>,
    /// From an unfinished call's start to the next call's start.
    intervals: Vec<u64>,
    durations: Vec<u64>,
    total: u64,
}

impl Default for StopCost {
    fn default() -> Self {
        StopCost {
            last: None,
            gaps: vec![0; LONGEST_US + 1],
            intervals: vec![0; LONGEST_US + 1],
            durations: vec![0; LONGEST_US + 1],
            total: 0,
        }
    }
}

impl StopCost {
    /// Takes one line of strace's output (`-f -ttt -T`): a call's start, or its resumed half
    /// and notices, which start nothing.
    pub fn line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let Some((_, time, what)) = split_line(line) else {
            return;
        };
        let duration = match what {
            Line::Call { .. } => duration_us(line),
            Line::Unfinished { .. } => None,
            _ => return,
        };
        if let Some(us) = duration {
            self.durations[bucket(us)] += 1;
        }
        if let Some((start, last_duration)) = self.last.replace((time, duration)) {
            match last_duration {
                Some(d) => self.gaps[bucket(time.saturating_sub(start + d))] += 1,
                None => self.intervals[bucket(time.saturating_sub(start))] += 1,
            }
            self.total += 1;
        }
    }

    /// strace's cost per stop in ns: the mean of the shortest 99% of the gaps (each with the
    /// median duration added) and intervals, or `None` with fewer than a thousand.
    pub fn per_call_ns(&self) -> Option<u64> {
        if self.total < FEWEST {
            return None;
        }
        let exit_share = quantile(&self.durations, STRACES_SHARE);
        // The gaps moved up by strace's share of each duration, beside the intervals.
        let mut all = self.intervals.clone();
        for (us, &count) in self.gaps.iter().enumerate() {
            all[bucket(us as u64 + exit_share)] += count;
        }
        let kept = ((self.total as f64 * KEPT).ceil() as u64).max(1);
        let (mut n, mut sum_us) = (0u64, 0u64);
        for (us, &count) in all.iter().enumerate() {
            let take = count.min(kept - n);
            n += take;
            sum_us += take * us as u64;
            if n == kept {
                break;
            }
        }
        Some(sum_us * 1000 / n)
    }
}

fn bucket(us: u64) -> usize {
    us.min(LONGEST_US as u64) as usize
}

/// The µs at which `share` of a histogram's counts are reached (0 for none).
fn quantile(counts: &[u64], share: f64) -> u64 {
    let total: u64 = counts.iter().sum();
    let wanted = ((total as f64 * share).ceil() as u64).max(1);
    let mut seen = 0;
    for (us, &count) in counts.iter().enumerate() {
        seen += count;
        if seen >= wanted {
            return us as u64;
        }
    }
    0
}

/// A finished call's `-T` duration, ` <0.000123>` at the end of its line, in µs.
fn duration_us(line: &[u8]) -> Option<u64> {
    let inner = line.strip_suffix(b">")?;
    let text = &inner[inner.iter().rposition(|&c| c == b'<')? + 1..];
    let (secs, fraction) = text.split_at(text.iter().position(|&c| c == b'.')?);
    let digits = |bytes: &[u8]| -> Option<u64> {
        (bytes.iter()).try_fold(0u64, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u64::from(c - b'0'))
        })
    };
    // Microseconds: the fraction's first six digits, padded.
    let fraction = &fraction[1..];
    let micros = (0..6).try_fold(0u64, |n, i| match fraction.get(i) {
        Some(&c) => c.is_ascii_digit().then(|| n * 10 + u64::from(c - b'0')),
        None => Some(n * 10),
    })?;
    digits(fraction)?;
    Some(digits(secs)?.checked_mul(1_000_000)? + micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(lines: &[String]) -> StopCost {
        let mut cost = StopCost::default();
        for l in lines {
            cost.line(l.as_bytes());
        }
        cost
    }

    #[test]
    fn the_mean_interval_without_the_longest_hundredth() {
        // 2,000 intervals: 30 µs, and 20 of them a second (the program computing).
        let mut lines = Vec::new();
        let mut t = 1_000_000_000u64;
        for i in 0..=2000 {
            t += if i % 100 == 50 { 1_000_000 } else { 30 };
            lines.push(format!(
                "42 {}.{:06} newfstatat(AT_FDCWD</r>, \"f\", 0x7ffd, 0) = 0 <0.000008>",
                t / 1_000_000,
                t % 1_000_000
            ));
        }
        assert_eq!(fed(&lines).per_call_ns(), Some(30_000));
    }

    #[test]
    fn every_threads_calls_together_and_resumed_halves_start_nothing() {
        let mut lines = Vec::new();
        for i in 0..1001u64 {
            // Two threads interleaved, each call 40 µs after its own last one: a stop
            // every 20 µs.
            let (a, b) = (i * 40, i * 40 + 20);
            lines.push(format!(
                "1 5.{a:06} read(3</r/f>, \"\"..., 4096 <unfinished ...>"
            ));
            lines.push(format!("2 5.{b:06} close(4</r/g>) = 0 <0.000003>"));
            lines.push(format!(
                "1 5.{:06} <... read resumed>) = 0 <0.000020>",
                a + 20
            ));
        }
        lines.push("2 9.000000 +++ exited with 0 +++".to_string());
        assert_eq!(fed(&lines).per_call_ns(), Some(20_000));
    }

    #[test]
    fn a_calls_own_time_in_the_kernel_is_not_straces() {
        // A third of the calls 300 µs long in the kernel, the others 5 µs (strace's share at
        // the exit stop), each 20 µs after the last one's end.
        let mut lines = Vec::new();
        let mut t = 1_000_000_000u64;
        for i in 0..2000u64 {
            let dur = if i % 3 == 0 { 300 } else { 5 };
            lines.push(format!(
                "9 {}.{:06} unlink(\"f\") = 0 <0.{dur:06}>",
                t / 1_000_000,
                t % 1_000_000
            ));
            t += dur + 20;
        }
        assert_eq!(fed(&lines).per_call_ns(), Some(25_000));
    }

    #[test]
    fn durations_are_read_to_the_microsecond() {
        let d = |s: &str| duration_us(s.as_bytes());
        assert_eq!(d("1 2.0 close(3) = 0 <0.000123>"), Some(123));
        assert_eq!(d("1 2.0 close(3) = 0 <12.5>"), Some(12_500_000));
        assert_eq!(d("1 2.0 close(3) = 0 <1.0000009>"), Some(1_000_000));
        assert_eq!(d("1 2.0 read(3, \"\"..., 4096 <unfinished ...>"), None);
        assert_eq!(d("1 2.0 close(3) = 0"), None);
    }

    #[test]
    fn too_few_intervals_say_nothing() {
        let lines: Vec<String> = (0..500u64)
            .map(|i| format!("7 1.{:06} close(3) = 0 <0.000002>", i * 25))
            .collect();
        assert_eq!(fed(&lines).per_call_ns(), None);
    }
}

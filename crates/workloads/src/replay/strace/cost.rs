//! What strace added to each call it stopped, read from the capture's own timing: the time
//! from one call's start to the next's, whichever threads made them (strace handles one
//! stop at a time). Most of a syscall-heavy program's calls follow each other with next to
//! nothing between them, so these intervals are strace's cost per stop plus a little; their
//! mean without the longest 1% (the program computing, its threads all waiting) is that
//! cost at the load the program ran under, which a calibration on another program, before
//! or after, does not see.

use super::syntax::{Line, split_line};

/// Intervals up to this many µs are counted exactly; longer ones count as this long.
const LONGEST_US: usize = 4096;
/// The share of intervals, shortest first, whose mean is taken.
const KEPT: f64 = 0.99;
/// Fewer intervals than this say too little (the caller keeps its calibration).
const FEWEST: u64 = 1000;

/// Start-to-start intervals of the calls, in a fixed histogram of µs.
pub struct StopCost {
    last_start: Option<u64>,
    counts: Vec<u64>,
    total: u64,
}

impl Default for StopCost {
    fn default() -> Self {
        StopCost {
            last_start: None,
            counts: vec![0; LONGEST_US + 1],
            total: 0,
        }
    }
}

impl StopCost {
    /// Takes one line of strace's output (`-f -ttt`): a call's start, or its resumed half
    /// and notices, which start nothing.
    pub fn line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let Some((_, time, what)) = split_line(line) else {
            return;
        };
        if !matches!(what, Line::Call { .. } | Line::Unfinished { .. }) {
            return;
        }
        if let Some(last) = self.last_start.replace(time) {
            let us = time.saturating_sub(last).min(LONGEST_US as u64) as usize;
            self.counts[us] += 1;
            self.total += 1;
        }
    }

    /// strace's cost per stop in ns: the mean of the shortest 99% of the intervals, or
    /// `None` with fewer than a thousand of them.
    pub fn per_call_ns(&self) -> Option<u64> {
        if self.total < FEWEST {
            return None;
        }
        let kept = ((self.total as f64 * KEPT).ceil() as u64).max(1);
        let (mut n, mut sum_us) = (0u64, 0u64);
        for (us, &count) in self.counts.iter().enumerate() {
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
    fn too_few_intervals_say_nothing() {
        let lines: Vec<String> = (0..500u64)
            .map(|i| format!("7 1.{:06} close(3) = 0 <0.000002>", i * 25))
            .collect();
        assert_eq!(fed(&lines).per_call_ns(), None);
    }
}

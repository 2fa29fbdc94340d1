//! Progress of a running phase: a bar on stderr and the time series of units completed.
//!
//! A sampler thread reads the phase's atomic counter every 100 ms, so the hot loop only
//! stores one integer per unit and never touches the terminal.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::measure::Progress;

/// Sampling interval of the progress time series.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// The sampler of one phase. [`PhaseProgress::finish`] stops it and returns the series.
pub struct PhaseProgress {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<[u64; 2]>>,
}

impl PhaseProgress {
    /// Starts sampling `progress`; draws a bar on stderr when `visible` and stderr is a terminal.
    pub fn start(
        message: String,
        total: u64,
        progress: Arc<Progress>,
        visible: bool,
    ) -> PhaseProgress {
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let target = if visible {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            };
            // An unknown total (a time-based phase) draws a counter without a bar's end.
            let bar = ProgressBar::with_draw_target(Some(total).filter(|t| *t > 0), target);
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg:40!} [{bar:25}] {human_pos}/{human_len} {per_sec:>12} ETA {eta}",
                )
                .expect("static template")
                .progress_chars("=> "),
            );
            bar.set_message(message);
            let start = Instant::now();
            let mut series = Vec::new();
            loop {
                let stopping = stop_flag.load(Ordering::Acquire);
                let done = progress.done.load(Ordering::Relaxed);
                series.push([start.elapsed().as_millis() as u64, done]);
                bar.set_position(done);
                if stopping {
                    break;
                }
                std::thread::park_timeout(SAMPLE_INTERVAL);
            }
            bar.finish_and_clear();
            series
        });
        PhaseProgress { stop, thread }
    }

    /// Stops sampling (taking one last sample) and returns [milliseconds, units] pairs.
    pub fn finish(self) -> Vec<[u64; 2]> {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        self.thread.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_ends_with_final_count() {
        let progress = Arc::new(Progress::default());
        let sampler = PhaseProgress::start("t".into(), 10, progress.clone(), false);
        progress.done.store(3, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(250));
        progress.done.store(10, Ordering::Relaxed);
        let series = sampler.finish();
        assert!(series.len() >= 3, "{series:?}");
        assert_eq!(series.last().unwrap()[1], 10);
        assert!(series.windows(2).all(|w| w[0][0] <= w[1][0]));
    }
}

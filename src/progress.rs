//! Progress of a running phase: the time series of units completed, and a bar on stderr.
//!
//! Both read the phase's atomic counter every 100 ms from a thread of their own, so the hot
//! loop only stores one integer per unit and never touches the terminal. The series belongs
//! to the results (the runner samples it); the bar to the console (an observer draws it).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::measure::Progress;

/// Sampling interval of the progress time series.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// A thread that reads `progress` every [`SAMPLE_INTERVAL`] (and once more when stopped),
/// handing each count to `sample` with its state, and the state back when stopped.
struct Poller<S> {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<S>,
}

impl<S: Send + 'static> Poller<S> {
    fn start(
        progress: Arc<Progress>,
        mut state: S,
        sample: impl Fn(&mut S, u64) + Send + 'static,
    ) -> Poller<S> {
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let thread = std::thread::spawn(move || {
            loop {
                let stopping = stop_flag.load(Ordering::Acquire);
                sample(&mut state, progress.done.load(Ordering::Relaxed));
                if stopping {
                    return state;
                }
                std::thread::park_timeout(SAMPLE_INTERVAL);
            }
        });
        Poller { stop, thread }
    }

    fn stop(self) -> std::thread::Result<S> {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        self.thread.join()
    }
}

/// The sampler of one phase. [`PhaseProgress::finish`] stops it and returns the series.
pub struct PhaseProgress(Poller<Vec<[u64; 2]>>);

impl PhaseProgress {
    /// Starts sampling `progress`.
    pub fn start(progress: Arc<Progress>) -> PhaseProgress {
        let start = Instant::now();
        PhaseProgress(Poller::start(progress, Vec::new(), move |series, done| {
            series.push([start.elapsed().as_millis() as u64, done]);
        }))
    }

    /// Stops sampling (taking one last sample) and returns [milliseconds, units] pairs.
    pub fn finish(self) -> Vec<[u64; 2]> {
        self.0.stop().unwrap_or_default()
    }
}

/// A progress line on stderr (drawn only when stderr is a terminal) following `progress`
/// until [`PhaseBar::finish`] clears it: the suite's progress (`prefix`), the phase's name
/// and run (`message`), a bar, the units done, the rate and the phase's ETA, in 80 columns.
pub(crate) struct PhaseBar(Poller<ProgressBar>);

impl PhaseBar {
    pub(crate) fn start(
        prefix: String,
        message: String,
        total: u64,
        progress: Arc<Progress>,
    ) -> PhaseBar {
        // An unknown total (a time-based phase) draws a counter without a bar's end.
        let bar = ProgressBar::with_draw_target(
            Some(total).filter(|t| *t > 0),
            ProgressDrawTarget::stderr(),
        );
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix} {wide_msg} [{bar:10}] {human_pos}/{human_len} {rate} ETA {eta}",
            )
            .expect("static template")
            .with_key(
                "rate",
                |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}", human_rate(state.per_sec()));
                },
            )
            .progress_chars("=> "),
        );
        bar.set_prefix(prefix);
        bar.set_message(message);
        PhaseBar(Poller::start(progress, bar, |bar, done| {
            bar.set_position(done)
        }))
    }

    pub(crate) fn finish(self) {
        if let Ok(bar) = self.0.stop() {
            bar.finish_and_clear();
        }
    }
}

/// A rate as a person reads it: `523/s`, `14.2 k/s`, `1.35 M/s`.
pub(crate) fn human_rate(per_sec: f64) -> String {
    match per_sec {
        r if !r.is_finite() => "-/s".into(),
        r if r >= 1e6 => format!("{:.2} M/s", r / 1e6),
        r if r >= 1e3 => format!("{:.1} k/s", r / 1e3),
        r if r >= 10.0 => format!("{r:.0}/s"),
        r => format!("{r:.1}/s"),
    }
}

/// A duration as a person reads it: `45s`, `2m10s`, `1h05m`.
pub(crate) fn short_duration(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_durations_read_at_a_glance() {
        assert_eq!(human_rate(14_176.859_266_181_3), "14.2 k/s");
        assert_eq!(human_rate(1_349_999.0), "1.35 M/s");
        assert_eq!(human_rate(523.4), "523/s");
        assert_eq!(human_rate(2.25), "2.2/s");
        assert_eq!(short_duration(Duration::from_secs(45)), "45s");
        assert_eq!(short_duration(Duration::from_secs(130)), "2m10s");
        assert_eq!(short_duration(Duration::from_secs(3900)), "1h05m");
    }

    #[test]
    fn series_ends_with_final_count() {
        let progress = Arc::new(Progress::default());
        let sampler = PhaseProgress::start(progress.clone());
        progress.done.store(3, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(250));
        progress.done.store(10, Ordering::Relaxed);
        let series = sampler.finish();
        assert!(series.len() >= 3, "{series:?}");
        assert_eq!(series.last().unwrap()[1], 10);
        assert!(series.windows(2).all(|w| w[0][0] <= w[1][0]));
    }
}

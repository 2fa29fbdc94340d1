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

/// What the progress line names: the phase (always in full), the configuration and, when
/// the suite has several, the workload; each label with every label it must be told from.
pub struct LineNames<'a> {
    pub phase: &'a str,
    pub config: (&'a str, &'a [String]),
    pub workload: Option<(&'a str, &'a [String])>,
}

/// Columns the line takes besides its names and bar: ` 100% 999.9 k/s ETA 10m05s` with a
/// known total, ` 127,551,000 999.9 k/s` without.
const TAIL_KNOWN: usize = 26;
const TAIL_UNKNOWN: usize = 22;
/// The bar's widest, and narrowest worth drawing.
const BAR_MAX: usize = 10;
const BAR_MIN: usize = 4;
/// The workload's label is shown only with this many columns left for it.
const WORKLOAD_MIN: usize = 8;

/// Fits the names into a line of `width` columns after `prefix`: the message and the bar's
/// width (0: no bar). The phase is never cut; the configuration keeps what tells it apart.
fn layout(width: usize, prefix: &str, names: &LineNames, known_total: bool) -> (String, usize) {
    let tail = if known_total {
        TAIL_KNOWN
    } else {
        TAIL_UNKNOWN
    };
    // One column spare: a line that reaches the last column wraps on some terminals.
    let room = width.saturating_sub(1 + prefix.chars().count() + 3 + tail);
    let mut left = room.saturating_sub(names.phase.chars().count());
    let mut msg = names.phase.to_string();
    // The names first, then the bar with what is left: the share done is printed anyway.
    let mut add = |label: &str, all: &[String], least: usize| {
        if left > least && !label.is_empty() {
            let cut = distinguishing(label, all, left - 1);
            left = left.saturating_sub(1 + cut.chars().count());
            msg = format!("{msg} {cut}");
        }
    };
    add(names.config.0, names.config.1, 1);
    if let Some((workload, all)) = names.workload {
        add(workload, all, WORKLOAD_MIN);
    }
    let bar = if known_total && left >= BAR_MIN + 3 {
        (left - 3).min(BAR_MAX)
    } else {
        0
    };
    (msg, bar)
}

/// `label` in at most `max` characters, keeping what tells it apart from the other labels
/// in `all`: the part they share at the start and end gives way first (`…writeback` for
/// `ext4:mount=data=writeback` beside `ext4:mount=data=ordered`), then its own middle.
pub(crate) fn distinguishing(label: &str, all: &[String], max: usize) -> String {
    let chars: Vec<char> = label.chars().collect();
    if chars.len() <= max {
        return label.to_string();
    }
    let shared = |rev: bool| {
        all.iter()
            .filter(|o| *o != label)
            .map(|o| {
                let other: Vec<char> = o.chars().collect();
                let pairs = chars.len().min(other.len());
                (0..pairs)
                    .take_while(|&i| {
                        let (a, b) = if rev {
                            (chars[chars.len() - 1 - i], other[other.len() - 1 - i])
                        } else {
                            (chars[i], other[i])
                        };
                        a == b
                    })
                    .count()
            })
            // The most alike label decides what must stay.
            .max()
            .unwrap_or(0)
    };
    let (mut start, mut end) = (shared(false), chars.len() - shared(true).min(chars.len()));
    if start >= end {
        (start, end) = (0, chars.len());
    }
    let marks = usize::from(start > 0) + usize::from(end < chars.len());
    if max <= marks + 1 {
        return middle_cut(label, max);
    }
    let core: String = chars[start..end].iter().collect();
    let core = middle_cut(&core, max - marks);
    // Room left over shows the label's start (its filesystem) before the shared part's cut.
    let spare = max - marks - core.chars().count();
    let head: String = chars[..start.min(spare)].iter().collect();
    format!(
        "{head}{}{core}{}",
        if start > 0 { "…" } else { "" },
        if end < chars.len() { "…" } else { "" }
    )
}

/// `text` in at most `max` characters: its start and end around `…`.
fn middle_cut(text: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_string();
    }
    let head = max / 2;
    let tail = max.saturating_sub(head + 1);
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// The width of the terminal on stderr (80 when it cannot be told).
fn stderr_width() -> usize {
    rustix::termios::tcgetwinsize(std::io::stderr())
        .ok()
        .map(|w| usize::from(w.ws_col))
        .filter(|w| *w > 0)
        .unwrap_or(80)
}

/// A progress line on stderr (drawn only when stderr is a terminal) following `progress`
/// until [`PhaseBar::finish`] clears it: the suite's progress (`prefix`), the phase's full
/// name and its configuration, a bar, the share done, the rate and the phase's ETA, fitted
/// to the terminal's width.
pub struct PhaseBar(Poller<ProgressBar>);

impl PhaseBar {
    pub fn start(
        prefix: String,
        names: &LineNames,
        total: u64,
        progress: Arc<Progress>,
    ) -> PhaseBar {
        // An unknown total (a time-based phase) draws a counter without a bar's end.
        let total = Some(total).filter(|t| *t > 0);
        let (message, bar_width) = layout(stderr_width(), &prefix, names, total.is_some());
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
        let template = match (total, bar_width) {
            (None, _) => "{prefix} · {msg} {human_pos} {rate}".to_string(),
            (Some(_), 0) => "{prefix} · {msg} {percent:>3}% {rate} ETA {eta}".to_string(),
            (Some(_), w) => {
                format!("{{prefix}} · {{msg}} [{{bar:{w}}}] {{percent:>3}}% {{rate}} ETA {{eta}}")
            }
        };
        bar.set_style(
            ProgressStyle::with_template(&template)
                .expect("the template's keys are indicatif's")
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

    pub fn finish(self) {
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
pub fn short_duration(d: Duration) -> String {
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
    fn the_line_fits_and_keeps_the_phase_and_what_tells_configurations_apart() {
        let configs: Vec<String> = [
            "ext4:mkfs=-O ^has_journal:mount=data=writeback",
            "ext4:mkfs=-O ^has_journal:mount=data=ordered",
            "xfs",
        ]
        .map(String::from)
        .to_vec();
        let workloads = vec!["tree:quick".to_string(), "ffsb:large-write".to_string()];
        let prefix = "runs 13/120, 1h05m left";
        for width in 60..=200 {
            let cases = [
                (&configs[0], true, "…wr"),
                (&configs[1], false, "…or"),
                (&configs[2], true, "xfs"),
            ];
            for (config, known, telling) in cases {
                let names = LineNames {
                    phase: "posix-fallocate",
                    config: (config, &configs),
                    workload: Some(("ffsb:large-write", &workloads)),
                };
                let (msg, bar) = layout(width, prefix, &names, known);
                // The widest the line gets: bar, 100%, a rate and an ETA at their widest.
                let tail = if known {
                    format!(
                        " 100% 999.9 k/s ETA 10m05s{}",
                        if bar > 0 { " []" } else { "" }
                    )
                } else {
                    " 127,551,000 999.9 k/s".to_string()
                };
                let line = format!("{prefix} · {msg}{tail}{}", "=".repeat(bar));
                if width >= 80 {
                    assert!(line.chars().count() < width, "{width}: {line}");
                }
                assert!(msg.starts_with("posix-fallocate"), "{msg}");
                if width >= 80 {
                    // What tells it apart, at least: `…writeback` or the whole label.
                    let whole = msg.contains(config.as_str());
                    assert!(whole || msg.contains(telling), "{width}: {msg}");
                }
                if width >= 120 {
                    assert!(msg.contains(&config[..3]), "{width}: {msg}");
                }
            }
        }
        assert_eq!(distinguishing(&configs[0], &configs, 12), "ex…writeback");
        assert_eq!(distinguishing(&configs[0], &configs, 10), "…writeback");
        assert_eq!(distinguishing(&configs[1], &configs, 12), "ext4…ordered");
        assert_eq!(distinguishing("a-very-long-label", &[], 9), "a-ve…abel");
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

//! The console: what a person watching a run sees on stderr — a line per suite, skipped
//! configuration, finished run, workload note and diagnostic, and a progress bar per phase.

use std::time::{Duration, Instant};

use fsbench_engine::runner::observer::{
    Diagnostic, Observer, PhaseStart, PreparationStart, SuitePlan,
};
use fsbench_measure::phase_progress::{LineNames, PhaseBar, short_duration};
use fsbench_model::aging::Preparation;
use fsbench_model::results::{PhaseRecord, RunRecord, RunStatus, Skipped};

/// `text` on stderr, wrapped at words to the terminal's width with the lines it continues
/// on indented, so that no word breaks in two; as one line where stderr is no terminal. A
/// closed stderr (`2>&1 | head -0`) loses the text and nothing else: the run goes on.
pub(crate) fn say(text: &str) {
    use std::io::Write;
    let width = rustix::termios::tcgetwinsize(std::io::stderr())
        .ok()
        .map(|w| w.ws_col)
        .filter(|w| *w >= 40);
    let wrapped = fsbench_report::fit::wrap(text, width, 0, 4);
    let _ = std::io::stderr().write_all(wrapped.as_bytes());
}

/// Prints a run's events on stderr; draws progress bars when `bars` (and stderr is a terminal).
pub(crate) struct Console {
    bars: bool,
    bar: Option<PhaseBar>,
    /// Runs of the suite in all (with `--runs auto`, at most), and done (a resumed suite's
    /// earlier ones included).
    planned: usize,
    done: usize,
    /// `--runs auto`'s time budget: the suite ends within it.
    budget: Option<Duration>,
    /// When this process started running the suite, and the runs it finished since: the
    /// suite's ETA is their mean time × the runs left.
    started: Instant,
    finished_here: u32,
    /// The suite's configuration and workload labels (the line tells them apart), and the
    /// current run's.
    configs: Vec<String>,
    workloads: Vec<String>,
    run: (String, String),
    /// The skeletons of the workload notes said so far: each is said once per suite (the
    /// results keep every run's, and `show` lists them).
    notes_said: Vec<String>,
}

impl Console {
    pub(crate) fn new(bars: bool) -> Console {
        Console {
            bars,
            bar: None,
            planned: 0,
            done: 0,
            budget: None,
            started: Instant::now(),
            finished_here: 0,
            configs: Vec::new(),
            workloads: Vec::new(),
            run: Default::default(),
            notes_said: Vec::new(),
        }
    }

    /// `runs 3/9, 2m10s left`: the whole suite's progress for the progress line and the
    /// run lines (`runs 3/≤90, at most 2m10s left` with `--runs auto`: it may stop sooner).
    fn suite_progress(&self) -> String {
        let left = self.planned.saturating_sub(self.done) as u32;
        let by_runs =
            (self.finished_here > 0).then(|| self.started.elapsed() / self.finished_here * left);
        let by_budget = self
            .budget
            .map(|b| b.saturating_sub(self.started.elapsed()));
        let eta = match (by_runs, by_budget) {
            (Some(runs), Some(budget)) => Some(runs.min(budget)),
            (runs, budget) => runs.or(budget),
        };
        let (at_most, up_to) = match self.budget {
            Some(_) => ("at most ", "≤"),
            None => ("", ""),
        };
        let eta = eta.map(|d| format!(", {at_most}{} left", short_duration(d)));
        format!(
            "runs {}/{up_to}{}{}",
            self.done,
            self.planned,
            eta.unwrap_or_default()
        )
    }
}

/// `3 minutes`, `90 seconds`, `1h30m`: a budget as said in a sentence.
fn spoken_duration(d: Duration) -> String {
    match d.as_secs() {
        s if s % 60 == 0 && s < 3600 => {
            format!("{} minute{}", s / 60, if s == 60 { "" } else { "s" })
        }
        s if s < 60 => format!("{s} seconds"),
        _ => short_duration(d),
    }
}

impl Observer for Console {
    fn suite_started(&mut self, plan: &SuitePlan) -> anyhow::Result<()> {
        let planned = plan.configurations * plan.workloads * plan.runs as usize;
        (self.planned, self.done) = (planned, plan.already_done);
        self.started = Instant::now();
        let auto = plan.result.suite.auto_runs.as_ref();
        self.budget = auto.and_then(|a| a.max_secs).map(Duration::from_secs_f64);
        let labels: Vec<String> = (plan.result.configurations.iter())
            .map(|c| c.config.label.clone())
            .collect();
        self.configs = labels.clone();
        self.workloads = (plan.result.workload_records.iter())
            .map(|w| w.label.clone())
            .collect();
        // With `--runs auto` the runs are at most so many, and the time a budget: said as such.
        let runs = match auto {
            None => format!("{} run(s)", plan.runs),
            Some(a) => format!(
                "up to {} runs{} (--runs auto: rounds until every phase's 95% CI is within \
                 ±{}% of its mean)",
                plan.runs,
                self.budget
                    .map_or(String::new(), |b| format!(", about {}", spoken_duration(b))),
                a.target_ci_percent
            ),
        };
        say(&format!(
            "fsbench: suite `{}`: {} configuration(s) × {} workload(s) × {runs} on {}{}",
            plan.result.display_name(),
            plan.configurations,
            plan.workloads,
            plan.result.target.description,
            if plan.already_done == 0 {
                String::new()
            } else {
                format!("; {} of {planned} runs already done", plan.already_done)
            }
        ));
        // Said once the suite is known to be valid, so it never comes before an input error.
        if plan.result.suite.purpose.is_empty() {
            say(
                "fsbench: no purpose stated; say why you run this benchmark with --purpose \
                 (a result without one is hard to judge later)",
            );
        }
        Ok(())
    }

    fn run_started(&mut self, _label: &str, run: &RunRecord) {
        self.run = (run.config.clone(), run.workload.clone());
    }

    fn config_skipped(&mut self, s: &Skipped) {
        say(&format!("fsbench: skipping {}: {}", s.label, s.reason));
    }

    fn phase_started(&mut self, start: &PhaseStart) {
        if self.bars {
            let names = LineNames {
                phase: start.phase,
                // Outside a suite's runs (a command's own phases), the label the event gives.
                config: if self.run.0.is_empty() {
                    (start.label, &[])
                } else {
                    (&self.run.0, &self.configs)
                },
                workload: (self.workloads.len() > 1).then_some((&self.run.1, &self.workloads[..])),
            };
            self.bar = Some(PhaseBar::start(
                self.suite_progress(),
                &names,
                start.expected_units,
                start.progress.clone(),
            ));
        }
    }

    fn preparation_started(&mut self, start: &PreparationStart) {
        say(&format!("fsbench: {}: {}", start.label, start.what));
        if self.bars {
            let names = LineNames {
                phase: "preparing (MiB written)",
                config: (start.label, &self.configs),
                workload: None,
            };
            self.bar = Some(PhaseBar::start(
                self.suite_progress(),
                &names,
                start.expected_mib,
                start.progress.clone(),
            ));
        }
    }

    fn preparation_finished(&mut self, label: &str, prep: Option<&Preparation>) {
        if let Some(bar) = self.bar.take() {
            bar.finish();
        }
        if let Some(prep) = prep {
            say(&format!(
                "fsbench: {label}: {}",
                fsbench_report::aging::summary(prep)
            ));
        }
    }

    fn phase_finished(&mut self, label: &str, phase: Option<&PhaseRecord>) {
        if let Some(bar) = self.bar.take() {
            bar.finish();
        }
        // Workload notes (shrinks, skips) said as they happen, each once per suite: a note
        // every run and phase repeats would bury the progress; the results keep them all.
        for (p, note) in phase
            .iter()
            .flat_map(|p| p.notes.iter().map(move |n| (p, n)))
        {
            let skeleton = fsbench_report::notes::skeleton(note);
            if !self.notes_said.contains(&skeleton) {
                self.notes_said.push(skeleton);
                say(&format!(
                    "fsbench: {label} {}: {note} (said once for the suite)",
                    p.name
                ));
            }
        }
    }

    /// One line per finished run, for logs and people watching (a failed run has its
    /// diagnostic instead).
    fn run_finished(&mut self, r: &RunRecord, _: Option<&str>) -> anyhow::Result<()> {
        self.done += 1;
        self.finished_here += 1;
        if !matches!(r.status, RunStatus::Ok | RunStatus::FsckFailed) {
            return Ok(());
        }
        let total: f64 = r.phases.iter().map(|p| p.measurement.elapsed_secs()).sum();
        let mut parts = vec![format!("phases {total:.2} s")];
        for (name, v) in [("mkfs", r.mkfs_secs), ("unmount", r.unmount_secs)] {
            if let Some(v) = v {
                parts.push(format!("{name} {v:.2} s"));
            }
        }
        match &r.loop_device {
            Some(l) if l.direct_io => parts.push("loop dio=1".into()),
            Some(l) => parts.push(format!(
                "loop dio=0: BUFFERED in the host page cache{}",
                l.fallback
                    .as_deref()
                    .map(|f| format!(" ({f})"))
                    .unwrap_or_default()
            )),
            None => {}
        }
        if let Some(p) = &r.probe_after {
            parts.push(fsbench_report::aging::after_run_text(p));
        }
        if let Some(f) = &r.fsck {
            parts.push(format!(
                "fsck {:.2} s {}",
                f.secs,
                if f.clean { "clean" } else { "NOT CLEAN" }
            ));
        }
        // The suite's progress on every run's line: in a pipe or a log there is no bar.
        say(&format!(
            "fsbench: run {} · {} · {}: {} [{}]",
            r.run,
            r.config,
            r.workload,
            parts.join(", "),
            self.suite_progress()
        ));
        Ok(())
    }

    fn diagnostic(&mut self, diagnostic: &Diagnostic) {
        say(&format!("fsbench: {diagnostic}"));
    }
}

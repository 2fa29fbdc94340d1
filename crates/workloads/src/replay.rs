//! The replay workload: a program's file-system calls, captured by `fsbench capture`, made
//! again on the filesystem under test. The untimed setup recreates the root's initial state;
//! the timed phase replays the calls, one thread per traced thread (see [`engine`]).

mod engine;
mod load;
mod state;
pub mod strace;
pub mod trace;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use super::options::{OptKind, OptionDef, Parsed, Preset, WorkloadKind};
use super::parallel::{Crew, join_all};
use super::{Need, PhaseInfo, PhaseOutput, SpaceNeed, Workload, WorkloadParams};
use engine::{Done, Halt, Replayed};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::{PhaseRecorder, errno_name};
use fsbench_model::filesystem::Capability;
use fsbench_model::units::group_thousands;
use load::Loaded;
pub use state::snapshot;
use trace::{Call, Entry, Kind, TraceReader};

/// How the calls are paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Pace {
    /// Each call as soon as the calls it depends on are done.
    #[default]
    Fast,
    /// With the time each thread spent between its calls in the capture.
    Think,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayParams {
    /// The trace file; none: the built-in demo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<PathBuf>,
    #[serde(default)]
    pub mode: Pace,
}

const OPTIONS: &[OptionDef] = &[
    OptionDef::new(
        "trace",
        OptKind::Text,
        "the trace file `fsbench capture -o FILE` wrote (default: the built-in demo)",
    ),
    OptionDef {
        default: Some("fast"),
        ..OptionDef::new(
            "mode",
            OptKind::Choice(&["fast", "think"]),
            "fast: each call as soon as it may; think: with the recorded time between calls",
        )
    },
];

const PRESETS: &[Preset] = &[Preset {
    name: "demo",
    values: &[],
    help: "a built-in trace (give trace=FILE for yours): sh making 50 small files, copying, \
           renaming, linking and removing them, 958 calls of 8 processes; under 0.1 s a run on tmpfs here",
}];

/// The replay workload's option table.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "replay",
    summary: "a program's file-system calls captured by `fsbench capture`, replayed: \
              the root's initial state made untimed, then the calls, one thread per traced thread",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "demo",
    more_work: &["trace"],
    aliases: &[],
};

fn build(p: &Parsed) -> anyhow::Result<ReplayParams> {
    let params = ReplayParams {
        trace: p.text("trace").map(PathBuf::from),
        mode: if p.text("mode") == Some("think") {
            Pace::Think
        } else {
            Pace::Fast
        },
    };
    params.validate()?;
    Ok(params)
}

pub const PHASES: &[PhaseInfo] = &[PhaseInfo::fixed("replay", "calls", true)];

impl ReplayParams {
    /// Whether the trace makes hard links, in its initial state or its calls.
    fn links(&self) -> bool {
        Summary::of(self.trace.as_deref())
            .is_ok_and(|s| s.initial_links > 0 || s.calls.get(&Kind::Link).is_some_and(|n| *n > 0))
    }
}

impl WorkloadParams for ReplayParams {
    const KIND: &'static WorkloadKind = &KIND;

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    fn name(&self) -> String {
        let file = match &self.trace {
            None => "demo".to_string(),
            Some(t) => t.file_name().map_or_else(
                || t.display().to_string(),
                |f| f.to_string_lossy().into_owned(),
            ),
        };
        match self.mode {
            Pace::Fast => file,
            Pace::Think => format!("{file},think"),
        }
    }

    fn describe(&self) -> String {
        let pace = match self.mode {
            Pace::Fast => "as fast as possible",
            Pace::Think => "with the recorded think times",
        };
        let file = self.trace.as_ref().map_or_else(
            || "the built-in demo".to_string(),
            |t| t.display().to_string(),
        );
        match Summary::of(self.trace.as_deref()) {
            Ok(s) => format!(
                "replays {} calls of {} threads captured under {} ({file}), {pace}",
                group_thousands(s.replayed()),
                s.threads,
                s.root.display(),
            ),
            Err(e) => format!("replays {file}: {e:#}"),
        }
    }

    /// Reads the whole trace: a damaged one or one of another version is refused here.
    fn validate(&self) -> anyhow::Result<()> {
        Summary::of(self.trace.as_deref()).map(drop)
    }

    fn space_needed(&self) -> Option<SpaceNeed> {
        let s = Summary::of(self.trace.as_deref()).ok()?;
        let bytes = s
            .initial_bytes
            .checked_add(s.written)?
            .checked_add(1 << 20)?;
        Some(SpaceNeed::exactly(
            bytes,
            s.initial_entries + s.creates + 16,
        ))
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        Cow::Borrowed(PHASES)
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(Replay::new(self.clone()))
    }

    fn needs(&self) -> Option<Need> {
        self.links().then_some(Need {
            capability: Capability::HardLinks,
            option: "`trace` (its link calls)",
        })
    }

    fn more_work_advice(&self) -> String {
        "a trace of a program that does more".into()
    }

    fn mpi_refusal(&self) -> Option<&'static str> {
        Some(
            "it replays one program's calls on one directory; N ranks would replay N copies \
             of the same paths, each in a directory of its own",
        )
    }
}

/// Every traced thread's calls replayed by a thread of its own, all started together; a
/// thread that stops early (or panics) lets the others past their waits.
fn replay_threads(
    loaded: &Loaded,
    dir: BorrowedFd<'_>,
    think: bool,
    rec: &PhaseRecorder,
) -> Vec<Result<Replayed, FsbenchError>> {
    let user = rec.progress().cancel.clone();
    let halt = Halt {
        user: &user,
        failed: AtomicBool::new(false),
    };
    let done: Vec<Done> = loaded.threads.iter().map(|_| Done::default()).collect();
    // The threads' counts of calls done are also the progress bar's.
    let crew = Crew::new(done.iter().map(|d| &d.0).collect(), rec.progress());
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..loaded.threads.len())
            .map(|me| {
                let (done, halt, crew) = (&done, &halt, &crew);
                s.spawn(move || {
                    let _guard = StopOthersOnPanic(&halt.failed);
                    let outcome = crew
                        .work(&[dir], || {
                            engine::replay_thread(loaded, me, dir, done, think, halt)
                        })
                        .and_then(|r| r);
                    if outcome.is_err() {
                        halt.failed
                            .store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    outcome
                })
            })
            .collect();
        crew.wait(&handles);
        join_all(handles, "a replay thread panicked")
    })
}

/// The replay threads' results added up: the report's counts, the calls whose outcome
/// differed from the capture's (kind, errno here, errno there), failure samples, and the
/// descriptors opened by path first.
#[derive(Default)]
struct Added {
    report: ReplayReport,
    mismatches: BTreeMap<(Kind, i32, i32), u64>,
    samples: Vec<String>,
    reopened: u64,
}

impl Added {
    /// One thread's results, into the sums and the phase's recorder.
    fn add(&mut self, r: Replayed, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        for (kind, h) in Kind::ALL.iter().zip(&r.latency) {
            if let Some(h) = h {
                rec.add_latency(kind.name(), h);
            }
        }
        for (kind, n) in Kind::ALL.iter().zip(r.calls) {
            if n > 0 {
                *self.report.calls.entry(kind.name()).or_default() += n;
            }
        }
        rec.units_done(r.calls.iter().sum(), r.bytes)?;
        for (key, n) in r.mismatches {
            *self.mismatches.entry(key).or_default() += n;
            if key.1 != 0 {
                rec.add_errors(key.1, n);
            }
        }
        self.report.refused += r.refused;
        self.reopened += r.reopened;
        self.samples.extend(r.samples);
        Ok(())
    }

    /// The report, with what a reader must know of the replay: its mismatches, refused
    /// paths (`refused_entries` of the initial state besides the calls'), failure samples,
    /// descriptors opened by path, and the capture's calls outside the root (`dropped`).
    fn into_report(self, refused_entries: u64, dropped: u64) -> ReplayReport {
        let mut report = self.report;
        let mismatched: u64 = self.mismatches.values().sum();
        report.mismatched = mismatched;
        let mut notes = Vec::new();
        if mismatched > 0 {
            let kinds: Vec<String> = (self.mismatches.iter())
                .map(|((kind, here, there), n)| {
                    let side = |e: i32| {
                        if e == 0 {
                            "ok".to_string()
                        } else {
                            errno_name(e)
                        }
                    };
                    format!("{} {}→{} ×{n}", kind.name(), side(*there), side(*here))
                })
                .collect();
            notes.push(format!(
                "{} of the replay's calls came out otherwise than in the capture \
                 (kind capture→here): {}",
                group_thousands(mismatched),
                kinds.join(", ")
            ));
        }
        let refused = report.refused + refused_entries;
        if refused > 0 {
            notes.push(format!(
                "{} paths of the trace lead outside the run's directory: refused, nothing \
                 made there",
                group_thousands(refused)
            ));
        }
        for s in self.samples.iter().take(10) {
            notes.push(format!("replay: {s}"));
        }
        if self.reopened > 0 {
            notes.push(format!(
                "{} descriptors the traced thread did not open itself (inherited or \
                 another thread's) were opened by their path first",
                self.reopened
            ));
        }
        if dropped > 0 {
            notes.push(format!(
                "the capture counted {} calls outside the root (libraries, pipes, /proc...): \
                 not replayed",
                group_thousands(dropped)
            ));
        }
        report.notes = notes;
        report
    }
}

/// What a trace holds, read in one pass (for `capture --show`, sizes and validation).
#[derive(Debug, Default)]
pub struct Summary {
    pub root: PathBuf,
    pub calls: BTreeMap<Kind, u64>,
    pub errors: u64,
    pub read: u64,
    pub written: u64,
    pub threads: usize,
    pub files: usize,
    pub initial_entries: u64,
    pub initial_bytes: u64,
    /// Further names of files in the initial state.
    pub initial_links: u64,
    pub creates: u64,
    pub dropped: u64,
    pub duration_us: u64,
}

impl Summary {
    /// The trace in `path`, or the built-in demo.
    pub fn of(path: Option<&Path>) -> anyhow::Result<Summary> {
        let mut r = TraceReader::open(path)?;
        let mut s = Summary {
            root: r.root.clone(),
            ..Summary::default()
        };
        while let Some(e) = r.entry()? {
            s.initial_entries += 1;
            match e {
                Entry::File(_, size) => s.initial_bytes += size,
                Entry::HardLink(..) => s.initial_links += 1,
                _ => {}
            }
        }
        let (mut tids, mut files) = (HashSet::new(), HashSet::new());
        let mut c = Call::default();
        while r.call(&mut c)? {
            let kind = c.kind();
            *s.calls.entry(kind).or_default() += 1;
            tids.insert(c.tid);
            if !files.contains(&c.path) {
                files.insert(c.path.clone());
            }
            s.errors += u64::from(c.errno != 0);
            s.duration_us = s.duration_us.max(c.start_us + c.dur_us);
            let moved = c.result.max(0) as u64;
            match kind {
                Kind::Read => s.read += moved,
                Kind::Write | Kind::Copy | Kind::Sendfile => s.written += moved,
                Kind::Open if c.a & 0o100 != 0 => s.creates += 1,
                Kind::Mkdir | Kind::Symlink | Kind::Link => s.creates += 1,
                _ => {}
            }
        }
        s.threads = tids.len();
        s.files = files.len();
        s.dropped = r.totals.map_or(0, |t| t.1);
        Ok(s)
    }

    /// Calls a replay makes (all but the recorded-only kinds).
    pub fn replayed(&self) -> u64 {
        self.calls
            .iter()
            .filter(|(k, _)| k.replayed())
            .map(|(_, n)| n)
            .sum()
    }
}

/// What one replay did, for its notes (and the tests).
#[derive(Debug, Default)]
pub struct ReplayReport {
    /// Calls made, per kind name.
    pub calls: BTreeMap<&'static str, u64>,
    /// Calls per kind name the capture recorded (the replayed kinds).
    pub captured: BTreeMap<&'static str, u64>,
    /// Calls whose outcome differed from the capture's.
    pub mismatched: u64,
    pub refused: u64,
    pub notes: Vec<String>,
}

/// Recreates the trace's initial state below `dir` and replays it, outside any run: the
/// tests' way to look at what a replay leaves.
pub fn replay_into(
    trace: &Path,
    dir: BorrowedFd<'_>,
    rec: &mut PhaseRecorder,
) -> Result<ReplayReport, FsbenchError> {
    let mut replay = Replay::new(ReplayParams {
        trace: Some(trace.to_path_buf()),
        mode: Pace::Fast,
    });
    replay.setup(dir, 1, &Arc::new(AtomicBool::new(false)))?;
    replay.run_phase(0, dir, rec)?;
    let notes = replay.after_phase(0, dir)?.notes;
    let mut report = replay.report.take().unwrap_or_default();
    report.notes = notes;
    Ok(report)
}

/// The workload's state through one run.
pub struct Replay {
    params: ReplayParams,
    loaded: Option<Loaded>,
    report: Option<ReplayReport>,
    refused_entries: u64,
}

impl Replay {
    fn new(params: ReplayParams) -> Replay {
        Replay {
            params,
            loaded: None,
            report: None,
            refused_entries: 0,
        }
    }
}

impl Workload for Replay {
    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        Cow::Borrowed(PHASES)
    }

    fn expected_units(&self, _phase: usize) -> u64 {
        self.loaded.as_ref().map_or(0, Loaded::replayed_calls)
    }

    fn setup(
        &mut self,
        dir: BorrowedFd<'_>,
        _round: u32,
        _cancel: &Arc<AtomicBool>,
    ) -> Result<(), FsbenchError> {
        let loaded = Loaded::read(self.params.trace.as_deref())
            .map_err(|e| FsbenchError::InvalidInput(format!("{e:#}")))?;
        self.refused_entries = state::recreate(dir, &loaded.entries)?;
        self.loaded = Some(loaded);
        Ok(())
    }

    fn run_phase(
        &mut self,
        _phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        let loaded = self
            .loaded
            .as_ref()
            .ok_or_else(|| FsbenchError::Failed("replay: the trace was not loaded".into()))?;
        let outcomes = replay_threads(loaded, dir, self.params.mode == Pace::Think, rec);
        let mut added = Added::default();
        for (kind, n) in Kind::ALL.iter().zip(loaded.captured) {
            if kind.replayed() && n > 0 {
                added.report.captured.insert(kind.name(), n);
            }
        }
        let mut first_error = None;
        for outcome in outcomes {
            match outcome {
                Ok(r) => added.add(r, rec)?,
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        self.report = Some(added.into_report(self.refused_entries, loaded.dropped));
        Ok(())
    }

    fn after_phase(
        &mut self,
        _phase: usize,
        _dir: BorrowedFd<'_>,
    ) -> Result<PhaseOutput, FsbenchError> {
        let notes = self
            .report
            .as_mut()
            .map(|r| std::mem::take(&mut r.notes))
            .unwrap_or_default();
        Ok(PhaseOutput {
            notes,
            ..PhaseOutput::default()
        })
    }
}

/// Stops the other replay threads when a replay thread panics (they may wait for its calls).
struct StopOthersOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOthersOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

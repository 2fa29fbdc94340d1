//! The replay workload: a program's file-system calls, captured by `fsbench capture`, made
//! again on the filesystem under test. The untimed setup recreates the root's initial state;
//! the timed phase replays the calls, each traced process as a worker process and each traced
//! thread as a thread in it, or all as threads of fsbench's process (see [`engine`]).

mod compare;
mod engine;
mod load;
mod notes;
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
use super::{Need, PhaseInfo, PhaseOutput, SpaceNeed, Workload, WorkloadParams};
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::PhaseRecorder;
use fsbench_model::filesystem::Capability;
use fsbench_model::measurement::Figure;
use fsbench_model::units::group_thousands;
use fsbench_model::workload::WorkerMode;
use load::Loaded;
pub use state::{Snapshot, each_left_at, snapshot};
use trace::{Call, Entry, Kind, Program, TraceReader};

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
    /// Whether the traced processes are replayed as processes or all as threads.
    #[serde(default, skip_serializing_if = "crate::parallel::is_default_mode")]
    pub workers: WorkerMode,
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
    crate::parallel::WORKERS_OPTION,
];

const PRESETS: &[Preset] = &[Preset {
    name: "demo",
    values: &[],
    help: "a built-in trace (give trace=FILE for yours): sh making 50 small files, copying, \
           renaming, linking and removing them, 958 calls of 8 processes; under 0.1 s a run on tmpfs here",
}];

/// The replay workload's row in the registry.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "replay",
    summary: "a program's file-system calls captured by `fsbench capture`, replayed: \
              the root's initial state made untimed, then the calls, each traced process as a \
              process (or all as threads), each traced thread as a thread",
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
        workers: crate::parallel::workers_of(p),
    };
    params.validate()?;
    Ok(params)
}

pub const PHASES: &[PhaseInfo] = &[PhaseInfo::fixed("replay", "calls", true)];

/// The figure of the replay phase that holds the program's own time (as captured), which
/// the answer line sets the replay's time against.
pub const PROGRAM_TIME: &str = "program-time";

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
        let name = match self.mode {
            Pace::Fast => file,
            Pace::Think => format!("{file},think"),
        };
        match self.workers {
            WorkerMode::Processes => name,
            mode => format!("{name},workers={}", mode.name()),
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
                "replays {} calls of {} captured under {} ({file}), {pace}, on {}",
                group_thousands(s.replayed()),
                s.tasks(),
                s.root.display(),
                s.workers(self.workers),
            ),
            Err(e) => format!("replays {file}: {e:#}"),
        }
    }

    /// Reads the whole trace: a damaged one or one of another version is refused here.
    fn validate(&self) -> anyhow::Result<()> {
        Summary::of(self.trace.as_deref()).map(drop)
    }

    fn space_needed(&self) -> Option<SpaceNeed> {
        Summary::of(self.trace.as_deref()).ok()?.space_needed()
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        Cow::Borrowed(PHASES)
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(Replay::new(self.clone()))
    }

    /// Its workers: worker processes or threads (see [`Summary::workers`]).
    fn threads(&self) -> u32 {
        Summary::of(self.trace.as_deref()).map_or(1, |s| s.workers_count(self.workers) as u32)
    }

    fn worker_mode(&self) -> Option<WorkerMode> {
        Some(self.workers)
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

/// What a trace holds, read in one pass (for `capture --show`, sizes and validation).
#[derive(Debug, Default)]
pub struct Summary {
    pub root: PathBuf,
    pub calls: BTreeMap<Kind, u64>,
    pub errors: u64,
    pub read: u64,
    pub written: u64,
    pub threads: usize,
    /// The traced processes; none where the trace does not record them (before version 3).
    pub processes: Option<usize>,
    pub files: usize,
    pub initial_entries: u64,
    pub initial_bytes: u64,
    /// Further names of files in the initial state.
    pub initial_links: u64,
    /// The extended attributes of the initial state's entries.
    pub initial_xattrs: u64,
    /// Their names' and values' bytes, which the setup writes as it makes them.
    pub initial_xattr_bytes: u64,
    pub creates: u64,
    /// Bytes the replay's calls may write (their recorded lengths), for the space it needs.
    pub may_write: u64,
    pub dropped: u64,
    /// Calls not recorded, by reason: how many, one of them.
    pub skipped: Vec<(String, u64, Vec<u8>)>,
    pub duration_us: u64,
    /// What capture measured of the program as a whole (none in version 1 traces).
    pub program: Option<Program>,
}

impl Summary {
    /// The trace in `path`, or the built-in demo.
    pub fn of(path: Option<&Path>) -> anyhow::Result<Summary> {
        let mut r = TraceReader::open(path)?;
        let mut s = Summary {
            root: r.root.clone(),
            program: r.program.clone(),
            ..Summary::default()
        };
        let beyond = |what: &str| {
            invalid(format!(
                "trace {}: {what} add up to more than 16 EiB",
                path.map_or_else(|| "demo".into(), |p| p.display().to_string())
            ))
        };
        while let Some(e) = r.entry()? {
            s.initial_entries += 1;
            s.initial_xattrs += r.xattrs().len() as u64;
            for x in r.xattrs() {
                s.initial_xattr_bytes = (s.initial_xattr_bytes)
                    .checked_add(x.name.len() as u64 + x.size)
                    .ok_or_else(|| beyond("the initial state's attributes"))?;
            }
            match e {
                Entry::File(_, size, _) => {
                    s.initial_bytes = (s.initial_bytes.checked_add(size))
                        .ok_or_else(|| beyond("the initial state's files"))?;
                }
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
            files.insert(load::path_key(&c.path));
            s.errors += u64::from(c.errno != 0);
            s.duration_us = s.duration_us.max(c.start_us.saturating_add(c.dur_us));
            let moved = c.result.max(0) as u64;
            match kind {
                Kind::Read => s.read = s.read.saturating_add(moved),
                Kind::Write | Kind::Copy | Kind::Sendfile => {
                    s.written = s.written.saturating_add(moved);
                }
                Kind::Open if c.a & 0o100 != 0 => s.creates += 1,
                Kind::Mkdir | Kind::Symlink | Kind::Link => s.creates += 1,
                _ => {}
            }
            // What the replay may write: the recorded lengths, whatever the capture's results.
            if matches!(
                kind,
                Kind::Write | Kind::Copy | Kind::Sendfile | Kind::Fallocate | Kind::SetXattr
            ) {
                s.may_write = (s.may_write.checked_add(c.a))
                    .ok_or_else(|| beyond("the lengths its calls write"))?;
            }
        }
        s.processes = (r.records_processes()).then(|| {
            tids.iter()
                .map(|t| r.process_of(*t))
                .collect::<HashSet<_>>()
                .len()
        });
        s.threads = tids.len();
        s.files = files.len();
        s.dropped = r.totals.map_or(0, |t| t.1);
        s.skipped = std::mem::take(&mut r.skipped);
        Ok(s)
    }

    /// The space and inodes a replay needs: the initial state (its attributes too) and what
    /// its calls may write (`None`: beyond 16 EiB).
    pub fn space_needed(&self) -> Option<SpaceNeed> {
        let bytes = (self.initial_bytes)
            .checked_add(self.initial_xattr_bytes)?
            .checked_add(self.may_write)?
            .checked_add(1 << 20)?;
        Some(SpaceNeed::exactly(
            bytes,
            self.initial_entries + self.creates + 16,
        ))
    }

    /// Calls a replay makes: every call of the trace.
    pub fn replayed(&self) -> u64 {
        self.calls.values().sum()
    }

    /// How many workers replay it in `mode`: a worker process per traced process, or a
    /// thread per traced thread, at most 16.
    pub fn workers_count(&self, mode: WorkerMode) -> usize {
        let tasks = match mode {
            WorkerMode::Processes => self.processes.unwrap_or(1).min(self.threads),
            WorkerMode::Threads => self.threads,
        };
        tasks.min(engine::WORKERS_MAX)
    }

    /// What replays it in `mode`: `3 worker processes`, `5 threads`.
    pub fn workers(&self, mode: WorkerMode) -> String {
        let n = self.workers_count(mode) as u64;
        match mode {
            WorkerMode::Processes => notes::counted(n, "worker process"),
            WorkerMode::Threads => notes::counted(n, "thread"),
        }
    }

    /// Its traced processes and threads, as `3 processes, 5 threads` (threads alone where
    /// the trace does not record processes).
    pub fn tasks(&self) -> String {
        let threads = notes::counted(self.threads as u64, "thread");
        match self.processes {
            Some(p) => format!("{}, {threads}", notes::counted(p as u64, "process")),
            None => threads,
        }
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
    /// Entries of the tree the replay left that differ from the program's (none: the trace
    /// has no tree to compare with, or not one in the order capture writes).
    pub tree_differs: Option<u64>,
    pub notes: Vec<String>,
}

/// Recreates the trace's initial state below `dir` and replays it with `workers`, outside any
/// run: the tests' way to look at what a replay leaves.
pub fn replay_into(
    trace: &Path,
    dir: BorrowedFd<'_>,
    workers: WorkerMode,
    rec: &mut PhaseRecorder,
) -> Result<ReplayReport, FsbenchError> {
    let mut replay = Replay::new(ReplayParams {
        trace: Some(trace.to_path_buf()),
        mode: Pace::Fast,
        workers,
    });
    let cancel = rec.progress().cancel.clone();
    replay.setup(dir, 1, &cancel)?;
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
    /// The initial state's attributes that were not made.
    unmade_xattrs: state::Unmade,
    /// Where a crash-recorded run notes what the trace's syncs covered.
    oracle: Option<crate::oracle::Oracle>,
}

impl Replay {
    fn new(params: ReplayParams) -> Replay {
        Replay {
            params,
            loaded: None,
            report: None,
            refused_entries: 0,
            unmade_xattrs: state::Unmade::default(),
            oracle: None,
        }
    }
}

impl Workload for Replay {
    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        Cow::Borrowed(PHASES)
    }

    fn record_durability(&mut self, oracle: crate::oracle::Oracle) {
        self.oracle = Some(oracle);
    }

    fn expected_units(&self, _phase: usize) -> u64 {
        self.loaded.as_ref().map_or(0, Loaded::replayed_calls)
    }

    fn setup(
        &mut self,
        dir: BorrowedFd<'_>,
        _round: u32,
        cancel: &Arc<AtomicBool>,
    ) -> Result<(), FsbenchError> {
        // The calls first: a damaged trace is refused before anything is made.
        let trace = self.params.trace.as_deref();
        let mut loaded =
            Loaded::read(trace).map_err(|e| FsbenchError::InvalidInput(format!("{e:#}")))?;
        let made = state::recreate(dir, trace, cancel)?;
        self.refused_entries = made.refused;
        self.unmade_xattrs = made.unmade;
        loaded.others_may_move |= made.open;
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
        let think = self.params.mode == Pace::Think;
        // A crash-recorded run's promises are noted in fsbench's memory: its workers are threads.
        let workers = match self.oracle {
            Some(_) => WorkerMode::Threads,
            None => self.params.workers,
        };
        let oracle = self.oracle.as_ref();
        let outcomes = engine::replay(loaded, dir, think, oracle, workers, rec)?;
        let mut report = ReplayReport::default();
        for (kind, n) in Kind::ALL.iter().zip(loaded.captured) {
            if n > 0 {
                report.captured.insert(kind.name(), n);
            }
        }
        let mut tally = notes::Tally::default();
        let mut first_error = None;
        for outcome in outcomes {
            let r = match outcome {
                Ok(r) => r,
                Err(e) => {
                    first_error.get_or_insert(e);
                    continue;
                }
            };
            for (kind, n) in Kind::ALL.iter().zip(r.calls) {
                if n > 0 {
                    *report.calls.entry(kind.name()).or_default() += n;
                }
            }
            for (key, n) in &r.mismatches {
                if key.1 != 0 {
                    rec.add_errors(key.1, *n);
                }
            }
            tally.add(r);
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        report.mismatched = tally.mismatches.values().sum();
        report.refused = tally.refused;
        report.notes = notes::notes(&tally, self.refused_entries, loaded);
        report.notes.extend(self.unmade_xattrs.note());
        report.notes.extend(notes::workers(loaded, workers));
        self.report = Some(report);
        Ok(())
    }

    /// The notes, and the tree the replay left compared with the program's (untimed).
    fn after_phase(
        &mut self,
        _phase: usize,
        dir: BorrowedFd<'_>,
    ) -> Result<PhaseOutput, FsbenchError> {
        let mut notes = self
            .report
            .as_mut()
            .map(|r| std::mem::take(&mut r.notes))
            .unwrap_or_default();
        let program = self.loaded.as_ref().and_then(|l| l.program.as_ref());
        let figures = program
            .map(|p| Figure::new(PROGRAM_TIME, "s", false, p.own_us as f64 / 1e6))
            .into_iter()
            .collect();
        if self.loaded.as_ref().is_some_and(|l| l.left_entries > 0) {
            let (differ, note) = compare::tree(self.params.trace.as_deref(), dir).map_err(|e| {
                FsbenchError::Failed(format!("comparing the tree the replay left: {e:#}"))
            })?;
            notes.extend(note);
            if let Some(r) = self.report.as_mut() {
                r.tree_differs = differ;
            }
        }
        Ok(PhaseOutput {
            notes,
            figures,
            ..PhaseOutput::default()
        })
    }
}

//! Crash states: what each option costs in crash safety. A run's loop image is put behind
//! fsbench's own FUSE recorder ([`daemon`]), which logs every write, flush, discard and
//! zero-range the filesystem sends; the workload notes what its durability calls promised
//! (`fsbench_workloads::oracle`); afterwards, states a crash could have left are rebuilt
//! from the log ([`states`]) and checked on copies ([`check`]).

pub mod check;
pub mod daemon;
pub mod log;
pub mod recorder;
pub mod states;
pub mod undo;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use check::{Builder, Inspector, StateResult};
use fsbench_model::results::crash::CrashSummary;
use fsbench_workloads::oracle::{Fact, read_facts};
use states::StateSpec;

pub use recorder::{RecorderRecord, Recording};

/// What a recording's directory keeps of its check: the states chosen and what each showed.
#[derive(Debug, Serialize, Deserialize)]
pub struct Checked {
    pub seed: u64,
    pub states: Vec<StateSpec>,
    pub results: Vec<StateResult>,
}

fn checked_path(dir: &Path) -> PathBuf {
    dir.join("states.json")
}

/// How to check a recording.
pub struct Plan<'a> {
    pub inspector: Inspector,
    /// States to choose at most, and the seed to choose them with.
    pub limit: usize,
    pub seed: u64,
    /// Torn writes among the states.
    pub torn: bool,
    /// No state is started after this long.
    pub time_limit: Duration,
    /// States checked at once.
    pub workers: usize,
    pub cancel: &'a AtomicBool,
}

/// Chooses and checks the crash states of the recording in `dir`; says what they showed.
pub fn check_recording(dir: &Path, plan: &Plan) -> anyhow::Result<CrashSummary> {
    let log = log::Log::open(&recorder::log_path(dir))?;
    let facts = read_facts(&recorder::facts_path(dir))?;
    let states = states::choose(&log.records, &facts, plan.limit, plan.seed, plan.torn);
    let results = check_states(dir, &log, &facts, &states, plan)?;
    let summary = summarize(&log, &facts, &states, &results, plan);
    let kept = Checked {
        seed: plan.seed,
        states,
        results,
    };
    std::fs::write(checked_path(dir), serde_json::to_vec_pretty(&kept)?)
        .context("cannot write the states checked")?;
    Ok(summary)
}

/// Checks `states` in parallel: this thread builds their images in log order, `workers`
/// threads check them; at most two images a worker wait on disk.
fn check_states(
    dir: &Path,
    log: &log::Log,
    facts: &[Fact],
    states: &[StateSpec],
    plan: &Plan,
) -> anyhow::Result<Vec<StateResult>> {
    let work = dir.join("states");
    std::fs::create_dir_all(&work)?;
    let base = recorder::base_path(dir);
    let mut builder = Builder::new(log, base.exists().then_some(base.as_path()), &work)?;
    let mut order: Vec<&StateSpec> = states.iter().collect();
    order.sort_by_key(|s| (s.durable, s.id));
    let results = Mutex::new(Vec::new());
    let started = Instant::now();
    let workers = match plan.inspector.parallel() {
        true => plan.workers.max(1),
        false => 1,
    };
    let (send, receive) = mpsc::sync_channel::<(&StateSpec, PathBuf)>(workers);
    let receive = Mutex::new(receive);
    std::thread::scope(|scope| -> anyhow::Result<()> {
        // Dropped when this thread is done: the workers then finish what was sent and stop.
        let send = send;
        for _ in 0..workers {
            let (receive, results, inspector) = (&receive, &results, &plan.inspector);
            scope.spawn(move || {
                loop {
                    let next = receive.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok((spec, image)) = next else { break };
                    let result = inspector.check(spec, &image, facts);
                    let _ = std::fs::remove_file(&image);
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(result);
                }
            });
        }
        for spec in order {
            if started.elapsed() > plan.time_limit || plan.cancel.load(Ordering::Relaxed) {
                break;
            }
            let image = work.join(format!("state{}.img", spec.id));
            builder.build(spec, &image)?;
            if send.send((spec, image)).is_err() {
                break;
            }
        }
        Ok(())
    })?;
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|r| r.id);
    anyhow::ensure!(
        !plan.cancel.load(Ordering::Relaxed),
        fsbench_measure::error::FsbenchError::Interrupted
    );
    Ok(results)
}

/// At most this many lost files are named.
const NAMED_LOSSES: usize = 8;

fn summarize(
    log: &log::Log,
    facts: &[Fact],
    states: &[StateSpec],
    results: &[StateResult],
    plan: &Plan,
) -> CrashSummary {
    let checked: Vec<&StateResult> = results.iter().filter(|r| r.error.is_none()).collect();
    let count = |f: &dyn Fn(&StateResult) -> bool| checked.iter().filter(|r| f(r)).count() as u32;
    let mut lost_files: Vec<String> = Vec::new();
    for loss in checked.iter().flat_map(|r| &r.lost) {
        if lost_files.len() < NAMED_LOSSES && !lost_files.contains(loss) {
            lost_files.push(loss.clone());
        }
    }
    let points: std::collections::BTreeSet<u64> = states.iter().map(|s| s.at).collect();
    let flushes = (log.records.iter())
        .filter(|r| r.kind == log::Kind::Flush)
        .count();
    CrashSummary {
        states: checked.len() as u32,
        planned: states.len() as u32,
        unmountable: count(&|r| !r.mounted),
        inconsistent: count(&|r| r.mounted && r.clean_after == Some(false)),
        dirty_before: count(&|r| r.clean_before == Some(false)),
        lost: count(&|r| !r.lost.is_empty()),
        errors: (results.len() - checked.len()) as u32,
        lost_files,
        promises: facts
            .iter()
            .filter(|f| matches!(f, Fact::File { .. } | Fact::Entries { .. }))
            .count() as u32,
        points: points.len() as u32,
        records: log.records.len() as u64,
        flushes: flushes as u64,
        log_bytes: log.records.last().map_or(0, |r| r.end),
        seed: plan.seed,
        time_limited: results.len() < states.len(),
        ..CrashSummary::default()
    }
}

/// Writes the image of state `state` of the recording in `dir` (`None`: the whole log, the
/// run's final image) to `out`.
pub fn show(dir: &Path, state: Option<u32>, out: &Path) -> anyhow::Result<String> {
    let log = log::Log::open(&recorder::log_path(dir))?;
    let Some(id) = state else {
        let base = recorder::base_path(dir);
        let mut builder = Builder::new(&log, base.exists().then_some(base.as_path()), dir)?;
        let spec = StateSpec {
            id: 0,
            at: log.records.last().map_or(0, |r| r.end),
            durable: log.records.len(),
            upto: log.records.len(),
            how: states::How::InOrder,
        };
        builder.build(&spec, out)?;
        return Ok(format!("the whole log: {} records", log.records.len()));
    };
    let text = std::fs::read(checked_path(dir))
        .with_context(|| format!("{} holds no checked states", dir.display()))?;
    let checked: Checked = serde_json::from_slice(&text)?;
    let spec = (checked.states.iter())
        .find(|s| s.id == id)
        .with_context(|| format!("no state {id}: the recording has {}", checked.states.len()))?;
    let base = recorder::base_path(dir);
    let mut builder = Builder::new(&log, base.exists().then_some(base.as_path()), dir)?;
    builder.build(spec, out)?;
    Ok(spec.describe())
}

//! The replay as worker processes (`workers=processes`, the default): each traced process is
//! replayed in one worker process, forked before the phase, on threads of its own (its
//! traced threads' descriptors live there and nowhere else). The calls each traced thread
//! has made are counted in memory the worker processes share, so that a call waits for
//! another process's calls it depends on as it waits for another thread's; the flag of a
//! failure is the crew's. Each worker process records its calls, bytes and latencies into
//! its own recorder and hands them back, with what its threads saw ([`Replayed`]), when the
//! phase ends.

use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::hosts::{Host, hosts, lanes};
use super::{Done, Halt, Replayed, Shared, run_lanes};
use crate::parallel::shm::Region;
use crate::parallel::{Crew, Worker};
use crate::replay::load::Loaded;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::{PhaseRecorder, Progress};
use fsbench_model::workload::WorkerMode;

/// What every worker process shares: the trace, the run's directory, the traced threads'
/// counts of calls done, the phase's start, and the count of directories moved.
struct Common<'a> {
    loaded: &'a Loaded,
    dir: BorrowedFd<'a>,
    done: &'a [Done],
    think: bool,
    oracle: Option<&'a crate::oracle::Oracle>,
    /// When the phase's thread forked the workers; `start_ns` is the release's time since.
    forked: Instant,
    start_ns: &'a AtomicU64,
    /// Renames and directories removed so far, by any worker process, where directories are
    /// kept open.
    moved: Option<&'a AtomicU64>,
}

/// Replays `loaded` below `dir` as worker processes (see the module); each worker process's
/// threads' records, in order, or its error.
pub(super) fn replay(
    loaded: &Loaded,
    dir: BorrowedFd<'_>,
    think: bool,
    oracle: Option<&crate::oracle::Oracle>,
    rec: &mut PhaseRecorder,
) -> Result<Vec<Result<Replayed, FsbenchError>>, FsbenchError> {
    let threads = loaded.threads.len();
    if threads == 0 {
        return Ok(Vec::new());
    }
    // Sized for the trace's threads: the mapping is made once, before any worker starts.
    let region = Region::new(Region::room::<Done>(threads) + Region::room::<AtomicU64>(2) + 128)?;
    let [start_ns, moved] = region.take::<AtomicU64>(2) else {
        unreachable!("a region's take gives as many as asked")
    };
    let common = Common {
        loaded,
        dir,
        done: region.take::<Done>(threads),
        think,
        oracle,
        forked: Instant::now(),
        start_ns,
        moved: super::keeps_dirs(loaded, dir).then_some(moved),
    };
    let keep = [dir];
    let crew = Crew::new(WorkerMode::Processes, &keep);
    let ran = crew.run(rec, hosts(&loaded.processes), |w, host| {
        host_process(w, host, &common)
    })?;
    rec.ran(ran.from, ran.to);
    let mut outcomes = Vec::new();
    for outcome in ran.outcomes {
        match outcome {
            Ok(records) => outcomes.extend(records.into_iter().map(Ok)),
            Err(e) => outcomes.push(Err(e)),
        }
    }
    Ok(outcomes)
}

/// One worker process: from the start line, its traced threads on `host.lanes` threads; their
/// count of calls is published every poll through the worker's recorder, which gets their
/// latencies, calls and bytes at the end. Its threads' records, or the first one's error.
fn host_process(
    w: &mut Worker<'_>,
    host: Host,
    common: &Common<'_>,
) -> Result<Vec<Replayed>, FsbenchError> {
    let failed = w.halt();
    let user = w.rec().progress().cancel.clone();
    w.start()?;
    let shared = Shared {
        loaded: common.loaded,
        dir: common.dir,
        done: common.done,
        think: common.think,
        halt: &Halt {
            user: &user,
            failed,
        },
        oracle: common.oracle,
        start: released(common),
        umask: common.loaded.program.as_ref().map(|p| p.umask),
        moved: common.moved,
    };
    let rec = w.rec();
    let mut published = 0;
    let pool = run_lanes(
        &shared,
        lanes(&host.threads, host.lanes),
        &Progress::default(),
        |units| {
            // The user's stop reaches the worker otherwise (it is killed).
            let _ = rec.units_done(units.saturating_sub(published), 0);
            published = units;
        },
    )?;
    pool.record(rec, published).into_iter().collect()
}

/// When the workers were released, the same instant in every worker process: the first
/// one past the start line notes it (think mode's schedule runs from it).
fn released(common: &Common<'_>) -> Instant {
    // 1 ns late at most: 0 says nobody noted it yet.
    let now = (common.forked.elapsed().as_nanos() as u64).max(1);
    let first =
        match (common.start_ns).compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => now,
            Err(earlier) => earlier,
        };
    common.forked + Duration::from_nanos(first)
}

//! One rank's share of a run: check the target, make its own directory (or share the one
//! tree), run every phase between barriers (on another rank's files where `shift` says so),
//! remove what it made.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};

use super::aggregate::{self, RankPhase};
use super::comm::{Comm, Failure};
use crate::runner::observer::{Diagnostic, Observer};
use crate::runner::phases::{PhaseFailure, PhaseSettings, run_phase};
use fsbench_measure::measure::{PhaseRecorder, Progress, sync_and_drop_caches};
use fsbench_measure::rmtree;
use fsbench_model::results::PhaseRecord;
use fsbench_model::workload::{PhaseInfo, WorkloadSpec};
use fsbench_workloads::tree::Stonewall;
use fsbench_workloads::{Params, RankShare, Workload};

/// The file rank 0 writes in the run's directory; every rank must read the same token there.
pub(crate) const TOKEN_FILE: &str = ".fsbench-mpi-token";

/// How ranks share the work (the same for every run of a suite).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MpiOptions {
    /// One tree for all ranks, rank 0 making its directories, every rank adding its own files
    /// (mdtest without `-u`), instead of a directory and tree per rank.
    pub shared_dir: bool,
    /// Stat, read and remove phases act on rank (r + K) mod N's files; `None`: the ranks per
    /// node (mdtest `-N`).
    pub shift: Option<usize>,
    /// Stop file create at this many seconds; wear-out to the ranks' maximum (mdtest `-W`).
    pub stonewall: Option<f64>,
}

/// A run, as rank 0 tells the others.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Job {
    pub(crate) spec: WorkloadSpec,
    pub(crate) dir: PathBuf,
    pub(crate) token: String,
    pub(crate) label: String,
    /// The run's round (seeds a workload's random offsets as without MPI).
    pub(crate) round: u32,
    pub(crate) settle: bool,
    pub(crate) options: MpiOptions,
    /// The run's target removes what a run made file by file (a directory): a failed phase
    /// says so before the ranks do, as without MPI.
    #[serde(default)]
    pub(crate) removes_files: bool,
}

/// The one tree of every rank under `--shared-dir`.
const SHARED_TREE: &str = "tree.shared";

/// This rank's share of `job`. On rank 0 `records` gets the phases' records over every rank,
/// whatever happened (a failed phase's too, where every rank sent one, as without MPI);
/// elsewhere nothing. Every rank removes what it made, whatever happened.
pub(crate) fn run_share(
    comm: &Comm,
    job: &Job,
    progress: &Arc<Progress>,
    observer: &mut dyn Observer,
    records: &mut Vec<PhaseRecord>,
) -> anyhow::Result<()> {
    let top = comm.barrier(open_checked(&job.dir, &job.token))?;
    let own = own_name(job, comm.rank);
    let made = comm.barrier(make_own(&top, job, own.as_deref()));
    let outcome = made.and_then(|()| run_phases(comm, job, &top, progress, observer, records));
    // Every rank has left its phases here (they end at a barrier): no rank adds files to a
    // shared tree while rank 0 removes it.
    let removed = own.as_deref().map_or(Ok(()), |own| {
        remove_own(&top, own).with_context(|| {
            format!(
                "cannot remove {}",
                job.dir
                    .join(String::from_utf8_lossy(own).as_ref())
                    .display()
            )
        })
    });
    let removed = comm.barrier(removed);
    outcome?;
    removed
}

fn open_dir(at: impl AsFd, path: &Path) -> anyhow::Result<OwnedFd> {
    rustix::fs::openat(
        at,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", path.display()))
}

/// The run's directory, if it is the one rank 0 made (the same token in it).
fn open_checked(dir: &Path, token: &str) -> anyhow::Result<OwnedFd> {
    let fd = open_dir(rustix::fs::CWD, dir)?;
    let found = std::fs::read_to_string(dir.join(TOKEN_FILE)).unwrap_or_default();
    if found != token {
        anyhow::bail!(
            "does not see rank 0's target directory {} (its token file is missing or differs): \
             every rank must see the same directory, e.g. on a shared filesystem",
            dir.display()
        );
    }
    Ok(fd)
}

/// The entry a rank owns in the run's directory and removes at the end: its directory; with
/// a shared directory rank 0 owns the one tree (every rank's files are in it), the others
/// nothing.
fn own_name(job: &Job, rank: usize) -> Option<Vec<u8>> {
    match job.options.shared_dir {
        true => (rank == 0).then(|| SHARED_TREE.as_bytes().to_vec()),
        false => Some(format!("rank.{rank}").into_bytes()),
    }
}

/// Makes the rank's directory (a shared tree's root is made in dir-create, by rank 0).
fn make_own(top: &OwnedFd, job: &Job, own: Option<&[u8]>) -> anyhow::Result<()> {
    let Some(own) = own.filter(|_| !job.options.shared_dir) else {
        return Ok(());
    };
    rustix::fs::mkdirat(top, own, Mode::from(0o755)).with_context(|| {
        format!(
            "cannot create {}",
            job.dir
                .join(String::from_utf8_lossy(own).as_ref())
                .display()
        )
    })
}

/// Removes the rank's own entry; nothing to remove is fine (a failure before it was made).
fn remove_own(top: &OwnedFd, own: &[u8]) -> anyhow::Result<()> {
    // Its own progress: a signal that stopped the run must not stop the cleanup.
    let mut rec = PhaseRecorder::start("cleanup", Arc::new(Progress::default()));
    rmtree::remove(top.as_fd(), own, &mut rec)?;
    let m = rec.finish();
    match m.errors.iter().find(|(e, _)| e.as_str() != "ENOENT") {
        Some((e, n)) => anyhow::bail!("{e} ×{n}: {}", m.failures.join("; ")),
        None => Ok(()),
    }
}

/// The workload instance of `rank`, in its own directory or in the one every rank shares,
/// with the run's stonewall.
fn instance(
    job: &Job,
    spec: &Params,
    rank: usize,
    stonewall: Option<&Stonewall>,
) -> Box<dyn Workload> {
    spec.rank_instance(&RankShare {
        rank,
        shared_dir: job.options.shared_dir.then_some(SHARED_TREE),
        stonewall,
    })
}

/// Every phase between barriers; each rank's record goes to rank 0 at the barrier after it,
/// where rank 0 adds their aggregate to `records`.
fn run_phases(
    comm: &Comm,
    job: &Job,
    top: &OwnedFd,
    progress: &Arc<Progress>,
    observer: &mut dyn Observer,
    records: &mut Vec<PhaseRecord>,
) -> anyhow::Result<()> {
    let shift = job.options.shift.unwrap_or(comm.local_size) % comm.size;
    let other = (comm.rank + shift) % comm.size;
    let spec = comm.barrier(Params::of(&job.spec))?; // one rank leaving alone: the others wait
    let shifted_phases = spec.shifted_phases(job.options.shared_dir);
    let shifts = shift != 0 && !shifted_phases.is_empty();
    let dir_of = |rank: usize| -> anyhow::Result<OwnedFd> {
        if job.options.shared_dir {
            Ok(rustix::io::dup(top)?)
        } else {
            open_dir(top, Path::new(&format!("rank.{rank}")))
        }
    };
    let own_dir = comm.barrier(dir_of(comm.rank))?;
    let stonewall = job
        .options
        .stonewall
        .map(|secs| Stonewall::new(Duration::from_secs_f64(secs), super::comm::agree_max));
    let mut own = instance(job, &spec, comm.rank, stonewall.as_ref());
    // The workload's untimed set-up on every rank (io's checks, before any I/O).
    let set_up = own.setup(own_dir.as_fd(), job.round, &progress.cancel);
    comm.barrier(set_up.map_err(anyhow::Error::from))?;
    // The other rank's directory exists: every rank made its own before this barrier.
    let mut theirs = match shifts {
        true => Some((
            comm.barrier(dir_of(other))?,
            instance(job, &spec, other, stonewall.as_ref()),
        )),
        false => None,
    };
    let settings = PhaseSettings {
        settle: false,
        progress: progress.clone(),
    };
    let phases = own.phases();
    for (index, info) in phases.iter().enumerate() {
        let caches_dropped = drop_node_caches(comm, job, top)?;
        let shifted = shifted_phases.contains(&info.name.as_ref());
        let (workload, dir, acted_on) = match &mut theirs {
            Some((dir, w)) if shifted => (w.as_mut(), &*dir, other),
            _ => (own.as_mut(), &own_dir, comm.rank),
        };
        let called_ns = realtime_ns();
        let outcome = run_phase(workload, index, dir, &settings, &job.label, observer);
        // The phase's work: from its workers' release (after their buffers were filled, as
        // IOR fills its buffer before its timers; io opens its files after it, as IOR) to
        // its last close, not once its figures were summed.
        let (start_ns, end_ns) = work_span_ns(progress, called_ns);
        let stonewalled =
            (stonewall.as_ref()).filter(|_| spec.stonewall_phase().is_ok_and(|p| p == info.name));
        if let Some(s) = stonewalled {
            // Whatever ended this rank's phase, the others wait for its word.
            s.abandon();
        }
        let mine = sent(outcome, |mut record, failed| {
            record.caches_dropped = caches_dropped;
            RankPhase {
                rank: comm.rank,
                record,
                start_ns,
                end_ns,
                acted_on,
                stonewall: stonewalled.and_then(|s| s.agreed.get().copied()),
                failed,
            }
        });
        if let Err(e) = gather(comm, job, info, mine, records) {
            cleaning_up(comm, job, &e, observer);
            return Err(e);
        }
    }
    Ok(())
}

/// A phase failed with `error` and every rank now removes what it made ([`run_share`]), which
/// for millions of files takes a while: rank 0 says so first, once for all ranks, as without
/// MPI where the target removes files one by one.
fn cleaning_up(comm: &Comm, job: &Job, error: &anyhow::Error, observer: &mut dyn Observer) {
    if comm.rank != 0 || !job.removes_files {
        return;
    }
    let ranks = match job.options.shared_dir {
        true => "rank 0 the ranks' shared tree, which holds every rank's files".to_string(),
        false => format!("each of the {} ranks its own rank.<r>", comm.size),
    };
    observer.diagnostic(&Diagnostic::CleaningUp {
        label: &job.label,
        error,
        dir: &job.dir,
        ranks: Some(&ranks),
    });
}

/// This rank's outcome of a phase as it goes to rank 0: its record (made `phase`) or its error,
/// with what the phase measured up to its failure where it did (a fio job whose verify failed:
/// every job's figures), which the run keeps as without MPI.
fn sent(
    outcome: Result<PhaseRecord, PhaseFailure>,
    phase: impl Fn(PhaseRecord, bool) -> RankPhase,
) -> Result<Vec<u8>, Failure> {
    let bytes = |p: RankPhase| serde_json::to_vec(&p).map_err(|e| Failure::of(&e.into()));
    match outcome {
        Ok(record) => bytes(phase(record, false)),
        Err(failure) => {
            let error = Failure::of(&failure.error.into());
            match failure.partial.map(|p| bytes(phase(*p, true))) {
                Some(Ok(partial)) => Err(error.with_payload(partial)),
                _ => Err(error),
            }
        }
    }
}

/// When the phase's work began and ended, on the real-time clock (from the call to now if
/// it is not known).
fn work_span_ns(progress: &Progress, called_ns: u64) -> (u64, u64) {
    let span = progress.work_span.lock().ok().and_then(|mut e| e.take());
    let now = realtime_ns();
    let ago = |at: Instant| now.saturating_sub(at.elapsed().as_nanos() as u64);
    match span {
        Some((began, ended)) => (ago(began).max(called_ns), ago(ended)),
        None => (called_ns, now),
    }
}

/// One rank per node drops the node's caches; everyone waits for every node. Whether this
/// rank's node dropped them.
fn drop_node_caches(comm: &Comm, job: &Job, top: &OwnedFd) -> anyhow::Result<bool> {
    let dropped = job.settle && comm.local_rank == 0 && sync_and_drop_caches(top);
    let drops = comm.exchange(Ok(vec![dropped as u8]))?;
    let my_host = &comm.hosts[comm.rank];
    Ok((drops.iter().zip(&comm.hosts)).any(|(d, h)| h == my_host && d.first() == Some(&1)))
}

/// Every rank's record of phase `info` (`mine`, serialized; a failed rank's partial one with
/// its error) at the barrier after it; on rank 0 their aggregate, added to `records` where
/// the phase is kept ([`aggregate::exchanged`]).
fn gather(
    comm: &Comm,
    job: &Job,
    info: &PhaseInfo,
    mine: Result<Vec<u8>, Failure>,
    records: &mut Vec<PhaseRecord>,
) -> anyhow::Result<()> {
    let all = comm.exchange_keeping(mine);
    if comm.rank == 0 {
        match aggregate::exchanged(&all, info, &comm.hosts, job.options.stonewall) {
            Ok(record) => records.extend(record),
            Err(e) if all.error.is_none() => {
                return Err(anyhow::Error::from(e).context("a rank's phase record does not parse"));
            }
            Err(_) => {}
        }
    }
    all.error.map_or(Ok(()), Err)
}

fn realtime_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

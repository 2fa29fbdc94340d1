//! The ranks' communication: every barrier is an exchange of each rank's outcome, so a rank's
//! error ends every rank at the next barrier instead of leaving the others waiting forever.

use std::cell::Cell;

use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};

use fsbench_measure::error::{FsbenchError, WireError};

/// This process's place among the ranks.
pub(crate) struct Comm {
    // Finalizes MPI when dropped, after everything else.
    _universe: Universe,
    world: SimpleCommunicator,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    /// Ranks on this node, and this rank's place among them (local rank 0 drops caches).
    pub(crate) local_rank: usize,
    pub(crate) local_size: usize,
    /// Every rank's host name, by rank.
    pub(crate) hosts: Vec<String>,
    /// An exchange carried a rank's failure since [`Comm::take_told`] last looked: rank 0
    /// has every failed rank's error (and prints it).
    told: Cell<bool>,
}

impl Comm {
    /// Joins the ranks the launcher started; a panic from now on aborts them all.
    pub(crate) fn init() -> anyhow::Result<Comm> {
        let universe = mpi::initialize()
            .ok_or_else(|| FsbenchError::Failed("MPI was already initialized".into()))?;
        let world = universe.world();
        let node = world.split_shared(world.rank());
        let rank = world.rank() as usize;
        let default_hook = std::panic::take_hook();
        // A panicking rank would leave the others in a collective forever: abort them all.
        std::panic::set_hook(Box::new(move |info| {
            default_hook(info);
            fsbench_measure::diag::say(&format!(
                "fsbench: rank {rank} panicked; aborting every rank"
            ));
            SimpleCommunicator::world().abort(101);
        }));
        let mut comm = Comm {
            rank,
            size: world.size() as usize,
            local_rank: node.rank() as usize,
            local_size: node.size() as usize,
            hosts: Vec::new(),
            told: Cell::new(false),
            world,
            _universe: universe,
        };
        let host = rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned();
        let hosts = comm.all_gather(host.as_bytes());
        comm.hosts = hosts
            .into_iter()
            .map(|h| String::from_utf8_lossy(&h).into_owned())
            .collect();
        Ok(comm)
    }

    /// `rank N on HOST`, for messages.
    pub(crate) fn who(&self, rank: usize) -> String {
        format!("rank {rank} on {}", self.hosts[rank])
    }

    /// Distinct hosts the ranks run on.
    pub(crate) fn nodes(&self) -> usize {
        let mut hosts = self.hosts.clone();
        hosts.sort();
        hosts.dedup();
        hosts.len()
    }

    /// Every rank's bytes, by rank (a collective: every rank must call it).
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let len = mine.len() as i32;
        let mut counts = vec![0i32; self.size];
        self.world.all_gather_into(&len, &mut counts[..]);
        let displs: Vec<i32> = counts
            .iter()
            .scan(0, |at, &c| {
                let start = *at;
                *at += c;
                Some(start)
            })
            .collect();
        let total = counts.iter().map(|&c| c as usize).sum();
        let mut all = vec![0u8; total];
        let mut partition = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        self.world.all_gather_varcount_into(mine, &mut partition);
        counts
            .iter()
            .zip(&displs)
            .map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec())
            .collect()
    }

    /// The barrier of every step: each rank gives its outcome; every rank gets every rank's
    /// payload, or, if any rank failed, an error naming each failed rank, its host and error,
    /// of the failed ranks' kind (so every rank exits with their code).
    pub(crate) fn exchange(&self, mine: Result<Vec<u8>, Failure>) -> anyhow::Result<Vec<Vec<u8>>> {
        let all = self.exchange_keeping(mine);
        match all.error {
            Some(e) => Err(e),
            None => Ok(all.payloads),
        }
    }

    /// [`Comm::exchange`] that keeps every rank's payload beside the error: a failed rank's
    /// is what it measured before it failed (empty where it measured nothing).
    pub(crate) fn exchange_keeping(&self, mine: Result<Vec<u8>, Failure>) -> Exchanged {
        let framed = frame(mine);
        let mut failed: Vec<(usize, WireError)> = Vec::new();
        let payloads = (self.all_gather(&framed).into_iter().enumerate())
            .map(|(r, mut m)| match m.first() {
                Some(&1) => {
                    let (error, payload) = unframe_failure(&m);
                    failed.push((r, error));
                    payload
                }
                _ => m.split_off(1.min(m.len())),
            })
            .collect();
        if !failed.is_empty() {
            self.told.set(true);
        }
        Exchanged {
            payloads,
            error: self.failed_ranks(&failed),
            failed: (failed.into_iter())
                .map(|(r, e)| (r, FsbenchError::from(e).to_string()))
                .collect(),
        }
    }

    /// Whether an exchange carried a rank's failure to rank 0 since the last call.
    pub(crate) fn take_told(&self) -> bool {
        self.told.replace(false)
    }

    /// The error of the ranks that failed: each named with its host and error, of their kind
    /// where they agree. A full disk keeps its fields (the first rank's), named by the ranks,
    /// so that rank 0 can say what to do about it for the target; an interruption keeps its
    /// kind (exit 130) and names the ranks it reached.
    fn failed_ranks(&self, failed: &[(usize, WireError)]) -> Option<anyhow::Error> {
        let (_, first) = failed.first()?;
        let same = (failed.iter())
            .all(|(_, e)| std::mem::discriminant(e) == std::mem::discriminant(first));
        if same && matches!(first, WireError::DiskFull { .. } | WireError::Interrupted) {
            let ranks = failed.iter().map(|(r, _)| self.who(*r));
            let error = anyhow::Error::from(FsbenchError::from(first.clone()));
            return Some(error.context(ranks.collect::<Vec<_>>().join(", ")));
        }
        // Ranks with the same error are named together (every rank's setup refusing the same
        // spec is one error).
        let mut said: Vec<(String, Vec<String>)> = Vec::new();
        for (r, e) in failed {
            let text = FsbenchError::from(e.clone()).to_string();
            match said.iter_mut().find(|(t, _)| *t == text) {
                Some((_, ranks)) => ranks.push(self.who(*r)),
                None => said.push((text, vec![self.who(*r)])),
            }
        }
        let message = (said.iter())
            .map(|(text, ranks)| format!("{}: {text}", ranks.join(", ")))
            .collect::<Vec<_>>()
            .join("; ");
        Some(
            match first {
                WireError::InvalidInput(_) if same => FsbenchError::InvalidInput(message),
                _ => FsbenchError::Failed(message),
            }
            .into(),
        )
    }

    /// [`Comm::exchange`] of a step's `anyhow` outcome with nothing to share.
    pub(crate) fn barrier<T>(&self, outcome: anyhow::Result<T>) -> anyhow::Result<T> {
        match outcome {
            Ok(v) => self.exchange(Ok(Vec::new())).map(|_| v),
            Err(e) => Err(self.failed(e)),
        }
    }

    /// [`Comm::exchange`] of a step's `anyhow` outcome: every rank's payload.
    pub(crate) fn barrier_sharing(
        &self,
        outcome: anyhow::Result<Vec<u8>>,
    ) -> anyhow::Result<Vec<Vec<u8>>> {
        match outcome {
            Ok(payload) => self.exchange(Ok(payload)),
            Err(e) => Err(self.failed(e)),
        }
    }

    /// This rank's own error, told to the others; it keeps its kind (and exit code) here
    /// where no other rank failed, else it is the error naming every failed rank (rank 0
    /// prints it: one rank's error must not hide another's).
    fn failed(&self, e: anyhow::Error) -> anyhow::Error {
        match self.exchange_keeping(Err(Failure::of(&e))) {
            Exchanged {
                error: Some(all),
                failed,
                ..
            } if failed.len() > 1 => all,
            _ => e.context(self.who(self.rank)),
        }
    }

    /// Rank 0's bytes, on every rank (`mine` is ignored elsewhere).
    pub(crate) fn broadcast(&self, mine: Vec<u8>) -> Vec<u8> {
        let root = self.world.process_at_rank(0);
        let mut len = mine.len() as u64;
        root.broadcast_into(&mut len);
        let mut buf = if self.rank == 0 {
            mine
        } else {
            vec![0u8; len as usize]
        };
        root.broadcast_into(&mut buf[..]);
        buf
    }
}

/// The stonewall's agreement (a collective, mdtest's `MPI_Allreduce` of `MPI_MAX`): the
/// largest count of any rank, or `u64::MAX` if a rank failed. A plain function on the world
/// communicator, so that the workload can hold it without holding the [`Comm`].
pub(crate) fn agree_max(count: u64, failed: bool) -> u64 {
    let mine = if failed { u64::MAX } else { count };
    let mut most = 0u64;
    SimpleCommunicator::world().all_reduce_into(&mine, &mut most, SystemOperation::max());
    most
}

/// Every rank's payload at a barrier and, if any rank failed, the error naming them.
pub(crate) struct Exchanged {
    pub(crate) payloads: Vec<Vec<u8>>,
    pub(crate) error: Option<anyhow::Error>,
    /// Each failed rank and its error, by rank.
    pub(crate) failed: Vec<(usize, String)>,
}

/// A rank's outcome as sent: `0` and the payload, or `1`, the error's length in 4 bytes, the
/// error (JSON) and the payload.
fn frame(mine: Result<Vec<u8>, Failure>) -> Vec<u8> {
    match mine {
        Ok(payload) => [&[0u8][..], &payload].concat(),
        Err(f) => {
            let error = serde_json::to_vec(&f.error).expect("an error serializes");
            let len = (error.len() as u32).to_le_bytes();
            [&[1u8][..], &len, &error, &f.payload].concat()
        }
    }
}

/// A failed rank's outcome as [`frame`] sent it: its error and payload (an error that does
/// not parse is said as such, never lost).
fn unframe_failure(framed: &[u8]) -> (WireError, Vec<u8>) {
    let len = (framed.get(1..5))
        .and_then(|b| b.try_into().ok())
        .map_or(0, |b| u32::from_le_bytes(b) as usize);
    let rest = framed.get(5..).unwrap_or_default();
    let (error, payload) = rest.split_at(len.min(rest.len()));
    let error = serde_json::from_slice(error)
        .unwrap_or_else(|e| WireError::Failed(format!("its error did not arrive whole ({e})")));
    (error, payload.to_vec())
}

/// A rank's error as the others get it, and what it measured before it failed (a phase's
/// partial record, for rank 0 to keep), if anything.
pub(crate) struct Failure {
    error: WireError,
    payload: Vec<u8>,
}

impl Failure {
    pub(crate) fn of(e: &anyhow::Error) -> Failure {
        Failure {
            error: WireError::of(e),
            payload: Vec::new(),
        }
    }

    /// This failure carrying `payload`, what the rank measured before it failed.
    pub(crate) fn with_payload(self, payload: Vec<u8>) -> Failure {
        Failure { payload, ..self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_unframes_with_its_error_and_payload() {
        let failure = Failure::of(&FsbenchError::InvalidInput("bad: ünï".into()).into())
            .with_payload(b"{\"record\":1}".to_vec());
        let framed = frame(Err(failure));
        let (error, payload) = unframe_failure(&framed);
        assert_eq!(error, WireError::InvalidInput("bad: ünï".into()));
        assert_eq!(payload, b"{\"record\":1}");
        // A full disk keeps its fields, to be given the target's remedy.
        let full = FsbenchError::DiskFull {
            phase: "io".into(),
            ops: 7,
            errno: "ENOSPC".into(),
            remedy: "",
        };
        let (error, payload) = unframe_failure(&frame(Err(Failure::of(&full.into()))));
        let WireError::DiskFull { phase, ops, errno } = error else {
            panic!("{error:?}")
        };
        assert_eq!(
            (phase.as_str(), ops, errno.as_str(), payload.len()),
            ("io", 7, "ENOSPC", 0)
        );
        // Cut short: said as such, nothing invented.
        let (error, payload) = unframe_failure(&framed[..framed.len() - 14]);
        assert!(matches!(error, WireError::Failed(m) if m.contains("did not arrive whole")));
        assert_eq!(payload.len(), 0);
        assert!(matches!(unframe_failure(&[1, 5]).0, WireError::Failed(_)));
    }
}

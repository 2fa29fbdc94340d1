//! The ranks' communication: every barrier is an exchange of each rank's outcome, so a rank's
//! error ends every rank at the next barrier instead of leaving the others waiting forever.

use std::cell::Cell;

use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};

use fsbench_measure::error::{FsbenchError, exit_code_of};

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
        let mut failed: Vec<(usize, u8, String)> = Vec::new();
        let payloads = (self.all_gather(&framed).into_iter().enumerate())
            .map(|(r, mut m)| match m.first() {
                Some(&1) => {
                    let (code, message, payload) = unframe_failure(&m);
                    failed.push((r, code, message));
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
            failed: failed.into_iter().map(|(r, _, m)| (r, m)).collect(),
        }
    }

    /// Whether an exchange carried a rank's failure to rank 0 since the last call.
    pub(crate) fn take_told(&self) -> bool {
        self.told.replace(false)
    }

    /// The error of the ranks that failed (rank, exit code, message): each named with its host
    /// and error, of their kind where they agree.
    fn failed_ranks(&self, failed: &[(usize, u8, String)]) -> Option<anyhow::Error> {
        let &(_, code, _) = failed.first()?;
        let same = failed.iter().all(|f| f.1 == code);
        let message = failed
            .iter()
            .map(|(r, _, m)| format!("{}: {m}", self.who(*r)))
            .collect::<Vec<_>>()
            .join("; ");
        Some(
            match code {
                130 if same => FsbenchError::Interrupted,
                2 if same => FsbenchError::InvalidInput(message),
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

    /// This rank's own error, told to the others; it keeps its kind (and exit code) here.
    fn failed(&self, e: anyhow::Error) -> anyhow::Error {
        let _ = self.exchange(Err(Failure::of(&e)));
        e.context(self.who(self.rank))
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

/// A rank's outcome as sent: `0` and the payload, or `1`, the exit code, the message's length
/// in 4 bytes, the message and the payload.
fn frame(mine: Result<Vec<u8>, Failure>) -> Vec<u8> {
    match mine {
        Ok(payload) => [&[0u8][..], &payload].concat(),
        Err(f) => {
            let len = (f.message.len() as u32).to_le_bytes();
            [&[1u8, f.code][..], &len, f.message.as_bytes(), &f.payload].concat()
        }
    }
}

/// A failed rank's outcome as [`frame`] sent it: its exit code, message and payload.
fn unframe_failure(framed: &[u8]) -> (u8, String, Vec<u8>) {
    let code = framed.get(1).copied().unwrap_or(1);
    let len = (framed.get(2..6))
        .and_then(|b| b.try_into().ok())
        .map_or(0, |b| u32::from_le_bytes(b) as usize);
    let rest = framed.get(6..).unwrap_or_default();
    let (message, payload) = rest.split_at(len.min(rest.len()));
    let message = String::from_utf8_lossy(message).into_owned();
    (code, message, payload.to_vec())
}

/// A rank's error as the others get it: its exit code and one line, and what it measured
/// before it failed (a phase's partial record, for rank 0 to keep), if anything.
pub(crate) struct Failure {
    code: u8,
    message: String,
    payload: Vec<u8>,
}

impl Failure {
    pub(crate) fn of(e: &anyhow::Error) -> Failure {
        Failure {
            code: exit_code_of(e),
            message: format!("{e:#}"),
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
    fn a_failure_unframes_with_its_code_message_and_payload() {
        let failure = Failure::of(&FsbenchError::InvalidInput("bad: ünï".into()).into())
            .with_payload(b"{\"record\":1}".to_vec());
        let framed = frame(Err(failure));
        let (code, message, payload) = unframe_failure(&framed);
        assert_eq!((code, message.as_str()), (2, "bad: ünï"));
        assert_eq!(payload, b"{\"record\":1}");
        // Without a payload, and cut short: what is there, nothing invented.
        let (_, message, payload) = unframe_failure(&framed[..framed.len() - 12]);
        assert_eq!((message.as_str(), payload.len()), ("bad: ünï", 0));
        assert_eq!(unframe_failure(&[1, 5]), (5, String::new(), Vec::new()));
    }
}

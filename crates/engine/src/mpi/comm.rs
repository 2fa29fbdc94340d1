//! The ranks' communication: every barrier is an exchange of each rank's outcome, so a rank's
//! error ends every rank at the next barrier instead of leaving the others waiting forever.

use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};

use fsbench_measure::error::FsbenchError;

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
        let framed = match mine {
            Ok(mut payload) => {
                payload.insert(0, 0);
                payload
            }
            Err(f) => [&[1u8, f.code][..], f.message.as_bytes()].concat(),
        };
        let all = self.all_gather(&framed);
        let failed: Vec<(usize, u8, String)> = all
            .iter()
            .enumerate()
            .filter(|(_, m)| m.first() == Some(&1))
            .map(|(r, m)| (r, m[1], String::from_utf8_lossy(&m[2..]).into_owned()))
            .collect();
        let Some(&(_, code, _)) = failed.first() else {
            return Ok(all.into_iter().map(|mut m| m.split_off(1)).collect());
        };
        let same = failed.iter().all(|f| f.1 == code);
        let message = failed
            .iter()
            .map(|(r, _, m)| format!("{}: {m}", self.who(*r)))
            .collect::<Vec<_>>()
            .join("; ");
        Err(match code {
            130 if same => FsbenchError::Interrupted,
            2 if same => FsbenchError::InvalidInput(message),
            _ => FsbenchError::Failed(message),
        }
        .into())
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

/// A rank's error as the others get it: its exit code and one line.
pub(crate) struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    pub(crate) fn of(e: &anyhow::Error) -> Failure {
        let code = e
            .chain()
            .find_map(|c| c.downcast_ref::<FsbenchError>())
            .map_or(1, FsbenchError::exit_code);
        Failure {
            code,
            message: format!("{e:#}"),
        }
    }
}

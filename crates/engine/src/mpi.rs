//! Scale-out under MPI: `mpirun -np N fsbench run ...`, with mdtest's and IOR's semantics.
//!
//! Rank 0 leads: it builds and checks the suite, runs the ordinary runner (rounds, fresh
//! filesystems, the database, the console) with itself as the [`RunExecutor`], and tells the
//! other ranks each run to do; they follow until it says stop. Within a run every rank does
//! its share of each phase between barriers (`rank`), and rank 0 makes one record of the
//! ranks' records (`aggregate`), so statistics, compare and report work unchanged. Every
//! barrier exchanges the ranks' outcomes (`comm`): one rank's error ends them all there.

mod aggregate;
mod comm;
mod rank;

use std::sync::Arc;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::runner::observer::{Observer, Silent};
use crate::runner::{RunContext, RunExecutor, finish_run, fresh_for_run, with_remedy};
use comm::Comm;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::Progress;
use fsbench_model::suite::Suite;
use fsbench_model::testbed::TargetSpec;
use fsbench_workloads::Params;
pub use rank::MpiOptions;
use rank::{Job, TOKEN_FILE};

/// What rank 0 tells the others between runs.
#[derive(Serialize, Deserialize)]
enum Command {
    Run(Box<Job>),
    /// No more runs; `failed`: rank 0's suite ended with an error.
    Stop {
        failed: bool,
    },
}

/// Marks the error of a rank other than 0 that rank 0 has too, because an exchange carried
/// it there (or it is rank 0's own): rank 0 prints it, naming the rank, so this rank need
/// not print it again; it only exits with its code.
#[derive(Debug)]
pub struct Told;

impl std::fmt::Display for Told {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("rank 0 has this failure and prints it")
    }
}

/// This process as one of the ranks.
pub struct Session {
    comm: Comm,
    options: MpiOptions,
    progress: Arc<Progress>,
}

impl Session {
    pub fn start(options: MpiOptions, progress: Arc<Progress>) -> anyhow::Result<Session> {
        Ok(Session {
            comm: Comm::init()?,
            options,
            progress,
        })
    }

    pub fn is_leader(&self) -> bool {
        self.comm.rank == 0
    }

    /// Rank 0's suite on every rank (`prepared` is rank 0's, checked for MPI here), or its
    /// error on every rank.
    pub fn share_suite(&self, prepared: Option<anyhow::Result<Suite>>) -> anyhow::Result<Suite> {
        let mine = match prepared {
            Some(suite) => suite.and_then(|s| {
                self.check(&s)?;
                Ok(serde_json::to_vec(&s)?)
            }),
            None => Ok(Vec::new()),
        };
        let all = (self.comm.barrier_sharing(mine)).map_err(|e| self.known(e))?;
        serde_json::from_slice(&all[0])
            .context("rank 0's suite does not parse")
            .map_err(|e| self.known(e))
    }

    /// `e` as this rank ends with it: [`Told`] where an exchange carried a failure to rank 0
    /// since the last look (every rank's error then reached rank 0), else naming this rank,
    /// which says it itself.
    fn known(&self, e: anyhow::Error) -> anyhow::Error {
        match self.comm.take_told() {
            true => e.context(Told),
            false => e.context(self.comm.who(self.comm.rank)),
        }
    }

    /// Whether the suite can run under MPI: the workloads that make sense, a target all
    /// ranks can reach.
    fn check(&self, suite: &Suite) -> anyhow::Result<()> {
        if self.comm.nodes() > 1 && !matches!(suite.target, TargetSpec::Dir { .. }) {
            return Err(invalid(format!(
                "the ranks run on {} nodes: a fresh filesystem per run (mkfs, tmpfs) is \
                 possible only when all ranks share one node; give the shared filesystem with \
                 --dir",
                self.comm.nodes()
            )));
        }
        let workloads = (suite.workloads.iter())
            .map(Params::of)
            .collect::<anyhow::Result<Vec<_>>>()?;
        for spec in &workloads {
            if let Some(why) = spec.mpi_refusal() {
                return Err(invalid(format!(
                    "{} cannot run under MPI: {why}",
                    spec.label()
                )));
            }
            if self.options.shared_dir && !spec.mpi_shares_directory() {
                return Err(invalid(format!(
                    "--shared-dir: {} names its files the same on every rank; only tree and \
                     io run in a shared directory",
                    spec.label()
                )));
            }
        }
        if let Some(s) = self.options.stonewall
            && !(s.is_finite() && s > 0.0)
        {
            return Err(invalid("--stonewall must be a positive number of seconds"));
        }
        if self.options.stonewall.is_some() {
            for spec in &workloads {
                if let Err(why) = spec.stonewall_phase() {
                    return Err(invalid(format!("--stonewall: {}: {why}", spec.label())));
                }
            }
        }
        Ok(())
    }

    /// Ranks other than 0: every run rank 0 announces, until it says stop.
    pub fn follow(&self) -> anyhow::Result<()> {
        let mut failure = None;
        loop {
            let bytes = self.comm.broadcast(Vec::new());
            let command = serde_json::from_slice(&bytes).context("rank 0's command does not parse");
            match command.map_err(|e| self.known(e))? {
                Command::Run(job) => {
                    // Rank 0 alone keeps the records.
                    let (progress, records) = (&self.progress, &mut Vec::new());
                    if let Err(e) =
                        rank::run_share(&self.comm, &job, progress, &mut Silent, records)
                    {
                        failure = Some(self.known(e));
                    }
                }
                Command::Stop { failed } => {
                    return match failure {
                        Some(e) => Err(e),
                        None if failed => Err(anyhow::Error::from(FsbenchError::Failed(
                            "rank 0's suite failed (it says why)".into(),
                        ))
                        .context(Told)),
                        None => Ok(()),
                    };
                }
            }
        }
    }

    /// Rank 0, after its suite: the others stop following.
    pub fn stop(&self, failed: bool) {
        let stop = serde_json::to_vec(&Command::Stop { failed }).expect("a command serializes");
        self.comm.broadcast(stop);
    }
}

impl RunExecutor for Session {
    fn run(
        &self,
        run: RunContext<'_>,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<Option<String>> {
        let fresh = fresh_for_run(run.target, run.preparer, run.what, run.record, observer)?;
        let mkfs_command = fresh.mkfs_command.clone();
        let token_path = fresh.path().join(TOKEN_FILE);
        let token = format!("{}.{:?}", std::process::id(), std::time::SystemTime::now());
        std::fs::write(&token_path, &token)
            .with_context(|| format!("cannot write {}", token_path.display()))?;
        let job = Job {
            spec: run.what.spec.spec(),
            dir: fresh.path().to_path_buf(),
            token,
            label: run.what.label.to_string(),
            round: run.record.run,
            settle: run.what.settings.settle,
            options: self.options.clone(),
            removes_files: fresh.removes_files(),
        };
        self.comm
            .broadcast(serde_json::to_vec(&Command::Run(Box::new(job.clone())))?);
        // The phases' records are the run's whether it fails or not (a failed phase's where
        // every rank sent one), as without MPI.
        let progress = &run.what.settings.progress;
        let outcome = rank::run_share(&self.comm, &job, progress, observer, &mut run.record.phases);
        let _ = std::fs::remove_file(&token_path);
        // A full disk on any rank: what to do about it for this target, as without MPI.
        outcome.map_err(|e| with_remedy(e, run.target.spec()))?;
        finish_run(fresh, run.what, run.record, observer)?;
        Ok(mkfs_command)
    }

    fn processes(&self) -> u64 {
        self.comm.size as u64
    }
}

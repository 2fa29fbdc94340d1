//! `mpirun -np N fsbench run ...`: the same command and suite as a single process, the ranks
//! counted by the launcher. Rank 0 builds the suite, owns the database and prints; the other
//! ranks follow it and print nothing but their errors that never reached rank 0.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use super::RunArgs;
use super::run::run_suite;
use fsbench_engine::mpi::{MpiOptions, Session, Told};
use fsbench_measure::error::{exit_code_of, invalid};
use fsbench_measure::measure::Progress;
use fsbench_store::Store;

/// The options that only mean something under a launcher.
#[derive(Debug, clap::Args)]
pub(super) struct MpiArgs {
    /// MPI: one tree for all ranks (mdtest without -u; tree only): rank 0 makes and removes
    /// its directories, every rank adds files named with its rank
    #[arg(long)]
    shared_dir: bool,
    /// MPI: stat, read and remove phases act on rank (r+K) mod N's files, so that a client's
    /// own cache cannot answer (mdtest -N) [default: ranks per node]
    #[arg(long, value_name = "K")]
    shift: Option<usize>,
    /// MPI: every rank stops tree's file create at SECS; the laggards then go on to the most
    /// any rank made (wear-out); rate-stonewall (mdtest -W)
    #[arg(long, value_name = "SECS")]
    stonewall: Option<f64>,
}

pub(super) fn run(args: &RunArgs, db: &Path, progress: Arc<Progress>) -> anyhow::Result<ExitCode> {
    if args.resume.is_some() {
        return Err(invalid(
            "--resume: a suite run under MPI cannot be resumed; run it again",
        ));
    }
    let options = MpiOptions {
        shared_dir: args.mpi.shared_dir,
        shift: args.mpi.shift,
        stonewall: args.mpi.stonewall,
    };
    let session = Session::start(options, progress.clone())?;
    if !session.is_leader() {
        return match session.share_suite(None).and_then(|_| session.follow()) {
            // Rank 0 prints it, naming this rank: each failure is said once.
            Err(e) if e.downcast_ref::<Told>().is_some() => Ok(ExitCode::from(exit_code_of(&e))),
            followed => followed.map(|()| ExitCode::SUCCESS),
        };
    }
    // The database is opened before the suite is shared: if it cannot be, no rank starts.
    let prepared = args
        .suite()
        .and_then(|suite| Ok((suite, Store::open_for_writing(db)?)));
    let (suite, store) = match prepared {
        Ok((suite, store)) => (session.share_suite(Some(Ok(suite)))?, store),
        Err(e) => return session.share_suite(Some(Err(e))).map(|_| ExitCode::FAILURE),
    };
    let outcome = match run_suite(args, suite, None, store, progress, Some(&session)) {
        // Said before the other ranks are let go: one that exits non-zero makes mpirun end
        // this rank at once, which could come before its error was said.
        Err(e) if !e.chain().any(|c| c.is::<super::StdoutClosed>()) => Ok(super::said(&e)),
        outcome => outcome,
    };
    session.stop(!matches!(outcome, Ok(ExitCode::SUCCESS)));
    outcome
}

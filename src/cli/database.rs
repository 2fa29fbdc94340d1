//! `--db`: the results database, given before the command or after it; only the commands
//! that read or write it list and take it after their name.

use std::path::{Path, PathBuf};

use super::Command;

/// `--db` after a command that reads or writes the results database; the commands that use
/// none (capture, fdtree, archive, clean, generate, crash) neither take nor list it.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct Database {
    /// Results database [default: $XDG_DATA_HOME/fsbench/results.db]
    #[arg(long = "db", value_name = "PATH")]
    pub(super) path: Option<PathBuf>,
}

impl Command {
    /// The database given after the command, if any.
    pub(super) fn database(&self) -> Option<&Path> {
        let given = match self {
            Command::Run(args) => &args.database,
            Command::Ffsb(args) => &args.run.database,
            Command::Fio(args) => &args.run.database,
            Command::Filebench(args) => &args.run.database,
            Command::List { database, .. }
            | Command::Show { database, .. }
            | Command::Rank { database, .. }
            | Command::Export { database, .. } => database,
            Command::Compare(args) => &args.database,
            Command::Report(args) => &args.database,
            Command::Fdtree(_)
            | Command::Capture(_)
            | Command::Clean
            | Command::Archive { .. }
            | Command::Generate { .. }
            | Command::Crash(_)
            | Command::CrashRecorder(_) => {
                return None;
            }
        };
        given.path.as_deref()
    }
}

//! `fsbench generate`: the man pages and shell completions, made from the command line's own
//! definition, so they name exactly the commands and options `--help` shows (as ripgrep's
//! `rg --generate` does). Hidden: it is for installers, not for benchmarking.

use std::path::PathBuf;

use anyhow::Context;
use clap::CommandFactory;

use super::Cli;
use super::output::write_stdout;

#[derive(Debug, clap::Subcommand)]
pub(super) enum Generated {
    /// Man pages into DIR: fsbench.1 and one per command (fsbench-run.1, ...)
    Man {
        /// The directory to write them in (made if missing), e.g. /usr/local/share/man/man1
        dir: PathBuf,
    },
    /// A completion script for SHELL on stdout
    Completions {
        /// The shell the script is for
        shell: clap_complete::Shell,
    },
}

pub(super) fn generate(what: &Generated) -> anyhow::Result<()> {
    match what {
        Generated::Man { dir } => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot make {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), dir)
                .with_context(|| format!("cannot write the man pages into {}", dir.display()))
        }
        Generated::Completions { shell } => {
            // Into memory first: clap_complete panics on a write error, and a closed stdout
            // must end fsbench as it ends every other command.
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut Cli::command(), "fsbench", &mut script);
            write_stdout(&String::from_utf8(script).context("completion script")?)
        }
    }
}

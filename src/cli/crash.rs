//! `fsbench crash`: a kept recording's crash states for a person to inspect; and the hidden
//! `fsbench crash-recorder`, the recorder daemon a crash-recorded run starts.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use super::output::write_stdout;
use fsbench_testbed::crash;

/// `fsbench crash`'s subcommands.
#[derive(Debug, clap::Args)]
pub(super) struct CrashCli {
    #[command(subcommand)]
    pub(super) command: CrashCommand,
}

#[derive(Debug, Subcommand)]
pub(super) enum CrashCommand {
    /// Write one crash state's image (or with `end` the run's final image, the whole log
    /// replayed) from a recording kept with `--crash-keep`
    Show {
        /// The recording's directory (`--crash-keep DIR` keeps one a configuration in DIR)
        recording: PathBuf,
        /// The state's number (states.json in the recording lists them), or `end`
        state: String,
        /// The image file to write (it must not exist)
        #[arg(short = 'o', long)]
        output: PathBuf,
    },
}

pub(super) fn run(command: &CrashCommand) -> anyhow::Result<ExitCode> {
    match command {
        CrashCommand::Show {
            recording,
            state,
            output,
        } => {
            let state = match state.as_str() {
                "end" => None,
                n => Some(n.parse::<u32>().map_err(|_| {
                    fsbench_measure::error::invalid(format!(
                        "state `{n}`: give a state's number or `end`"
                    ))
                })?),
            };
            let what = crash::show(recording, state, output)?;
            write_stdout(&format!("{}: {what}\n", output.display()))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The hidden `crash-recorder`'s arguments.
#[derive(Debug, clap::Args)]
pub(super) struct RecorderArgs {
    /// The run's image file, served as `<MOUNTPOINT>/image`
    image: PathBuf,
    /// Where the FUSE file system is mounted
    mountpoint: PathBuf,
    /// The block log to create
    log: PathBuf,
}

/// The recorder daemon's process: serves until its FUSE mount is unmounted; its errors go
/// to its stderr, which the suite keeps and reports.
pub(super) fn recorder(args: &RecorderArgs) -> ExitCode {
    match crash::daemon::serve(&args.image, &args.mountpoint, &args.log) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fsbench crash-recorder: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `run`'s crash-state options.
#[derive(Debug, clap::Args)]
pub(super) struct CrashArgs {
    /// Check N crash states of every configuration (one more run of each workload, recorded
    /// under the filesystem; loop images only); one configuration takes `FS:crash=N`
    #[arg(long, value_name = "N", value_parser = fsbench_testbed::define::parse_crash)]
    crash_states: Option<u32>,
    /// Check a configuration's crash states for at most this long (states not started by
    /// then are not checked; the count checked says so) [default: 30m]
    #[arg(long, value_name = "DURATION", value_parser = super::auto_runs::parse_duration)]
    crash_time: Option<f64>,
    /// Add torn writes to the crash states: some 512-byte sectors of one write persisted
    #[arg(long)]
    crash_torn: bool,
    /// The seed crash states are chosen with [default: 1]
    #[arg(long, value_name = "SEED")]
    crash_seed: Option<u64>,
    /// Keep each configuration's recording (block log, facts, states) in DIR, for
    /// `fsbench crash show`
    #[arg(long, value_name = "DIR")]
    crash_keep: Option<PathBuf>,
}

impl CrashArgs {
    pub(super) fn apply(&self, suite: &mut fsbench_model::suite::Suite) {
        let options = &mut suite.crash;
        options.states = self.crash_states.or(options.states);
        options.time_secs = self.crash_time.or(options.time_secs);
        options.torn |= self.crash_torn;
        options.seed = self.crash_seed.or(options.seed);
        if let Some(dir) = &self.crash_keep {
            options.keep = Some(std::path::absolute(dir).unwrap_or_else(|_| dir.clone()));
        }
    }
}

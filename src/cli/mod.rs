//! The command line: parses arguments, builds the suite, dispatches, maps errors to exit codes.

mod fdtree;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};

use crate::error::{FsbenchError, invalid};
use crate::measure::Progress;
use crate::report;
use crate::results::RunStatus;
use crate::runner;
use crate::suite::{DEFAULT_PURPOSE, FsConfig, Suite};
use crate::target::{TargetSpec, default_image_dir, scratch};
use crate::tools;
use crate::units::parse_size;
use crate::workload::WorkloadSpec;

#[derive(Debug, Parser)]
#[command(
    name = "fsbench",
    version,
    about = "Filesystem benchmark: fresh filesystems, repeated runs, honest statistics",
    long_about = "Compares filesystems and their mkfs/mount options on metadata and data \
                  workloads. Every run gets a freshly made filesystem; every figure is reported \
                  with its spread (stddev, CV, 95% CI) over repeated, interleaved runs."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a suite: every configuration × workload, --runs times, on fresh filesystems
    Run(Box<RunArgs>),
    /// fdtree.bash compatibility: its flags, its report, fsbench's measurements
    Fdtree(fdtree::FdtreeArgs),
    /// Undo what a killed fsbench left behind: mounts, loop devices, images, scratch dirs
    Clean,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OutputFormat {
    Table,
    Json,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Suite file (TOML); options given here override it
    suite: Option<PathBuf>,
    /// Filesystem configurations: `ext4,xfs,btrfs`, or one per flag as
    /// `FS:mkfs=ARGS:mount=OPTS:label=NAME` (e.g. 'ext4:mkfs=-O ^has_journal').
    /// Known: ext2, ext3, ext4, xfs, btrfs, tmpfs
    #[arg(long = "fs", value_name = "CONFIG")]
    fs: Vec<String>,
    /// Workloads: `tree:PRESET` (small-shallow, small-deep, medium-shallow, medium-deep,
    /// quick-shallow, quick-deep) or `tree:dirs=N,files=N,size=N,levels=N`
    #[arg(long = "workload", short = 'w', value_name = "WORKLOAD")]
    workloads: Vec<String>,
    /// Runs per configuration and workload [default: 3]
    #[arg(long, short = 'n')]
    runs: Option<u32>,
    /// Run in a fresh subdirectory of an existing directory (no mkfs, no root needed)
    #[arg(long, value_name = "DIR", conflicts_with_all = ["device", "image_dir", "image_size"])]
    dir: Option<PathBuf>,
    /// Make the filesystems on this block device (or image file); ALL ITS DATA IS LOST
    #[arg(long, value_name = "DEVICE", conflicts_with_all = ["image_dir", "image_size"])]
    device: Option<PathBuf>,
    /// Overwrite a device that carries a filesystem or partition table
    #[arg(long)]
    force: bool,
    /// Directory for the loop images [default: /var/tmp]
    #[arg(long, value_name = "DIR")]
    image_dir: Option<PathBuf>,
    /// Size of each loop image (sparse), e.g. 8G [default: sized to the workloads]
    #[arg(long, value_name = "SIZE")]
    image_size: Option<String>,
    /// Suite name
    #[arg(long)]
    name: Option<String>,
    /// Why this benchmark is run (recorded and printed with the results)
    #[arg(long)]
    purpose: Option<String>,
    /// Do not sync and drop caches before each phase
    #[arg(long)]
    no_drop_caches: bool,
    /// Flag phases shorter than this many seconds [default: 1]
    #[arg(long, value_name = "SECS")]
    min_phase_secs: Option<f64>,
    /// Flag figures whose coefficient of variation exceeds this percentage [default: 10]
    #[arg(long, value_name = "PERCENT")]
    max_cv: Option<f64>,
    /// Output on stdout
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    output_format: OutputFormat,
    /// No progress bars
    #[arg(long, short = 'q')]
    quiet: bool,
}

impl RunArgs {
    /// The suite: the file's (or the default), with the command line applied on top.
    fn suite(&self) -> anyhow::Result<Suite> {
        let mut suite = match &self.suite {
            Some(path) => Suite::from_file(path)?,
            None => Suite::default(),
        };
        if !self.fs.is_empty() {
            suite.configs = self
                .fs
                .iter()
                .map(|f| FsConfig::parse_cli(f))
                .collect::<anyhow::Result<Vec<_>>>()?
                .into_iter()
                .flatten()
                .collect();
        }
        if !self.workloads.is_empty() {
            suite.workloads = self
                .workloads
                .iter()
                .map(|w| WorkloadSpec::parse(w))
                .collect::<anyhow::Result<_>>()?;
        }
        let default_suite = self.suite.is_none() && self.workloads.is_empty();
        if suite.workloads.is_empty() {
            suite.workloads = Suite::default_workloads();
        }
        if let Some(runs) = self.runs {
            suite.runs = runs;
        }
        if let Some(name) = &self.name {
            suite.name = name.clone();
        }
        if let Some(purpose) = &self.purpose {
            suite.purpose = purpose.clone();
        } else if default_suite && suite.purpose.is_empty() {
            suite.purpose = DEFAULT_PURPOSE.to_string();
        }
        if self.no_drop_caches {
            suite.drop_caches = false;
        }
        if let Some(v) = self.min_phase_secs {
            suite.min_phase_secs = v;
        }
        if let Some(v) = self.max_cv {
            suite.max_cv_percent = v;
        }
        let explicit_target = self.dir.is_some()
            || self.device.is_some()
            || self.image_dir.is_some()
            || self.image_size.is_some();
        if let Some(dir) = &self.dir {
            suite.target = TargetSpec::Dir { path: dir.clone() };
        } else if let Some(device) = &self.device {
            suite.target = TargetSpec::Device {
                path: device.clone(),
                force: self.force,
            };
        } else if explicit_target {
            let size = self.image_size.as_deref().map(parse_size).transpose()?;
            if size == Some(0) {
                return Err(invalid("--image-size must be larger than 0"));
            }
            suite.target = TargetSpec::Image {
                dir: self.image_dir.clone().unwrap_or_else(default_image_dir),
                size,
            };
        }
        if self.force {
            match &mut suite.target {
                TargetSpec::Device { force, .. } => *force = true,
                _ => return Err(invalid("--force applies only to --device")),
            }
        }
        // Without root fsbench cannot make filesystems; the default suite then runs on a
        // directory here instead, and says so. An explicit request for mkfs fails instead.
        if !tools::is_root() && suite.target.makes_filesystems() {
            if self.suite.is_none() && !explicit_target && self.fs.is_empty() {
                eprintln!(
                    "fsbench: not root, so no filesystems can be made (mkfs, mount and loop \
                     devices need root) and caches cannot be dropped; running on a fresh \
                     directory under the current directory instead"
                );
                suite.target = TargetSpec::Dir {
                    path: PathBuf::from("."),
                };
            } else {
                return Err(FsbenchError::NotRoot(
                    "making filesystems (mkfs, mount, losetup)".into(),
                )
                .into());
            }
        }
        if suite.purpose.is_empty() {
            eprintln!(
                "fsbench: no purpose stated; say why you run this benchmark with --purpose \
                 (a result without one is hard to judge later)"
            );
        }
        Ok(suite)
    }
}

fn run(args: &RunArgs, progress: Arc<Progress>) -> anyhow::Result<ExitCode> {
    let suite = args.suite()?;
    let (result, error) = runner::run_suite(&suite, progress, !args.quiet)?;
    let text = match args.output_format {
        OutputFormat::Table => report::table::render(&result),
        OutputFormat::Json => report::json::render(&result) + "\n",
    };
    print!("{text}");
    if let Some(e) = error {
        return Err(e);
    }
    let fsck_failed = result
        .runs
        .iter()
        .any(|r| r.status == RunStatus::FsckFailed);
    Ok(if fsck_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn clean() -> anyhow::Result<ExitCode> {
    let actions = scratch::clean_stale()?;
    if actions.is_empty() {
        eprintln!(
            "fsbench: nothing to clean in {}",
            scratch::state_dir().display()
        );
    }
    for a in actions {
        println!("{a}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C and SIGTERM set the cancel flag: the running phase stops at its next operation and
/// everything is unmounted and detached. A second signal exits at once (`fsbench clean` then
/// undoes what is left).
fn install_signal_handlers(progress: &Progress) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, progress.cancel.clone())?;
        signal_hook::flag::register(sig, progress.cancel.clone())?;
    }
    Ok(())
}

/// Entry point of the `fsbench` binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let progress = Arc::new(Progress::default());
    let outcome = install_signal_handlers(&progress).and_then(|()| match &cli.command {
        Command::Run(args) => run(args, progress.clone()),
        Command::Fdtree(args) => fdtree::run(args, progress.clone()).map(|()| ExitCode::SUCCESS),
        Command::Clean => clean(),
    });
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fsbench: error: {e:#}");
            let code = e
                .chain()
                .find_map(|c| c.downcast_ref::<FsbenchError>())
                .map_or(1, FsbenchError::exit_code);
            ExitCode::from(code)
        }
    }
}

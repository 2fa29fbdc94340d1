//! The command line: parses arguments, builds the suite, dispatches, maps errors to exit codes.

mod archive;
mod auto_runs;
mod capture;
mod clean;
mod compare_args;
mod console;
mod crash;
mod database;
#[cfg(test)]
mod doc_commands;
mod fdtree;
mod filebench;
mod fio_logs;
mod generate;
#[cfg(feature = "mpi")]
mod mpi_run;
mod output;
mod query;
mod run;
mod signals;
#[cfg(test)]
mod tests;

use compare_args::{CompareArgs, CompareFormat, ReportArgs};
use database::Database;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand};

use fsbench_engine::runner::{
    self,
    observer::{Observer, Observers, SuitePlan},
    summarize,
};
use fsbench_measure::error::{FsbenchError, exit_code_of, invalid};
use fsbench_measure::measure::Progress;
use fsbench_measure::tools;
use fsbench_measure::units::parse_size;
use fsbench_model::config::ExtraDevice;
use fsbench_model::results::{RunRecord, RunStatus, SuiteResult, SuiteStatus};
use fsbench_model::suite::{AutoRuns, DEFAULT_MAX_SECS, DEFAULT_PURPOSE, Suite};
use fsbench_model::testbed::{TargetSpec, default_image_dir};
use fsbench_report::formats::Report;
use fsbench_stats::compare::{self, Column};
use fsbench_store::Store;
use fsbench_workloads::archive::ArchiveParams;
use fsbench_workloads::command::CommandParams;
use fsbench_workloads::{Params, WORKLOADS, WorkloadParams};
use output::{StdoutClosed, die_by_sigpipe, print_result, write_stdout};
use query::query;

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
    /// Results database [default: $XDG_DATA_HOME/fsbench/results.db]; also taken after the
    /// commands that use it
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a suite: every configuration × workload, --runs times, on fresh filesystems
    Run(Box<RunArgs>),
    /// fdtree.bash compatibility: its flags, its report, fsbench's measurements
    Fdtree(fdtree::FdtreeArgs),
    /// Run an FFSB profile file as a suite: fresh filesystems, repeated runs, statistics
    Ffsb(Box<FfsbArgs>),
    /// Record a command's file-system calls beneath a root into a trace, for
    /// `-w replay:trace=FILE`; `--show TRACE` summarizes one
    Capture(capture::CaptureArgs),
    /// Run a filebench workload file (or a built-in personality) as a suite: fresh
    /// filesystems, repeated runs, filebench's summary and fsbench's statistics
    Filebench(Box<filebench::FilebenchArgs>),
    /// Run a fio job file's jobs as the io workload: fresh filesystems, runs, statistics
    Fio(Box<FioArgs>),
    /// Undo what a killed fsbench left behind: mounts, loop devices, images, scratch dirs,
    /// and the template images an interrupted suite kept for its resume
    Clean,
    /// Generate a BackupPC-shaped tar archive, or extract one with fsbench's extractor
    Archive {
        #[command(subcommand)]
        command: archive::ArchiveCommand,
    },
    /// Recent suites in the results database, one line each
    List {
        /// How many suites
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[command(flatten)]
        database: Database,
    },
    /// A suite's tables, system and configurations, from the results database
    Show {
        /// The suite's ID (`fsbench list` shows them)
        id: i64,
        /// Every figure's statistics and every warning, not only the summary, and what the
        /// command workload's commands wrote (the last 64 KiB of stdout and stderr)
        #[arg(long, visible_alias = "verbose", short = 'v')]
        all: bool,
        /// Tables for a person, or the JSON document `run --output-format json` prints
        #[arg(long, value_parser = stdout_formats(), default_value = "table")]
        output_format: &'static dyn Report,
        #[command(flatten)]
        database: Database,
    },
    /// Configurations side by side: mean ± 95% CI, difference, Welch p-value, verdict
    Compare(CompareArgs),
    /// Placement points per discipline and in total
    Rank {
        /// Suites whose configurations are ranked (ID or ID:CONFIG)
        #[arg(required = true)]
        columns: Vec<String>,
        /// Place by mean alone, as the Linux Magazine filesystem tests did (ignores noise) instead
        /// of by significance
        #[arg(long)]
        equal_footing: bool,
        /// Rank each workload (a family of disciplines) on its own, then all together
        #[arg(long)]
        per_workload: bool,
        /// Rank a named group of workloads on its own, then all together: NAME=WORKLOAD,
        /// a label (`iozone:quick`) or a kind (`iozone`); repeat it to add members or groups
        /// (`--group tests=iozone --group loops=atomic --group loops=tree:quick`)
        #[arg(long, value_name = "NAME=WORKLOAD")]
        group: Vec<String>,
        /// Weight phases by what matters to you: PHASE=W, a phase's points count W times in
        /// the totals (`--weight read=3,delete=0.5`); other phases count once
        #[arg(long, value_name = "PHASE=W", value_delimiter = ',')]
        weight: Vec<String>,
        #[command(flatten)]
        database: Database,
    },
    /// A suite's raw runs and summaries as JSON, CSV or Markdown
    Export {
        /// The suite's ID (`fsbench list` shows them)
        id: i64,
        /// The file format
        #[arg(long, value_parser = export_formats(), default_value = "json")]
        format: &'static dyn Report,
        /// Write to this file instead of stdout (`-`: stdout)
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        #[command(flatten)]
        database: Database,
    },
    /// A self-contained HTML report of one or more suites
    Report(ReportArgs),
    /// Man pages or shell completions, for installing fsbench
    #[command(hide = true)]
    Generate {
        #[command(subcommand)]
        what: generate::Generated,
    },
    /// Crash states of a recording kept with `run --crash-keep`
    Crash(crash::CrashCli),
    /// The crash recorder daemon a crash-recorded run starts (not for people)
    #[command(hide = true)]
    CrashRecorder(crash::RecorderArgs),
}

/// The reports of the registry that `offered` gives a help line, as `--format` values.
fn formats(
    offered: fn(&dyn Report) -> Option<&'static str>,
) -> impl TypedValueParser<Value = &'static dyn Report> {
    let values = (fsbench_report::formats::REPORTS.iter())
        .filter_map(move |r| Some(PossibleValue::new(r.name()).help(offered(*r)?)));
    PossibleValuesParser::new(values)
        .map(|name| fsbench_report::formats::named(&name).expect("clap took a registry name"))
}

/// `fsbench export --format`'s values.
fn export_formats() -> impl TypedValueParser<Value = &'static dyn Report> {
    formats(|r| r.exported().then(|| r.describe()))
}

/// `run`'s and `show`'s `--output-format` values.
fn stdout_formats() -> impl TypedValueParser<Value = &'static dyn Report> {
    formats(|r| r.on_stdout())
}

/// `fsbench fio`'s `--output-format` values: fio's own formats under fio's names, then
/// fsbench's other formats (its JSON document stays with `--export-json FILE`).
fn fio_formats() -> impl TypedValueParser<Value = &'static dyn Report> {
    const FIO: [(&str, &str); 4] = [
        ("normal", "fio"),
        ("json", "fio-json"),
        ("json+", "fio-json+"),
        ("terse", "fio-terse"),
    ];
    let report = |name: &str| fsbench_report::formats::named(name).expect("a registry name");
    let fio = FIO
        .iter()
        .map(move |(name, r)| PossibleValue::new(name).help(report(r).describe()));
    let own = (fsbench_report::formats::REPORTS.iter())
        .filter(|r| r.name() != "json")
        .filter_map(|r| Some(PossibleValue::new(r.name()).help(r.on_stdout()?)));
    PossibleValuesParser::new(fio.chain(own).collect::<Vec<_>>()).map(move |name| {
        let name = FIO
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(name.as_str(), |(_, r)| r);
        report(name)
    })
}

#[derive(Debug, clap::Args)]
struct FfsbArgs {
    /// FFSB profile (FFSB 6 syntax; `num_ops=N` in a thread group is fsbench's fixed amount
    /// of work per thread)
    profile: PathBuf,
    /// Run the thread groups this many seconds instead of the profile's `time`
    #[arg(long, value_name = "SECS")]
    time: Option<u32>,
    #[command(flatten)]
    run: RunArgs,
}

/// `--output-format` takes fio's names here: `normal`, `json`, `json+`, `terse`.
#[derive(Debug, clap::Args)]
#[command(mut_arg("output_format", |a| a.value_parser(fio_formats())))]
struct FioArgs {
    /// fio job file (`-`: standard input): [global] and job sections, include, ${VAR},
    /// $ncpus and $mb_memory arithmetic; jobs run at the same time unless a `stonewall`
    /// separates them, as in fio. Absolute `filename`/`directory` names inside --dir are
    /// taken relative to it (`directory=/scratch` with --dir /scratch)
    jobfile: PathBuf,
    /// Scale the job file without editing it: every job's size (and files) and runtime (and
    /// ramp) at most these, e.g. `size=16m,runtime=2s`; said in the output
    #[arg(long, value_name = "size=SIZE,runtime=TIME")]
    cap: Option<String>,
    /// A block device the job file may name (`filename=DEVICE`) to read and write raw, as
    /// fio does: ALL ITS DATA IS LOST. Checked as --device is (not mounted nor in use; one
    /// that carries a filesystem or partition table needs --force)
    #[arg(long, value_name = "DEVICE")]
    target_device: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

/// `fsbench run`'s arguments. Those in the group `definition` define the suite: a resumed
/// suite's definition comes from the database instead.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("definition").multiple(true).conflicts_with("resume"))]
struct RunArgs {
    /// Suite file (TOML); options given here override it
    #[arg(group = "definition")]
    suite: Option<PathBuf>,
    #[command(flatten)]
    database: Database,
    /// Filesystem configurations: `ext4,xfs,btrfs`, or one per flag as
    /// `FS:mkfs=ARGS:mount=OPTS:label=NAME` (e.g. 'ext4:mkfs=-O ^has_journal').
    /// Known: ext2, ext3, ext4, xfs, btrfs, tmpfs, ntfs (ntfs-3g), zfs (zfs-fuse; properties as
    /// `zfs:pool=ashift=12:dataset=recordsize=16k`), nilfs2, jfs, reiserfs, f2fs, bcachefs
    /// (refused where the kernel lacks them), and the suite file's `[[driver]]` names
    #[arg(group = "definition", long = "fs", value_name = "CONFIG")]
    fs: Vec<String>,
    #[arg(group = "definition", long = "workload", short = 'w', value_name = "WORKLOAD",
        help = workload_short_help(), long_help = Params::help())]
    workloads: Vec<String>,
    /// Extract (then rm -rf) this tar archive (plain, gzip, zstd, xz, bzip2 or lzop) as a workload
    #[arg(group = "definition", long, value_name = "FILE")]
    archive: Vec<PathBuf>,
    /// Your own workload: a timed phase NAME=COMMAND, run with `sh -c` in the run's fresh
    /// directory (FSBENCH_DIR and FSBENCH_RUN set). Repeat for more phases, in order. The
    /// COMMAND is taken whole, commas and `=` included: quote it once for your shell, e.g.
    /// --command-phase 'pack=tar -cf a.tar src && tar -xf a.tar -C out'
    #[arg(group = "definition", long, value_name = "NAME=COMMAND")]
    command_phase: Vec<String>,
    /// Your own workload's untimed setup command, before its first phase
    #[arg(long, value_name = "COMMAND", requires = "command_phase")]
    command_setup: Option<String>,
    /// Your own workload's untimed cleanup command, after its last phase (a timed cleanup is
    /// one more --command-phase)
    #[arg(long, value_name = "COMMAND", requires = "command_phase")]
    command_cleanup: Option<String>,
    /// Seconds each of your commands may run; past it its whole process tree is killed and
    /// the run fails [default: 3600]
    #[arg(long, value_name = "SECS", requires = "command_phase")]
    command_timeout: Option<u64>,
    /// Space your commands need on the filesystem under test, e.g. 2G (sizes loop images;
    /// a target with less is refused) [default: 512M]
    #[arg(long, value_name = "SIZE", requires = "command_phase")]
    command_space: Option<String>,
    /// Runs per configuration and workload, or `auto`: rounds until every phase's primary
    /// figure has a 95% CI half-width below --target-ci (at least 3) [default: 3; a bare
    /// `fsbench run`, with no workload, suite file or --runs: auto, up to 30 rounds within
    /// about 5 minutes]
    #[arg(group = "definition", long, short = 'n', value_parser = auto_runs::parse_runs)]
    runs: Option<auto_runs::RunCount>,
    /// With --runs auto: the CI half-width to reach, in percent of the mean [default: 5%]
    #[arg(group = "definition", long, value_name = "PERCENT", value_parser = auto_runs::parse_percent)]
    target_ci: Option<f64>,
    /// With --runs auto: the most rounds [default: 30]
    #[arg(group = "definition", long, value_name = "N")]
    max_runs: Option<u32>,
    /// With --runs auto: end within this long (e.g. 90s, 30m, 2h): no run starts that the
    /// runs before it say would end past it
    #[arg(group = "definition", long, value_name = "DURATION", value_parser = auto_runs::parse_duration)]
    max_time: Option<f64>,
    /// Run in a fresh subdirectory of an existing directory (no mkfs, no root needed)
    #[arg(group = "definition", long, value_name = "DIR", conflicts_with_all = ["device", "image_dir", "image_size"])]
    dir: Option<PathBuf>,
    /// Make the filesystems on this block device (or image file); ALL ITS DATA IS LOST
    #[arg(group = "definition", long, value_name = "DEVICE", conflicts_with_all = ["image_dir", "image_size"])]
    device: Option<PathBuf>,
    /// Overwrite the --device that carries a filesystem or partition table (that device
    /// alone: a device named inside mkfs or mount options needs --force-extra-device)
    #[arg(long)]
    force: bool,
    /// Let mkfs and mount options write to this device too (xfs `-l logdev=`, `-r rtdev=`,
    /// ext4 `-J device=`, a further btrfs device); it is checked as --device is. Any other
    /// device or file named in the options, by path, relative path, UUID= or LABEL=, is
    /// refused. Repeatable
    #[arg(group = "definition", long, value_name = "DEVICE")]
    extra_device: Vec<PathBuf>,
    /// --extra-device that may be overwritten even though it carries a filesystem or
    /// partition table. Repeatable
    #[arg(group = "definition", long, value_name = "DEVICE")]
    force_extra_device: Vec<PathBuf>,
    /// Directory for the loop images [default: /var/tmp]
    #[arg(group = "definition", long, value_name = "DIR")]
    image_dir: Option<PathBuf>,
    /// Size of each loop image (sparse), e.g. 8G [default: sized to the workloads]
    #[arg(group = "definition", long, value_name = "SIZE")]
    image_size: Option<String>,
    /// Buffered loop devices (through the host's page cache) instead of direct I/O: the
    /// figures are then partly the host's memory
    #[arg(group = "definition", long, conflicts_with = "dir")]
    loop_cache: bool,
    /// Suite name
    #[arg(group = "definition", long)]
    name: Option<String>,
    /// Why this benchmark is run (recorded and printed with the results)
    #[arg(group = "definition", long)]
    purpose: Option<String>,
    /// Age every configuration before its phases: none, light, geriatrix-like or a TOML
    /// profile file. Loop images are aged once per configuration and copied for each run
    #[arg(group = "definition", long, value_name = "PROFILE")]
    age: Option<String>,
    /// Measure at these fill levels (percent used), e.g. 0,50,90: each configuration runs
    /// at each level, on a filesystem filled with a deterministic file set
    #[arg(group = "definition", long, value_name = "LEVELS", value_delimiter = ',', value_parser = fsbench_testbed::aging::parse_fill)]
    fill: Vec<u8>,
    /// Run each configuration under each of these I/O schedulers of its device's queue
    /// (e.g. mq-deadline,bfq), set before each run and put back after; one configuration
    /// takes `FS:sched=NAME`
    #[arg(
        group = "definition",
        long,
        value_name = "NAMES",
        value_delimiter = ','
    )]
    sched: Vec<String>,
    /// Set each run's I/O scheduler on the disk holding a loop image too (the whole
    /// machine's queue: only with this flag; put back after every run, and by `fsbench
    /// clean` after a crash)
    #[arg(group = "definition", long)]
    sched_backing: bool,
    /// Before the first mkfs, write and then read the raw device (or a loop image) for this
    /// long each with O_DIRECT 1 MiB requests: its own speed, shown beside the figures as a
    /// baseline (like `hdparm -t`) [default: 3s]
    #[arg(group = "definition", long, value_name = "DURATION", num_args = 0..=1, default_missing_value = "3s", value_parser = auto_runs::parse_duration)]
    baseline: Option<f64>,
    /// Run each configuration under each of these background loads from stress-ng: none,
    /// cpu:N (N CPU workers), io:N (N disk workers writing beside the image), or cpu:N+io:M;
    /// started before each run's phases and stopped after; one configuration takes
    /// `FS:bg=LOAD`
    #[arg(
        group = "definition",
        long,
        value_name = "LOADS",
        value_delimiter = ','
    )]
    background: Vec<String>,
    /// Probe the free space again after each run's phases, before its filesystem is
    /// unmounted (fallocate, count the pieces, remove), as after aging
    #[arg(group = "definition", long)]
    probe_after_run: bool,
    #[command(flatten)]
    crash: crash::CrashArgs,
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
    #[arg(long, value_parser = stdout_formats(), default_value = "table")]
    output_format: &'static dyn Report,
    /// No progress bars
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Every figure's statistics ("All figures") and every warning, not only the summary
    #[arg(long, short = 'v')]
    verbose: bool,
    /// Also write the results as `fsbench export --format json` does to this file
    #[arg(long, value_name = "FILE")]
    export_json: Option<PathBuf>,
    /// Also write the results as CSV (`fsbench export --format csv`) to this file
    #[arg(long, value_name = "FILE")]
    export_csv: Option<PathBuf>,
    /// Also write the results as Markdown (`fsbench export --format markdown`) to this file
    #[arg(long, value_name = "FILE")]
    export_markdown: Option<PathBuf>,
    /// Run what an interrupted suite did not finish (its definition comes from the database)
    #[arg(long, value_name = "ID")]
    resume: Option<i64>,
    #[cfg(feature = "mpi")]
    #[command(flatten)]
    mpi: mpi_run::MpiArgs,
}

/// The `-w` line of `-h`, its workloads the registry's.
fn workload_short_help() -> String {
    let kinds: Vec<&str> = WORKLOADS.iter().map(|w| w.kind.name).collect();
    format!(
        "Workloads: `KIND:PRESET,KEY=VALUE,FLAG` ({}); several as `-w A,B` or -w repeated. \
         `--help` lists every option and preset",
        kinds.join(", ")
    )
}

/// `--db` with a command that stores nothing would silently mean nothing.
fn refuse_unused_db(cli: &Cli) -> anyhow::Result<()> {
    let command = match cli.command {
        Command::Fdtree(_) => "fdtree",
        Command::Archive { .. } => "archive",
        Command::Clean => "clean",
        Command::Capture(_) => "capture",
        Command::Generate { .. } => "generate",
        Command::Crash(_) => "crash",
        _ => return Ok(()),
    };
    if cli.db.is_some() {
        return Err(invalid(format!(
            "--db: `fsbench {command}` stores nothing in the results database; `fsbench run` \
             stores its runs (fdtree's tree: `fsbench run -w tree:dirs=D,files=F,size=S,levels=L`)"
        )));
    }
    Ok(())
}

/// Entry point of the `fsbench` binary.
pub fn main() -> ExitCode {
    fsbench_measure::diag::set_sink(console::say);
    let cli = Cli::parse();
    // The daemon serves a loop device: none of the suite's handlers, stores or checks.
    if let Command::CrashRecorder(args) = &cli.command {
        return crash::recorder(args);
    }
    let progress = Arc::new(Progress::default());
    let db = (cli.command.database().map(Path::to_path_buf))
        .or_else(|| cli.db.clone())
        .unwrap_or_else(Store::default_path);
    let mpi_run = matches!(cli.command, Command::Run(_));
    let outcome = crate::launcher::refuse_uncoordinated(mpi_run)
        .and_then(|()| signals::install_signal_handlers(&progress))
        .and_then(|()| refuse_unused_db(&cli))
        .and_then(|()| match &cli.command {
            // Under mpirun every rank runs the suite together (rank 0 leads).
            #[cfg(feature = "mpi")]
            Command::Run(args) if crate::launcher::launched() => {
                mpi_run::run(args, &db, progress.clone())
            }
            Command::Run(args) => run::run(args, &db, progress.clone()),
            Command::Ffsb(args) => run::ffsb(args, &db, progress.clone()),
            Command::Fio(args) => run::fio(args, &db, progress.clone()),
            Command::Filebench(args) => filebench::run(args, &db, progress.clone()),
            Command::Fdtree(args) => {
                fdtree::run(args, progress.clone()).map(|()| ExitCode::SUCCESS)
            }
            Command::Clean => clean::clean(),
            Command::Capture(args) => {
                capture::run(args, progress.clone()).map(|()| ExitCode::SUCCESS)
            }
            Command::Archive { command } => {
                archive::run(command, progress.clone()).map(|()| ExitCode::SUCCESS)
            }
            Command::Generate { what } => generate::generate(what).map(|()| ExitCode::SUCCESS),
            Command::Crash(args) => crash::run(&args.command),
            other => query(other, &db),
        });
    match outcome {
        Ok(code) => code,
        Err(e) if e.chain().any(|c| c.is::<StdoutClosed>()) => die_by_sigpipe(),
        Err(e) => said(&e),
    }
}

/// Says `e` on stderr: its exit code.
fn said(e: &anyhow::Error) -> ExitCode {
    console::say(&format!("fsbench: error: {e:#}"));
    ExitCode::from(exit_code_of(e))
}

//! `fsbench filebench FILE.f`: a filebench workload file (or a built-in personality) as the
//! suite's one workload, with `run`'s options; `--dump` writes it out as a workload file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use super::{Progress, RunArgs, run};
use fsbench_measure::error::invalid;
use fsbench_workloads::Params;
use fsbench_workloads::WorkloadParams;
use fsbench_workloads::filebench::FilebenchParams;

#[derive(Debug, clap::Args)]
pub(super) struct FilebenchArgs {
    /// filebench workload file (its Workload Model Language: set, define fileset, file,
    /// process and flowop, eventgen, run, psrun)
    #[arg(
        required_unless_present = "personality",
        conflicts_with = "personality"
    )]
    file: Option<PathBuf>,
    /// A built-in personality instead of a file: filebench's fileserver, varmail, webserver,
    /// webproxy, oltp, videoserver, or today's maildir, git, layer-unpack, sqlite-wal,
    /// objectstore, build; scaled as `-w personality:` takes it (`varmail,nthreads=4`)
    #[arg(long, value_name = "NAME")]
    personality: Option<String>,
    /// Run this many seconds, whatever the file's `run` says (or where it has none)
    #[arg(long, value_name = "SECS")]
    runtime: Option<u64>,
    /// Write the workload as a filebench workload file on stdout and run nothing
    #[arg(long)]
    dump: bool,
    #[command(flatten)]
    pub(super) run: RunArgs,
}

pub(super) fn run(
    args: &FilebenchArgs,
    db: &Path,
    progress: Arc<Progress>,
) -> anyhow::Result<ExitCode> {
    let mut params = match (&args.file, &args.personality) {
        (Some(file), _) => FilebenchParams::from_file(file, args.runtime)?,
        (None, Some(spec)) => {
            let parsed = Params::parse(&format!("personality:{spec}"))?;
            let params = parsed.get::<FilebenchParams>();
            params.expect("parsed as a personality").clone()
        }
        (None, None) => return Err(invalid("give a workload file or --personality NAME")),
    };
    if let (None, Some(secs)) = (&args.file, args.runtime) {
        params.model.runtime = secs;
        params.name = format!("{},runtime={secs}", params.name);
        params.validate()?;
    }
    if args.dump {
        super::output::write_stdout(&params.dump())?;
        return Ok(ExitCode::SUCCESS);
    }
    run::only_run_options(&args.run, "fsbench filebench runs one workload file")?;
    run::run_given(
        &args.run,
        vec![Params::from(params).spec()],
        db,
        progress,
        None,
    )
}

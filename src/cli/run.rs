//! `fsbench run` and `fsbench ffsb`: a suite from the command line or a file, run with the
//! database and the console as observers, then printed.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use super::*;
use crate::workload::io::jobfile;

/// The command line as given, and the suite file's text, as recorded with the suite.
fn command_record(args: &RunArgs) -> String {
    let argv: Vec<String> = std::env::args().collect();
    let mut text =
        shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "));
    if let Some(path) = &args.suite
        && let Ok(contents) = std::fs::read_to_string(path)
    {
        text.push_str(&format!("\n\n# suite file {}\n{contents}", path.display()));
    }
    text
}

/// Saves every run in the results database as soon as it finishes.
struct DbSink {
    store: Store,
    id: Option<i64>,
    command: String,
    /// A resumed suite (its earlier runs stay), and whether template images were kept for
    /// a resume: either keeps the suite whatever this attempt measured.
    resumed: bool,
    templates_kept: bool,
}

impl Observer for DbSink {
    fn suite_started(&mut self, plan: &SuitePlan) -> anyhow::Result<()> {
        // A resumed suite was claimed before it was loaded.
        let id = match self.id {
            Some(id) => id,
            None => self.store.begin_suite(plan.result, &self.command)?,
        };
        self.id = Some(id);
        super::console::say(&format!(
            "fsbench: suite ID {id}, saved run by run in {} (if interrupted: fsbench run --resume {id})",
            self.store.path().display()
        ));
        Ok(())
    }

    fn run_finished(&mut self, run: &RunRecord, mkfs_command: Option<&str>) -> anyhow::Result<()> {
        let id = self.id.expect("started before runs");
        self.store.record_run(id, run, mkfs_command)
    }

    fn diagnostic(&mut self, diagnostic: &runner::observer::Diagnostic) {
        if let runner::observer::Diagnostic::TemplatesKept(_) = diagnostic {
            self.templates_kept = true;
        }
    }

    fn suite_finished(&mut self, result: &SuiteResult) -> anyhow::Result<()> {
        let id = self.id.expect("started before finishing");
        // A new suite that failed before any run measured or said anything (a filesystem that
        // would not mount) is no result: not kept, unless a resume can start from what it
        // kept. A failed run's phases and its commands' output stay: they say why.
        let measured = result.runs.iter().any(|r| {
            matches!(r.status, RunStatus::Ok | RunStatus::FsckFailed)
                || !r.phases.is_empty()
                || (r.output.iter()).any(|o| !o.stdout.is_empty() || !o.stderr.is_empty())
        });
        let keep = measured || self.resumed || self.templates_kept;
        if result.status == SuiteStatus::Failed && !keep {
            self.store.forget_suite(id)?;
            super::console::say(&format!(
                "fsbench: suite ID {id} measured nothing: not kept in the results database"
            ));
            return Ok(());
        }
        self.store.finish_suite(id, result)?;
        super::console::say(&format!(
            "fsbench: suite ID {id} {}; see it again with `fsbench show {id}`",
            result.status
        ));
        Ok(())
    }
}

/// `fsbench ffsb PROFILE`: the profile as the suite's one workload, with `run`'s options.
pub(super) fn ffsb(
    args: &FfsbArgs,
    db: &Path,
    progress: Arc<Progress>,
) -> anyhow::Result<ExitCode> {
    let run_args = &args.run;
    only_run_options(run_args, "fsbench ffsb runs one profile")?;
    let mut params = crate::workload::ffsb::FfsbParams::from_file(&args.profile)?;
    if let Some(t) = args.time {
        params.time = Some(t);
        params.validate()?;
    }
    if let Some(location) = &params.fileset.location {
        super::console::say(&format!(
            "fsbench: ffsb: location={location} is not used: every run gets a fresh filesystem on the target (--dir runs in an existing directory)"
        ));
    }
    run_given(
        run_args,
        vec![Params::Ffsb(params).spec()],
        db,
        progress,
        None,
    )
}

/// `run`'s options with `workloads` (read from a tool's own file) as the suite's workloads;
/// `scaled` says how the file was scaled down, as the suite's purpose unless one is given.
pub(super) fn run_given(
    run_args: &RunArgs,
    workloads: Vec<fsbench_model::workload::WorkloadSpec>,
    db: &Path,
    progress: Arc<Progress>,
    scaled: Option<String>,
) -> anyhow::Result<ExitCode> {
    let mut suite = run_args.suite()?;
    if run_args.purpose.is_none() {
        // Not the default suite's purpose: this is the file's run.
        suite.purpose = scaled.unwrap_or_default();
    }
    suite.workloads = workloads;
    run_suite(
        run_args,
        suite,
        None,
        Store::open_for_writing(db)?,
        progress,
        None,
    )
}

/// Refuses what only `fsbench run` takes: a suite file, other workloads, --resume.
pub(super) fn only_run_options(run_args: &RunArgs, what: &str) -> anyhow::Result<()> {
    if run_args.suite.is_some()
        || !run_args.workloads.is_empty()
        || !run_args.archive.is_empty()
        || !run_args.command_phase.is_empty()
        || run_args.resume.is_some()
    {
        return Err(invalid(format!(
            "{what}; use `fsbench run` for suites, other workloads and --resume"
        )));
    }
    Ok(())
}

/// `fsbench fio JOBFILE`: the job file's jobs as the suite's workloads, in order.
pub(super) fn fio(args: &FioArgs, db: &Path, progress: Arc<Progress>) -> anyhow::Result<ExitCode> {
    let run_args = &args.run;
    only_run_options(run_args, "fsbench fio runs one job file")?;
    let cap = match &args.cap {
        Some(text) => jobfile::Cap::parse(text)?,
        None => jobfile::Cap::default(),
    };
    let jobs = jobfile::read(&args.jobfile, &cap)?;
    super::fio_logs::check(&jobs)?;
    let workloads = jobs.into_iter().map(|j| Params::Io(j).spec()).collect();
    let scaled = cap.describe();
    if let Some(line) = &scaled {
        super::console::say(&format!("fsbench: fio: {line}"));
    }
    run_given(run_args, workloads, db, progress, scaled)
}

pub(super) fn run(args: &RunArgs, db: &Path, progress: Arc<Progress>) -> anyhow::Result<ExitCode> {
    let mut store = Store::open_for_writing(db)?;
    let (suite, previous) = match args.resume {
        Some(id) => {
            // Claimed before loading, so the runs found done stay done: no other process
            // adds to the suite while this one holds it.
            store.claim_suite(id)?;
            let previous = store.load(id)?;
            (previous.suite.clone(), Some(previous))
        }
        None => (args.suite()?, None),
    };
    run_suite(args, suite, previous, store, progress, None)
}

/// The suite run with the database and the console watching, then printed and exported;
/// `executor` runs each run (MPI's rank 0) instead of the runner itself.
pub(super) fn run_suite(
    args: &RunArgs,
    suite: Suite,
    previous: Option<SuiteResult>,
    store: Store,
    progress: Arc<Progress>,
    executor: Option<&dyn runner::RunExecutor>,
) -> anyhow::Result<ExitCode> {
    let mut sink = DbSink {
        store,
        id: args.resume,
        command: command_record(args),
        resumed: args.resume.is_some(),
        templates_kept: false,
    };
    let mut console = console::Console::new(!args.quiet);
    let mut logs = super::fio_logs::LogWriter::default();
    let options = runner::RunOptions { progress, executor };
    let (mut result, error) = runner::run_suite(
        &suite,
        previous,
        &options,
        &mut Observers(vec![&mut sink, &mut console, &mut logs]),
    )?;
    result.id = sink.id;
    let printed = print_result(&result, args.output_format, args.verbose);
    let exported = output::export_files(&result, args);
    // The run's own error says more than a failed export or a closed stdout.
    if let Some(e) = error {
        return Err(e);
    }
    exported?;
    printed?;
    // A run that failed without stopping the suite (its background load died) or whose
    // filesystem fsck found inconsistent: the suite's figures are not all there.
    let run_failed =
        (result.runs.iter()).any(|r| matches!(r.status, RunStatus::FsckFailed | RunStatus::Failed));
    Ok(if run_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

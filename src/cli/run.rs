//! `fsbench run` and `fsbench ffsb`: a suite from the command line or a file (its arguments
//! applied over the file's), run with the database and the console as observers, then
//! printed.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use super::*;
use fsbench_workloads::io::jobfile;

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
    let mut params = fsbench_workloads::ffsb::FfsbParams::from_file(&args.profile)?;
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
        vec![Params::from(params).spec()],
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
    if let Some(device) = &args.target_device {
        fsbench_testbed::testbed::device::check_raw_target(device, run_args.force)?;
        fsbench_workloads::io::allow_raw_target(device);
    }
    let targets = jobfile::Targets {
        dir: run_args.dir.as_deref(),
        device: args.target_device.as_deref(),
    };
    let jobs = jobfile::read(&args.jobfile, &cap, &targets)?;
    super::fio_logs::check(&jobs)?;
    // What fio says of a job as it reads it and goes on, said as fio says it (stderr).
    let notes = (jobs.iter().flat_map(|j| j.jobs()))
        .filter_map(|j| j.fio.as_ref())
        .flat_map(|f| &f.notes);
    for note in notes {
        super::console::say(&format!("fsbench: {note}"));
    }
    let workloads = jobs.into_iter().map(|j| Params::from(j).spec()).collect();
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
            let previous = super::query::load(&store, id)?;
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

impl RunArgs {
    /// The suite: the file's (or the default), with the command line applied on top.
    pub(super) fn suite(&self) -> anyhow::Result<Suite> {
        let mut suite = match &self.suite {
            Some(path) => fsbench_testbed::define::read_suite(path)?,
            None => Suite::default(),
        };
        if !self.fs.is_empty() {
            suite.configs = (self.fs.iter())
                .map(|f| fsbench_testbed::define::parse_fs_with(f, &suite.drivers))
                .collect::<anyhow::Result<Vec<_>>>()?
                .into_iter()
                .flatten()
                .collect();
        }
        let given = self.apply_workloads(&mut suite)?;
        let default_suite = self.suite.is_none() && !given;
        if suite.workloads.is_empty() {
            suite.workloads = fsbench_testbed::define::default_workloads();
        }
        // The default run answers its question within its budget: rounds until the
        // figures are precise enough, or until the time is up (see the README).
        if default_suite && self.runs.is_none() {
            suite.set_auto_runs(AutoRuns {
                max_secs: Some(DEFAULT_MAX_SECS),
                ..AutoRuns::default()
            });
        }
        auto_runs::apply(
            &mut suite,
            self.runs,
            self.target_ci,
            self.max_runs,
            self.max_time,
        )?;
        self.apply_settings(&mut suite);
        if default_suite && self.purpose.is_none() && suite.purpose.is_empty() {
            suite.purpose = DEFAULT_PURPOSE.to_string();
        }
        let explicit_target = self.apply_target(&mut suite)?;
        // Without root fsbench cannot make filesystems; the default suite then runs on a
        // directory here instead, and says so. An explicit request for mkfs fails instead.
        if !tools::is_root() && suite.target.makes_filesystems() {
            if self.suite.is_some() || explicit_target || !self.fs.is_empty() {
                return Err(FsbenchError::NotRoot(
                    "making filesystems (mkfs, mount, losetup)".into(),
                )
                .into());
            }
            console::say(
                "fsbench: not root, so no filesystems can be made (mkfs, mount and loop \
                 devices need root) and caches cannot be dropped; running on a fresh \
                 directory under the current directory instead",
            );
            suite.target = TargetSpec::Dir {
                path: PathBuf::from("."),
            };
        }
        Ok(suite)
    }

    /// The workloads given (`-w`, `--archive`, `--command-phase`) in place of the suite's;
    /// whether any were.
    fn apply_workloads(&self, suite: &mut Suite) -> anyhow::Result<bool> {
        let commands = (!self.command_phase.is_empty())
            .then(|| {
                CommandParams::from_flags(
                    self.command_setup.clone(),
                    &self.command_phase,
                    self.command_cleanup.clone(),
                    self.command_timeout,
                    self.command_space.as_deref().map(parse_size).transpose()?,
                )
            })
            .transpose()?;
        let given = !self.workloads.is_empty() || !self.archive.is_empty() || commands.is_some();
        if !given {
            return Ok(false);
        }
        let mut workloads: Vec<Params> = (self.workloads.iter())
            .map(|w| Params::parse_list(w))
            .collect::<anyhow::Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .chain(commands.map(Params::from))
            .collect();
        // An archive's name is a file name, commas and all, not workload options.
        for archive in &self.archive {
            workloads.push(ArchiveParams::from_file(archive)?.into());
        }
        suite.workloads = workloads.iter().map(Params::spec).collect();
        Ok(true)
    }

    /// The settings given, over the suite's: one flag, one field.
    fn apply_settings(&self, suite: &mut Suite) {
        if let Some(name) = &self.name {
            suite.name = name.clone();
        }
        if let Some(purpose) = &self.purpose {
            suite.purpose = purpose.clone();
        }
        suite.drop_caches &= !self.no_drop_caches;
        if let Some(age) = &self.age {
            suite.age = Some(age.clone());
        }
        if !self.fill.is_empty() {
            suite.fill = self.fill.clone();
        }
        if !self.sched.is_empty() {
            suite.sched = self.sched.clone();
        }
        suite.sched_backing |= self.sched_backing;
        if self.baseline.is_some() {
            suite.baseline = self.baseline;
        }
        if !self.background.is_empty() {
            suite.background = self.background.clone();
        }
        suite.probe_after |= self.probe_after_run;
        self.crash.apply(suite);
        if let Some(v) = self.min_phase_secs {
            suite.min_phase_secs = v;
        }
        if let Some(v) = self.max_cv {
            suite.max_cv_percent = v;
        }
    }

    /// The target given (`--dir`, `--device`, `--image-dir`, `--image-size`), its loop
    /// cache, the extra devices and `--force`, over the suite's; whether a target was given.
    fn apply_target(&self, suite: &mut Suite) -> anyhow::Result<bool> {
        let explicit_target = self.dir.is_some()
            || self.device.is_some()
            || self.image_dir.is_some()
            || self.image_size.is_some();
        if let Some(dir) = &self.dir {
            suite.target = TargetSpec::Dir {
                path: absolute(dir),
            };
        } else if let Some(device) = &self.device {
            suite.target = TargetSpec::Device {
                path: absolute(device),
                force: self.force,
                loop_cache: false,
            };
        } else if explicit_target {
            let size = self.image_size.as_deref().map(parse_size).transpose()?;
            if size == Some(0) {
                return Err(invalid("--image-size must be larger than 0"));
            }
            suite.target = TargetSpec::Image {
                dir: absolute(&self.image_dir.clone().unwrap_or_else(default_image_dir)),
                size,
                loop_cache: false,
            };
        }
        if self.loop_cache {
            match &mut suite.target {
                TargetSpec::Image { loop_cache, .. } | TargetSpec::Device { loop_cache, .. } => {
                    *loop_cache = true
                }
                TargetSpec::Dir { .. } => {
                    return Err(invalid(
                        "--loop-cache applies only to loop images and image files",
                    ));
                }
            }
        }
        let extra = self.extra_device.iter().map(|p| (p, false));
        let forced = self.force_extra_device.iter().map(|p| (p, true));
        for (path, force) in extra.chain(forced) {
            suite.extra_devices.push(ExtraDevice {
                path: absolute(path),
                force,
            });
        }
        if self.force {
            match &mut suite.target {
                TargetSpec::Device { force, .. } => *force = true,
                _ => return Err(invalid("--force applies only to --device")),
            }
        }
        Ok(explicit_target)
    }
}

/// `path` made absolute, so a stored suite means the same place when resumed elsewhere.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

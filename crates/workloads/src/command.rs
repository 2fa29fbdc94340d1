//! The user's own workload: shell commands as phases. An untimed `setup`, named timed phases,
//! an untimed `cleanup`, each `sh -c` in the run's fresh directory; per timed phase its wall
//! time and the process tree's CPU, bytes and peak memory, with a rate where the user says
//! what one phase's work counts.

pub mod cgroup;
pub mod process;

use std::borrow::Cow;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::options::{OptKind, OptionDef, Parsed, Preset, WorkloadKind};
use super::{KeptOutput, PhaseInfo, PhaseOutput, SpaceNeed, Workload, WorkloadParams};
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::PhaseRecorder;
use fsbench_model::measurement::Figure;
use process::{Exit, Finished, Step};

/// The most a phase may be given to run: a week.
const TIMEOUT_MAX: u64 = 7 * 24 * 3600;
/// Lines of stderr a failure shows.
const FAILURE_LINES: usize = 20;

/// One timed phase: its name, its command, and what its work counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandPhase {
    pub name: String,
    pub run: String,
    /// Units of work the phase does, for a rate (`items/s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u64>,
    /// A command run after the phase (untimed) that prints the units it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_cmd: Option<String>,
}

/// The commands, in a suite file as `setup`, `phase = [{name, run}, ...]`, `cleanup`; the
/// same form is stored with the suite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandParams {
    /// The label's name (default: the phases' names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    pub phase: Vec<CommandPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<String>,
    /// Seconds each command may run before its whole process tree is killed.
    #[serde(default = "default_timeout")]
    pub timeout: u64,
    /// Bytes the commands need on the filesystem under test (sizes loop images).
    #[serde(default = "default_space", deserialize_with = "size_field")]
    pub space: u64,
}

const DEFAULT_TIMEOUT: &str = "3600";
const DEFAULT_SPACE: &str = "512m";

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT.parse().expect("a number")
}

fn default_space() -> u64 {
    fsbench_measure::units::parse_size(DEFAULT_SPACE).expect("a size")
}

/// A size as a number of bytes or as text with a unit (`64M`).
fn size_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Size {
        Bytes(u64),
        Text(String),
    }
    match Size::deserialize(d)? {
        Size::Bytes(n) => Ok(n),
        Size::Text(t) => fsbench_measure::units::parse_size(&t).map_err(serde::de::Error::custom),
    }
}

const OPTIONS: &[OptionDef] = &[
    OptionDef::new(
        "file",
        OptKind::Text,
        "a TOML file of `setup`, `cleanup` and `[[phase]]` tables (name, run, items or items_cmd)",
    ),
    OptionDef::new("name", OptKind::Text, "the workload's name in labels"),
    OptionDef {
        min: 1,
        max: TIMEOUT_MAX,
        unit: "seconds",
        default: Some(DEFAULT_TIMEOUT),
        ..OptionDef::new(
            "timeout",
            OptKind::Count,
            "each command's limit; past it the whole process tree is killed and the run fails",
        )
    },
    OptionDef {
        min: 1,
        default: Some(DEFAULT_SPACE),
        ..OptionDef::new(
            "space",
            OptKind::Size,
            "space the commands need on the filesystem under test",
        )
    },
];

/// Without `file=`, the phases are the preset's: a look at what the workload measures.
const PRESETS: &[Preset] = &[Preset {
    name: "tar",
    values: &[],
    help: "a demo: setup makes 2,000 files of 4 KiB; phases tar and gzip them (pack), unpack \
           the archive and read the copy; 0.6 s a run on tmpfs here",
}];

/// The `tar` preset's commands, as a file would give them.
const TAR_DEMO: &str = r#"
name = "tar"
setup = "for d in $(seq 20); do mkdir -p src/d$d; for f in $(seq 100); do head -c 4096 /dev/urandom > src/d$d/f$f; done; done"
space = "64M"
[[phase]]
name = "pack"
run = "tar -czf src.tgz src && sync"
items = 2000
[[phase]]
name = "unpack"
run = "mkdir out && tar -xzf src.tgz -C out && sync"
items = 2000
[[phase]]
name = "read"
run = "find out -type f -exec cat {} + | wc -c"
items = 2000
"#;

/// The command workload's option table.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "command",
    summary: "your own shell commands as timed phases (setup and cleanup untimed), from \
              `file=`; on the command line best given with --command-phase NAME=CMD",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "tar",
    more_work: &["file"],
    aliases: &[],
};

fn build(p: &Parsed) -> anyhow::Result<CommandParams> {
    let mut params = match p.text("file") {
        Some(file) => CommandParams::from_file(Path::new(file))?,
        None => toml::from_str(TAR_DEMO).expect("the tar preset parses"),
    };
    if p.explicit("name") || params.name.is_none() {
        params.name = p.text("name").map(str::to_string);
    }
    if p.explicit("timeout") {
        params.timeout = p.num("timeout").expect("explicit");
    }
    if p.explicit("space") {
        params.space = p.num("space").expect("explicit");
    }
    params.validate()?;
    Ok(params)
}

impl CommandParams {
    /// The commands of a TOML file (`setup`, `cleanup`, `[[phase]]`, `timeout`, `space`).
    pub fn from_file(path: &Path) -> anyhow::Result<CommandParams> {
        let text = fsbench_measure::calls::read_text_file(path, "the command workload's file")?;
        toml::from_str(&text).map_err(|e| invalid(format!("{}: {e}", path.display())))
    }

    /// The workload of the command line's `--command-*` flags.
    pub fn from_flags(
        setup: Option<String>,
        phases: &[String],
        cleanup: Option<String>,
        timeout: Option<u64>,
        space: Option<u64>,
    ) -> anyhow::Result<CommandParams> {
        let phase = phases
            .iter()
            .map(|p| {
                let (name, run) = p.split_once('=').ok_or_else(|| {
                    invalid(format!(
                        "--command-phase `{p}`: give NAME=COMMAND, e.g. build='make -j2'"
                    ))
                })?;
                Ok(CommandPhase {
                    name: name.trim().to_string(),
                    run: run.to_string(),
                    items: None,
                    items_cmd: None,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        let params = CommandParams {
            name: None,
            setup,
            phase,
            cleanup,
            timeout: timeout.unwrap_or_else(default_timeout),
            space: space.unwrap_or_else(default_space),
        };
        params.validate()?;
        Ok(params)
    }
}

/// A command shortened for one line.
fn abbreviate(command: &str) -> String {
    let line = command.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(48) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

impl WorkloadParams for CommandParams {
    const KIND: &'static WorkloadKind = &KIND;

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    fn name(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            let names: Vec<&str> = self.phase.iter().map(|p| p.name.as_str()).collect();
            names.join("+")
        })
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(setup) = &self.setup {
            parts.push(format!("setup `{}`", abbreviate(setup)));
        }
        for p in &self.phase {
            parts.push(format!("{} `{}`", p.name, abbreviate(&p.run)));
        }
        if let Some(cleanup) = &self.cleanup {
            parts.push(format!("cleanup `{}`", abbreviate(cleanup)));
        }
        format!("your commands: {}", parts.join(", then "))
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.phase.is_empty() {
            return Err(invalid("command: give at least one timed phase"));
        }
        let mut seen = std::collections::HashSet::new();
        for p in &self.phase {
            let good = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
            if p.name.is_empty() || p.name.len() > 40 || !p.name.chars().all(good) {
                return Err(invalid(format!(
                    "command: phase name `{}`: use 1 to 40 letters, digits, `-`, `_` or `.`",
                    p.name
                )));
            }
            // `lifecycle` names mkfs and fsck in every table; `setup` is the untimed one.
            let reserved = ["lifecycle", "setup"].contains(&p.name.as_str())
                || (p.name == "cleanup" && self.cleanup.is_some());
            if reserved || !seen.insert(p.name.as_str()) {
                return Err(invalid(format!(
                    "command: phase name `{}` is {}",
                    p.name,
                    if reserved { "reserved" } else { "given twice" }
                )));
            }
            if p.items.is_some() && p.items_cmd.is_some() {
                return Err(invalid(format!(
                    "command: phase `{}`: give `items` or `items_cmd`, not both",
                    p.name
                )));
            }
            if p.items == Some(0) {
                return Err(invalid(format!(
                    "command: phase `{}`: `items` must be at least 1",
                    p.name
                )));
            }
        }
        let commands = (self.phase.iter())
            .flat_map(|p| [Some(&p.run), p.items_cmd.as_ref()])
            .chain([self.setup.as_ref(), self.cleanup.as_ref()])
            .flatten();
        for c in commands {
            if c.trim().is_empty() || c.contains('\0') {
                return Err(invalid(
                    "command: a command is empty or holds a NUL byte".to_string(),
                ));
            }
        }
        if !(1..=TIMEOUT_MAX).contains(&self.timeout) {
            return Err(invalid(format!(
                "command: `timeout` must be between 1 and {TIMEOUT_MAX} seconds, got {}",
                self.timeout
            )));
        }
        if self.space == 0 {
            return Err(invalid("command: `space` must be larger than 0"));
        }
        Ok(())
    }

    fn space_needed(&self) -> Option<SpaceNeed> {
        Some(SpaceNeed::exactly(self.space, (self.space >> 16).max(1024)))
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        (self.phase.iter())
            .map(|p| PhaseInfo {
                name: Cow::Owned(p.name.clone()),
                unit: Cow::Borrowed("items"),
                moves_data: false,
                has_rate: p.items.is_some() || p.items_cmd.is_some(),
                timed: true,
            })
            .collect()
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(Commands::new(self.clone()))
    }

    fn more_work_advice(&self) -> String {
        "commands that do more".into()
    }

    fn runs_user_commands(&self) -> bool {
        true
    }

    fn mpi_refusal(&self) -> Option<&'static str> {
        Some(
            "your commands would run once per rank with nothing to line their phases up; run \
             your own parallel program (mpirun inside a phase) instead",
        )
    }
}

/// The workload's state through one run.
pub(crate) struct Commands {
    params: CommandParams,
    /// `FSBENCH_RUN`: the run's round.
    round: u32,
    cancel: Arc<AtomicBool>,
    /// What each timed phase's command used, until its figures are reported.
    finished: Vec<Option<Finished>>,
    kept: Vec<KeptOutput>,
}

impl Commands {
    fn new(params: CommandParams) -> Commands {
        let phases = params.phase.len();
        Commands {
            params,
            round: 1,
            cancel: Arc::default(),
            finished: (0..phases).map(|_| None).collect(),
            kept: Vec::new(),
        }
    }

    /// Runs `command` as step `step` in `dir`; its output is kept, and a failure (an exit
    /// status other than 0, a signal, the timeout) is the run's, with its stderr's end.
    fn run(
        &mut self,
        step: &str,
        command: &str,
        dir: BorrowedFd<'_>,
    ) -> Result<Finished, FsbenchError> {
        let path = dir_path(dir)?;
        let finished = process::run(&Step {
            command,
            dir: &path,
            run: self.round,
            timeout: Duration::from_secs(self.params.timeout),
            cancel: &self.cancel,
        })?;
        let (stdout, stderr) = (finished.stdout.text(), finished.stderr.text());
        if !stdout.is_empty() || !stderr.is_empty() {
            self.kept.push(KeptOutput {
                step: step.to_string(),
                stdout,
                stderr,
            });
        }
        let ended = match finished.exit {
            Exit::Code(0) => return Ok(finished),
            Exit::Code(code) => format!("exited with status {code}"),
            Exit::Signal(signal) => format!("was killed by signal {signal}"),
            Exit::TimedOut => format!(
                "ran past its timeout of {} s: its whole process tree was killed",
                self.params.timeout
            ),
        };
        let stderr = finished.stderr.last_lines(FAILURE_LINES);
        let said = match stderr.is_empty() {
            true => "; it wrote nothing to stderr".to_string(),
            false => format!("; its stderr ends:\n{stderr}"),
        };
        Err(FsbenchError::Failed(format!(
            "{step}: `{}` {ended}{said}",
            abbreviate(command)
        )))
    }

    /// The units `items_cmd` of phase `phase` printed.
    fn count_items(&mut self, phase: usize, dir: BorrowedFd<'_>) -> Result<u64, FsbenchError> {
        let p = &self.params.phase[phase];
        let (step, command) = (format!("{} items", p.name), p.items_cmd.clone());
        let Some(command) = command else {
            return Ok(p.items.unwrap_or(1));
        };
        let finished = self.run(&step, &command, dir)?;
        let printed = finished.stdout.text();
        let word = printed.split_whitespace().next().unwrap_or("");
        word.parse().map_err(|_| {
            FsbenchError::Failed(format!(
                "{step}: `{}` printed `{}`, not a count",
                abbreviate(&command),
                abbreviate(printed.trim())
            ))
        })
    }
}

/// The directory's path, for the commands' working directory and `FSBENCH_DIR`.
fn dir_path(dir: BorrowedFd<'_>) -> Result<PathBuf, FsbenchError> {
    std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd()))
        .map_err(|e| FsbenchError::Failed(format!("cannot find the run's directory: {e}")))
}

const MIB: f64 = 1024.0 * 1024.0;

impl Workload for Commands {
    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        self.params.phases()
    }

    fn expected_units(&self, phase: usize) -> u64 {
        self.params.phase[phase].items.unwrap_or(0)
    }

    fn setup(
        &mut self,
        dir: BorrowedFd<'_>,
        round: u32,
        cancel: &Arc<AtomicBool>,
    ) -> Result<(), FsbenchError> {
        self.round = round;
        self.cancel = cancel.clone();
        match self.params.setup.clone() {
            Some(setup) => self.run("setup", &setup, dir).map(drop),
            None => Ok(()),
        }
    }

    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        self.cancel = rec.progress().cancel.clone();
        let p = &self.params.phase[phase];
        let (name, command) = (p.name.clone(), p.run.clone());
        let finished = self.run(&format!("phase `{name}`"), &command, dir)?;
        rec.add_cpu(finished.usage.cpu_user, finished.usage.cpu_system);
        self.finished[phase] = Some(finished);
        Ok(())
    }

    fn after_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
    ) -> Result<PhaseOutput, FsbenchError> {
        let mut out = PhaseOutput::default();
        if let Some(f) = self.finished[phase].take() {
            let u = &f.usage;
            let secs = |name: &str, d: Duration| Figure::new(name, "s", false, d.as_secs_f64());
            let mib = |name: &str, bytes: u64| Figure::new(name, "MiB", false, bytes as f64 / MIB);
            out.figures.push(secs("cpu user", u.cpu_user));
            out.figures.push(secs("cpu system", u.cpu_system));
            if let Some((read, written)) = u.block {
                out.figures.push(mib("block read", read));
                out.figures.push(mib("block written", written));
            }
            if let Some((read, written)) = u.chars {
                out.figures.push(mib("chars read", read));
                out.figures.push(mib("chars written", written));
            }
            out.figures.push(mib("peak memory", u.peak_memory));
            out.notes.extend(u.notes.iter().cloned());
        }
        let p = &self.params.phase[phase];
        if p.items.is_some() || p.items_cmd.is_some() {
            out.units = Some(self.count_items(phase, dir)?);
        }
        if phase + 1 == self.params.phase.len()
            && let Some(cleanup) = self.params.cleanup.clone()
        {
            self.run("cleanup", &cleanup, dir)?;
        }
        Ok(out)
    }

    fn kept_output(&mut self) -> Vec<KeptOutput> {
        std::mem::take(&mut self.kept)
    }
}

#[cfg(test)]
mod tests;

//! Workloads: each a re-implementation of one seed benchmark (or the user's own commands and
//! captured calls) behind the [`Workload`] trait, each one folder and one row of the
//! registry ([`workloads!`]), its options one table ([`options::WorkloadKind`]).
//!
//! A workload is a sequence of phases. The runner (or an MPI rank) calls
//! [`Workload::run_phase`] for each phase in turn, with caches dropped and barriers in between,
//! so phases must not depend on anything but the workload's own state and the directory.

/// Implements [`WorkloadParams`] with the parameter type's own methods of the same names.
macro_rules! workload_params {
    ($params:ty, |$p:ident| phases: $phases:expr, instantiate: $new:expr
     $(, buffers: $buffers:expr)? $(, threads: $threads:expr)? $(,)?) => {
        impl $crate::WorkloadParams for $params {
            fn name(&self) -> String {
                <$params>::name(self)
            }
            fn describe(&self) -> String {
                <$params>::describe(self)
            }
            fn validate(&self) -> anyhow::Result<()> {
                <$params>::validate(self)
            }
            fn space_needed(&self) -> Option<$crate::SpaceNeed> {
                <$params>::space_needed(self)
            }
            $(fn buffer_bytes(&self) -> u64 {
                let $p = self;
                $buffers
            })?
            $(fn threads(&self) -> u32 {
                let $p = self;
                $threads
            })?
            fn phases(&self) -> std::borrow::Cow<'static, [$crate::PhaseInfo]> {
                #[allow(unused_variables)] // most workloads have fixed phases
                let $p = self;
                $phases
            }
            fn instantiate(&self) -> Box<dyn $crate::Workload> {
                let $p = self;
                Box::new($new)
            }
        }
    };
}

pub(crate) mod alloc;
pub mod archive;
pub(crate) mod atomic;
pub mod command;
pub mod ffsb;
pub mod io;
pub mod iozone;
mod options;
pub(crate) mod parallel;
pub mod replay;
pub mod tree;
pub(crate) mod xattr;

use std::borrow::Cow;
use std::os::fd::BorrowedFd;

use serde::Serialize;

use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::PhaseRecorder;
use fsbench_model::measurement::Figure;
use fsbench_model::results::{SuiteResult, WorkloadRecord};
use fsbench_model::suite::Suite;
use fsbench_model::workload::{KeptOutput, PhaseInfo, WorkloadSpec};
use options::WorkloadKind;

/// What a phase reports besides its measurement, gathered untimed after it (and its sync).
#[derive(Debug, Default)]
pub struct PhaseOutput {
    /// Figures of the workload's own: extents per file, transactions per operation, the cells
    /// of a throughput matrix (figures with dimensions)...
    pub figures: Vec<Figure>,
    /// What a reader must know about the figures.
    pub notes: Vec<String>,
    /// Why the phase measured nothing (a method the filesystem lacks): it has no figures.
    pub unsupported: Option<String>,
    /// Why the phase had nothing to do (`no files`: an empty file set): it has no figures, so
    /// no rate of 0 that would read as a measurement.
    pub idle: Option<String>,
    /// Units of work known only after the phase (a user's command that prints a count):
    /// they replace the phase's count.
    pub units: Option<u64>,
}

/// What happens to the filesystem between a phase and the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// Nothing: the next phase runs on the same mount.
    Keep,
    /// Unmount (timed), fsck (timed) and mount again: data durable, the check done with the
    /// phase's files in place (FFSB's e2fsck time), caches cold.
    Remount,
    /// Unmount and fsck as for `Remount`, then a freshly made filesystem for the next phase.
    Remake,
}

/// Space and inodes a workload needs on the filesystem under test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpaceNeed {
    /// Bytes the workload cannot run without: a target with less is refused.
    pub bytes: u64,
    pub inodes: u64,
    /// Bytes it would use in full, for sizing loop images (the iozone matrix skips files
    /// that do not fit, so it needs less than it can use); never below `bytes`.
    pub ideal_bytes: u64,
}

impl SpaceNeed {
    /// A need that is the same at minimum and in full.
    pub fn exactly(bytes: u64, inodes: u64) -> SpaceNeed {
        SpaceNeed {
            bytes,
            inodes,
            ideal_bytes: bytes,
        }
    }

    /// The larger of two needs, field by field (a suite needs what its largest workload needs).
    pub fn max(self, other: SpaceNeed) -> SpaceNeed {
        SpaceNeed {
            bytes: self.bytes.max(other.bytes),
            inodes: self.inodes.max(other.inodes),
            ideal_bytes: self.ideal_bytes.max(other.ideal_bytes),
        }
    }
}

/// One workload instance, holding its state between phases.
pub trait Workload: Send {
    /// Phases in the order they run.
    fn phases(&self) -> Cow<'static, [PhaseInfo]>;
    /// Units phase `phase` will complete, for progress bars and checks.
    fn expected_units(&self, phase: usize) -> u64;
    /// Untimed work before the first phase, on the run's fresh filesystem (the user's setup
    /// command); `round` is the run's, `cancel` the flag Ctrl-C sets.
    fn setup(
        &mut self,
        _dir: BorrowedFd<'_>,
        _round: u32,
        _cancel: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<(), FsbenchError> {
        Ok(())
    }
    /// What the filesystem under test is declared to lack (a user driver's flags), told
    /// before setup: a workload that counts extents says "unsupported" without FIEMAP.
    fn filesystem_lacks(&mut self, _lacks: &[fsbench_model::filesystem::Capability]) {}
    /// Untimed work just before phase `phase` starts its clock (decompressing an archive).
    fn before_phase(&mut self, _phase: usize) -> Result<(), FsbenchError> {
        Ok(())
    }
    /// Runs one phase in `dir`, recording into `rec`.
    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError>;
    /// Untimed work after phase `phase` and its sync (counting extents, removing a method's
    /// file), and what the phase reports besides its measurement.
    fn after_phase(
        &mut self,
        _phase: usize,
        _dir: BorrowedFd<'_>,
    ) -> Result<PhaseOutput, FsbenchError> {
        Ok(PhaseOutput::default())
    }
    /// What the runner does to the filesystem after phase `phase`.
    fn boundary_after(&self, _phase: usize) -> Boundary {
        Boundary::Keep
    }
    /// The output of the commands the run ran (the tails kept), failed ones included.
    fn kept_output(&mut self) -> Vec<KeptOutput> {
        Vec::new()
    }
}

/// What every workload's parameters offer the runner; [`Params`] dispatches to it.
pub(crate) trait WorkloadParams {
    /// The label's part after `KIND:` (a preset's name, or the settings).
    fn name(&self) -> String;
    /// One line describing what the workload does, with its totals.
    fn describe(&self) -> String;
    /// Checks parameters; the runner calls it before anything is created.
    fn validate(&self) -> anyhow::Result<()>;
    /// Space and inodes it needs; `None` when its sizes and counts overflow 64 bits.
    fn space_needed(&self) -> Option<SpaceNeed>;
    /// Bytes of I/O buffers it allocates up front (checked against the machine's memory).
    fn buffer_bytes(&self) -> u64 {
        0
    }
    /// Threads that make its calls at once (the harness ceiling is measured at this count).
    fn threads(&self) -> u32 {
        1
    }
    fn phases(&self) -> Cow<'static, [PhaseInfo]>;
    /// A fresh instance, ready for its first phase.
    fn instantiate(&self) -> Box<dyn Workload>;
}

/// The registry: one row per workload, `Variant(parameters) = its option table`. The
/// variant's lowercase name is the stable `kind` stored in databases and suite files.
macro_rules! workloads {
    ($($variant:ident($params:ty) = $kind:path),* $(,)?) => {
        /// One workload's parameters, typed: what the engine runs. Parsed from `--workload`
        /// or read from a suite's [`WorkloadSpec`] ([`Params::of`]), validated.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(tag = "kind", rename_all = "lowercase")]
        pub enum Params {
            $($variant($params)),*
        }

        /// Every workload, in the order `--help` lists them.
        pub const WORKLOADS: &[&options::WorkloadKind] = &[$(&$kind),*];

        impl Params {
    /// Refuses this workload where it needs what `driver` declares it lacks, naming the
    /// driver, the flag and the workload's option: before anything is made.
    pub fn check_needs(&self, driver: &fsbench_model::filesystem::UserDriver) -> anyhow::Result<()> {
        let kind = self.kind();
        match kind
            .needs
            .iter()
            .find(|n| !driver.has(n.capability) && (n.uses)(self))
        {
            Some(need) => Err(invalid(format!(
                "user driver `{}` declares `{} = false`, but {}'s {} needs {}: \
                 change that setting, or run {} on another filesystem",
                driver.name,
                need.capability.key(),
                kind.name,
                need.option,
                need.capability.what(),
                kind.name,
            ))),
            None => Ok(()),
        }
    }

}

impl Params {
            pub fn kind(&self) -> &'static options::WorkloadKind {
                match self {
                    $(Params::$variant(_) => &$kind),*
                }
            }

            pub(crate) fn params(&self) -> &dyn WorkloadParams {
                match self {
                    $(Params::$variant(p) => p),*
                }
            }

            /// The form databases store (the parameters' own serde), for `kind`.
            fn from_stored(kind: &str, value: serde_json::Value) -> Option<serde_json::Result<Params>> {
                $(if kind == $kind.name {
                    return Some(serde_json::from_value::<$params>(value).map(Params::$variant));
                })*
                None
            }
        }
    };
}

workloads! {
    Tree(tree::TreeParams) = tree::KIND,
    Archive(archive::ArchiveParams) = archive::KIND,
    Atomic(atomic::AtomicParams) = atomic::KIND,
    Iozone(iozone::IozoneParams) = iozone::KIND,
    Io(io::IoParams) = io::KIND,
    Alloc(alloc::AllocParams) = alloc::KIND,
    Ffsb(ffsb::FfsbParams) = ffsb::KIND,
    Command(command::CommandParams) = command::KIND,
    Replay(replay::ReplayParams) = replay::KIND,
    Xattr(xattr::XattrParams) = xattr::KIND,
}

/// The registered workload called `name` (or an alias of one, with its preset).
fn kind_named(name: &str) -> Option<(&'static WorkloadKind, Option<&'static str>)> {
    WORKLOADS.iter().find_map(|k| {
        if k.name == name {
            return Some((*k, None));
        }
        k.aliases
            .iter()
            .find(|(alias, _)| *alias == name)
            .map(|(_, preset)| (*k, Some(*preset)))
    })
}

/// The registered workload of a kept spec's `kind` (none for a kind this fsbench lacks).
pub fn registered(kind: &str) -> Option<&'static WorkloadKind> {
    WORKLOADS.iter().copied().find(|k| k.name == kind)
}

fn unknown_workload(name: &str) -> anyhow::Error {
    let mut names: Vec<&str> = WORKLOADS.iter().map(|k| k.name).collect();
    names.extend(WORKLOADS.iter().flat_map(|k| k.aliases.iter().map(|a| a.0)));
    invalid(format!(
        "unknown workload `{name}`: available workloads are: {}",
        names.join(", ")
    ))
}

impl Params {
    /// Parses one `KIND[:ARGS]`, e.g. `tree:small-shallow` or `tree:dirs=3,files=4,size=1,levels=10`.
    pub fn parse(text: &str) -> anyhow::Result<Params> {
        let mut specs = Params::parse_list(text)?;
        if specs.len() != 1 {
            return Err(invalid(format!(
                "`{text}` names {} workloads where one is expected",
                specs.len()
            )));
        }
        Ok(specs.remove(0))
    }

    /// Parses a `-w` value: one workload or several separated by commas, each starting with
    /// its kind (`atomic:quick,archive:tiny`, `tree,atomic`).
    pub fn parse_list(text: &str) -> anyhow::Result<Vec<Params>> {
        let starts_workload = |item: &str| {
            let name = item.split_once(':').map_or(item, |(k, _)| k).trim();
            kind_named(name).is_some()
        };
        let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
        for (i, item) in text.split(',').enumerate() {
            if i == 0 || starts_workload(item) {
                let (kind, args) = item.split_once(':').unwrap_or((item, ""));
                groups.push((kind.trim().to_string(), vec![args]));
            } else if let Some((_, args)) = groups.last_mut() {
                args.push(item);
            }
        }
        groups
            .into_iter()
            .map(|(name, args)| {
                let (kind, alias_preset) =
                    kind_named(&name).ok_or_else(|| unknown_workload(&name))?;
                let mut args = args.join(",");
                if let Some(preset) = alias_preset {
                    args = format!("{preset},{args}");
                }
                (kind.build)(&kind.parse_cli(&args)?)
            })
            .collect()
    }

    /// A suite file's `[[workload]]` table or a stored spec, both as JSON.
    fn from_value(value: serde_json::Value) -> anyhow::Result<Params> {
        let serde_json::Value::Object(mut map) = value else {
            return Err(invalid("a workload is a table with `kind = \"...\"`"));
        };
        let Some(serde_json::Value::String(name)) = map.remove("kind") else {
            return Err(invalid(
                "a workload needs `kind = \"...\"` (e.g. kind = \"tree\")",
            ));
        };
        let (kind, alias_preset) = kind_named(&name).ok_or_else(|| unknown_workload(&name))?;
        if let Some(preset) = alias_preset {
            map.insert("preset".into(), preset.into());
        }
        let from_options = |map| (kind.build)(&kind.parse_map(map)?);
        if kind.knows_all(&map) {
            return from_options(&map);
        }
        // A list of tables (the command workload's phases) is no option: the parameters'
        // own serde reads it, and its error is the one to show.
        let has_tables = map.values().any(|v| {
            v.as_array()
                .is_some_and(|a| a.iter().any(|i| i.is_object()))
        });
        // Databases store the parameters' own fields; a suite file uses options.
        match Params::from_stored(kind.name, serde_json::Value::Object(map.clone())) {
            Some(Ok(spec)) => Ok(spec),
            Some(Err(e)) if has_tables => Err(invalid(format!("{}: {e}", kind.name))),
            _ => from_options(&map),
        }
    }

    /// The `--workload` help: every workload's presets and options, from their tables.
    pub fn help() -> String {
        let mut out = String::from(
            "KIND:PRESET,KEY=VALUE,FLAG; a preset supplies values, keys override it in any \
             order; lists join values with `+`; several workloads: -w KIND:...,KIND:... \
             or -w repeated.\n",
        );
        for kind in WORKLOADS {
            out.push_str(&kind.help());
        }
        out
    }

    /// Short label used in tables, e.g. `tree:small-shallow`.
    pub fn label(&self) -> String {
        format!("{}:{}", self.kind().name, self.params().name())
    }

    /// One line describing what the workload does, with its totals.
    pub fn describe(&self) -> String {
        self.params().describe()
    }

    pub fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        self.params().phases()
    }

    /// Threads that make its calls at once.
    pub fn threads(&self) -> u32 {
        self.params().threads()
    }

    /// What the workload needs; an error when its sizes and counts overflow 64 bits (a need
    /// that wrapped around would pass the free-space check).
    pub fn space_needed(&self) -> anyhow::Result<SpaceNeed> {
        self.params().space_needed().ok_or_else(|| {
            invalid(format!(
                "{}: the space it needs is beyond 16 EiB (sizes × counts overflow): use smaller sizes or counts",
                self.label()
            ))
        })
    }

    /// A fresh instance, ready for its first phase.
    pub fn instantiate(&self) -> Box<dyn Workload> {
        self.params().instantiate()
    }

    /// The aging the workload itself asks for before its phases (FFSB's `agefs=1`).
    pub fn age_profile(&self) -> Option<fsbench_model::aging::AgeProfile> {
        (self.kind().age_profile)(self)
    }

    /// Whether its phases are the user's commands, which fsbench's own harness ceiling
    /// says nothing about.
    pub fn runs_user_commands(&self) -> bool {
        matches!(self, Params::Command(_))
    }

    /// Checks parameters; the runner calls it before anything is created.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.params().validate()?;
        check_buffers(
            &self.label(),
            self.params().buffer_bytes(),
            fsbench_measure::sysinfo::available_memory(),
        )
    }
}

/// How to give the workload labelled `workload` more work, in its own settings.
pub fn more_work_advice(suite: &Suite, workload: &str) -> String {
    (suite.workloads.iter())
        .filter_map(|w| Params::of(w).ok())
        .find(|w| w.label() == workload)
        .map_or_else(|| "a larger workload".into(), |w| w.more_work_advice())
}

/// Records what its workloads' code says of them, unless a record covering every workload
/// is there already: when the suite is made, and once when a suite stored by an older
/// fsbench (without the record) is loaded.
pub fn record_workloads(result: &mut SuiteResult) -> anyhow::Result<()> {
    if result.workload_records.len() == result.suite.workloads.len() {
        return Ok(());
    }
    result.workload_records = (result.suite.workloads.iter())
        .map(|w| {
            let w = Params::of(w)?;
            Ok(WorkloadRecord {
                label: w.label(),
                description: w.describe(),
                phases: w.phases().into_owned(),
            })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(())
}

impl Params {
    /// How to give this workload more work, in the settings it has (a profile's or archive
    /// file's own, or the option table's).
    fn more_work_advice(&self) -> String {
        match self {
            Params::Ffsb(p) if p.profile.is_some() => {
                "a longer `time` or a larger file set (`num_files`) in the profile".into()
            }
            Params::Archive(p) if matches!(p.source, archive::Source::File { .. }) => {
                "a larger archive file".into()
            }
            Params::Command(_) => "commands that do more".into(),
            Params::Replay(_) => "a trace of a program that does more".into(),
            _ => self.kind().more_work_advice(),
        }
    }
}

impl Params {
    /// The typed parameters of `spec`, as this fsbench reads them.
    pub fn of(spec: &WorkloadSpec) -> anyhow::Result<Params> {
        let mut map = spec.params.clone();
        map.insert("kind".into(), spec.kind.clone().into());
        Params::from_value(serde_json::Value::Object(map))
    }

    /// The label of a kept spec (`tree:default`), or what it is where this fsbench cannot
    /// read its parameters (a suite stored by a newer version).
    pub fn label_of(spec: &WorkloadSpec) -> String {
        Params::of(spec).map_or_else(
            |_| format!("{} (not readable by this version of fsbench)", spec.kind),
            |p| p.label(),
        )
    }

    /// The form a suite keeps: the parameters' own fields.
    pub fn spec(&self) -> WorkloadSpec {
        let value = serde_json::to_value(self).expect("parameters serialize");
        let serde_json::Value::Object(mut params) = value else {
            unreachable!("a tagged enum serializes to a map")
        };
        let kind = match params.remove("kind") {
            Some(serde_json::Value::String(kind)) => kind,
            _ => unreachable!("the tag is a string"),
        };
        WorkloadSpec { kind, params }
    }
}

/// Refuses I/O buffers that would take more than half of the memory available: the rest is
/// for the page cache the workload measures (and an allocation that large would swap or be
/// killed, after the filesystem was made).
fn check_buffers(label: &str, buffers: u64, available: Option<u64>) -> anyhow::Result<()> {
    match available {
        Some(available) if buffers > available / 2 => Err(invalid(format!(
            "{label}: needs {} of I/O buffers (threads × block or record size), more than half of the {} of memory available: use fewer threads or smaller blocks",
            fsbench_model::units::format_bytes(buffers),
            fsbench_model::units::format_bytes(available)
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod limit_tests;

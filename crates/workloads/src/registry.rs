//! The registry: every workload, [`Params`] (one of their parameters, typed) and what reads
//! and writes them: `-w KIND:...`, a suite file's `[[workload]]` table, a stored spec. What a
//! workload says about itself is its [`WorkloadParams`]; this file only hands it on.

use std::borrow::Cow;

use fsbench_measure::error::invalid;
use fsbench_model::aging::AgeProfile;
use fsbench_model::filesystem::UserDriver;
use fsbench_model::results::{SuiteResult, WorkloadRecord};
use fsbench_model::suite::Suite;
use fsbench_model::workload::{PhaseInfo, WorkloadSpec};

use crate::options::{Parsed, WorkloadKind};
use crate::{
    RankShare, SpaceNeed, Workload, WorkloadParams, alloc, archive, atomic, command, ffsb,
    filebench, io, iozone, replay, tree, xattr,
};

/// One workload's parameters, typed: what the engine runs. Parsed from `--workload` or read
/// from a suite's [`WorkloadSpec`] ([`Params::of`]), validated. The variants are named in
/// this file alone (the one match, the `From`s); everything else asks the workload's
/// [`WorkloadParams`].
// A suite holds a handful, made once and moved rarely: the io variant's size (fio's many
// job options) costs nothing worth a box around each variant.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Params {
    Tree(tree::TreeParams),
    Archive(archive::ArchiveParams),
    Atomic(atomic::AtomicParams),
    Iozone(iozone::IozoneParams),
    Io(io::IoParams),
    Alloc(alloc::AllocParams),
    Ffsb(ffsb::FfsbParams),
    Command(command::CommandParams),
    Replay(replay::ReplayParams),
    Xattr(xattr::XattrParams),
    Personality(filebench::FilebenchParams),
}

/// `$body` with `$p` bound to the parameters of whichever workload `$params` holds: the one
/// match on the variants.
macro_rules! with_params {
    ($params:expr, $p:ident => $body:expr) => {
        match $params {
            Params::Tree($p) => $body,
            Params::Archive($p) => $body,
            Params::Atomic($p) => $body,
            Params::Iozone($p) => $body,
            Params::Io($p) => $body,
            Params::Alloc($p) => $body,
            Params::Ffsb($p) => $body,
            Params::Command($p) => $body,
            Params::Replay($p) => $body,
            Params::Xattr($p) => $body,
            Params::Personality($p) => $body,
        }
    };
}

/// Each workload's parameters are a [`Params`] by their variant.
macro_rules! into_params {
    ($($variant:ident($params:ty)),* $(,)?) => {
        $(impl From<$params> for Params {
            fn from(params: $params) -> Params {
                Params::$variant(params)
            }
        })*
    };
}

into_params! {
    Tree(tree::TreeParams),
    Archive(archive::ArchiveParams),
    Atomic(atomic::AtomicParams),
    Iozone(iozone::IozoneParams),
    Io(io::IoParams),
    Alloc(alloc::AllocParams),
    Ffsb(ffsb::FfsbParams),
    Command(command::CommandParams),
    Replay(replay::ReplayParams),
    Xattr(xattr::XattrParams),
    Personality(filebench::FilebenchParams),
}

/// Every workload, in the order `--help` lists them.
pub const WORKLOADS: &[Registered] = &[
    entry::<tree::TreeParams>(),
    entry::<archive::ArchiveParams>(),
    entry::<atomic::AtomicParams>(),
    entry::<iozone::IozoneParams>(),
    entry::<io::IoParams>(),
    entry::<alloc::AllocParams>(),
    entry::<ffsb::FfsbParams>(),
    entry::<command::CommandParams>(),
    entry::<replay::ReplayParams>(),
    entry::<xattr::XattrParams>(),
    entry::<filebench::FilebenchParams>(),
];

/// A registered workload before it has parameters: what parsing, stored specs and the help
/// need of it.
#[derive(Debug)]
pub struct Registered {
    pub kind: &'static WorkloadKind,
    /// Its report formats (the `REPORTS` of its parameters).
    pub reports: &'static [&'static str],
    build: fn(&Parsed) -> anyhow::Result<Params>,
    /// The form databases store: the parameters' own serde.
    stored: fn(serde_json::Value) -> serde_json::Result<Params>,
}

const fn entry<T: WorkloadParams + Into<Params>>() -> Registered {
    Registered {
        kind: T::KIND,
        reports: T::REPORTS,
        build: |options| T::build(options).map(Into::into),
        stored: |value| serde_json::from_value::<T>(value).map(Into::into),
    }
}

/// The registered workload called `name` (or an alias of one, with its preset).
fn named(name: &str) -> Option<(&'static Registered, Option<&'static str>)> {
    WORKLOADS.iter().find_map(|r| {
        if r.kind.name == name {
            return Some((r, None));
        }
        (r.kind.aliases.iter())
            .find(|(alias, _)| *alias == name)
            .map(|(_, preset)| (r, Some(*preset)))
    })
}

/// The registered workload of a kept spec's `kind` (none for a kind this fsbench lacks).
pub fn registered(kind: &str) -> Option<&'static Registered> {
    WORKLOADS.iter().find(|r| r.kind.name == kind)
}

fn unknown_workload(name: &str) -> anyhow::Error {
    let mut names: Vec<&str> = WORKLOADS.iter().map(|r| r.kind.name).collect();
    names.extend(
        WORKLOADS
            .iter()
            .flat_map(|r| r.kind.aliases.iter().map(|a| a.0)),
    );
    invalid(format!(
        "unknown workload `{name}`{}: available workloads are: {}",
        crate::options::did_you_mean(&names, name),
        names.join(", ")
    ))
}

/// Reading and writing parameters.
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
            named(name).is_some()
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
                let (entry, alias_preset) = named(&name).ok_or_else(|| unknown_workload(&name))?;
                let mut args = args.join(",");
                if let Some(preset) = alias_preset {
                    args = format!("{preset},{args}");
                }
                (entry.build)(&entry.kind.parse_cli(&args)?)
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
        let (entry, alias_preset) = named(&name).ok_or_else(|| unknown_workload(&name))?;
        if let Some(preset) = alias_preset {
            map.insert("preset".into(), preset.into());
        }
        let from_options = |map| (entry.build)(&entry.kind.parse_map(map)?);
        if entry.kind.knows_all(&map) {
            return from_options(&map);
        }
        // A list of tables (the command workload's phases) is no option: the parameters'
        // own serde reads it, and its error is the one to show.
        let has_tables = map.values().any(|v| {
            v.as_array()
                .is_some_and(|a| a.iter().any(|i| i.is_object()))
        });
        // Databases store the parameters' own fields; a suite file uses options.
        match (entry.stored)(serde_json::Value::Object(map.clone())) {
            Ok(spec) => Ok(spec),
            Err(e) if has_tables => Err(invalid(format!("{}: {e}", entry.kind.name))),
            Err(_) => from_options(&map),
        }
    }

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

    /// The form a suite keeps: the kind's name and the parameters' own fields.
    pub fn spec(&self) -> WorkloadSpec {
        let value = with_params!(self, p => serde_json::to_value(p)).expect("parameters serialize");
        let serde_json::Value::Object(params) = value else {
            unreachable!("parameters are a struct")
        };
        WorkloadSpec {
            kind: self.kind().name.to_string(),
            params,
        }
    }

    /// The `--workload` help: every workload's presets and options, from their tables.
    pub fn help() -> String {
        let mut out = String::from(
            "KIND:PRESET,KEY=VALUE,FLAG; a preset supplies values, keys override it in any \
             order; lists join values with `+`; several workloads: -w KIND:...,KIND:... \
             or -w repeated.\n",
        );
        for entry in WORKLOADS {
            out.push_str(&entry.kind.help());
        }
        out
    }

    /// The parameters of workload `T`, if these are its.
    pub fn get<T: WorkloadParams>(&self) -> Option<&T> {
        with_params!(self, p => (p as &dyn std::any::Any).downcast_ref())
    }
}

/// What the workload says about itself, from its [`WorkloadParams`].
impl Params {
    /// Its option table, with the kind's stable name.
    pub fn kind(&self) -> &'static WorkloadKind {
        fn kind_of<T: WorkloadParams>(_: &T) -> &'static WorkloadKind {
            T::KIND
        }
        with_params!(self, p => kind_of(p))
    }

    /// Short label used in tables, e.g. `tree:small-shallow`.
    pub fn label(&self) -> String {
        format!("{}:{}", self.kind().name, with_params!(self, p => p.name()))
    }

    /// One line describing what the workload does, with its totals.
    pub fn describe(&self) -> String {
        with_params!(self, p => p.describe())
    }

    pub fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        with_params!(self, p => p.phases())
    }

    /// Threads that make its calls at once.
    pub fn threads(&self) -> u32 {
        with_params!(self, p => p.threads())
    }

    /// How its parallel phases run: its workers' count and kind (none for one worker, or a
    /// workload whose processes and threads its own definition lays out, as filebench's).
    pub fn workers(&self) -> Option<fsbench_model::workload::Workers> {
        let count = self.threads();
        let mode = with_params!(self, p => p.worker_mode())?;
        (count > 1).then_some(fsbench_model::workload::Workers { mode, count })
    }

    /// What the workload needs; an error when its sizes and counts overflow 64 bits (a need
    /// that wrapped around would pass the free-space check).
    pub fn space_needed(&self) -> anyhow::Result<SpaceNeed> {
        with_params!(self, p => p.space_needed()).ok_or_else(|| {
            invalid(format!(
                "{}: the space it needs is beyond 16 EiB (sizes × counts overflow): use smaller sizes or counts",
                self.label()
            ))
        })
    }

    /// A fresh instance, ready for its first phase.
    pub fn instantiate(&self) -> Box<dyn Workload> {
        with_params!(self, p => p.instantiate())
    }

    /// The aging the workload itself asks for before its phases (FFSB's `agefs=1`).
    pub fn age_profile(&self) -> Option<AgeProfile> {
        with_params!(self, p => p.age_profile())
    }

    /// Whether its phases are the user's commands, which fsbench's own harness ceiling
    /// says nothing about.
    pub fn runs_user_commands(&self) -> bool {
        with_params!(self, p => p.runs_user_commands())
    }

    /// Its report formats (the `REPORTS` of its parameters).
    pub fn reports(&self) -> &'static [&'static str] {
        fn reports_of<T: WorkloadParams>(_: &T) -> &'static [&'static str] {
            T::REPORTS
        }
        with_params!(self, p => reports_of(p))
    }

    /// Checks parameters; the runner calls it before anything is created.
    pub fn validate(&self) -> anyhow::Result<()> {
        with_params!(self, p => p.validate())?;
        check_buffers(
            &self.label(),
            with_params!(self, p => p.buffer_bytes()),
            fsbench_measure::sysinfo::available_memory(),
        )
    }

    /// Refuses this workload where it needs what `driver` declares it lacks, naming the
    /// driver, the flag and the workload's option: before anything is made.
    pub fn check_needs(&self, driver: &UserDriver) -> anyhow::Result<()> {
        let name = self.kind().name;
        match with_params!(self, p => p.needs()).filter(|n| !driver.has(n.capability)) {
            Some(need) => Err(invalid(format!(
                "user driver `{}` declares `{} = false`, but {name}'s {} needs {}: \
                 change that setting, or run {name} on another filesystem",
                driver.name,
                need.capability.key(),
                need.option,
                need.capability.what(),
            ))),
            None => Ok(()),
        }
    }

    /// How to give this workload more work, in the settings it has.
    pub(crate) fn more_work_advice(&self) -> String {
        with_params!(self, p => p.more_work_advice())
    }

    /// Why the workload cannot run under MPI, if it cannot.
    pub fn mpi_refusal(&self) -> Option<&'static str> {
        with_params!(self, p => p.mpi_refusal())
    }

    /// Whether its ranks can share one directory (`--shared-dir`).
    pub fn mpi_shares_directory(&self) -> bool {
        with_params!(self, p => p.mpi_shares_directory())
    }

    /// The phase `--stonewall` stops, or why it cannot stop this workload.
    pub fn stonewall_phase(&self) -> Result<&'static str, &'static str> {
        with_params!(self, p => p.stonewall_phase())
    }

    /// The phases in which a rank acts on another rank's files when the ranks shift.
    pub fn shifted_phases(&self, shared_dir: bool) -> &'static [&'static str] {
        with_params!(self, p => p.shifted_phases(shared_dir))
    }

    /// The instance an MPI rank runs.
    pub fn rank_instance(&self, rank: &RankShare<'_>) -> Box<dyn Workload> {
        with_params!(self, p => p.rank_instance(rank))
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
mod tests;

//! The personality workload's parameters: a model (a built-in personality, scaled, or a
//! workload file), its option table and presets, and its checks.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::model::{Counted, Flowop, Mode, Model, Op, Thread};
use super::personalities::{BUILT_IN, Scale};
use super::today::TODAY;
use crate::options::{OptKind, OptionDef, Parsed, Preset, WorkloadKind};
use crate::{PhaseInfo, SpaceNeed, Workload, WorkloadParams};
use fsbench_measure::error::invalid;
use fsbench_model::units::{compact_size, format_bytes};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilebenchParams {
    /// The label's part after `personality:`: the personality with what scaled it
    /// (`varmail,nthreads=4`), or `file=NAME.f`.
    pub name: String,
    /// What a reader must know about how the file was read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub model: Model,
}

pub(super) const PREALLOC: PhaseInfo = PhaseInfo::untimed("prealloc", "files", true);
pub(super) const RUN: PhaseInfo = PhaseInfo::fixed("run", "ops", true);
const PHASES: &[PhaseInfo] = &[PREALLOC, RUN];

const OPTIONS: &[OptionDef] = &[
    OptionDef::new(
        "file",
        OptKind::Text,
        "a filebench workload file (.f) instead of a built-in personality",
    ),
    OptionDef {
        min: 1,
        unit: "files",
        ..OptionDef::new(
            "nfiles",
            OptKind::Count,
            "files of the main set (oltp: data files; videoserver: active videos)",
        )
    },
    OptionDef {
        min: 1,
        max: 10_000,
        unit: "threads",
        ..OptionDef::new(
            "nthreads",
            OptKind::Count,
            "threads (oltp: reader processes; videoserver: readers)",
        )
    },
    OptionDef {
        min: 1,
        ..OptionDef::new("filesize", OptKind::Size, "the files' mean size")
    },
    OptionDef {
        min: 1,
        unit: "s",
        ..OptionDef::new("runtime", OptKind::Count, "seconds of run")
    },
];

/// A preset: a personality's defaults of the scaling options.
macro_rules! preset {
    ($name:literal, $nfiles:literal, $nthreads:literal, $filesize:literal, $runtime:literal, $help:literal) => {
        Preset {
            name: $name,
            values: &[
                ("nfiles", $nfiles),
                ("nthreads", $nthreads),
                ("filesize", $filesize),
                ("runtime", $runtime),
            ],
            help: $help,
        }
    };
}

/// The built-in personalities with their defaults: filebench's, then today's.
const PRESETS: &[Preset] = &[
    preset!(
        "fileserver",
        "10k",
        "50",
        "128k",
        "60",
        "filebench's fileserver"
    ),
    preset!("varmail", "1000", "16", "16k", "60", "filebench's varmail"),
    preset!(
        "webserver",
        "1000",
        "100",
        "16k",
        "60",
        "filebench's webserver"
    ),
    preset!(
        "webproxy",
        "10k",
        "100",
        "16k",
        "60",
        "filebench's webproxy"
    ),
    preset!(
        "oltp",
        "10",
        "200",
        "10m",
        "60",
        "filebench's oltp (nthreads: reader processes)"
    ),
    preset!(
        "videoserver",
        "32",
        "48",
        "10g",
        "60",
        "filebench's videoserver (2.2 TiB at its defaults)"
    ),
    preset!(
        "maildir",
        "10k",
        "8",
        "32k",
        "60",
        "Maildir delivery and IMAP reads"
    ),
    preset!(
        "git",
        "20k",
        "4",
        "12k",
        "600",
        "git checkout, then status; runtime: the most it may take"
    ),
    preset!(
        "layer-unpack",
        "20k",
        "1",
        "8k",
        "600",
        "a container image layer unpacked; runtime: the most"
    ),
    preset!(
        "sqlite-wal",
        "1",
        "4",
        "256m",
        "60",
        "SQLite in WAL mode (filesize: the database's)"
    ),
    preset!(
        "objectstore",
        "100k",
        "8",
        "64k",
        "60",
        "an object store's PUTs and GETs"
    ),
    preset!(
        "build",
        "2000",
        "2",
        "8k",
        "600",
        "a build: compile, then link; runtime: the most"
    ),
];

/// The personality workload's row in the registry.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "personality",
    summary: "filebench's personalities and workload files: file sets, processes of threads of flowops",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "fileserver",
    more_work: &["runtime"],
    aliases: &[],
};

const SCALING: [&str; 4] = ["nfiles", "nthreads", "filesize", "runtime"];

fn build(p: &Parsed) -> anyhow::Result<FilebenchParams> {
    if let Some(path) = p.text("file") {
        if let Some(key) = p.first_explicit(&SCALING) {
            return Err(invalid(format!(
                "personality: `{key}=` scales a built-in personality; a workload file sets its own (edit its `set` lines)"
            )));
        }
        return FilebenchParams::from_file(std::path::Path::new(path), None);
    }
    let scale = Scale {
        nfiles: p.num("nfiles"),
        nthreads: p.small("nthreads"),
        filesize: p.num("filesize"),
        runtime: p.num("runtime"),
    };
    let mut name = p.preset.name.to_string();
    for key in SCALING.iter().filter(|k| p.explicit(k)) {
        let v = p.num(key).expect("given");
        let v = if *key == "filesize" {
            compact_size(v)
        } else {
            v.to_string()
        };
        name.push_str(&format!(",{key}={v}"));
    }
    let model = personality(p.preset.name, &scale).expect("every preset is a personality");
    Ok(FilebenchParams {
        name,
        notes: Vec::new(),
        model,
    })
}

impl FilebenchParams {
    /// A workload file; `runtime` replaces its `run` seconds.
    pub fn from_file(
        path: &std::path::Path,
        runtime: Option<u64>,
    ) -> anyhow::Result<FilebenchParams> {
        let text = fsbench_measure::calls::read_text_file(path, "filebench workload file")?;
        let name = path
            .file_name()
            .map_or(path.display().to_string(), |n| n.to_string_lossy().into());
        let read = super::parse::parse(&text, &name, runtime)?;
        let params = FilebenchParams {
            name: format!("file={name}"),
            notes: read.notes,
            model: read.model,
        };
        params.validate()?;
        Ok(params)
    }

    /// A built-in personality at its defaults, for `--dump` and tests.
    pub fn built_in(name: &str) -> anyhow::Result<FilebenchParams> {
        let model = personality(name, &Scale::default()).ok_or_else(|| {
            let names: Vec<&str> = BUILT_IN.iter().chain(TODAY).map(|(n, _)| *n).collect();
            invalid(format!(
                "no built-in personality is called `{name}`: choose one of {}",
                names.join(", ")
            ))
        })?;
        Ok(FilebenchParams {
            name: name.into(),
            notes: Vec::new(),
            model,
        })
    }

    /// The file written back out in filebench's language.
    pub fn dump(&self) -> String {
        super::dump::dump(&self.model, &self.name)
    }
}

/// The buffer a thread needs: its largest I/O (a whole file where `iosize` is 0).
pub(super) fn buffer_of(t: &Thread) -> u64 {
    (t.flowops.iter())
        .filter(|f| f.op.counted() != Counted::Other)
        .map(|f| f.iosize.map_or(0, |n| n.high()))
        .chain([4096])
        .max()
        .expect("at least the page")
}

impl WorkloadParams for FilebenchParams {
    const KIND: &'static WorkloadKind = &KIND;
    const REPORTS: &'static [&'static str] = &["filebench"];

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn describe(&self) -> String {
        let m = &self.model;
        let sets: Vec<String> = (m.filesets.iter())
            .map(|s| {
                format!(
                    "{} {} files of {}",
                    s.name,
                    s.entries,
                    format_bytes(s.size.mean() as u64)
                )
            })
            .collect();
        let end = match (m.mode, m.runtime) {
            (Mode::Timeout, t) => format!("{t} s"),
            (Mode::Firstdone, 0) => "until a thread is done".into(),
            (Mode::Alldone, 0) => "until every thread is done".into(),
            (_, t) => format!("at most {t} s"),
        };
        format!(
            "filebench {}: {} process(es), {} thread(s); {}; {end}",
            self.name,
            m.total_processes(),
            m.total_threads(),
            sets.join(", ")
        )
    }

    fn validate(&self) -> anyhow::Result<()> {
        let m = &self.model;
        let err = |msg: String| Err(invalid(format!("personality {}: {msg}", self.name)));
        if m.total_threads() > 20_000 || m.total_processes() > 4096 {
            return err("more than 20,000 threads or 4,096 processes".into());
        }
        for s in &m.filesets {
            if !s.single && s.dirwidth < 2 {
                return err(format!("fileset {}: dirwidth must be at least 2", s.name));
            }
            if s.entries > u64::from(u32::MAX) {
                return err(format!("fileset {}: more than 2^32 entries", s.name));
            }
        }
        for (_, t, f) in m.flowops() {
            flowop_problem(m, t, f).map_or(Ok(()), err)?;
        }
        let finishes = |t: &Thread| {
            t.flowops
                .iter()
                .any(|f| matches!(f.op, Op::Finishoncount | Op::Finishonbytes))
        };
        let threads = || m.processes.iter().flat_map(|p| &p.threads);
        let ends = match m.mode {
            Mode::Timeout => true,
            _ if m.runtime > 0 => true,
            Mode::Firstdone => threads().any(finishes),
            Mode::Alldone => threads().all(finishes),
        };
        if !ends {
            return err("its mode waits for threads to be done, but not every thread has a finishoncount or finishonbytes, and `run` gives no time: it would never end".into());
        }
        Ok(())
    }

    fn space_needed(&self) -> Option<SpaceNeed> {
        let mut bytes = 0u64;
        let mut inodes = 1024u64;
        for s in &self.model.filesets {
            bytes = bytes.checked_add(s.entries.checked_mul(s.size.mean().ceil() as u64)?)?;
            let entries = s.entries.checked_add(s.leafdirs)?;
            inodes =
                inodes.checked_add(entries.checked_add(entries / s.dirwidth.max(1) * 2 + 2)?)?;
        }
        // Appends grow the files; a long run needs room for it.
        Some(SpaceNeed {
            bytes: bytes / 10 * 11,
            inodes,
            ideal_bytes: bytes.checked_mul(2)?.checked_add(256 << 20)?,
        })
    }

    /// Bytes of I/O buffers: every thread's.
    fn buffer_bytes(&self) -> u64 {
        (self.model.processes.iter())
            .flat_map(|p| p.threads.iter().map(move |t| (p, t)))
            .map(|(p, t)| {
                buffer_of(t).saturating_mul(u64::from(t.instances) * u64::from(p.instances))
            })
            .fold(0, u64::saturating_add)
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        Cow::Borrowed(PHASES)
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(super::Filebench::new(self.clone()))
    }

    fn threads(&self) -> u32 {
        u32::try_from(self.model.total_threads()).unwrap_or(u32::MAX)
    }

    fn mpi_refusal(&self) -> Option<&'static str> {
        Some("a personality runs its own processes and threads; run it without MPI")
    }
}

/// What is wrong with flowop `f` of thread `t`, if anything: a fileset, a size or the flowop
/// it acts on missing.
fn flowop_problem(m: &Model, t: &Thread, f: &Flowop) -> Option<String> {
    let named = |op: Op, name: &str| m.flowops().any(|(_, _, f)| f.op == op && f.name == name);
    let needs_set = matches!(
        f.op,
        Op::Createfile | Op::Openfile | Op::Fsyncset | Op::Makedir | Op::Removedir | Op::Listdir
    );
    if needs_set && f.fileset.is_none() {
        return Some(format!(
            "flowop {} ({}) names no fileset",
            f.name,
            f.op.name()
        ));
    }
    let sized = matches!(
        f.op,
        Op::Read | Op::Write | Op::Aiowrite | Op::Appendfile | Op::Appendfilerand
    );
    if sized && f.iosize.is_none_or(|n| n.is_zero()) {
        return Some(format!(
            "flowop {} ({}) needs an iosize",
            f.name,
            f.op.name()
        ));
    }
    let target = f.target.as_deref().unwrap_or("");
    let found = match f.op {
        Op::Renamefile => m.filesets.iter().any(|s| s.name == target),
        Op::Sempost => named(Op::Semblock, target),
        Op::Wakeup => named(Op::Block, target),
        Op::Opslimit | Op::Iopslimit | Op::Bwlimit | Op::Finishoncount | Op::Finishonbytes => {
            target.is_empty() || t.flowops.iter().any(|o| o.name == target)
        }
        _ => true,
    };
    (!found).then(|| {
        format!(
            "flowop {} ({}): no flowop {target} to act on",
            f.name,
            f.op.name()
        )
    })
}

/// The personality called `name`, filebench's or today's, scaled.
fn personality(name: &str, s: &Scale) -> Option<Model> {
    super::personalities::personality(name, s).or_else(|| super::today::personality(name, s))
}

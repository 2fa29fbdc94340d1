//! FFSB's parameters: the profile's settings, the option table and presets.

use super::*;
use fsbench_model::workload::WorkerMode;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FfsbParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The profile file it was read from (its name, for the label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Seconds the thread groups run (FFSB's `time`); 0 builds the file set only, as in FFSB,
    /// unless a thread group has `num_ops`.
    pub time: Option<u32>,
    /// What a reader must know about how the profile was read (FFSB 5 keys FFSB 6 rejects).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(default)]
    pub directio: bool,
    /// Random offsets aligned to 4 KiB.
    #[serde(default)]
    pub alignio: bool,
    pub fileset: FileSet,
    pub groups: Vec<ThreadGroup>,
    /// Whether the groups' threads run as processes or threads.
    #[serde(default, skip_serializing_if = "crate::parallel::is_default_mode")]
    pub workers: WorkerMode,
}

/// The longest `op_delay`: FFSB's profiles pause milliseconds; a minute between operations
/// measures nothing, and 2^32 − 1 ms is 49 days.
const MAX_OP_DELAY_MS: u32 = 60_000;

pub(super) const OPTIONS: &[OptionDef] = &[
    OptionDef::new(
        "profile",
        OptKind::Text,
        "an FFSB profile file instead of large-write",
    ),
    OptionDef {
        min: 1,
        max: 4096,
        ..OptionDef::new(
            "threads",
            OptKind::Count,
            "large-write: threads, one file each",
        )
    },
    OptionDef {
        min: 1,
        ..OptionDef::new(
            "size",
            OptKind::Size,
            "large-write: file size; given, it no longer shrinks to fit",
        )
    },
    OptionDef {
        min: 1,
        ..OptionDef::new("block", OptKind::Size, "large-write: write size")
    },
    crate::parallel::WORKERS_OPTION,
];

/// The FFSB large-file write report's profile: 128 threads each writing a 1 GiB file in 64 KiB
/// writes.
pub(super) const PRESETS: &[Preset] = &[Preset {
    name: "large-write",
    values: &[("threads", "128"), ("size", "1g"), ("block", "64k")],
    help: "the seed's profile; files shrink to fit; 4.2 s a run on tmpfs here",
}];

/// The ffsb workload's option table.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "ffsb",
    summary: "FFSB: thread groups of weighted operations on a file set",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "large-write",
    // The name the preset is known by.
    more_work: &["size", "threads"],
    aliases: &[("ffsb-large-write", "large-write")],
};

pub(super) fn build(p: &Parsed) -> anyhow::Result<FfsbParams> {
    let workers = crate::parallel::workers_of(p);
    build_profile(p).map(|params| FfsbParams { workers, ..params })
}

/// The profile `p` names, or large-write as `p` sets it.
fn build_profile(p: &Parsed) -> anyhow::Result<FfsbParams> {
    let custom = p.first_explicit(&["threads", "size", "block"]);
    if let Some(path) = p.text("profile") {
        if custom.is_some() {
            return Err(invalid(
                "ffsb: threads=, size= and block= belong to large-write; a profile sets its own",
            ));
        }
        return FfsbParams::from_file(std::path::Path::new(path));
    }
    let threads = p.small("threads").expect("large-write gives threads");
    let size = p.num("size").expect("large-write gives a size");
    let block = p.num("block").expect("large-write gives a block");
    let mut params = FfsbParams::large_write(threads, size, block);
    if custom.is_some() {
        // An explicit size is the size: it does not shrink.
        params.fileset.fit = !p.explicit("size");
        params.preset = Some(format!(
            "large-write,threads={threads},size={},block={}",
            compact_size(size),
            compact_size(block)
        ));
    }
    Ok(params)
}

impl FfsbParams {
    /// The large-write profile's shape: `threads` threads each creating one file of `size` bytes
    /// with `block`-byte writes; sizes shrink to fit the target.
    pub(crate) fn large_write(threads: u32, size: u64, block: u64) -> FfsbParams {
        let mut group = ThreadGroup {
            num_threads: threads,
            write_size: block,
            write_blocksize: block,
            ops_per_thread: Some(1),
            ..ThreadGroup::default()
        };
        group.set_weight(Op::Create, 1);
        FfsbParams {
            preset: Some("large-write".into()),
            profile: None,
            time: None,
            directio: false,
            alignio: false,
            fileset: FileSet {
                min_filesize: size,
                max_filesize: size,
                fit: true,
                ..FileSet::default()
            },
            groups: vec![group],
            notes: Vec::new(),
            workers: WorkerMode::default(),
        }
    }

    /// Parses the part after `ffsb:`: `large-write` with `size=`, `threads=`, `block=`, or
    /// `profile=PATH` (an FFSB profile file).
    #[cfg(test)]
    pub(crate) fn parse(args: &str) -> anyhow::Result<FfsbParams> {
        build(&KIND.parse_cli(args)?)
    }

    pub fn from_file(path: &std::path::Path) -> anyhow::Result<FfsbParams> {
        let text = fsbench_measure::calls::read_text_file(path, "FFSB profile")?;
        let name = path
            .file_name()
            .map_or(path.display().to_string(), |n| n.to_string_lossy().into());
        profile::parse(&text, &name)
    }

    pub fn total_threads(&self) -> u64 {
        self.groups.iter().map(|g| u64::from(g.num_threads)).sum()
    }

    /// The thread groups' time limit, if they have one.
    pub(crate) fn run_time(&self) -> Option<u32> {
        self.time.filter(|t| *t > 0)
    }

    /// `time=0` and no `num_ops`: only the file set is built and removed.
    pub(crate) fn setup_only(&self) -> bool {
        self.time == Some(0) && self.groups.iter().all(|g| g.ops_per_thread.is_none())
    }

    /// Files the thread groups create, when that is known (fixed amounts of work); saturates.
    pub(super) fn created_files(&self) -> u64 {
        self.groups
            .iter()
            .map(|g| {
                let creates: u64 = g
                    .weights
                    .iter()
                    .filter(|(o, _)| o.creates())
                    .map(|(_, w)| u64::from(*w))
                    .sum();
                let share = creates as f64 / g.total_weight().max(1) as f64;
                let ops = g
                    .ops_per_thread
                    .unwrap_or(1)
                    .saturating_mul(u64::from(g.num_threads));
                // A float too large for u64 saturates in the cast.
                (ops as f64 * share).ceil() as u64
            })
            .fold(0, u64::saturating_add)
    }
}

impl FfsbParams {
    /// What is wrong with thread group `g`, if anything (`creates`: some group creates
    /// files).
    fn group_problem(&self, g: &ThreadGroup, creates: bool) -> Option<String> {
        let fs = &self.fileset;
        if g.num_threads == 0 {
            return Some("num_threads must be at least 1".into());
        }
        if g.weights.is_empty() {
            return Some("no operation has a weight".into());
        }
        if g.op_delay_ms > MAX_OP_DELAY_MS {
            return Some(format!(
                "op_delay={} ms is more than a minute between operations (at most {MAX_OP_DELAY_MS})",
                g.op_delay_ms
            ));
        }
        if self.time.is_none() && g.ops_per_thread.is_none() {
            return Some("neither `time` nor `num_ops` is set: the group would never end".into());
        }
        let ops = || g.weights.keys();
        if ops().any(|o| o.reads()) && g.read_blocksize == 0 {
            return Some("read operations need read_blocksize".into());
        }
        if g.weights.contains_key(&Op::Read) && (g.read_size == 0 || g.read_size < g.read_blocksize)
        {
            return Some("read needs read_size of at least read_blocksize".into());
        }
        if ops().any(|o| o.writes()) && g.write_blocksize == 0 {
            return Some("write operations need write_blocksize".into());
        }
        if ops().any(|o| o.writes_sized())
            && (g.write_size == 0 || g.write_size < g.write_blocksize)
        {
            return Some("write and append need write_size of at least write_blocksize".into());
        }
        // FFSB asserts that a read or write fits the file it picked, and aborts.
        let smallest = fs.smallest();
        let writes_in_place = ops().any(|o| matches!(o, Op::Write | Op::WriteFsync));
        if !fs.fit && g.weights.contains_key(&Op::Read) && g.read_size > smallest {
            return Some(format!(
                "read_size {} is larger than the smallest file ({}): FFSB aborts on such a read",
                g.read_size, smallest
            ));
        }
        if !fs.fit && writes_in_place && g.write_size > smallest {
            return Some(format!(
                "write_size {} is larger than the smallest file ({}): FFSB aborts on such a write",
                g.write_size, smallest
            ));
        }
        if ops().any(|o| o.needs_file()) && fs.num_files == 0 && !creates {
            return Some(
                "its operations need files, but num_files is 0 and nothing creates any".into(),
            );
        }
        let sizes = [
            g.read_blocksize,
            g.write_blocksize,
            g.write_size,
            g.read_size,
        ];
        if self.directio && sizes.iter().any(|b| b % 4096 != 0) {
            return Some("directio needs sizes and block sizes that are multiples of 4096".into());
        }
        for (what, v) in [
            ("read_blocksize", g.read_blocksize),
            ("write_blocksize", g.write_blocksize),
        ] {
            if v > 1 << 30 {
                return Some(format!("{what} over 1 GiB is absurd"));
            }
        }
        None
    }
}

impl WorkloadParams for FfsbParams {
    const KIND: &'static WorkloadKind = &KIND;
    const REPORTS: &'static [&'static str] = &["ffsb"];

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    fn name(&self) -> String {
        let name = match (&self.preset, &self.profile) {
            (Some(p), _) => p.clone(),
            (None, Some(f)) => format!("profile={f}"),
            (None, None) => "custom".into(),
        };
        match self.workers == WorkerMode::default() || self.total_threads() == 1 {
            true => name,
            false => format!("{name},workers={}", self.workers.name()),
        }
    }

    fn phases(&self) -> std::borrow::Cow<'static, [PhaseInfo]> {
        std::borrow::Cow::Borrowed(if self.setup_only() {
            super::SETUP_ONLY_PHASES
        } else {
            super::PHASES
        })
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.groups.is_empty() {
            return Err(invalid("ffsb: no thread group"));
        }
        if self.total_threads() > 4096 {
            return Err(invalid("ffsb: more than 4096 threads in all"));
        }
        let fs = &self.fileset;
        let creates = (self.groups.iter()).any(|g| g.weights.keys().any(|o| o.creates()));
        for (i, g) in self.groups.iter().enumerate() {
            if let Some(problem) = self.group_problem(g, creates) {
                return Err(invalid(format!("ffsb: thread group {i}: {problem}")));
            }
        }
        if (fs.num_files > 0 || creates) && fs.size_weights.is_empty() {
            if fs.max_filesize == 0 {
                return Err(invalid(
                    "ffsb: max_filesize (or size_weight) is needed to make files",
                ));
            }
            if fs.min_filesize > fs.max_filesize {
                return Err(invalid("ffsb: min_filesize is larger than max_filesize"));
            }
        }
        if fs.size_weights.iter().any(|(_, w)| *w == 0) {
            return Err(invalid("ffsb: a size_weight has weight 0"));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        // One worker runs on the phase's own thread, whatever the mode.
        let workers = match self.total_threads() {
            1 => "thread",
            _ => self.workers.name(),
        };
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                let ops: Vec<String> = g
                    .weights
                    .iter()
                    .map(|(o, w)| format!("{} {w}", o.name()))
                    .collect();
                let amount = g
                    .ops_per_thread
                    .map(|n| format!(", {n} transaction(s) each"))
                    .unwrap_or_default();
                format!("{} {workers} × [{}]{amount}", g.num_threads, ops.join(", "))
            })
            .collect();
        let fs = &self.fileset;
        let sizes = if fs.size_weights.is_empty() {
            if fs.min_filesize == fs.max_filesize {
                format_bytes(fs.max_filesize)
            } else {
                format!(
                    "{}–{}",
                    format_bytes(fs.min_filesize),
                    format_bytes(fs.max_filesize)
                )
            }
        } else {
            "weighted sizes".into()
        };
        format!(
            "FFSB: {}; file set {} files in {} dirs; files of {sizes}{}{}{}",
            groups.join("; "),
            fs.num_files,
            fs.num_dirs,
            if fs.fit {
                " (smaller if they do not fit)"
            } else {
                ""
            },
            match self.time {
                Some(0) if self.setup_only() => "; time=0: the file set only".to_string(),
                Some(t) if t > 0 => format!("; for {t} s"),
                _ => String::new(),
            },
            if self.directio { "; O_DIRECT" } else { "" },
        )
    }

    /// Bytes of I/O buffers the workload allocates: one (aligned) block buffer per thread, as
    /// every thread holds its own while the groups run.
    fn buffer_bytes(&self) -> u64 {
        self.groups
            .iter()
            .map(|g| {
                let block = g.read_blocksize.max(g.write_blocksize).max(4096);
                block
                    .saturating_add(4096)
                    .saturating_mul(u64::from(g.num_threads))
            })
            .fold(0, u64::saturating_add)
    }

    /// `None` when the sizes and counts overflow.
    fn space_needed(&self) -> Option<SpaceNeed> {
        let fs = &self.fileset;
        let set = u64::from(fs.num_files).checked_mul(fs.average_size()?)?;
        let created = self.created_files();
        let appended = self
            .groups
            .iter()
            .filter(|g| {
                g.weights
                    .keys()
                    .any(|o| matches!(o, Op::Append | Op::AppendFsync))
            })
            .try_fold(0u64, |sum, g| {
                let bytes = g
                    .write_size
                    .checked_mul(g.ops_per_thread.unwrap_or(1))?
                    .checked_mul(u64::from(g.num_threads))?;
                sum.checked_add(bytes)
            })?;
        let inodes = u64::from(fs.num_files)
            .checked_add(u64::from(fs.num_dirs))?
            .checked_add(created)?
            .checked_add(1024)?;
        if fs.fit {
            let files = created.checked_add(u64::from(fs.num_files))?;
            return Some(SpaceNeed {
                bytes: files.checked_mul(1 << 20)?,
                inodes,
                ideal_bytes: files.checked_mul(32 << 20)?,
            });
        }
        let bytes = set
            .checked_add(created.checked_mul(fs.largest_size())?)?
            .checked_add(appended)?;
        Some(SpaceNeed::exactly((bytes / 10).checked_mul(11)?, inodes))
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(Ffsb::new(self.clone()))
    }

    fn threads(&self) -> u32 {
        u32::try_from(self.total_threads()).unwrap_or(u32::MAX)
    }

    fn worker_mode(&self) -> Option<WorkerMode> {
        Some(self.workers)
    }

    fn needs(&self) -> Option<Need> {
        self.directio.then_some(Need {
            capability: Capability::Direct,
            option: "profile's `directio`",
        })
    }

    /// FFSB's `agefs=1` ages the file set by the profile's own operations.
    fn age_profile(&self) -> Option<AgeProfile> {
        (self.fileset.aging.as_ref()).map(|a| a.profile(&self.fileset))
    }

    /// A profile's own settings, or the option table's.
    fn more_work_advice(&self) -> String {
        match self.profile {
            Some(_) => "a longer `time` or a larger file set (`num_files`) in the profile".into(),
            None => Self::KIND.more_work_advice(),
        }
    }

    fn mpi_refusal(&self) -> Option<&'static str> {
        Some("FFSB runs its own thread groups for a time; run it with threads instead of ranks")
    }
}

//! The iozone workload's parameters: the option table, presets and what they imply.

use super::*;
use fsbench_model::workload::WorkerMode;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IozoneParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// File sizes in bytes.
    pub file_sizes: Vec<u64>,
    /// Record sizes in bytes; a cell exists where record ≤ file (and, without `all_records`,
    /// record ≥ 64 KiB for files over 16 MiB, as IOzone's auto mode does).
    pub record_sizes: Vec<u64>,
    #[serde(default)]
    pub all_records: bool,
    /// IOzone test groups (`-i`).
    pub groups: Vec<u8>,
    /// O_DIRECT with aligned buffers.
    #[serde(default)]
    pub direct: bool,
    /// O_SYNC.
    #[serde(default)]
    pub sync: bool,
    /// fsync included in the timing of writes (IOzone -e).
    #[serde(default)]
    pub fsync: bool,
    /// close included in the timing (IOzone -c).
    #[serde(default)]
    pub close: bool,
    /// Workers, each on a file of its own (IOzone's throughput mode, `-t`).
    pub threads: u32,
    /// Whether the workers are processes (IOzone's default) or threads (IOzone's `-T`).
    #[serde(default, skip_serializing_if = "crate::parallel::is_default_mode")]
    pub workers: WorkerMode,
    /// Sync and drop caches before each read test (root only).
    pub drop_caches: bool,
}

pub(super) fn doubling(from: u64, to: u64) -> Vec<u64> {
    std::iter::successors(Some(from), |v| v.checked_mul(2))
        .take_while(|v| *v <= to)
        .collect()
}

pub(super) const OPTIONS: &[OptionDef] = &[
    OptionDef {
        min: 1,
        max: 1 << 40,
        ..OptionDef::new("sizes", OptKind::List(&OptKind::Size), "file sizes")
    },
    OptionDef {
        min: 64 << 10,
        max: 1 << 40,
        ..OptionDef::new(
            "max",
            OptKind::Size,
            "largest file of auto mode (files 64 KiB doubling)",
        )
    },
    OptionDef {
        min: 1,
        max: 1 << 30,
        default: Some("4k+8k+16k+32k+64k+128k+256k+512k+1m+2m+4m+8m+16m"),
        ..OptionDef::new("records", OptKind::List(&OptKind::Size), "record sizes")
    },
    OptionDef {
        default: Some("0+1+2+3+4+5+9+10"),
        ..OptionDef::new(
            "tests",
            OptKind::List(&OptKind::Choice(&[
                "0", "1", "2", "3", "4", "5", "6", "7", "9", "10",
            ])),
            "IOzone test groups (-i)",
        )
    },
    OptionDef {
        min: 1,
        max: 1024,
        default: Some("1"),
        ..OptionDef::new(
            "threads",
            OptKind::Count,
            "workers, each on a file of its own (-t)",
        )
    },
    crate::parallel::WORKERS_OPTION,
    OptionDef::new("direct", OptKind::Flag, "O_DIRECT"),
    OptionDef::new("sync", OptKind::Flag, "O_SYNC"),
    OptionDef::new("fsync", OptKind::Flag, "fsync timed with writes (-e)"),
    OptionDef::new("close", OptKind::Flag, "close timed (-c)"),
    OptionDef::new("stdio", OptKind::Flag, "add fwrite/fread (groups 6 and 7)"),
    OptionDef::new(
        "all-records",
        OptKind::Flag,
        "every record size for files over 16 MiB",
    ),
    OptionDef::new("no-drop", OptKind::Flag, "keep caches before reads"),
];

pub(super) const PRESETS: &[Preset] = &[
    Preset {
        name: "auto",
        values: &[("max", "512m")],
        help: "IOzone's auto mode; over 20 s a run on tmpfs here",
    },
    Preset {
        name: "quick",
        values: &[("max", "16m")],
        help: "auto mode up to 16 MiB files; over 20 s a run on tmpfs here",
    },
    Preset {
        name: "fast",
        values: &[
            ("sizes", "4m+64m"),
            ("records", "4k+1m"),
            ("tests", "0+1+2"),
        ],
        help: "4 and 64 MiB files, 4 KiB and 1 MiB records, write, read and random; 0.7 s a run on tmpfs here",
    },
    Preset {
        name: "seq-1m",
        values: &[("sizes", "1g"), ("records", "1m"), ("tests", "0+1")],
        help: "sequential 1 MiB records on a 1 GiB file; 2.2 s a run on tmpfs here",
    },
];

/// The iozone workload's option table.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "iozone",
    summary: "IOzone-style throughput matrix of file sizes × record sizes",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "quick",
    more_work: &["max", "sizes"],
    aliases: &[],
};

pub(super) fn build(p: &Parsed) -> anyhow::Result<IozoneParams> {
    if p.explicit("sizes") && p.explicit("max") {
        return Err(invalid("iozone: give `sizes` or `max`, not both"));
    }
    // Explicit `max` beats a preset's `sizes`; explicit `sizes` beats a preset's `max`.
    let file_sizes = match (p.explicit("max"), p.nums("sizes"), p.num("max")) {
        (false, Some(sizes), _) => sizes,
        (_, _, Some(max)) => doubling(64 << 10, max),
        (true, _, None) | (false, None, None) => unreachable!("presets give sizes or max"),
    };
    let mut groups: Vec<u8> = p
        .texts("tests")
        .expect("tests has a default")
        .iter()
        .map(|g| g.parse().expect("choices are numbers"))
        .collect();
    if p.flag("stdio") {
        groups.extend([6, 7]);
        groups.sort();
        groups.dedup();
    }
    let custom = p.first_explicit(&[
        "sizes",
        "max",
        "records",
        "tests",
        "threads",
        "all-records",
        "stdio",
    ]);
    Ok(IozoneParams {
        preset: custom.is_none().then(|| p.preset.name.to_string()),
        file_sizes,
        record_sizes: p.nums("records").expect("records has a default"),
        all_records: p.flag("all-records"),
        groups,
        direct: p.flag("direct"),
        sync: p.flag("sync"),
        fsync: p.flag("fsync"),
        close: p.flag("close"),
        threads: p.small("threads").expect("threads has a default"),
        workers: crate::parallel::workers_of(p),
        drop_caches: !p.flag("no-drop"),
    })
}

impl IozoneParams {
    /// Parses the part after `iozone:`: a preset and settings; lists use `+`:
    /// `sizes=64k+1m`, `records=4k+64k`, `max=SIZE` (auto mode's largest file), `tests=0+1+2`,
    /// `threads=N`, and flags `direct`, `sync`, `fsync`, `close`, `stdio`, `all-records`,
    /// `no-drop`.
    #[cfg(test)]
    pub(crate) fn parse(args: &str) -> anyhow::Result<IozoneParams> {
        build(&KIND.parse_cli(args)?)
    }

    /// The matrix's cells, in IOzone's order: file sizes, then records.
    pub fn cells(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for &f in &self.file_sizes {
            for &r in &self.record_sizes {
                if r <= f && (self.all_records || f <= 16 << 20 || r >= 64 << 10) {
                    out.push((f, r));
                }
            }
        }
        out
    }

    pub fn tests(&self) -> impl Iterator<Item = &'static (&'static str, u8, &'static str)> + '_ {
        TESTS.iter().filter(|t| self.groups.contains(&t.1))
    }
}

impl WorkloadParams for IozoneParams {
    const KIND: &'static WorkloadKind = &KIND;
    const REPORTS: &'static [&'static str] = &["iozone"];

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    fn name(&self) -> String {
        let mut name = self.preset.clone().unwrap_or_else(|| {
            let list = |v: &[u64]| {
                v.iter()
                    .map(|s| compact_size(*s))
                    .collect::<Vec<_>>()
                    .join("+")
            };
            format!(
                "sizes={},records={}",
                list(&self.file_sizes),
                list(&self.record_sizes)
            )
        });
        for (flag, on) in [
            ("direct", self.direct),
            ("sync", self.sync),
            ("fsync", self.fsync),
            ("close", self.close),
        ] {
            if on {
                name.push(',');
                name.push_str(flag);
            }
        }
        if self.threads > 1 {
            name.push_str(&format!(",threads={}", self.threads));
            if self.workers != WorkerMode::default() {
                name.push_str(&format!(",workers={}", self.workers.name()));
            }
        }
        name
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.threads == 0 || self.threads > 1024 {
            return Err(invalid("iozone: threads must be between 1 and 1024"));
        }
        if self.groups.is_empty() {
            return Err(invalid("iozone: no tests selected"));
        }
        if self.cells().is_empty() {
            return Err(invalid(
                "iozone: no cell has a record size no larger than its file size",
            ));
        }
        if self.record_sizes.contains(&0) || self.file_sizes.contains(&0) {
            return Err(invalid("iozone: sizes must be larger than 0"));
        }
        if self.direct && self.groups.iter().any(|g| [6, 7].contains(g)) {
            return Err(invalid(
                "iozone: buffered stdio tests (fwrite, fread) cannot use O_DIRECT",
            ));
        }
        if self.record_sizes.iter().any(|r| *r > 1 << 30)
            || self.file_sizes.iter().any(|f| *f > 1 << 40)
        {
            return Err(invalid(
                "iozone: records over 1 GiB or files over 1 TiB are absurd",
            ));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let tests: Vec<&str> = self.tests().map(|t| t.0).collect();
        let largest = self.file_sizes.iter().max().copied().unwrap_or(0);
        format!(
            "IOzone-style matrix: {} cells (files up to {}, records {}–{}), {} {}; tests: {}{}",
            self.cells().len(),
            format_bytes(largest),
            format_bytes(self.record_sizes.iter().min().copied().unwrap_or(0)),
            format_bytes(self.record_sizes.iter().max().copied().unwrap_or(0)),
            self.threads,
            match self.threads {
                1 => "thread",
                _ => self.workers.name(),
            },
            tests.join(", "),
            if self.drop_caches {
                "; caches dropped before reads"
            } else {
                "; caches kept"
            }
        )
    }

    /// The smallest file must fit; larger ones that do not are skipped at run time.
    /// Bytes of I/O buffers the workload allocates: one record (aligned) per thread.
    fn buffer_bytes(&self) -> u64 {
        let record = self.record_sizes.iter().copied().max().unwrap_or(0);
        record
            .saturating_add(4096)
            .saturating_mul(u64::from(self.threads))
    }

    /// `None` when the sizes overflow.
    fn space_needed(&self) -> Option<SpaceNeed> {
        let per_file = |size: u64| Some(size.checked_mul(self.threads as u64)?.checked_mul(5)? / 4);
        Some(SpaceNeed {
            bytes: per_file(self.file_sizes.iter().min().copied().unwrap_or(0))?,
            inodes: self.threads as u64 + 8,
            ideal_bytes: per_file(self.file_sizes.iter().max().copied().unwrap_or(0))?,
        })
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        Cow::Borrowed(PHASES)
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(Iozone::new(self.clone()))
    }

    fn threads(&self) -> u32 {
        self.threads
    }

    fn worker_mode(&self) -> Option<fsbench_model::workload::WorkerMode> {
        Some(self.workers)
    }

    fn needs(&self) -> Option<Need> {
        self.direct.then_some(Need {
            capability: Capability::Direct,
            option: "`direct`",
        })
    }

    fn mpi_refusal(&self) -> Option<&'static str> {
        self.groups.iter().any(|g| *g > 1).then_some(
            "only IOzone's sequential tests (-i 0, -i 1) are IOR-like bandwidth; its random and \
             strided tests measure one client's access pattern",
        )
    }
}

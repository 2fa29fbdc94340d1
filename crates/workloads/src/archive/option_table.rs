//! The archive workload's options and presets.

use crate::options::{OptKind, OptionDef, Preset};

const U32: u64 = u32::MAX as u64;

pub(super) const OPTIONS: &[OptionDef] = &[
    OptionDef::new(
        "file",
        OptKind::Text,
        "extract this tar file (plain or compressed: gzip, zstd, xz, bzip2, lzop) instead",
    ),
    OptionDef {
        default: Some("directory"),
        ..OptionDef::new(
            "order",
            OptKind::Choice(&["directory", "pool-first", "backups-first"]),
            "the order rm -rf visits the top level in",
        )
    },
    OptionDef {
        min: 1,
        ..OptionDef::new("pool", OptKind::Count, "pool files")
    },
    OptionDef {
        min: 1,
        max: U32,
        ..OptionDef::new("hosts", OptKind::Count, "backed-up hosts")
    },
    OptionDef {
        min: 1,
        max: U32,
        ..OptionDef::new("backups", OptKind::Count, "backups per host")
    },
    OptionDef {
        min: 1,
        ..OptionDef::new("files", OptKind::Count, "files per backup")
    },
    OptionDef {
        min: 1,
        max: U32,
        default: Some("64"),
        ..OptionDef::new("per-dir", OptKind::Count, "files per directory in a backup")
    },
    OptionDef {
        unit: "per mille",
        max: 1000,
        default: Some("8"),
        ..OptionDef::new(
            "empty",
            OptKind::Count,
            "backup files that are empty regular files",
        )
    },
    OptionDef {
        unit: "per mille",
        max: 1000,
        default: Some("1"),
        ..OptionDef::new(
            "regular",
            OptKind::Count,
            "backup files that are regular files with data",
        )
    },
    OptionDef {
        default: Some("0"),
        ..OptionDef::new(
            "popular",
            OptKind::Count,
            "extra hard links to one pool file",
        )
    },
    OptionDef {
        default: Some("512"),
        ..OptionDef::new(
            "min-size",
            OptKind::Size,
            "smallest pool file (log-uniform sizes)",
        )
    },
    OptionDef {
        default: Some("64k"),
        ..OptionDef::new("max-size", OptKind::Size, "largest pool file")
    },
    OptionDef {
        default: Some("2010"),
        ..OptionDef::new("seed", OptKind::Count, "the generator's seed")
    },
];

/// Presets: counts in the BackupPC report's proportions (≈23 links per pool file, ≈0.8% empty
/// files), with small files so that data does not dominate.
pub(super) const PRESETS: &[Preset] = &[
    Preset {
        name: "tiny",
        values: &[
            ("pool", "500"),
            ("hosts", "2"),
            ("backups", "2"),
            ("files", "1000"),
        ],
        help: "a look; 0.1 s a run on tmpfs here",
    },
    Preset {
        name: "small",
        values: &[
            ("pool", "1000"),
            ("hosts", "2"),
            ("backups", "3"),
            ("files", "4000"),
        ],
        help: "a few seconds; 0.6 s a run on tmpfs here",
    },
    Preset {
        name: "seed-1pct",
        values: &[
            ("pool", "4560"),
            ("hosts", "4"),
            ("backups", "5"),
            ("files", "5200"),
        ],
        help: "1% of the seed's pool; 3.2 s a run on tmpfs here",
    },
    Preset {
        name: "seed-10pct",
        values: &[
            ("pool", "45600"),
            ("hosts", "8"),
            ("backups", "10"),
            ("files", "13000"),
        ],
        help: "10% of the seed's pool, over a million entries; 14 s a run on tmpfs here",
    },
];

//! The alloc workload's options and presets.

use crate::options::{OptKind, OptionDef, Preset};

pub(super) const OPTIONS: &[OptionDef] = &[
    OptionDef {
        min: 1,
        max: 1 << 40,
        ..OptionDef::new(
            "size",
            OptKind::Size,
            "bytes per file; given, it no longer shrinks to fit",
        )
    },
    OptionDef {
        default: Some("posix-fallocate+fallocate+mmap+chunk-4096+chunk-8192"),
        ..OptionDef::new(
            "methods",
            OptKind::List(&OptKind::Text),
            "posix-fallocate, fallocate, mmap, chunk-SIZE (write() in chunks)",
        )
    },
    OptionDef {
        min: 1,
        max: 1 << 30,
        ..OptionDef::new(
            "chunks",
            OptKind::List(&OptKind::Size),
            "replaces the chunk-SIZE methods",
        )
    },
    OptionDef {
        default: Some("file"),
        ..OptionDef::new(
            "fresh",
            OptKind::Choice(&["file", "fs"]),
            "each method starts after removing the file, or on a new filesystem",
        )
    },
    OptionDef {
        default: Some("fsync"),
        ..OptionDef::new(
            "durable",
            OptKind::Choice(&["fsync", "unmount"]),
            "timed until fsync, or until the unmount after it",
        )
    },
];

pub(super) const PRESETS: &[Preset] = &[
    Preset {
        name: "seed-1g",
        values: &[("size", "1g")],
        help: "the first article: 1 GiB files in 5 GB partitions; 4.6 s a run on tmpfs here",
    },
    Preset {
        name: "seed-4g",
        values: &[("size", "4g")],
        help: "the second: 4 GiB files in a 20 GiB partition",
    },
    Preset {
        name: "quick",
        values: &[("size", "256m")],
        help: "a look; 1.3 s a run on tmpfs here",
    },
];

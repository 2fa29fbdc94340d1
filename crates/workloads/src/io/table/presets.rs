//! The io workload's presets, and its table: options and presets together.

use super::OPTIONS;
use crate::options::{Preset, WorkloadKind};

const PRESETS: &[Preset] = &[
    Preset {
        name: "randread-4k",
        values: &[("rw", "randread"), ("bs", "4k"), ("size", "64m")],
        help: "4 KiB random reads over a 64 MiB file, psync; 0.2 s a run on tmpfs here",
    },
    Preset {
        name: "randwrite-4k",
        values: &[("rw", "randwrite"), ("bs", "4k"), ("size", "64m")],
        help: "4 KiB random writes over a 64 MiB file, psync; 0.1 s a run on tmpfs here",
    },
    Preset {
        name: "seqwrite-128k",
        values: &[
            ("rw", "write"),
            ("bs", "128k"),
            ("size", "256m"),
            ("end-fsync", "true"),
        ],
        help: "128 KiB sequential writes of a 256 MiB file, fsync at the end; 0.3 s a run on tmpfs here",
    },
];

/// The io workload's option table.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "io",
    summary: "fio's data path: rw patterns, block sizes, psync/pvsync2/io_uring/libaio, queue depth, rate limits",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "randread-4k",
    more_work: &["size", "runtime"],
    aliases: &[],
};

//! The tree workload's options and named parameter sets (fdtree's, the article's, IO500's).

use super::MAX_LEVELS;
use crate::options::{OptKind, OptionDef, Preset};

/// fdtree's options; the numbers fit `u32`.
pub(super) const OPTIONS: &[OptionDef] = &[
    OptionDef {
        aliases: &["d"],
        min: 1,
        max: u32::MAX as u64,
        ..OptionDef::new(
            "dirs",
            OptKind::Count,
            "subdirectories per directory (fdtree -d)",
        )
    },
    OptionDef {
        aliases: &["f"],
        min: 1,
        max: u32::MAX as u64,
        ..OptionDef::new("files", OptKind::Count, "files per directory (fdtree -f)")
    },
    OptionDef {
        aliases: &["s"],
        unit: "4 KiB blocks",
        max: u32::MAX as u64,
        ..OptionDef::new("size", OptKind::Count, "file size (fdtree -s)")
    },
    OptionDef {
        aliases: &["l"],
        max: MAX_LEVELS as u64,
        ..OptionDef::new(
            "levels",
            OptKind::Count,
            "levels below the root (fdtree -l)",
        )
    },
    OptionDef::new(
        "stat",
        OptKind::Flag,
        "a file-stat phase after file create (mdtest -T)",
    ),
    OptionDef::new(
        "read",
        OptKind::Flag,
        "a file-read phase after file create, reading every file whole (mdtest -E)",
    ),
    OptionDef {
        unit: "bytes",
        max: u32::MAX as u64,
        ..OptionDef::new(
            "bytes",
            OptKind::Count,
            "file size in bytes instead of blocks (mdtest -w, -e)",
        )
    },
    OptionDef {
        min: 1,
        max: MAX_THREADS as u64,
        default: Some("1"),
        ..OptionDef::new(
            "threads",
            OptKind::Count,
            "threads, each on a tree of its own (one node's scaling, as fxmark)",
        )
    },
    OptionDef::new(
        "fsync",
        OptKind::Flag,
        "fsync each file once written, and each directory once its files are made (what a \
         crash-recorded run checks as promised)",
    ),
    OptionDef::new(
        "shared",
        OptKind::Flag,
        "the threads share one tree: thread 0 makes and removes its directories, every thread \
         adds its own files (mdtest without -u)",
    ),
];

/// More threads than this measure the scheduler, not the filesystem.
const MAX_THREADS: u32 = 1024;

/// Named parameter sets: the article's four and two quick ones for the default suite.
pub(super) const PRESETS: &[Preset] = &[
    Preset {
        name: "small-shallow",
        values: &[
            ("dirs", "20"),
            ("files", "40"),
            ("size", "1"),
            ("levels", "3"),
        ],
        help: "the article's; 15 s a run on tmpfs here",
    },
    Preset {
        name: "small-deep",
        values: &[
            ("dirs", "3"),
            ("files", "4"),
            ("size", "1"),
            ("levels", "10"),
        ],
        help: "the article's; 16 s a run on tmpfs here",
    },
    Preset {
        name: "medium-shallow",
        values: &[
            ("dirs", "17"),
            ("files", "10"),
            ("size", "1000"),
            ("levels", "2"),
        ],
        help: "the article's",
    },
    Preset {
        name: "medium-deep",
        values: &[
            ("dirs", "2"),
            ("files", "2"),
            ("size", "1000"),
            ("levels", "10"),
        ],
        help: "the article's",
    },
    // A quick look: one file per directory, so that the directory phases are not drowned by
    // the file phases; on a quiet 2-CPU VM xfs makes its directories in 0.3 s, too short to
    // decide on.
    Preset {
        name: "quick",
        values: &[
            ("dirs", "25"),
            ("files", "1"),
            ("size", "1"),
            ("levels", "3"),
        ],
        help: "16,276 dirs and files; 2.2 s a run on tmpfs here",
    },
    // The default run's: six times `quick`, so that every phase lasts over 1 s on ext4, xfs
    // and btrfs of direct-I/O loop images on a quiet 2-CPU VM: with 40 directories a level,
    // xfs's and btrfs's dir-create (the shortest phase) took 0.93 and 0.97 s there; 46 make
    // 1.5 times the directories. Three rounds of three filesystems take about 4.5 minutes
    // quiet, within the default run's budget.
    Preset {
        name: "default",
        values: &[
            ("dirs", "46"),
            ("files", "1"),
            ("size", "1"),
            ("levels", "3"),
        ],
        help: "99,499 dirs and files; the default run's; about 3.5 s a run on tmpfs here",
    },
    // Twice the default: 5–50 s per phase on a direct-I/O ext4 loop image under load here.
    Preset {
        name: "quick-shallow",
        values: &[
            ("dirs", "50"),
            ("files", "1"),
            ("size", "1"),
            ("levels", "3"),
        ],
        help: "127,551 dirs and files; 11 s a run on tmpfs here",
    },
    Preset {
        name: "quick-deep",
        values: &[
            ("dirs", "3"),
            ("files", "1"),
            ("size", "1"),
            ("levels", "10"),
        ],
        help: "88,573 dirs and files, ten levels deep; 6.2 s a run on tmpfs here",
    },
    // IO500's mdtest-easy: empty files in a directory per rank (-u -L -F, no -w); IO500 sets
    // the count so the phase runs 300 s; these are per rank.
    Preset {
        name: "mdtest-easy",
        values: &[
            ("dirs", "1"),
            ("files", "20000"),
            ("size", "0"),
            ("levels", "0"),
            ("stat", "true"),
        ],
        help: "IO500's mdtest-easy shape (not an official IO500 result); 0.9 s a run on tmpfs here",
    },
    // IO500's mdtest-hard: 3901-byte files written, stat'ed, read (-w 3901 -e 3901 -F).
    Preset {
        name: "mdtest-hard",
        values: &[
            ("dirs", "1"),
            ("files", "10000"),
            ("size", "0"),
            ("levels", "0"),
            ("bytes", "3901"),
            ("stat", "true"),
            ("read", "true"),
        ],
        help: "IO500's mdtest-hard shape (not an official IO500 result); 0.5 s a run on tmpfs here",
    },
];

//! The io workload's option table and presets: fio's option names (`_` or `-` both work).

use super::params::Algorithm;
use super::params::{Engine, Rw, SyncIo};
use crate::options::{OptKind, OptionDef};

mod control;
mod placement;
mod presets;
mod zones;

pub(crate) use presets::KIND;

const OPTIONS: &[OptionDef] = &[
    OptionDef {
        default: Some("randread"),
        ..OptionDef::new("rw", OptKind::Choice(Rw::NAMES), "I/O pattern")
    },
    OptionDef::new(
        "rw-modifier",
        OptKind::Text,
        "fio's rw=PATTERN:M: a gap after each sequential I/O (-8k: backwards), or I/Os per random offset",
    ),
    OptionDef {
        max: 100,
        default: Some("50"),
        ..OptionDef::new(
            "rwmixread",
            OptKind::Count,
            "reads in % of readwrite/randrw",
        )
    },
    OptionDef {
        min: 1,
        max: 256 << 20,
        default: Some("4k"),
        ..OptionDef::new("bs", OptKind::Size, "block size")
    },
    OptionDef {
        min: 1,
        max: 256 << 20,
        ..OptionDef::new(
            "write-bs",
            OptKind::Size,
            "the writes' block size where it differs (fio's bs=READ,WRITE)",
        )
    },
    OptionDef::new(
        "bssplit",
        OptKind::Text,
        "block sizes by share, fio's SIZE/PCT:SIZE/PCT (e.g. 4k/80:64k/20)",
    ),
    OptionDef {
        min: 1,
        ..OptionDef::new("size", OptKind::Size, "bytes of I/O per job and pass")
    },
    OptionDef {
        min: 1,
        ..OptionDef::new(
            "io-size",
            OptKind::Size,
            "bytes of I/O per job and pass, over files of `size` (fio's io_size)",
        )
    },
    OptionDef {
        min: 1,
        ..OptionDef::new(
            "filesize",
            OptKind::Size,
            "each file's size; default offset + size/nrfiles",
        )
    },
    OptionDef {
        min: 1,
        max: 65536,
        default: Some("1"),
        ..OptionDef::new("nrfiles", OptKind::Count, "files per job")
    },
    OptionDef::new(
        "filename",
        OptKind::Text,
        "the job's files, NAME[:NAME...] in the run's directory, shared by its copies",
    ),
    OptionDef::new(
        "directory",
        OptKind::Text,
        "the job's files' directory, under the run's directory",
    ),
    OptionDef {
        default: Some("0"),
        ..OptionDef::new(
            "openfiles",
            OptKind::Count,
            "files a job holds open at once (0: all)",
        )
    },
    OptionDef {
        default: Some("native"),
        ..OptionDef::new(
            "fallocate",
            OptKind::Choice(&["native", "posix", "keep", "truncate", "none", "1", "0"]),
            "how written files are preallocated",
        )
    },
    OptionDef::new(
        "unlink",
        OptKind::Flag,
        "the job's files removed when it ends (untimed)",
    ),
    OptionDef::new(
        "startdelay",
        OptKind::Text,
        "the job starts this long after the others: TIME or MIN-MAX",
    ),
    OptionDef::new(
        "verify",
        OptKind::Choice(Algorithm::NAMES),
        "written blocks stamped and checked once the writes end",
    ),
    OptionDef {
        default: Some("true"),
        ..OptionDef::new(
            "do-verify",
            OptKind::Flag,
            "with `verify`: check (off: stamp only)",
        )
    },
    OptionDef::new(
        "verify-interval",
        OptKind::Size,
        "bytes per verify header; default the block size",
    ),
    OptionDef::new(
        "verify-pattern",
        OptKind::Text,
        "what written blocks hold, checked: 0xHEX, \"text\" or a number",
    ),
    OptionDef::new(
        "buffer-pattern",
        OptKind::Text,
        "what written blocks hold: 0xHEX, \"text\" or a number",
    ),
    OptionDef::new(
        "verify-fatal",
        OptKind::Flag,
        "with `verify`: the check stops at the first wrong block",
    ),
    OptionDef {
        default: Some("0"),
        ..OptionDef::new(
            "verify-backlog",
            OptKind::Count,
            "with `verify`: check the blocks written after every N writes (0: at the end)",
        )
    },
    OptionDef {
        default: Some("0"),
        ..OptionDef::new(
            "verify-backlog-batch",
            OptKind::Count,
            "blocks each `verify-backlog` check reads (0: all written since the last)",
        )
    },
    OptionDef::new(
        "fill-device",
        OptKind::Flag,
        "write until the filesystem is full (ENOSPC ends the job without error); size: the filesystem's unless given",
    ),
    OptionDef::new(
        "donorname",
        OptKind::Text,
        "ioengine=e4defrag: the donor file whose blocks each write moves in (in `directory`)",
    ),
    OptionDef::new(
        "inplace",
        OptKind::Flag,
        "ioengine=e4defrag: the donor allocated before each move and truncated after it",
    ),
    OptionDef::new(
        "verify-dump",
        OptKind::Flag,
        "with `verify`: a wrong block dumped to FILE.OFFSET.received (and .expected) in the working directory",
    ),
    OptionDef {
        default: Some("0"),
        ..OptionDef::new(
            "ratemin",
            OptKind::Size,
            "the job fails below this many bytes per second",
        )
    },
    OptionDef {
        min: 1,
        max: 1024,
        default: Some("1"),
        ..OptionDef::new("numjobs", OptKind::Count, "jobs running at once (workers)")
    },
    crate::parallel::WORKERS_OPTION,
    OptionDef {
        default: Some("0"),
        ..OptionDef::new("offset", OptKind::Size, "where I/O starts in each file")
    },
    OptionDef::new(
        "create-on-open",
        OptKind::Flag,
        "no layout: each job's open creates its files, timed (data engines: writes only; IOR's create)",
    ),
    OptionDef::new("direct", OptKind::Flag, "O_DIRECT"),
    OptionDef {
        default: Some("true"),
        ..OptionDef::new(
            "invalidate",
            OptKind::Flag,
            "drop the files' cached pages before I/O",
        )
    },
    OptionDef {
        default: Some("psync"),
        ..OptionDef::new(
            "ioengine",
            OptKind::Choice(Engine::NAMES),
            "how I/O is issued",
        )
    },
    OptionDef {
        min: 1,
        max: 4096,
        default: Some("1"),
        ..OptionDef::new(
            "iodepth",
            OptKind::Count,
            "I/Os in flight (io_uring, libaio)",
        )
    },
    OptionDef {
        min: 1,
        max: 4096,
        ..OptionDef::new(
            "iodepth-batch-submit",
            OptKind::Count,
            "I/Os queued before a submit; default 1",
        )
    },
    OptionDef {
        min: 1,
        max: 4096,
        default: Some("1"),
        ..OptionDef::new(
            "iodepth-batch-complete-min",
            OptKind::Count,
            "completions waited for at least",
        )
    },
    OptionDef {
        max: 4096,
        default: Some("0"),
        ..OptionDef::new(
            "iodepth-batch-complete-max",
            OptKind::Count,
            "completions reaped at most a call (0: iodepth-batch-complete-min, as fio)",
        )
    },
    OptionDef {
        max: 4096,
        default: Some("0"),
        ..OptionDef::new(
            "iodepth-low",
            OptKind::Count,
            "a full queue is reaped down to this depth before it is filled again (0: iodepth)",
        )
    },
    OptionDef::new(
        "sqpoll",
        OptKind::Flag,
        "io_uring: a kernel thread polls the submission queue",
    ),
    OptionDef::new(
        "hipri",
        OptKind::Flag,
        "polled completions (the device must poll)",
    ),
    OptionDef {
        default: Some("true"),
        ..OptionDef::new("fixedbufs", OptKind::Flag, "io_uring: registered buffers")
    },
    OptionDef {
        default: Some("true"),
        ..OptionDef::new("registerfiles", OptKind::Flag, "io_uring: registered files")
    },
    OptionDef {
        max: u32::MAX as u64,
        default: Some("0"),
        ..OptionDef::new("fsync", OptKind::Count, "fsync after every N writes")
    },
    OptionDef {
        default: Some("0"),
        ..OptionDef::new(
            "fdatasync",
            OptKind::Count,
            "fdatasync after every N writes",
        )
    },
    OptionDef::new(
        "end-fsync",
        OptKind::Flag,
        "fsync every file at the end (timed)",
    ),
    OptionDef::new(
        "fsync-on-close",
        OptKind::Flag,
        "fsync a file when it is closed (timed)",
    ),
    OptionDef {
        default: Some("none"),
        ..OptionDef::new(
            "sync",
            OptKind::Choice(SyncIo::NAMES),
            "files opened O_SYNC (sync) or O_DSYNC (dsync): each write waits for the disk",
        )
    },
    OptionDef::new(
        "runtime",
        OptKind::Text,
        "time limit: N[us|ms|s|m|h], seconds bare",
    ),
    OptionDef::new(
        "time-based",
        OptKind::Flag,
        "run for `runtime`, repeating the pass",
    ),
    OptionDef::new(
        "ramp-time",
        OptKind::Text,
        "I/O before the timed phase, not measured",
    ),
    OptionDef {
        default: Some("0"),
        ..OptionDef::new(
            "number-ios",
            OptKind::Count,
            "stop after N I/Os per job (0: no limit)",
        )
    },
    OptionDef {
        min: 1,
        max: 1 << 20,
        default: Some("1"),
        ..OptionDef::new("loops", OptKind::Count, "passes over the files")
    },
    OptionDef {
        default: Some("0"),
        ..OptionDef::new(
            "rate-iops",
            OptKind::Count,
            "I/Os per second per job, open loop",
        )
    },
    OptionDef {
        default: Some("0"),
        ..OptionDef::new("rate", OptKind::Size, "bytes per second per job, open loop")
    },
    OptionDef {
        default: Some("true"),
        ..OptionDef::new("randrepeat", OptKind::Flag, "the same offsets at every run")
    },
    OptionDef {
        default: Some("0"),
        ..OptionDef::new(
            "randseed",
            OptKind::Count,
            "seed of the offsets (with randrepeat)",
        )
    },
    OptionDef {
        default: Some("random"),
        ..OptionDef::new(
            "random-distribution",
            OptKind::Text,
            "random, zipf:θ, pareto:h, normal:σ",
        )
    },
    OptionDef::new(
        "norandommap",
        OptKind::Flag,
        "random blocks may repeat within a pass",
    ),
    OptionDef::new(
        "thinktime",
        OptKind::Text,
        "idle time after every thinktime-blocks I/Os: N[us|ms|s], microseconds bare",
    ),
    OptionDef::new(
        "thinktime-spin",
        OptKind::Text,
        "of the thinktime, how long to spin rather than sleep",
    ),
    OptionDef {
        min: 1,
        default: Some("1"),
        ..OptionDef::new(
            "thinktime-blocks",
            OptKind::Count,
            "I/Os between thinktimes",
        )
    },
    OptionDef::new(
        "filename-format",
        OptKind::Text,
        "the files' names from $jobname, $jobnum, $filenum and $clientuid (fio's $jobname.$jobnum.$filenum)",
    ),
    OptionDef {
        min: 1,
        max: 256 << 20,
        ..OptionDef::new(
            "blockalign",
            OptKind::Size,
            "random offsets are multiples of this; default the smallest block size",
        )
    },
    OptionDef {
        max: 100,
        default: Some("100"),
        ..OptionDef::new(
            "percentage-random",
            OptKind::Count,
            "of a random pattern's I/Os, % at a random offset (the others follow the last)",
        )
    },
    OptionDef {
        min: 1,
        max: 100,
        ..OptionDef::new(
            "size-percent",
            OptKind::Count,
            "fio's size=N%: bytes per file, % of its filesize",
        )
    },
    OptionDef {
        max: 99,
        ..OptionDef::new(
            "offset-percent",
            OptKind::Count,
            "fio's offset=N%: % of the size a file has before the job (0 for the new files fsbench makes)",
        )
    },
    OptionDef {
        default: Some("roundrobin"),
        ..OptionDef::new(
            "file-service-type",
            OptKind::Text,
            "the next I/O's file: roundrobin[:N], sequential, random[:N], zipf:θ, pareto:h, normal:σ",
        )
    },
    OptionDef::new(
        "write-bssplit",
        OptKind::Text,
        "the writes' block sizes where they differ (fio's bssplit=READ,WRITE)",
    ),
    OptionDef::new(
        "write-rate",
        OptKind::Size,
        "the writes' bytes per second where it differs (fio's rate=READ,WRITE)",
    ),
    OptionDef::new(
        "write-rate-iops",
        OptKind::Count,
        "the writes' I/Os per second where it differs (fio's rate_iops=READ,WRITE)",
    ),
    OptionDef {
        default: Some("0"),
        ..OptionDef::new(
            "offset-increment",
            OptKind::Size,
            "each copy (numjobs) starts this much further than the one before",
        )
    },
    OptionDef::new("zero-buffers", OptKind::Flag, "written blocks hold zeros"),
    OptionDef::new(
        "refill-buffers",
        OptKind::Flag,
        "new data in the buffer before every write",
    ),
    OptionDef::new(
        "scramble-buffers",
        OptKind::Flag,
        "each 512 bytes stamped with its offset before a write (on in fio job files)",
    ),
    OptionDef {
        max: 100,
        default: Some("0"),
        ..OptionDef::new(
            "buffer-compress-percentage",
            OptKind::Count,
            "written data compresses by this much (zeros in each chunk)",
        )
    },
    OptionDef {
        min: 1,
        default: Some("512"),
        ..OptionDef::new(
            "buffer-compress-chunk",
            OptKind::Size,
            "bytes per compressible chunk",
        )
    },
    OptionDef {
        max: 100,
        default: Some("0"),
        ..OptionDef::new(
            "dedupe-percentage",
            OptKind::Count,
            "of the buffer fills, % that repeat the one before",
        )
    },
    OptionDef {
        default: Some("repeat"),
        ..OptionDef::new(
            "dedupe-mode",
            OptKind::Choice(&["repeat", "working_set"]),
            "a repeated fill: the one before (repeat), or one of the job's first fills (working_set)",
        )
    },
    OptionDef {
        min: 1,
        max: 100,
        default: Some("5"),
        ..OptionDef::new(
            "dedupe-working-set-percentage",
            OptKind::Count,
            "dedupe-mode=working_set: the first fills repeated, in % of the job's size",
        )
    },
    OptionDef::new(
        "dedupe-global",
        OptKind::Flag,
        "dedupe-mode=working_set: the repeated fills are those of every job running together",
    ),
    OptionDef::new(
        "pre-read",
        OptKind::Flag,
        "the files read into the page cache before the job (untimed; no invalidate)",
    ),
    OptionDef::new(
        "unlink-each-loop",
        OptKind::Flag,
        "the job's files removed after each loop and made anew, empty, for the next",
    ),
    control::CONTINUE_ON_ERROR,
    control::IGNORE_ERROR,
    control::RATE_PROCESS,
    control::IO_SUBMIT_MODE,
    control::FLOW_ID,
    control::FLOW,
    control::FLOW_SLEEP,
    control::RANDOM_GENERATOR,
    control::SS,
    control::SS_DUR,
    control::SS_RAMP,
    placement::CPUS_ALLOWED,
    placement::CPUMASK,
    placement::CPUS_ALLOWED_POLICY,
    placement::NUMA_CPU_NODES,
    placement::NUMA_MEM_POLICY,
    placement::NICE,
    placement::PRIO,
    placement::PRIOCLASS,
    placement::CMDPRIO_PERCENTAGE,
    placement::CMDPRIO_CLASS,
    placement::CMDPRIO,
    placement::CMDPRIO_BSSPLIT,
    zones::ZONEMODE,
    zones::ZONESIZE,
    zones::ZONERANGE,
    zones::ZONESKIP,
    control::LATENCY_TARGET,
    control::LATENCY_WINDOW,
    control::LATENCY_PERCENTILE,
    control::LATENCY_RUN,
    control::CPULOAD,
    control::CPUCHUNKS,
    control::CPUMODE,
    control::EXIT_ON_IO_DONE,
    control::PROGRAM,
    control::ARGUMENTS,
    control::GRACE_TIME,
    control::STD_REDIRECT,
];

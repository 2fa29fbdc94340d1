//! The io workload's options for fio's job control: errors gone past, arrival processes,
//! flows, steady state, the latency target's depth search and the cpuio engine's load.

use crate::options::{OptKind, OptionDef};

pub(super) const CONTINUE_ON_ERROR: OptionDef = OptionDef::new(
    "continue-on-error",
    OptKind::Choice(&["none", "read", "write", "io", "verify", "all", "0", "1"]),
    "failed I/Os of these kinds are counted and gone past (fio's; see ignore-error)",
);

pub(super) const IGNORE_ERROR: OptionDef = OptionDef::new(
    "ignore-error",
    OptKind::Text,
    "the errors gone past per kind, READS,WRITES,VERIFY of E-names or numbers split by `:` (default EIO and EILSEQ)",
);

pub(super) const RATE_PROCESS: OptionDef = OptionDef {
    default: Some("linear"),
    ..OptionDef::new(
        "rate-process",
        OptKind::Choice(&["linear", "poisson"]),
        "a rate's I/Os evenly spaced, or arriving as a Poisson process",
    )
};

pub(super) const IO_SUBMIT_MODE: OptionDef = OptionDef {
    default: Some("inline"),
    ..OptionDef::new(
        "io-submit-mode",
        OptKind::Choice(&["inline", "offload"]),
        "fio's submission by the job (inline) or by worker threads (offload: the same schedule here)",
    )
};

pub(super) const FLOW_ID: OptionDef = OptionDef {
    default: Some("0"),
    ..OptionDef::new(
        "flow-id",
        OptKind::Count,
        "the flow the job's `flow` weight is in",
    )
};

pub(super) const FLOW: OptionDef = OptionDef {
    max: 1000,
    default: Some("0"),
    ..OptionDef::new(
        "flow",
        OptKind::Count,
        "the job's weight in its flow: jobs of a flow share its I/Os by weight (0: none)",
    )
};

pub(super) const FLOW_SLEEP: OptionDef = OptionDef {
    default: Some("0"),
    ..OptionDef::new(
        "flow-sleep",
        OptKind::Count,
        "microseconds a job held back by its flow sleeps before it looks again",
    )
};

pub(super) const RANDOM_GENERATOR: OptionDef = OptionDef {
    default: Some("tausworthe"),
    ..OptionDef::new(
        "random-generator",
        OptKind::Choice(&["tausworthe", "lfsr", "tausworthe64"]),
        "fio's generator of random offsets: fsbench draws its own (lfsr: every block once a pass, even with norandommap)",
    )
};

pub(super) const SS: OptionDef = OptionDef::new(
    "ss",
    OptKind::Text,
    "steady state criterion: iops|iops_slope|bw|bw_slope:LIMIT[%] (with ss-dur)",
);

pub(super) const SS_DUR: OptionDef = OptionDef::new(
    "ss-dur",
    OptKind::Text,
    "steady state window: the job stops once its last this-many seconds meet `ss`",
);

pub(super) const SS_RAMP: OptionDef = OptionDef::new(
    "ss-ramp",
    OptKind::Text,
    "steady state: samples start a second after this long",
);

pub(super) const LATENCY_TARGET: OptionDef = OptionDef::new(
    "latency-target",
    OptKind::Text,
    "the depth search's latency: the deepest queue whose I/Os meet it (microseconds bare)",
);

pub(super) const LATENCY_WINDOW: OptionDef = OptionDef::new(
    "latency-window",
    OptKind::Text,
    "with latency-target: how long each depth runs before it is judged (microseconds bare)",
);

pub(super) const LATENCY_PERCENTILE: OptionDef = OptionDef::new(
    "latency-percentile",
    OptKind::Text,
    "with latency-target: the % of a window's I/Os that must meet it (default 100)",
);

pub(super) const LATENCY_RUN: OptionDef = OptionDef::new(
    "latency-run",
    OptKind::Flag,
    "with latency-target: search for the whole job (no final run at the depth found)",
);

pub(super) const CPULOAD: OptionDef = OptionDef {
    max: u32::MAX as u64,
    ..OptionDef::new(
        "cpuload",
        OptKind::Count,
        "ioengine=cpuio: the % of a CPU the job burns (over 100: 100)",
    )
};

pub(super) const CPUCHUNKS: OptionDef = OptionDef {
    min: 1,
    max: u32::MAX as u64,
    default: Some("50000"),
    ..OptionDef::new(
        "cpuchunks",
        OptKind::Count,
        "ioengine=cpuio: microseconds of each burn (cpumode=noop)",
    )
};

pub(super) const CPUMODE: OptionDef = OptionDef {
    default: Some("noop"),
    ..OptionDef::new(
        "cpumode",
        OptKind::Choice(&["noop", "qsort"]),
        "ioengine=cpuio: each burn spins (noop) or sorts (qsort)",
    )
};

pub(super) const EXIT_ON_IO_DONE: OptionDef = OptionDef::new(
    "exit-on-io-done",
    OptKind::Flag,
    "ioengine=cpuio: the job ends once the jobs doing I/O beside it have",
);

pub(super) const PROGRAM: OptionDef = OptionDef::new(
    "program",
    OptKind::Text,
    "ioengine=exec: the program the job runs (found on PATH without a /)",
);

pub(super) const ARGUMENTS: OptionDef = OptionDef::new(
    "arguments",
    OptKind::Text,
    "ioengine=exec: its arguments, split on spaces (%r: runtime in s, %n: job name)",
);

pub(super) const GRACE_TIME: OptionDef = OptionDef {
    default: Some("1"),
    ..OptionDef::new(
        "grace-time",
        OptKind::Count,
        "ioengine=exec: seconds from the SIGTERM at the job's end to the SIGKILL",
    )
};

pub(super) const STD_REDIRECT: OptionDef = OptionDef {
    default: Some("true"),
    ..OptionDef::new(
        "std-redirect",
        OptKind::Flag,
        "ioengine=exec: its output in NAME.stdout/.stderr in the run's directory",
    )
};

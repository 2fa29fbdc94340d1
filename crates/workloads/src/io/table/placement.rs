//! The io workload's options that place a job's threads and prioritise its I/O (fio's).

use crate::options::{OptKind, OptionDef};

pub(super) const CPUS_ALLOWED: OptionDef = OptionDef::new(
    "cpus-allowed",
    OptKind::Text,
    "the CPUs the job's threads run on: N, N-M, comma-separated",
);

pub(super) const CPUMASK: OptionDef = OptionDef::new(
    "cpumask",
    OptKind::Text,
    "the CPUs the job's threads run on, a bit per CPU (fio's cpumask)",
);

pub(super) const CPUS_ALLOWED_POLICY: OptionDef = OptionDef {
    default: Some("shared"),
    ..OptionDef::new(
        "cpus-allowed-policy",
        OptKind::Choice(&["shared", "split"]),
        "every thread on all of cpus-allowed (shared), or each on one of them (split)",
    )
};

pub(super) const NUMA_CPU_NODES: OptionDef = OptionDef::new(
    "numa-cpu-nodes",
    OptKind::Text,
    "the job's threads run on these NUMA nodes' CPUs: N, N-M, comma-separated, or all",
);

pub(super) const NUMA_MEM_POLICY: OptionDef = OptionDef::new(
    "numa-mem-policy",
    OptKind::Text,
    "the threads' memory policy: default, prefer:N, bind:NODES, interleave[:NODES], local",
);

pub(super) const NICE: OptionDef = OptionDef::new(
    "nice",
    OptKind::Text,
    "added to the threads' nice value (-20 to 19)",
);

pub(super) const PRIO: OptionDef = OptionDef {
    max: 7,
    ..OptionDef::new(
        "prio",
        OptKind::Count,
        "the threads' I/O priority level (ioprio_set; 0 highest, 7 lowest)",
    )
};

pub(super) const PRIOCLASS: OptionDef = OptionDef {
    max: 3,
    ..OptionDef::new(
        "prioclass",
        OptKind::Count,
        "the threads' I/O priority class: 1 real-time, 2 best effort, 3 idle",
    )
};

pub(super) const CMDPRIO_PERCENTAGE: OptionDef = OptionDef::new(
    "cmdprio-percentage",
    OptKind::Text,
    "libaio, io_uring: READS[,WRITES] % of the I/Os at cmdprio-class/cmdprio",
);

pub(super) const CMDPRIO_CLASS: OptionDef = OptionDef::new(
    "cmdprio-class",
    OptKind::Text,
    "libaio, io_uring: READS[,WRITES] the per-I/O priorities' class (default 1)",
);

pub(super) const CMDPRIO: OptionDef = OptionDef::new(
    "cmdprio",
    OptKind::Text,
    "libaio, io_uring: READS[,WRITES] the per-I/O priorities' level (default 0)",
);

/// fio's per-I/O priorities by block size.
pub(super) const CMDPRIO_BSSPLIT: OptionDef = OptionDef::new(
    "cmdprio-bssplit",
    OptKind::Text,
    "libaio, io_uring: BS/PCT[/CLASS/LEVEL]:...[,WRITES] the I/Os of a size with a priority",
);

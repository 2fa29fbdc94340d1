//! fio's cpuio engine's options (`cpuload`, `cpuchunks`, `cpumode`, `exit_on_io_done`): a
//! job that moves no data and burns a share of a CPU beside the jobs that do I/O, as fio's
//! engines/cpu.c.

use serde::{Deserialize, Serialize};

use super::{Engine, IoParams};
use crate::options::Parsed;
use fsbench_measure::error::invalid;

/// What a cpuio job burns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuBurn {
    /// The share of a CPU, in percent (fio's `cpuload`, at most 100).
    pub load: u32,
    /// Each burn's length in microseconds (fio's `cpuchunks`); with `qsort` each burn is a
    /// sort, as long as it takes.
    pub chunk_us: u64,
    /// fio's `cpumode=qsort`: each burn sorts a MiB of numbers four ways (else it spins,
    /// fio's `noop`).
    pub qsort: bool,
    /// fio's `exit_on_io_done`: the job ends once the jobs doing I/O beside it have.
    pub exit_on_io_done: bool,
}

/// A cpuio job's burn; `None` for any other engine, which takes none of its options (fio
/// knows them only with the engine).
pub(super) fn cpu_burn(p: &Parsed, engine: Engine) -> anyhow::Result<Option<CpuBurn>> {
    const OPTIONS: [&str; 4] = ["cpuload", "cpuchunks", "cpumode", "exit-on-io-done"];
    if engine != Engine::Cpuio {
        return match p.first_explicit(&OPTIONS) {
            Some(o) => Err(invalid(format!("io: `{o}` is an option of ioengine=cpuio"))),
            None => Ok(None),
        };
    }
    let load = p.small("cpuload").unwrap_or(0);
    if load == 0 {
        return Err(invalid(
            "io: `ioengine=cpuio` needs `cpuload` (fio: cpu thread needs rate (cpuload=))",
        ));
    }
    Ok(Some(CpuBurn {
        load: load.min(100),
        chunk_us: p.num("cpuchunks").expect("has a default"),
        qsort: p.text("cpumode") == Some("qsort"),
        exit_on_io_done: p.flag("exit-on-io-done"),
    }))
}

impl IoParams {
    /// A cpuio job burns for its `runtime` (fio's would burn until stopped without one) and
    /// moves nothing: options about data are not taken with it.
    pub(super) fn validate_cpu_burn(&self) -> anyhow::Result<()> {
        if self.cpu_burn.is_none() {
            return Ok(());
        }
        let no = |msg: &str| Err(invalid(format!("io: `ioengine=cpuio`: {msg}")));
        if self.runtime_ms == 0 {
            return no(
                "give `runtime`: the job burns CPU until its time is up (fio's burns until stopped)",
            );
        }
        if self.verify.is_some() || self.fsync > 0 || self.fdatasync > 0 || self.end_fsync {
            return no("the job moves no data: `verify` and syncs are not taken");
        }
        if self.latency_target.is_some() || self.rate > 0 || self.rate_iops > 0 {
            return no("the job burns CPU at its `cpuload`: no `rate` or `latency_target`");
        }
        Ok(())
    }
}

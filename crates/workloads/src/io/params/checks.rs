//! The io workload's options checked together: what the job's files leave room for, what
//! contradicts what, and each group of options' own checks.

use super::{IoParams, UNBOUNDED};
use crate::WorkloadParams;
use fsbench_measure::error::invalid;
use fsbench_model::units::format_bytes;

impl IoParams {
    /// Every option the job was given, checked against the others (and its jobs beside it).
    pub(super) fn check(&self) -> anyhow::Result<()> {
        self.beside.iter().try_for_each(WorkloadParams::validate)?;
        self.earlier_groups
            .iter()
            .try_for_each(WorkloadParams::validate)?;
        self.validate_names()?;
        let no = |msg: String| Err(invalid(format!("io: {msg}")));
        if self.offset >= self.filesize {
            return no(format!(
                "`offset` ({}) leaves nothing of a {} file",
                format_bytes(self.offset),
                format_bytes(self.filesize)
            ));
        }
        if self.region() < self.max_bs() {
            return no(format!(
                "each file's I/O region ({}) is smaller than a block ({})",
                format_bytes(self.region()),
                format_bytes(self.max_bs())
            ));
        }
        if self.openfiles > 0 && self.openfiles < self.nrfiles && !self.engine.file_op() {
            return no(format!(
                "`openfiles={}` below nrfiles ({}): opening and closing files during a job is not implemented",
                self.openfiles, self.nrfiles
            ));
        }
        if self.engine.file_op() && self.ramp_ms > 0 {
            return no(format!(
                "`ramp-time` with ioengine={} would make its files untimed",
                self.engine.name()
            ));
        }
        self.validate_verify()?;
        self.validate_fill()?;
        self.validate_fio_options()?;
        self.validate_pacing()?;
        self.validate_latency_target()?;
        self.validate_cpu_burn()?;
        self.validate_exec()?;
        self.validate_engine()?;
        if self.time_based && self.runtime_ms == 0 {
            return no("`time-based` needs a `runtime`".into());
        }
        self.validate_combinations()?;
        let files = u64::from(self.nrfiles) * u64::from(self.numjobs);
        if self.filesize < UNBOUNDED && self.filesize.checked_mul(files).is_none() {
            return no("files × size overflow 64 bits".into());
        }
        Ok(())
    }

    /// Options that cannot go together: `create-on-open` with reads or a ramp, two rates,
    /// two kinds of sync, batches deeper than the depth.
    fn validate_combinations(&self) -> anyhow::Result<()> {
        let no = |msg: String| Err(invalid(format!("io: {msg}")));
        let data_engine = !self.engine.file_op();
        if self.create_on_open && data_engine && self.rw.read_percent(self.rwmixread) > 0 {
            return no(format!(
                "`create-on-open` makes empty files: `rw={}` reads, and needs them laid out",
                self.rw.name()
            ));
        }
        if self.create_on_open && data_engine && self.ramp_ms > 0 {
            return no(
                "`create-on-open` creates the files in the timed phase: no `ramp-time` before it"
                    .into(),
            );
        }
        if self.rate > 0 && self.rate_iops > 0 {
            return no("give `rate` or `rate-iops`, not both".into());
        }
        if self.fsync > 0 && self.fdatasync > 0 {
            return no("give `fsync` or `fdatasync`, not both".into());
        }
        // `iodepth` above 1 with a synchronous engine is taken as fio takes it: one I/O in
        // flight ([`IoParams::depth`]).
        if self.iodepth_batch_submit > self.depth()
            || self.iodepth_batch_complete_min > self.depth()
        {
            return no(format!(
                "`iodepth-batch-submit` and `iodepth-batch-complete-min` are at most iodepth ({})",
                self.depth()
            ));
        }
        Ok(())
    }
}

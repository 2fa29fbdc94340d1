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
        self.validate_openfiles()?;
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

    /// `openfiles` below `nrfiles` with a data engine: at most that many of the job's files
    /// open at once (`None`: no lower limit than the job's files).
    pub(crate) fn limits_open(&self) -> Option<usize> {
        (self.data_engine() && self.openfiles > 0 && self.openfiles < self.nrfiles)
            .then_some(self.openfiles as usize)
    }

    /// How many of the job's files may be open at once where each opens when the file
    /// service first picks it, in the job's time, as fio's do (`openfiles`, else all of
    /// them). `None`: every file is opened before the job: an engine without files of its
    /// own, or what opening as the job goes does not go with (`refuses_opening_as_picked`;
    /// io_uring's registered files, which fio opens and registers before the job).
    pub(crate) fn opens_as_picked(&self) -> Option<usize> {
        let registered = self.registerfiles && self.engine == super::Engine::IoUring;
        self.limits_open().or_else(|| {
            let all =
                self.data_engine() && !registered && self.refuses_opening_as_picked().is_none();
            all.then_some(self.nrfiles as usize)
        })
    }

    fn data_engine(&self) -> bool {
        !(self.engine.file_op() || self.engine.diskless())
    }

    /// What opening and closing files during the job does not go with yet, if the job has
    /// it: engines other than the read-write calls, io_uring and libaio, and options that
    /// reach a file after its I/O (syncs, verify, `unlink_each_loop`, `pre_read`, strided
    /// zones).
    fn refuses_opening_as_picked(&self) -> Option<&'static str> {
        use super::Engine::{IoUring, Libaio, Psync, Pvsync, Pvsync2, Sync, Vsync};
        let engine_ok = matches!(
            self.engine,
            Psync | Sync | Vsync | Pvsync | Pvsync2 | IoUring | Libaio
        );
        let options = [
            (!engine_ok, "ioengine"),
            (self.fsync > 0 || self.fdatasync > 0, "fsync/fdatasync"),
            (
                self.end_fsync || self.fsync_on_close,
                "end_fsync/fsync_on_close",
            ),
            (self.verify.is_some(), "verify"),
            (self.unlink_each_loop, "unlink_each_loop"),
            (self.pre_read, "pre_read"),
            (self.zones.is_some(), "zonemode=strided"),
        ];
        options.iter().find(|(bad, _)| *bad).map(|(_, what)| *what)
    }

    /// `openfiles` below `nrfiles` where opening as the job goes is not implemented.
    fn validate_openfiles(&self) -> anyhow::Result<()> {
        if self.limits_open().is_none() {
            return Ok(());
        }
        match self.refuses_opening_as_picked() {
            None => Ok(()),
            Some(what) => Err(invalid(format!(
                "io: `openfiles={}` below nrfiles ({}) opens and closes files during the job, which is not implemented with {what}{}: set openfiles=0 (every file open; the open-file limit must allow it)",
                self.openfiles,
                self.nrfiles,
                match what {
                    "ioengine" => format!("={}", self.engine.name()),
                    _ => String::new(),
                }
            ))),
        }
    }
}

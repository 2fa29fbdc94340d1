//! fio's options that place a job's I/O and what fsbench refuses of them: copies'
//! offsets (`offset_increment`), random offsets' alignment (`blockalign`), `thinktime`,
//! `refill_buffers`, `unlink_each_loop` and `filename_format`.

use super::{Engine, IoParams, values};
use fsbench_measure::error::invalid;
use fsbench_model::units::format_bytes;

impl IoParams {
    /// Where copy `copy` (of `numjobs`) starts in each file: `offset`, plus
    /// `offset_increment` for each copy before it.
    pub(crate) fn copy_offset(&self, copy: u32) -> u64 {
        (self.offset).saturating_add(self.offset_increment.saturating_mul(u64::from(copy)))
    }

    /// The size copy `copy`'s files need: its region after its offset.
    pub(crate) fn copy_filesize(&self, copy: u32) -> u64 {
        self.copy_offset(copy).saturating_add(self.region())
    }

    /// Random offsets' unit: `blockalign`, or the smallest block.
    pub(crate) fn align(&self) -> u64 {
        match self.blockalign {
            0 => self.min_bs(),
            a => a,
        }
    }

    /// fio's `thinktime`, `unlink_each_loop`, `filename_format` and `blockalign` as
    /// fsbench takes them.
    pub(super) fn validate_fio_options(&self) -> anyhow::Result<()> {
        let no = |msg: String| Err(invalid(format!("io: {msg}")));
        let asynchronous = matches!(self.engine, Engine::IoUring | Engine::Libaio);
        if self.thinktime_us > 0 && (asynchronous || self.engine.file_op()) {
            return no(format!(
                "`thinktime` with ioengine={} is not implemented (the synchronous engines think)",
                self.engine.name()
            ));
        }
        let synchronous = !asynchronous && !self.engine.file_op() && self.engine != Engine::Null;
        if self.unlink_each_loop
            && (!synchronous || self.rw.read_percent(self.rwmixread) > 0 || self.verify.is_some())
        {
            return no(
                "`unlink-each-loop` is taken for jobs that only write, with a synchronous engine and no verify (the files made anew are empty)".into(),
            );
        }
        let data_engine = synchronous || asynchronous;
        if self.raw_device
            && (!data_engine || self.unlink || self.unlink_each_loop || self.create_on_open)
        {
            return no(
                "a block device is read and written by a data engine, never made nor removed (no file engine, `unlink` or `create-on-open`)".into(),
            );
        }
        if let Some(format) = &self.filename_format {
            // Every copy's names lie where the first's do.
            values::inside_name(
                "filename-format",
                &crate::io::layout::formatted(format, self, 0, 0),
            )?;
        }
        if self.align() > self.region() {
            return no(format!(
                "`blockalign` ({}) is larger than each file's I/O region ({})",
                format_bytes(self.align()),
                format_bytes(self.region())
            ));
        }
        Ok(())
    }
}

//! What becomes of a failed I/O: fio's `continue_on_error` goes past some errors (counted);
//! any other failure, or an I/O that moved less than asked, ends the job.

use super::Job;
use crate::io::params::kind_of;
use crate::io::pattern::Next;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::PhaseRecorder;

impl Job<'_> {
    /// An I/O's result: whether it moved what it asked; `false` where it failed with an
    /// error the job goes past (fio's `continue_on_error`: counted, the I/O not, as fio
    /// accounts none of a failed I/O); any other failure ends the job ([`check_len`]).
    pub(crate) fn checked(
        &mut self,
        result: Result<usize, rustix::io::Errno>,
        io: Next,
    ) -> Result<bool, FsbenchError> {
        if let Err(e) = result {
            let errno = e.raw_os_error();
            if (self.params.errors).continues(kind_of(io.read, errno), errno) {
                if self.span.measured {
                    self.out.stats.errored(errno, Some(io.read));
                }
                return Ok(false);
            }
        }
        check_len(result, io, &self.rec).map(|()| true)
    }
}

/// An I/O that failed or moved less than asked ends the job (fio's default,
/// `continue_on_error=none`); a full disk says so.
fn check_len(
    result: Result<usize, rustix::io::Errno>,
    io: Next,
    rec: &PhaseRecorder,
) -> Result<(), FsbenchError> {
    let what = if io.read { "read" } else { "write" };
    match result {
        Ok(n) if n == io.len as usize => Ok(()),
        Ok(n) => Err(FsbenchError::Failed(format!(
            "io: short {what}: {n} of {} bytes at offset {} of file {}",
            io.len, io.offset, io.file
        ))),
        Err(e) => Err(io_error(e, what, rec)),
    }
}

pub(crate) fn io_error(e: rustix::io::Errno, what: &str, rec: &PhaseRecorder) -> FsbenchError {
    fsbench_measure::measure::fatal_error(e, "io", rec.units())
        .unwrap_or_else(|| FsbenchError::Failed(format!("io: {what}: {e}")))
}

//! fio's verify phase of a job that writes: the blocks it wrote read back and checked, each
//! read one of the job's reads in fio's figures (not in fsbench's own).

use std::time::Instant;

use super::{Job, calls, io_error};
use crate::io::params::ErrorKind;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::fio::Completion;

impl Job<'_> {
    /// fio's `verify`: the blocks the job wrote and that no backlog check read, read back
    /// and checked (after its `end_fsync`; `limit` of them, 0: all); a mismatch fails the
    /// job, reported as fio reports it.
    pub(super) fn verify_written(&mut self, limit: u64) -> Result<(), FsbenchError> {
        let Some(v) = self.verifier.as_mut().filter(|_| self.params.do_verify) else {
            return Ok(());
        };
        let mut read = calls::read_back(&self.files, &self.pools);
        let (start, stats, clat) = (self.start, &mut self.out.stats, &mut self.out.verify_clat);
        let prio = self.params.placement.prio_of(0);
        let mut reads = 0;
        // Each read is one of the job's reads in fio's figures (not in fsbench's own).
        let timed = |file: usize, buf: &mut [u8], offset: u64| {
            let submitted = Instant::now();
            let got = read(file, buf, offset);
            let clat_ns = submitted.elapsed().as_nanos() as u64;
            if let Ok(len) = got {
                reads += 1;
                stats.submitted(1, 1);
                stats.reaped(1);
                clat.saturating_record(clat_ns.max(1));
                stats.completed(Completion {
                    at_ns: start.elapsed().as_nanos() as u64,
                    read: true,
                    len: len as u32,
                    offset,
                    clat_ns,
                    slat_ns: None,
                    trim: false,
                    prio,
                });
            }
            got
        };
        let (checked, bad) = v
            .check_written(
                (timed, &self.names[..]),
                self.bufs[0].buf(),
                limit,
                self.params.verify_fatal,
            )
            .map_err(|e| io_error(e, "verify read", &self.rec))?;
        drop(read);
        if limit == 0 {
            self.out.verify_reads += reads;
        }
        self.out.verified += checked;
        match bad {
            None => Ok(()),
            // fio's `continue_on_error=verify`: each wrong block an error gone past.
            Some(m) if (self.params.errors).continues(ErrorKind::Verify, libc::EILSEQ) => {
                for _ in 0..m.count {
                    self.out.stats.errored(libc::EILSEQ, None);
                }
                Ok(())
            }
            Some(m) => Err(self.failed_verify(format!(
                "io: {} ({} of {checked} blocks checked were wrong)",
                m.message, m.count
            ))),
        }
    }
}

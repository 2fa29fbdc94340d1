//! fio's `verify_only` in a job that writes: it writes nothing. Each pass of its pattern is
//! run through without I/O (fio's dry run), the blocks its writes would cover noted, then
//! read back as fio's verify phase reads them and checked as `verify` checks a job's reads.
//! The reads are the job's I/O, timed and counted as reads, as fio's figures count them;
//! the dry run is not in its time (nor in fio's).

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::super::pattern::Next;
use super::super::verify::Cursor;
use super::Job;
use fsbench_measure::error::FsbenchError;

/// The job's loop in place of its engine's: each pass (or what the time left of it) run
/// through, then its blocks read back, until the job's passes or time are done.
pub(crate) fn verify_only(job: &mut Job) -> Result<(), FsbenchError> {
    let mut passes = 0;
    let mut dry_run = Instant::now();
    loop {
        let before = passes;
        let next = job.next_io(&mut passes);
        if next.is_none() || passes > before {
            job.start += dry_run.elapsed();
            job.read_back()?;
            dry_run = Instant::now();
        }
        match next {
            Some(io) if !io.read => {
                if let Some(v) = &mut job.verifier {
                    v.written(io.file, io.offset, u64::from(io.len));
                }
            }
            Some(_) => {}
            None => return Ok(()),
        }
    }
}

impl Job<'_> {
    /// The blocks noted, read (with the engine's calls where it reads synchronously, else
    /// `pread`) one at a time and checked as read, unless `do_verify=0`. A wrong block ends
    /// the job (or is an error gone past, under `continue_on_error=verify`).
    fn read_back(&mut self) -> Result<(), FsbenchError> {
        let block = self.params.max_bs();
        let mut at = Cursor::default();
        while self.params.do_verify {
            let Some((file, offset, len)) =
                (self.verifier.as_mut()).and_then(|v| v.take_block(&mut at, block))
            else {
                return Ok(());
            };
            if self.halt.load(Ordering::Relaxed)
                || self.rec.progress().cancel.load(Ordering::Relaxed)
            {
                // Nothing is left for the check at the job's end either.
                self.verifier = None;
                return Ok(());
            }
            let io = Next {
                file,
                offset,
                len: len as u32,
                read: true,
                prio: 0,
            };
            let submitted = Instant::now();
            let result = self.transfer(io);
            let done = Instant::now();
            self.out.stats.submitted(1, 1);
            self.out.stats.reaped(1);
            if self.checked(result, io)? {
                self.complete(io, done, submitted, submitted, None)?;
                self.verify_read(0, io)?;
            }
        }
        Ok(())
    }
}

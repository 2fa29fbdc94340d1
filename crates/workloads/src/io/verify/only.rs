//! fio's `verify_only`: a job that writes nothing and checks that its files hold what its
//! writes would have put there. In a job file it follows (after a `stonewall`) the jobs that
//! wrote those files; fsbench runs it once they end, on their files, before anything is
//! removed: its pattern run through without I/O (fio's dry run) notes the blocks it would
//! write, and those are read back and checked as `verify` checks them.

use std::os::fd::BorrowedFd;

use super::super::layout::{file_name, open_file};
use super::super::pattern::Pattern;
use super::super::{Io, IoParams};
use super::Verifier;
use fsbench_measure::calls::Aligned;
use fsbench_measure::error::FsbenchError;
use fsbench_model::measurement::Figure;

impl Io {
    /// Every `verify_only` job after the group, each copy checked in turn; the blocks
    /// checked, as a figure. A wrong block fails the run, reported as fio reports it.
    pub(in crate::io) fn verify_after(
        &self,
        dir: BorrowedFd<'_>,
    ) -> Result<Option<Figure>, FsbenchError> {
        let mut checked = 0;
        for (j, p) in self.params.verify_after.iter().enumerate() {
            for copy in 0..p.numjobs {
                checked += verify_only(p, dir, j, copy)?;
            }
        }
        Ok((!self.params.verify_after.is_empty())
            .then(|| Figure::new("verify_only blocks", "blocks", true, checked as f64)))
    }
}

/// Copy `copy` of the `j`-th `verify_only` job: the blocks its writes would cover, read
/// back and checked; how many.
fn verify_only(
    p: &IoParams,
    dir: BorrowedFd<'_>,
    j: usize,
    copy: u32,
) -> Result<u64, FsbenchError> {
    let name = p.job.as_deref().unwrap_or("io");
    let Some(mut verifier) = Verifier::of(p, copy) else {
        return Ok(0);
    };
    let seed = (p.randseed).wrapping_add(u64::from(copy).wrapping_mul(0x9e37_79b9));
    let mut pattern = Pattern::new(p, copy, seed);
    for _ in 0..p.loops.max(1) {
        while let Some(io) = pattern.next() {
            if !io.read {
                verifier.written(io.file, io.offset, u64::from(io.len));
            }
        }
        pattern.new_pass();
    }
    let names: Vec<String> = (0..p.nrfiles as usize)
        .map(|f| file_name(p, j, copy, f))
        .collect();
    let files = (names.iter())
        .map(|n| open_file(p, dir, n, false))
        .collect::<Result<Vec<_>, FsbenchError>>()?;
    let mut buf = Aligned::new(p.max_bs() as usize);
    let (checked, bad) = verifier
        .check_written((&files[..], &names[..]), buf.buf(), 0, p.verify_fatal)
        .map_err(|e| FsbenchError::Failed(format!("io: job `{name}` (verify_only): read: {e}")))?;
    match bad {
        None => Ok(checked),
        Some(m) => Err(FsbenchError::Failed(format!(
            "io: job `{name}` (verify_only): {} ({} of {checked} blocks checked were wrong)",
            m.message, m.count
        ))),
    }
}

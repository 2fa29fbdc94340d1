//! fio's `fill_device` on a filesystem: the job writes until the filesystem is full (its
//! size at most the filesystem's, or less where `size` or `--cap size=` says so), and the
//! write the filesystem has no room for (ENOSPC, EDQUOT) ends the job without an error, as
//! fio's does.

use std::os::fd::BorrowedFd;

use super::super::gather::Gathered;
use super::super::pattern::Next;
use super::super::{Engine, Io, IoParams};
use fsbench_measure::error::invalid;
use fsbench_model::measurement::Figure;

impl IoParams {
    /// What fsbench's `fill_device` takes: a job that only writes, on a filesystem, with a
    /// synchronous engine (the one whose write meets ENOSPC alone).
    pub(crate) fn validate_fill(&self) -> anyhow::Result<()> {
        if !self.fill_device {
            return Ok(());
        }
        let no = |msg: String| Err(invalid(format!("io: `fill-device`: {msg}")));
        if self.rw.read_percent(self.rwmixread) > 0 || self.rw.trims() {
            return no(format!(
                "`rw={}`: fio lays a file it reads out until the disk is full; not implemented (give a job that writes)",
                self.rw.name()
            ));
        }
        if self.raw_device {
            return no("on a block device give its `size`".into());
        }
        let synchronous = matches!(
            self.engine,
            Engine::Psync | Engine::Sync | Engine::Vsync | Engine::Pvsync | Engine::Pvsync2
        );
        if !synchronous {
            return no(format!(
                "with ioengine={} not implemented (psync, sync, vsync, pvsync and pvsync2 stop at a full filesystem)",
                self.engine.name()
            ));
        }
        Ok(())
    }
}

impl Io {
    /// Each fill job's files at most the size of the filesystem of `dir` (in whole blocks):
    /// the job ends at the write that finds it full.
    pub(in crate::io) fn fit_to_filesystem(&mut self, dir: BorrowedFd<'_>) {
        if !self.params.jobs().any(|p| p.fill_device) {
            return;
        }
        let most = filesystem_size(dir);
        fit(&mut self.params, most);
        for job in &mut self.params.beside {
            fit(job, most);
        }
    }
}

impl Io {
    /// What the fill jobs wrote before the filesystem was full (in MiB), once they ran: the
    /// size their description cannot give.
    pub(in crate::io) fn filled(&self, all: &Gathered) -> Option<Figure> {
        if !self.params.jobs().any(|p| p.fill_device) {
            return None;
        }
        let bytes = all.filled;
        Some(Figure::new(
            "written until full",
            "MiB",
            true,
            bytes as f64 / (1 << 20) as f64,
        ))
    }
}

/// The size of the filesystem of `dir`, which no file outgrows; unknown: unlimited. Not its
/// free space: fio's fill writes until ENOSPC, so as root into the blocks a filesystem keeps
/// for root (ext4's 5%), and past the blocks others took since it began.
fn filesystem_size(dir: BorrowedFd<'_>) -> u64 {
    rustix::fs::fstatvfs(dir).map_or(u64::MAX, |s| s.f_blocks.saturating_mul(s.f_frsize))
}

fn fit(p: &mut IoParams, most: u64) {
    if !p.fill_device {
        return;
    }
    let bs = p.max_bs().max(1);
    let region = (p.region().min(most) / bs * bs).max(bs);
    p.filesize = p.offset + region;
    p.size = p.size.min(region.saturating_mul(u64::from(p.nrfiles)));
}

/// Whether a fill job's write found the filesystem full: ENOSPC, EDQUOT, or the short write
/// before them. It ends the job, without an error.
#[inline]
pub(in crate::io) fn full(
    params: &IoParams,
    result: &Result<usize, rustix::io::Errno>,
    io: Next,
) -> bool {
    use rustix::io::Errno;
    params.fill_device
        && !io.read
        && match result {
            Err(e) => matches!(*e, Errno::NOSPC | Errno::DQUOT),
            Ok(n) => *n < io.len as usize,
        }
}

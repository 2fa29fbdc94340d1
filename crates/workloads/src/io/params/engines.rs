//! What fio's engines cannot do on a file, refused before anything runs with fio's reason.

use super::{Engine, IoParams};
use fsbench_measure::error::invalid;

impl IoParams {
    pub(super) fn validate_engine(&self) -> anyhow::Result<()> {
        let engine = self.engine.name();
        let no = |msg: String| Err(invalid(format!("io: `ioengine={engine}`: {msg}")));
        let reads = self.rw.read_percent(self.rwmixread) > 0;
        let syncs = self.fsync > 0 || self.fdatasync > 0 || self.end_fsync;
        if self.rw.trims() || self.rw.trims_then_writes() {
            self.validate_trims()?;
        }
        let needs = |msg: &str| Err(invalid(format!("io: {msg}")));
        if self.engine != Engine::IoUring && self.sqpoll {
            return needs("`sqpoll` needs ioengine=io_uring");
        }
        if !matches!(self.engine, Engine::Pvsync2 | Engine::IoUring) && self.hipri {
            return needs("`hipri` needs ioengine=pvsync2 or io_uring");
        }
        if self.hipri && !self.direct {
            return needs("`hipri` (polled completions) needs `direct`");
        }
        self.validate_pmem()?;
        match self.engine {
            Engine::Ftruncate if reads => no(format!(
                "fio's engine only truncates, and fails each read with EINVAL (`rw={}` reads)",
                self.rw.name()
            )),
            Engine::E4defrag => self.validate_e4defrag(),
            Engine::Ftruncate | Engine::Falloc if syncs => no(
                "fio's engine fails a sync with EINVAL (`fsync`, `fdatasync` and `end_fsync` go through it; `fsync_on_close` does not)"
                    .into(),
            ),
            Engine::Ftruncate | Engine::Falloc if self.verify.is_some() => {
                no("its writes carry no data to verify".into())
            }
            Engine::Mmap if self.unlink_each_loop => {
                no("`unlink_each_loop` makes each loop's files anew, and the mappings are of the first loop's".into())
            }
            Engine::Mmap if self.create_on_open => {
                no("it maps the files the layout made; `create_on_open` leaves them empty (a copy past a file's end would fault)".into())
            }
            Engine::Mmap if (self.direct || self.fsync > 0 || self.fdatasync > 0) => {
                // SAFETY: sysconf reads a constant of the system.
                let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) });
                let page = page.unwrap_or(4096);
                match self.block_sizes().find(|bs| !bs.is_multiple_of(page)) {
                    Some(bs) => no(format!(
                        "fio: mmap options dictate a minimum block size of {page} bytes (with `direct`, `fsync` or `fdatasync`; {bs} is not a multiple)"
                    )),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// fio's e4defrag engine only writes (each write a move of blocks from the donor): it
    /// fails a read, a trim and a sync with EINVAL, and needs `donorname`.
    fn validate_e4defrag(&self) -> anyhow::Result<()> {
        let no = |msg: &str| Err(invalid(format!("io: `ioengine=e4defrag`: {msg}")));
        if self.donorname.is_none() {
            return no("fio: 'donorname' options required");
        }
        if self.rw.read_percent(self.rwmixread) > 0 {
            return no(&format!(
                "fio's engine only moves blocks, and fails each read with EINVAL (`rw={}` reads)",
                self.rw.name()
            ));
        }
        if self.fsync > 0 || self.fdatasync > 0 || self.end_fsync {
            return no(
                "fio's engine fails a sync with EINVAL (`fsync`, `fdatasync` and `end_fsync` go through it)",
            );
        }
        if self.verify.is_some() {
            return no("its writes carry no data to verify");
        }
        Ok(())
    }

    /// Trims on a file as fio 3.33 makes them: the `falloc` engine punches holes
    /// (`fallocate(PUNCH_HOLE|KEEP_SIZE)`), `null` makes no call; every other engine asks the
    /// block device to discard (`ioctl(BLKDISCARD)`), which a regular file refuses, and fio
    /// fails the job.
    fn validate_trims(&self) -> anyhow::Result<()> {
        let rw = self.rw.name();
        let no = |msg: String| Err(invalid(format!("io: `rw={rw}`: {msg}")));
        match self.engine {
            Engine::Falloc | Engine::Null => {}
            e @ (Engine::Ftruncate | Engine::E4defrag | Engine::Pmemblk | Engine::Libpmem) => {
                return no(format!(
                    "fio's {} engine fails each trim with EINVAL",
                    e.name()
                ));
            }
            e => {
                return no(format!(
                    "fio's {} engine trims with ioctl(BLKDISCARD), which a regular file refuses (ENOTTY: Inappropriate ioctl for device), and fails the job; ioengine=falloc punches holes",
                    e.name()
                ));
            }
        }
        if self.verify.is_some() {
            return no("`verify` of a job that trims is not implemented".into());
        }
        if self.write_bs.is_some() {
            return no("block sizes per direction (`bs=READ,WRITE,TRIM`) with trims are not implemented (give one `bs`)".into());
        }
        if (self.fio.as_ref()).is_some_and(|f| !f.logs.is_off()) {
            return no("the `write_*_log` files of a trim job are not implemented".into());
        }
        Ok(())
    }
}

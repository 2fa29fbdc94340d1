//! The synchronous engines' calls for one I/O.

use std::time::Instant;

use super::{Job, io_error};
use crate::io::params::Engine;
use crate::io::pattern::Next;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::fio::Completion;

/// How `verify` reads back the blocks a job wrote: a `pread` of its file, or through its
/// pool with pmemblk (which opens no file).
pub(super) fn read_back<'a>(
    files: &'a super::Files,
    pools: &'a [std::sync::Arc<crate::io::pmem::Pool>],
) -> impl FnMut(usize, &mut [u8], u64) -> crate::io::verify::ReadResult + 'a {
    move |file, buf, offset| match pools.get(file) {
        Some(pool) => pool.transfer(buf, offset, true),
        None => rustix::io::pread(files.fd(file), buf, offset),
    }
}

impl Job<'_> {
    /// One I/O with the job's synchronous engine: `pread`/`pwrite` (psync), `lseek` and
    /// `read`/`write` (sync) or `readv`/`writev` (vsync), `preadv`/`pwritev` (pvsync),
    /// `preadv2`/`pwritev2` (pvsync2, with `hipri`), a copy from or to the mapping (mmap,
    /// libpmem), the pool's blocks (pmemblk), `ftruncate` or `fallocate` (their engines), or
    /// nothing (null).
    #[inline]
    pub(super) fn transfer(&mut self, io: Next) -> Result<usize, rustix::io::Errno> {
        use rustix::io::{preadv, preadv2, pwritev, pwritev2};
        use std::io::{IoSlice, IoSliceMut};
        let engine = self.params.engine;
        if engine == Engine::Null {
            return Ok(io.len as usize);
        }
        if engine == Engine::Pmemblk {
            let buf = &mut self.bufs[0].buf()[..io.len as usize];
            return self.pools[io.file].transfer(buf, io.offset, io.read);
        }
        if matches!(
            engine,
            Engine::Mmap | Engine::Libpmem | Engine::Ftruncate | Engine::Falloc | Engine::E4defrag
        ) {
            return self.without_read_write(io);
        }
        let fd = self.files.fd(io.file);
        let buf = &mut self.bufs[0].buf()[..io.len as usize];
        if matches!(engine, Engine::Sync | Engine::Vsync) {
            let at = &mut self.positions[io.file];
            if *at != io.offset {
                rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(io.offset))?;
            }
            // Unknown until the transfer succeeds: a short one seeks again.
            *at = u64::MAX;
        }
        let moved = match (engine, io.read) {
            (Engine::Sync, true) => rustix::io::read(fd, buf),
            (Engine::Sync, false) => rustix::io::write(fd, buf),
            (Engine::Vsync, true) => rustix::io::readv(fd, &mut [IoSliceMut::new(buf)]),
            (Engine::Vsync, false) => rustix::io::writev(fd, &[IoSlice::new(buf)]),
            (Engine::Pvsync, true) => preadv(fd, &mut [IoSliceMut::new(buf)], io.offset),
            (Engine::Pvsync, false) => pwritev(fd, &[IoSlice::new(buf)], io.offset),
            (Engine::Pvsync2, read) => {
                let flags = if self.params.hipri {
                    rustix::io::ReadWriteFlags::HIPRI
                } else {
                    rustix::io::ReadWriteFlags::empty()
                };
                if read {
                    preadv2(fd, &mut [IoSliceMut::new(buf)], io.offset, flags)
                } else {
                    pwritev2(fd, &[IoSlice::new(buf)], io.offset, flags)
                }
            }
            (_, true) => rustix::io::pread(fd, buf, io.offset),
            (_, false) => rustix::io::pwrite(fd, buf, io.offset),
        }?;
        if matches!(engine, Engine::Sync | Engine::Vsync) {
            self.positions[io.file] = io.offset + moved as u64;
        }
        Ok(moved)
    }

    /// One I/O of the engines that neither read nor write the file: a copy from or to its
    /// mapping (mmap, with an `msync` of the range under `direct`, as fio's), an
    /// `ftruncate` (fio 3.33's engine truncates to the I/O's offset, not its end), a move of
    /// blocks from the donor (e4defrag) or a `fallocate` (a read keeps the size, a write may
    /// extend it, a trim punches a hole).
    fn without_read_write(&mut self, io: Next) -> Result<usize, rustix::io::Errno> {
        use rustix::fs::FallocateFlags;
        let fd = self.files.fd(io.file);
        let buf = &mut self.bufs[0].buf()[..io.len as usize];
        match self.params.engine {
            Engine::Mmap | Engine::Libpmem => {
                let map = &self.maps[io.file];
                if io.read {
                    map.read(buf, io.offset);
                } else {
                    map.write(buf, io.offset);
                }
                // libpmem's `direct` is its copy's non-temporal stores.
                if self.params.direct && self.params.engine == Engine::Mmap {
                    map.sync_range(io.offset, buf.len())?;
                }
            }
            Engine::Ftruncate => rustix::fs::ftruncate(fd, io.offset)?,
            Engine::E4defrag => {
                let donor = self
                    .donor
                    .as_ref()
                    .expect("the e4defrag engine has a donor");
                return donor.move_blocks(fd, io);
            }
            _ => {
                let flags = if io.read {
                    FallocateFlags::KEEP_SIZE
                } else if self.params.rw.trims() {
                    FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE
                } else {
                    FallocateFlags::empty()
                };
                rustix::fs::fallocate(fd, flags, io.offset, u64::from(io.len))?;
            }
        }
        Ok(buf.len())
    }

    /// fio's `trimwrite`: the block about to be written trimmed first (a hole punched by
    /// `falloc`, nothing with `null`), timed and recorded as fio's trim. fsbench's own
    /// figures are of the job's writes.
    pub(super) fn trim_first(&mut self, io: Next) -> Result<(), FsbenchError> {
        use rustix::fs::FallocateFlags;
        let submitted = Instant::now();
        let result = match self.params.engine {
            Engine::Falloc => rustix::fs::fallocate(
                self.files.fd(io.file),
                FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
                io.offset,
                u64::from(io.len),
            ),
            _ => Ok(()),
        };
        let done = Instant::now();
        self.out.stats.submitted(1, 1);
        self.out.stats.reaped(1);
        result.map_err(|e| io_error(e, "trim", &self.rec))?;
        if !self.span.measured {
            return Ok(());
        }
        let clat = done.saturating_duration_since(submitted).as_nanos() as u64;
        self.out.trim_clat.saturating_record(clat.max(1));
        self.out.stats.completed(Completion {
            at_ns: done.saturating_duration_since(self.start).as_nanos() as u64,
            read: false,
            len: io.len,
            offset: io.offset,
            clat_ns: clat,
            slat_ns: None,
            trim: true,
            prio: self.params.placement.prio_of(io.prio),
        });
        Ok(())
    }
}

//! The synchronous engines' calls for one I/O.

use std::os::fd::AsFd;

use super::Job;
use crate::io::params::Engine;
use crate::io::pattern::Next;

impl Job<'_> {
    /// One I/O with the job's synchronous engine: `pread`/`pwrite` (psync), `lseek` and
    /// `read`/`write` (sync) or `readv`/`writev` (vsync), `preadv`/`pwritev` (pvsync),
    /// `preadv2`/`pwritev2` (pvsync2, with `hipri`), a copy from or to the mapping (mmap),
    /// `ftruncate` or `fallocate` (their engines), or nothing (null).
    #[inline]
    pub(super) fn transfer(&mut self, io: Next) -> Result<usize, rustix::io::Errno> {
        use rustix::io::{preadv, preadv2, pwritev, pwritev2};
        use std::io::{IoSlice, IoSliceMut};
        let engine = self.params.engine;
        if engine == Engine::Null {
            return Ok(io.len as usize);
        }
        if matches!(engine, Engine::Mmap | Engine::Ftruncate | Engine::Falloc) {
            return self.without_read_write(io);
        }
        let fd = self.files[io.file].as_fd();
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
    /// `ftruncate` (fio 3.33's engine truncates to the I/O's offset, not its end) or a
    /// `fallocate` (a read keeps the size, a write may extend it, a trim punches a hole).
    fn without_read_write(&mut self, io: Next) -> Result<usize, rustix::io::Errno> {
        use rustix::fs::FallocateFlags;
        let fd = self.files[io.file].as_fd();
        let buf = &mut self.bufs[0].buf()[..io.len as usize];
        match self.params.engine {
            Engine::Mmap => {
                let map = &self.maps[io.file];
                if io.read {
                    map.read(buf, io.offset);
                } else {
                    map.write(buf, io.offset);
                }
                if self.params.direct {
                    map.sync_range(io.offset, buf.len())?;
                }
            }
            Engine::Ftruncate => rustix::fs::ftruncate(fd, io.offset)?,
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
}

//! fio's `mmap` engine: each file mapped whole (`MAP_SHARED`, readable and writable as the
//! job's directions need), hinted as fio hints it (`madvise` sequential or random); a read
//! copies from the mapping, a write into it, a sync is an `msync` of the mapping, and with
//! `direct` each I/O's range is synced after it. fio also asks `posix_madvise` for
//! `POSIX_MADV_DONTNEED` (at the mapping, and after each direct I/O), which glibc ignores on
//! Linux: no call is made for it here either.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use rustix::mm::{Advice, MapFlags, MsyncFlags, ProtFlags};

use super::params::{Engine, IoParams};
use fsbench_measure::error::FsbenchError;

/// One file's mapping, unmapped when dropped.
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is the job's alone (no other reference to its memory); it moves
// with the job to its worker.
unsafe impl Send for Mapping {}

impl Mapping {
    /// The mmap engine's mappings of a job's files (none with another engine).
    pub(crate) fn of_files(
        params: &IoParams,
        copy: u32,
        files: &[OwnedFd],
        names: &[String],
    ) -> Result<Vec<Mapping>, FsbenchError> {
        if params.engine != Engine::Mmap {
            return Ok(Vec::new());
        }
        (files.iter().zip(names))
            .map(|(fd, name)| {
                Mapping::new(params, fd.as_fd(), params.copy_filesize(copy))
                    .map_err(|e| FsbenchError::Failed(format!("io: mmap {name}: {e}")))
            })
            .collect()
    }

    /// Maps `len` bytes of `fd` from its start, as fio's engine maps a file.
    fn new(params: &IoParams, fd: BorrowedFd<'_>, len: u64) -> Result<Mapping, rustix::io::Errno> {
        let reads = params.rw.read_percent(params.rwmixread);
        // fio: both for a mixed job, write alone (read too with verify) for a writer.
        let prot = match reads {
            100 => ProtFlags::READ,
            0 if params.verify.is_none() => ProtFlags::WRITE,
            _ => ProtFlags::READ | ProtFlags::WRITE,
        };
        let len = usize::try_from(len).map_err(|_| rustix::io::Errno::OVERFLOW)?;
        // SAFETY: a new shared mapping of a file the job holds open; nothing else in
        // fsbench refers to its memory, and it is unmapped once, when dropped.
        let ptr =
            unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, MapFlags::SHARED, fd, 0)? };
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or(rustix::io::Errno::NOMEM)?;
        let mapping = Mapping { ptr, len };
        let hint = if params.rw.random() {
            Advice::Random
        } else {
            Advice::Sequential
        };
        // SAFETY: advice on this mapping's pages only.
        unsafe { rustix::mm::madvise(mapping.ptr.as_ptr().cast(), len, hint)? };
        Ok(mapping)
    }

    /// The mapped bytes of one I/O; a range the job's pattern keeps inside the file.
    fn range(&self, offset: u64, len: usize) -> *mut u8 {
        let at = offset as usize;
        assert!(at + len <= self.len, "an I/O inside the mapped file");
        // SAFETY: inside the mapping, checked above.
        unsafe { self.ptr.as_ptr().add(at) }
    }

    /// fio's read: the file's bytes at `offset` copied into `buf`.
    pub(crate) fn read(&self, buf: &mut [u8], offset: u64) {
        let from = self.range(offset, buf.len());
        // SAFETY: `from` has `buf.len()` mapped bytes; a buffer of the job's never overlaps
        // a file's mapping.
        unsafe { std::ptr::copy_nonoverlapping(from, buf.as_mut_ptr(), buf.len()) }
    }

    /// fio's write: `buf` copied into the file's bytes at `offset`.
    pub(crate) fn write(&self, buf: &[u8], offset: u64) {
        let to = self.range(offset, buf.len());
        // SAFETY: as in `read`, the other way.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), to, buf.len()) }
    }

    /// fio's sync with this engine: the whole mapping, `msync(MS_SYNC)`.
    pub(crate) fn sync(&self) -> Result<(), rustix::io::Errno> {
        // SAFETY: this mapping's whole range.
        unsafe { rustix::mm::msync(self.ptr.as_ptr().cast(), self.len, MsyncFlags::SYNC) }
    }

    /// fio's `direct` with this engine: the I/O's range synced (it starts on a page: fio
    /// wants page-sized blocks with `direct`).
    pub(crate) fn sync_range(&self, offset: u64, len: usize) -> Result<(), rustix::io::Errno> {
        let at = self.range(offset, len);
        // SAFETY: inside this mapping.
        unsafe { rustix::mm::msync(at.cast(), len, MsyncFlags::SYNC) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; nothing refers to it any more.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

//! fio's `mmap` engine: each file mapped whole (`MAP_SHARED`, readable and writable as the
//! job's directions need), hinted as fio hints it (`madvise` sequential or random); a read
//! copies from the mapping, a write into it, a sync is an `msync` of the mapping, and with
//! `direct` each I/O's range is synced after it. fio also asks `posix_madvise` for
//! `POSIX_MADV_DONTNEED` (at the mapping, and after each direct I/O), which glibc ignores on
//! Linux: no call is made for it here either.
//!
//! fio's `libpmem` engine maps its files too, with PMDK's `pmem_map_file` (the whole file,
//! made at the job's size where missing), and fails the job where the mapping is not of
//! persistent memory; a read copies from it, a write is a `pmem_memcpy` (non-temporal with
//! `direct`, drained with `sync`), a sync a `pmem_drain`.

use std::ffi::c_uint;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use rustix::mm::{Advice, MapFlags, MsyncFlags, ProtFlags};

use super::params::{Engine, IoParams, SyncIo};
use super::pmem::library::{self, Pmem};
use fsbench_measure::calls::ProcFd;
use fsbench_measure::error::FsbenchError;

/// One file's mapping, unmapped when dropped.
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    /// libpmem's mapping: its library and the flags of its writes' `pmem_memcpy`.
    pmem: Option<(&'static Pmem, c_uint)>,
}

// SAFETY: the mapping is the job's alone (no other reference to its memory); it moves
// with the job to its worker.
unsafe impl Send for Mapping {}

impl Mapping {
    /// The mmap or libpmem engine's mappings of a job's files (none with another engine).
    pub(crate) fn of_files(
        params: &IoParams,
        copy: u32,
        files: &[OwnedFd],
        names: &[String],
    ) -> Result<Vec<Mapping>, FsbenchError> {
        let len = params.copy_filesize(copy);
        let map = |(fd, name): (&OwnedFd, &String)| match params.engine {
            Engine::Libpmem => Mapping::pmem(params, fd.as_fd(), name, len),
            _ => Mapping::new(params, fd.as_fd(), len)
                .map_err(|e| FsbenchError::Failed(format!("io: mmap {name}: {e}"))),
        };
        match params.engine {
            Engine::Mmap | Engine::Libpmem => files.iter().zip(names).map(map).collect(),
            _ => Ok(Vec::new()),
        }
    }

    /// fio's libpmem engine's mapping of a file: `pmem_map_file` of `len` bytes (the file
    /// made or extended to them, mode 0600), refused, as fio fails the job, where it is not
    /// persistent memory (`PMEM_IS_PMEM_FORCE=1` makes libpmem say it is, for fio too).
    fn pmem(
        params: &IoParams,
        fd: BorrowedFd<'_>,
        name: &str,
        len: u64,
    ) -> Result<Mapping, FsbenchError> {
        let failed = |why: String| FsbenchError::Failed(format!("io: libpmem: {name}: {why}"));
        let lib = library::pmem().map_err(|why| failed(format!("`ioengine=libpmem` {why}")))?;
        let len = usize::try_from(len).map_err(|_| failed("too large to map".into()))?;
        // The library maps a path: the job's open file's, as this thread sees it.
        let path = ProcFd::of(fd);
        let (mut mapped, mut is_pmem) = (0usize, 0);
        // SAFETY: a NUL-terminated path and two outputs; the mapping is unmapped in `drop`.
        let ptr = unsafe {
            (lib.map_file)(
                path.name().as_ptr(),
                len,
                library::PMEM_FILE_CREATE,
                0o600,
                &mut mapped,
                &mut is_pmem,
            )
        };
        let errno = std::io::Error::last_os_error();
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| failed(format!("pmem_map_file: {}", lib.last_error())))?;
        // fio: no drain after each copy unless `sync`; non-temporal stores with `direct`.
        let mut flags = match params.sync_io {
            SyncIo::None => library::PMEM_F_MEM_NODRAIN,
            _ => 0,
        };
        flags |= match params.direct {
            true => library::PMEM_F_MEM_NONTEMPORAL,
            false => library::PMEM_F_MEM_TEMPORAL,
        };
        let mapping = Mapping {
            ptr,
            len: mapped.min(len),
            pmem: Some((lib, flags)),
        };
        if is_pmem == 0 {
            // Named as the job file's other refusals are: its line, then the job.
            let at = (params.engine_at.as_deref()).map_or(String::new(), |at| {
                format!("{at}: job `{}`: ", params.job.as_deref().unwrap_or("io"))
            });
            return Err(FsbenchError::InvalidInput(format!(
                "{at}io: `ioengine=libpmem`: {name} is not on persistent memory; fio fails the job there (err={}, \"file_name does not point to persistent memory\", {errno}): its engine needs a DAX-mounted filesystem on an NVDIMM (PMEM_IS_PMEM_FORCE=1 makes libpmem take any file for one, for fio too)",
                errno.raw_os_error().unwrap_or(0)
            )));
        }
        Ok(mapping)
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
        let mapping = Mapping {
            ptr,
            len,
            pmem: None,
        };
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

    /// fio's write: `buf` copied into the file's bytes at `offset` (by `pmem_memcpy`
    /// with libpmem's).
    pub(crate) fn write(&self, buf: &[u8], offset: u64) {
        let to = self.range(offset, buf.len());
        match self.pmem {
            // SAFETY: as in `read`, the other way.
            None => unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), to, buf.len()) },
            // SAFETY: the same range, copied by libpmem into its own mapping.
            Some((lib, flags)) => unsafe {
                (lib.memcpy)(to.cast(), buf.as_ptr().cast(), buf.len(), flags);
            },
        }
    }

    /// fio's sync with this engine: the whole mapping, `msync(MS_SYNC)`; libpmem's drains
    /// the stores made (`pmem_drain`).
    pub(crate) fn sync(&self) -> Result<(), rustix::io::Errno> {
        if let Some((lib, _)) = self.pmem {
            // SAFETY: a fence, no arguments.
            unsafe { (lib.drain)() };
            return Ok(());
        }
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
        let ptr = self.ptr.as_ptr().cast();
        // SAFETY: the mapping made in `new` or `pmem`, unmapped once (libpmem's by libpmem,
        // which keeps a list of its mappings); nothing refers to it any more.
        let _ = unsafe {
            match self.pmem {
                Some((lib, _)) => (lib.unmap)(ptr, self.len),
                None => rustix::mm::munmap(ptr, self.len).map_or(-1, |()| 0),
            }
        };
    }
}

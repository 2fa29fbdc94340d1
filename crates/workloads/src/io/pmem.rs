//! fio 3.33's engines for PMDK's libraries: `pmemblk` (engines/pmemblk.c), whose files
//! are libpmemblk's block pools, opened once per process and shared by the job threads
//! that name them; and `libpmem` (engines/libpmem.c), whose mappings are
//! [`super::mmap::Mapping`]s made by `pmem_map_file`.

use std::ffi::{CString, c_void};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, Weak};

use super::layout::file_name;
use super::{Engine, Io, IoParams};
use fsbench_measure::error::FsbenchError;

pub(crate) mod library;

/// An open libpmemblk pool, closed when the last job using it lets it go.
pub(crate) struct Pool {
    handle: NonNull<c_void>,
    bsize: u64,
    nblocks: u64,
    lib: &'static library::Blk,
}

// SAFETY: libpmemblk's calls are thread-safe (each I/O takes one of the pool's lanes), and
// the handle is closed once, by the last owner.
unsafe impl Send for Pool {}
unsafe impl Sync for Pool {}

/// The pools open in this process, by directory and name: fio's cache, through which its
/// job threads share a pool (libpmemblk locks a pool's file for the process that opens it).
type Cache = Vec<((u64, u64, String), Weak<Pool>)>;
static POOLS: Mutex<Cache> = Mutex::new(Vec::new());

impl Pool {
    /// The pools of a pmemblk job's files (none with another engine), opened as fio's
    /// engine opens them: an open pool shared, else `pmemblk_open`, else, where the file
    /// is missing and its name gives the sizes, `pmemblk_create` (mode 0644).
    pub(crate) fn of_job(
        params: &IoParams,
        dir: BorrowedFd<'_>,
        names: &[String],
    ) -> Result<Vec<Arc<Pool>>, FsbenchError> {
        if params.engine != Engine::Pmemblk {
            return Ok(Vec::new());
        }
        (names.iter().enumerate())
            .map(|(f, name)| {
                let (bsize, gross) = params.pools.get(f).copied().unwrap_or((0, 0));
                Pool::open(dir, name, bsize, gross)
            })
            .collect()
    }

    fn open(
        dir: BorrowedFd<'_>,
        name: &str,
        bsize: u64,
        gross: u64,
    ) -> Result<Arc<Pool>, FsbenchError> {
        let failed = |why: String| FsbenchError::Failed(format!("io: pmemblk: {why}"));
        let lib = library::blk().map_err(|why| failed(format!("`ioengine=pmemblk` {why}")))?;
        let st = rustix::fs::fstat(dir).map_err(|e| failed(format!("the run's directory: {e}")))?;
        let key = (st.st_dev, st.st_ino, name.to_string());
        let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
        pools.retain(|(_, pool)| pool.strong_count() > 0);
        if let Some(pool) = pools
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|p| p.1.upgrade())
        {
            return Ok(pool);
        }
        // The library opens the file by a path: the directory's, as this thread sees it.
        let path = CString::new(format!("/proc/thread-self/fd/{}/{name}", dir.as_raw_fd()))
            .map_err(|_| failed(format!("{name}: a name with a NUL byte")))?;
        // SAFETY: a NUL-terminated path; the handle is closed in `drop`.
        let mut handle = unsafe { (lib.open)(path.as_ptr(), bsize as usize) };
        let mut errno = std::io::Error::last_os_error();
        if handle.is_null() && errno.raw_os_error() == Some(libc::ENOENT) && bsize > 0 {
            // SAFETY: as above.
            handle = unsafe { (lib.create)(path.as_ptr(), bsize as usize, gross as usize, 0o644) };
            errno = std::io::Error::last_os_error();
        }
        let handle = NonNull::new(handle).ok_or_else(|| {
            failed(format!(
                "unable to open pmemblk pool file {name} ({errno}; libpmemblk: {})",
                lib.last_error()
            ))
        })?;
        // SAFETY: an open pool.
        let (bsize, nblocks) =
            unsafe { ((lib.bsize)(handle.as_ptr()), (lib.nblock)(handle.as_ptr())) };
        let pool = Arc::new(Pool {
            handle,
            bsize: bsize as u64,
            nblocks: nblocks as u64,
            lib,
        });
        pools.push((key, Arc::downgrade(&pool)));
        Ok(pool)
    }

    /// The bytes the pool's blocks hold (fio's file size for the job).
    pub(crate) fn data_bytes(&self) -> u64 {
        self.bsize * self.nblocks
    }

    /// One I/O as fio's engine makes it: EINVAL unless it covers whole blocks inside the
    /// pool, else a `pmemblk_read` or `pmemblk_write` per block, in order, the first
    /// failure its error.
    #[inline]
    pub(crate) fn transfer(
        &self,
        buf: &mut [u8],
        offset: u64,
        read: bool,
    ) -> Result<usize, rustix::io::Errno> {
        let (bsize, len) = (self.bsize, buf.len() as u64);
        if !offset.is_multiple_of(bsize)
            || !len.is_multiple_of(bsize)
            || (offset + len) / bsize > self.nblocks
        {
            return Err(rustix::io::Errno::INVAL);
        }
        let first = offset / bsize;
        for (i, block) in buf.chunks_exact_mut(bsize as usize).enumerate() {
            let at = (first + i as u64) as libc::c_longlong;
            let pool = self.handle.as_ptr();
            // SAFETY: `block` is one block of the pool's size; `at` is inside the pool.
            let rc = unsafe {
                if read {
                    (self.lib.read)(pool, block.as_mut_ptr().cast(), at)
                } else {
                    (self.lib.write)(pool, block.as_ptr().cast(), at)
                }
            };
            if rc != 0 {
                let errno = std::io::Error::last_os_error().raw_os_error();
                return Err(rustix::io::Errno::from_raw_os_error(
                    errno.unwrap_or(libc::EIO),
                ));
            }
        }
        Ok(buf.len())
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Under the cache's lock, as fio closes its pools: no thread opens the file again
        // while libpmemblk still holds its lock on it.
        let _cache = POOLS.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the pool opened in `open`, closed once: no job holds it any more.
        unsafe { (self.lib.close)(self.handle.as_ptr()) }
    }
}

impl Io {
    /// The pmemblk jobs' pools, made where missing, in the layout as fio makes them when it
    /// sizes a job's files; each such job's size then at most its pools' (their blocks'
    /// bytes after its offset, in whole blocks), as fio takes a pool's size for its file's.
    pub(super) fn make_pools(&mut self, dir: BorrowedFd<'_>) -> Result<(), FsbenchError> {
        let regions = (self.params.jobs().enumerate())
            .map(|(j, p)| pools_region(p, j, dir))
            .collect::<Result<Vec<_>, _>>()?;
        super::layout::fit(&mut self.params, regions[0]);
        for (p, region) in self.params.beside.iter_mut().zip(&regions[1..]) {
            super::layout::fit(p, *region);
        }
        Ok(())
    }
}

/// The smallest region job `p`'s pools leave after each copy's offset, in whole blocks
/// (`None`: not a pmemblk job); the pools stay made, closed once it is known.
fn pools_region(p: &IoParams, j: usize, dir: BorrowedFd<'_>) -> Result<Option<u64>, FsbenchError> {
    if p.engine != Engine::Pmemblk {
        return Ok(None);
    }
    let mut region = u64::MAX;
    for copy in 0..p.numjobs {
        let names: Vec<String> = (0..p.nrfiles as usize)
            .map(|f| file_name(p, j, copy, f))
            .collect();
        for name in &names {
            super::layout::make_parents(dir, name)
                .map_err(|e| FsbenchError::Failed(format!("io: the directories of {name}: {e}")))?;
        }
        for pool in Pool::of_job(p, dir, &names)? {
            region = region.min(pool.data_bytes().saturating_sub(p.copy_offset(copy)));
        }
    }
    let bs = p.max_bs().max(1);
    match region / bs * bs {
        0 => Err(FsbenchError::InvalidInput(format!(
            "io: job `{}`: its pools leave less than a block ({bs} bytes) after its offset (fio: \"blocksize is larger than data set range\")",
            p.job.as_deref().unwrap_or("io")
        ))),
        whole => Ok(Some(whole)),
    }
}

//! fio's `e4defrag` engine (engines/e4defrag.c): each write moves the blocks of its range
//! from a donor file into the job's file with `ioctl(EXT4_IOC_MOVE_EXT)`, ext4's online
//! defragmentation call. The donor (`donorname`, in the job's `directory`) is made by each
//! job thread and allocated over the job's region once, or, with `inplace`, allocated
//! before each move and truncated after it.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{FallocateFlags, Mode, OFlags};
use rustix::io::Errno;

use super::pattern::Next;
use super::{Engine, IoParams};
use fsbench_measure::error::FsbenchError;

/// The magic number statfs gives ext2, ext3 and ext4 (one driver serves them on Linux).
const EXT4_SUPER_MAGIC: u64 = 0xef53;

/// `_IOWR('f', 15, struct move_extent)`: read and write, 40 bytes, type 'f', number 15.
const EXT4_IOC_MOVE_EXT: libc::c_ulong = 0xc028_660f;

/// The kernel's `struct move_extent` (linux/ext4.h).
#[repr(C)]
struct MoveExtent {
    reserved: u32,
    donor_fd: u32,
    orig_start: u64,
    donor_start: u64,
    len: u64,
    moved_len: u64,
}

/// A job thread's donor file.
pub(crate) struct Donor {
    fd: OwnedFd,
    /// The donor's `st_blksize`: the unit of the moves.
    block: u64,
    inplace: bool,
}

/// fio's engine fails every move with ENOTTY where the filesystem is not ext4: refused
/// before anything runs, with that reason.
pub(super) fn check_ext4(dir: BorrowedFd<'_>) -> Result<(), FsbenchError> {
    let magic = rustix::fs::fstatfs(dir).map_or(0, |s| s.f_type as u64);
    if magic == EXT4_SUPER_MAGIC {
        return Ok(());
    }
    Err(FsbenchError::InvalidInput(format!(
        "io: `ioengine=e4defrag`: fio's engine moves blocks with ioctl(EXT4_IOC_MOVE_EXT), which {} does not have (ENOTTY: Inappropriate ioctl for device), and fio fails the job: it needs ext4",
        fsbench_measure::calls::filesystem_name(dir)
    )))
}

/// Where a job's donor file is: `donorname` in the job's `directory`, as fio's engine
/// names it.
pub(crate) fn donor_name(params: &IoParams) -> String {
    let donor = params.donorname.as_deref().unwrap_or_default();
    match &params.directory {
        Some(dir) => format!("{dir}/{donor}"),
        None => donor.to_string(),
    }
}

impl Donor {
    /// The donor file of a job thread with the e4defrag engine (`None` with any other),
    /// opened in `dir` as fio's engine opens it (`O_CREAT|O_WRONLY`) and, unless `inplace`,
    /// allocated over the job's region.
    pub(crate) fn open(
        params: &IoParams,
        dir: BorrowedFd<'_>,
    ) -> Result<Option<Donor>, FsbenchError> {
        if params.engine != Engine::E4defrag {
            return Ok(None);
        }
        let name = donor_name(params);
        let failed = |e: Errno| FsbenchError::Failed(format!("io: e4defrag: donor {name}: {e}"));
        let flags = OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC;
        let fd =
            rustix::fs::openat(dir, name.as_str(), flags, Mode::from(0o644)).map_err(failed)?;
        if !params.inplace {
            let len = params.filesize - params.offset;
            rustix::fs::fallocate(&fd, FallocateFlags::empty(), params.offset, len)
                .map_err(failed)?;
        }
        let block = rustix::fs::fstat(&fd).map_err(failed)?.st_blksize;
        Ok(Some(Donor {
            fd,
            block: u64::try_from(block).unwrap_or(4096).max(1),
            inplace: params.inplace,
        }))
    }

    /// One write: the blocks under `io`'s range of `file` exchanged with the donor's at the
    /// same place; the bytes moved (fewer than asked: a short write; none: EINVAL, as fio's).
    pub(crate) fn move_blocks(&self, file: BorrowedFd<'_>, io: Next) -> Result<usize, Errno> {
        let len = u64::from(io.len);
        if self.inplace {
            rustix::fs::fallocate(&self.fd, FallocateFlags::empty(), io.offset, len)?;
        }
        let start = io.offset / self.block;
        let mut range = MoveExtent {
            reserved: 0,
            donor_fd: self.fd.as_raw_fd() as u32,
            orig_start: start,
            donor_start: start,
            len: (io.offset + len).div_ceil(self.block) - start,
            moved_len: 0,
        };
        // SAFETY: the ioctl reads and writes `range`, a live struct of the kernel's layout.
        let ret = unsafe {
            libc::ioctl(
                file.as_raw_fd(),
                EXT4_IOC_MOVE_EXT,
                std::ptr::addr_of_mut!(range),
            )
        };
        let outcome = if ret < 0 {
            Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO))
        } else {
            match range.moved_len.saturating_mul(self.block).min(len) {
                0 => Err(Errno::INVAL),
                moved => Ok(moved as usize),
            }
        };
        if self.inplace {
            let truncated = rustix::fs::ftruncate(&self.fd, 0);
            if outcome.is_ok() {
                truncated?;
            }
        }
        outcome
    }
}

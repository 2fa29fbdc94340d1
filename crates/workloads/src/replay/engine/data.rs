//! The calls that move data: reads and writes of any length in one system call each, as
//! the program made them, copies, and mappings whose pages are faulted in.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::io::Errno;

use crate::replay::load::Op;
use crate::replay::trace::Kind;

/// The most pieces one `readv`/`writev` takes (Linux's `IOV_MAX`).
const IOV_MAX: usize = 1024;
/// The smallest and largest buffer a worker reads and writes from. One call moves up to
/// [`IOV_MAX`] times the buffer: 2 GiB at most, more than Linux moves in one call
/// (`MAX_RW_COUNT`, 2 GiB less a page).
const BUFFER_MIN: u64 = 4096;
const BUFFER_MAX: u64 = 2 << 20;

/// The buffer size for reads and writes of up to `longest` bytes: the length itself up to
/// 1 MiB, then enough that [`IOV_MAX`] pieces of it cover the length.
pub(super) fn buffer_size(longest: u64) -> usize {
    let size = longest.clamp(BUFFER_MIN, 1 << 20);
    size.max(longest.div_ceil(IOV_MAX as u64)).min(BUFFER_MAX) as usize
}

/// The worker's buffer and the pieces (all of them the same buffer) a long read or write
/// is given as, reused from call to call.
pub(super) struct Buffer {
    pub bytes: Vec<u8>,
    pieces: Vec<libc::iovec>,
}

impl Buffer {
    pub(super) fn new(longest: u64) -> Buffer {
        Buffer {
            bytes: vec![0x5a; buffer_size(longest)],
            pieces: Vec::with_capacity(IOV_MAX),
        }
    }

    /// A read or write of the recorded length (A), from the recorded offset (B; -1: the
    /// descriptor's position), in one system call as the program made it: `read`/`write`
    /// (`pread`/`pwrite`) when the buffer holds it, else `readv`/`writev` of up to
    /// [`IOV_MAX`] pieces that are all the buffer. Only a length past what one call can
    /// move (beyond 2 GiB: a hand-written trace) takes further calls, as many as it needs
    /// while each moves all it was asked; the user's stop ends them.
    pub(super) fn transfer(
        &mut self,
        fd: BorrowedFd<'_>,
        op: &Op,
        offset: Option<u64>,
        user: &AtomicBool,
    ) -> rustix::io::Result<u64> {
        let read = op.kind == Kind::Read;
        let mut moved = 0u64;
        loop {
            let want = op.a - moved;
            let at = match offset {
                Some(o) => Some(o.checked_add(moved).ok_or(Errno::FBIG)?),
                None => None,
            };
            let len = self.bytes.len() as u64;
            let pieces = want.div_ceil(len).clamp(1, IOV_MAX as u64) as usize;
            let asked = want.min(len * pieces as u64);
            let n = if pieces == 1 {
                let piece = &mut self.bytes[..asked as usize];
                match (read, at) {
                    (true, Some(at)) => rustix::io::pread(fd, piece, at),
                    (true, None) => rustix::io::read(fd, piece),
                    (false, Some(at)) => rustix::io::pwrite(fd, piece, at),
                    (false, None) => rustix::io::write(fd, piece),
                }
            } else {
                self.vectored(fd, read, at, asked, pieces)
            };
            match n {
                Ok(n) => {
                    moved += n as u64;
                    if n as u64 != asked || moved >= op.a || user.load(Ordering::Relaxed) {
                        return Ok(moved);
                    }
                }
                // What a call moved before it failed is what it did, as the kernel reports it.
                Err(_) if moved > 0 => return Ok(moved),
                Err(e) => return Err(e),
            }
        }
    }

    /// One `readv`/`writev` (`preadv`/`pwritev` at `at`) of `asked` bytes in `pieces`
    /// pieces, every one the buffer (the last one shorter).
    fn vectored(
        &mut self,
        fd: BorrowedFd<'_>,
        read: bool,
        at: Option<u64>,
        asked: u64,
        pieces: usize,
    ) -> rustix::io::Result<usize> {
        let len = self.bytes.len();
        let base = self.bytes.as_mut_ptr().cast::<libc::c_void>();
        self.pieces.clear();
        let mut left = asked as usize;
        for _ in 0..pieces {
            let n = left.min(len);
            self.pieces.push(libc::iovec {
                iov_base: base,
                iov_len: n,
            });
            left -= n;
        }
        let (raw, iov, count) = (fd.as_raw_fd(), self.pieces.as_ptr(), pieces as libc::c_int);
        let offset = at.map(|a| i64::try_from(a).map_err(|_| Errno::FBIG));
        // SAFETY: every piece is the worker's buffer, `len` bytes or fewer long; a read
        // writes each piece in turn into it, which the buffer's contents never matter for.
        let n = unsafe {
            match (read, offset) {
                (true, Some(o)) => libc::preadv(raw, iov, count, o?),
                (true, None) => libc::readv(raw, iov, count),
                (false, Some(o)) => libc::pwritev(raw, iov, count, o?),
                (false, None) => libc::writev(raw, iov, count),
            }
        };
        if n < 0 {
            Err(last_errno())
        } else {
            Ok(n as usize)
        }
    }
}

/// copy_file_range or sendfile of the recorded length, from the recorded input offset
/// (-1: the descriptor's own position).
pub(super) fn copy(
    from: BorrowedFd<'_>,
    to: BorrowedFd<'_>,
    op: &Op,
    mut offset: Option<u64>,
) -> rustix::io::Result<u64> {
    let copied = if op.kind == Kind::Sendfile {
        rustix::fs::sendfile(to, from, offset.as_mut(), op.a as usize)
    } else {
        rustix::fs::copy_file_range(from, offset.as_mut(), to, None, op.a as usize)
    };
    copied.map(|n| n as u64)
}

/// `MADV_POPULATE_READ` and `MADV_POPULATE_WRITE` (Linux 5.14): fault a range's pages in
/// as reads or writes would, failing (not SIGBUS) where the file has no page.
const MADV_POPULATE_READ: libc::c_int = 22;
const MADV_POPULATE_WRITE: libc::c_int = 23;

/// The mapping of the recorded range (A bytes from offset B, the protection and type in
/// FD2), its pages within the file faulted in once — written, for a shared writable
/// mapping — then unmapped: which pages the program touched is not recorded.
pub(super) fn map(fd: BorrowedFd<'_>, op: &Op) -> rustix::io::Result<u64> {
    let prot = op.fd2 & 0x7;
    let kind = (op.fd2 >> 8) & 0x3;
    let offset = libc::off_t::try_from(op.b).map_err(|_| Errno::INVAL)?;
    let len = usize::try_from(op.a).map_err(|_| Errno::NOMEM)?;
    // SAFETY: a fresh mapping at an address the kernel chooses, of a file; unmapped below
    // and never read through a reference.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            kind,
            fd.as_raw_fd(),
            offset,
        )
    };
    if at == libc::MAP_FAILED {
        return Err(last_errno());
    }
    let size = rustix::fs::fstat(fd).map_or(0, |s| s.st_size.max(0) as u64);
    // A mapping no access may touch (PROT_NONE, a reservation) has no page to fault in.
    let within = if prot & (libc::PROT_READ | libc::PROT_WRITE) == 0 {
        0
    } else {
        size.saturating_sub(op.b as u64).min(op.a) as usize
    };
    let write = prot & libc::PROT_WRITE != 0 && kind & libc::MAP_SHARED != 0;
    let advice = if write {
        MADV_POPULATE_WRITE
    } else {
        MADV_POPULATE_READ
    };
    // SAFETY: the range lies in the mapping just made; the advice only faults pages in.
    let populated = within == 0 || unsafe { libc::madvise(at, within, advice) } == 0;
    let failed = (!populated).then(last_errno);
    // SAFETY: the mapping made above, unmapped once.
    unsafe { libc::munmap(at, len) };
    match failed {
        Some(e) => Err(e),
        None => Ok(within as u64),
    }
}

pub(super) fn getdents(fd: BorrowedFd<'_>, buf: &mut [u8]) -> rustix::io::Result<u64> {
    // SAFETY: getdents64 writes at most `buf.len()` bytes into the buffer.
    let n = unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            fd.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    if n < 0 {
        Err(last_errno())
    } else {
        Ok(n as u64)
    }
}

/// The error of the libc call just made (its errno), as the replay records it.
pub(super) fn last_errno() -> Errno {
    Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO)
}

//! What the workloads share at the system-call level: aligned buffers, free space, sizes
//! that fit it, the whole-buffer read and write loops, and a descriptor's /proc name.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd};

use rustix::io::Errno;

use crate::error::{FsbenchError, invalid};

/// A buffer aligned for O_DIRECT (4 KiB covers every device's logical block).
pub struct Aligned {
    raw: Vec<u8>,
    offset: usize,
    len: usize,
}

impl Aligned {
    pub fn new(len: usize) -> Aligned {
        let raw = vec![0x5a; len + 4096];
        let offset = raw.as_ptr().align_offset(4096);
        Aligned { raw, offset, len }
    }

    pub fn buf(&mut self) -> &mut [u8] {
        &mut self.raw[self.offset..self.offset + self.len]
    }
}

/// Bytes free for the caller on the filesystem of `fd` (unknown: unlimited).
pub fn free_bytes(fd: impl AsFd) -> u64 {
    rustix::fs::fstatvfs(fd).map_or(u64::MAX, |s| s.f_bavail.saturating_mul(s.f_frsize))
}

/// Inodes free on the filesystem of `fd`; unknown, or a filesystem that makes inodes as it
/// needs them (btrfs reports none): unlimited.
pub fn free_inodes(fd: impl AsFd) -> u64 {
    rustix::fs::fstatvfs(fd)
        .ok()
        .filter(|s| s.f_files > 0)
        .map_or(u64::MAX, |s| s.f_favail)
}

/// The size of each of `files` files that makes them fit the filesystem of `dir`: `wanted`,
/// or less so that together they take at most 80% of the free space, rounded down to a
/// multiple of `align`. The second value is the free space, when the size had to shrink, for
/// saying so. When not even `align` bytes per file fit, it is an error: rounding up would
/// promise more than fits.
pub fn fit_size(
    dir: BorrowedFd<'_>,
    wanted: u64,
    files: u64,
    align: u64,
) -> Result<(u64, Option<u64>), FsbenchError> {
    let free = free_bytes(dir);
    let fits = fitting_size(free, files, align);
    if fits >= wanted {
        Ok((wanted, None))
    } else if fits == 0 {
        Err(FsbenchError::InvalidInput(format!(
            "{files} file(s) of at least {} each do not fit in 80% of the {} free: use a larger image (--image-size) or a smaller block size",
            fsbench_model::units::format_bytes(align),
            fsbench_model::units::format_bytes(free)
        )))
    } else {
        Ok((fits, Some(free)))
    }
}

/// The largest multiple of `align` that `files` files of that size may each take of 80% of
/// `free` bytes (integer arithmetic: no rounding can exceed the share).
pub fn fitting_size(free: u64, files: u64, align: u64) -> u64 {
    (free / 5 * 4 / files.max(1)) / align.max(1) * align.max(1)
}

/// Reads a small text file a user named (a suite file, an FFSB profile): a regular file of at
/// most 1 MiB, so that `/dev/zero` or a FIFO is refused instead of read forever.
pub fn read_text_file(path: &std::path::Path, what: &str) -> anyhow::Result<String> {
    use std::io::Read;
    const LIMIT: u64 = 1 << 20;
    let fail =
        |e: &dyn std::fmt::Display| invalid(format!("cannot read {what} {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| fail(&e))?;
    let meta = file.metadata().map_err(|e| fail(&e))?;
    if !meta.is_file() {
        return Err(fail(&"not a regular file"));
    }
    let mut text = String::new();
    file.take(LIMIT + 1)
        .read_to_string(&mut text)
        .map_err(|e| fail(&e))?;
    if text.len() as u64 > LIMIT {
        return Err(fail(&"larger than 1 MiB"));
    }
    Ok(text)
}

/// Writes all of `buf` (short writes continue); the bytes written.
pub fn write_all(file: impl AsFd, buf: &[u8]) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        done += rustix::io::write(&file, &buf[done..])?;
    }
    Ok(done)
}

/// Writes all of `buf` at `off`; the bytes written.
pub fn pwrite_all(file: impl AsFd, buf: &[u8], off: u64) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        done += rustix::io::pwrite(&file, &buf[done..], off + done as u64)?;
    }
    Ok(done)
}

/// Reads until `buf` is full or the file ends; the bytes read.
pub fn read_full(file: impl AsFd, buf: &mut [u8]) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        match rustix::io::read(&file, &mut buf[done..])? {
            0 => break,
            n => done += n,
        }
    }
    Ok(done)
}

/// Reads at `off` until `buf` is full or the file ends; the bytes read.
pub fn pread_full(file: impl AsFd, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        match rustix::io::pread(&file, &mut buf[done..], off + done as u64)? {
            0 => break,
            n => done += n,
        }
    }
    Ok(done)
}

/// Writes `value`'s decimal digits into `buf` at `at`; returns the index after them. Names in
/// hot loops are built this way, without allocating.
pub fn push_decimal(buf: &mut [u8], mut at: usize, value: u64) -> usize {
    let mut digits = [0u8; 20];
    let mut len = 0;
    let mut v = value;
    loop {
        digits[len] = b'0' + (v % 10) as u8;
        len += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for d in digits[..len].iter().rev() {
        buf[at] = *d;
        at += 1;
    }
    at
}

/// `prefix` and `n`'s digits, NUL-terminated, written at the start of `buf`: a name for a
/// hot loop's `*at()` call, passed on without a copy and without allocating.
pub fn numbered_name<'a>(buf: &'a mut [u8], prefix: &[u8], n: u64) -> &'a CStr {
    buf[..prefix.len()].copy_from_slice(prefix);
    let end = push_decimal(buf, prefix.len(), n);
    buf[end] = 0;
    CStr::from_bytes_with_nul(&buf[..=end]).expect("a prefix without NUL, then digits")
}

/// The filesystem type of `dir`, for messages (from fstatfs's magic number).
pub fn filesystem_name(dir: BorrowedFd<'_>) -> String {
    let magic = rustix::fs::fstatfs(dir)
        .map(|s| s.f_type as u64)
        .unwrap_or(0);
    match magic {
        0xef53 => "ext2/3/4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683e => "btrfs".into(),
        0x0102_1994 => "tmpfs".into(),
        0x8584_58f6 => "ramfs".into(),
        other => format!("the filesystem (magic {other:#x})"),
    }
}

/// Refuses O_DIRECT where the filesystem of `dir` refuses it, naming the filesystem; else
/// its name and the alignment O_DIRECT needs there (its logical block size), from a probe
/// file made and removed in `dir`.
pub fn direct_alignment(dir: BorrowedFd<'_>) -> Result<(String, u64), FsbenchError> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let fs = filesystem_name(dir);
    let probe = ".fsbench-direct-probe";
    let opened = rustix::fs::openat(
        dir,
        probe,
        OFlags::RDWR | OFlags::CREATE | OFlags::DIRECT | OFlags::CLOEXEC,
        Mode::from(0o600),
    );
    let _ = rustix::fs::unlinkat(dir, probe, AtFlags::empty());
    let file = opened.map_err(|e| {
        FsbenchError::InvalidInput(format!("{fs} refuses O_DIRECT ({e}); run without `direct`"))
    })?;
    let align = rustix::fs::statx(
        &file,
        "",
        AtFlags::EMPTY_PATH,
        rustix::fs::StatxFlags::DIOALIGN,
    )
    .ok()
    .map(|s| s.stx_dio_offset_align as u64)
    .filter(|a| *a > 0)
    .unwrap_or_else(|| probed_alignment(&file));
    Ok((fs, align))
}

/// O_DIRECT's alignment on a filesystem that does not say it (statx's DIOALIGN: tmpfs,
/// for one, takes 512-byte direct I/O and reports nothing): 512 bytes where a 512-byte
/// direct write at offset 512 of the (unlinked) probe file succeeds, else 4096 bytes.
fn probed_alignment(file: &rustix::fd::OwnedFd) -> u64 {
    let mut block = Aligned::new(512);
    match rustix::io::pwrite(file, block.buf(), 512) {
        Ok(512) => 512,
        _ => 4096,
    }
}

/// `/proc/thread-self/fd/N`: the name of the file an `O_PATH` descriptor is, for the calls
/// that have no form taking such a descriptor (chmod, utimens, the xattr calls). The
/// kernel follows it to that file and no further. `thread-self`, not `self`: each replay
/// thread has a descriptor table of its own, and `/proc/self/fd` shows the process's.
pub struct ProcFd([u8; 40]);

impl ProcFd {
    pub fn of(fd: BorrowedFd<'_>) -> ProcFd {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let mut name = [0u8; 40];
        let mut at = &mut name[..];
        // 19 bytes and at most 11 digits (and the NUL, already there) always fit.
        let _ = write!(at, "/proc/thread-self/fd/{}", fd.as_raw_fd());
        ProcFd(name)
    }

    pub fn name(&self) -> &CStr {
        CStr::from_bytes_until_nul(&self.0).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fd_names_the_threads_own_descriptor() {
        use rustix::fs::{Mode, OFlags};
        use std::os::fd::{AsFd, AsRawFd};
        let dir = tempfile::tempdir().unwrap();
        let (mine, process) = (dir.path().join("mine"), dir.path().join("process"));
        std::fs::write(&mine, b"").unwrap();
        std::fs::write(&process, b"").unwrap();
        let open = |p: &std::path::Path| {
            rustix::fs::open(p, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).unwrap()
        };
        let theirs = open(&process);
        let number = theirs.as_raw_fd();
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: affects this thread only, which then replaces its copy of `number`.
                assert_eq!(unsafe { libc::unshare(libc::CLONE_FILES) }, 0);
                // The same number as the process's file, put there by dup2: other tests'
                // threads may have freed a lower one in this copy of the table.
                let opened = open(&mine);
                // SAFETY: `number` is this thread's own slot now; dup2 replaces it.
                assert_eq!(unsafe { libc::dup2(opened.as_raw_fd(), number) }, number);
                drop(opened);
                // SAFETY: dup2 made `number` a descriptor this thread owns.
                let own = unsafe {
                    <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(number)
                };
                let named = rustix::fs::stat(ProcFd::of(own.as_fd()).name()).unwrap();
                let real = rustix::fs::fstat(&own).unwrap();
                assert_eq!((named.st_dev, named.st_ino), (real.st_dev, real.st_ino));
            });
        });
        let still = rustix::fs::fstat(&theirs).unwrap();
        let process_file = rustix::fs::stat(&process).unwrap();
        assert_eq!(still.st_ino, process_file.st_ino);
    }

    #[test]
    fn numbered_names_end_in_one_nul() {
        let mut buf = [0xff; 24];
        assert_eq!(numbered_name(&mut buf, b"user.x.", 0), c"user.x.0");
        assert_eq!(
            numbered_name(&mut buf, b"f", u64::MAX),
            c"f18446744073709551615"
        );
        // A shorter name over a longer one: its NUL ends it.
        assert_eq!(numbered_name(&mut buf, b"d", 7), c"d7");
    }

    #[test]
    fn a_filesystem_silent_on_its_direct_alignment_gets_the_one_it_takes() {
        use rustix::fs::{Mode, OFlags};
        // tmpfs reports no DIOALIGN; where it takes 512-byte direct I/O (Linux 6.6 on), that
        // is its alignment, as fio finds by doing it.
        let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
            return;
        };
        let fd = rustix::fs::open(
            dir.path(),
            OFlags::DIRECTORY | OFlags::RDONLY,
            Mode::empty(),
        )
        .unwrap();
        let Ok((_, align)) = direct_alignment(fd.as_fd()) else {
            return;
        };
        let file = rustix::fs::openat(
            &fd,
            "f",
            OFlags::RDWR | OFlags::CREATE | OFlags::DIRECT,
            Mode::from(0o600),
        )
        .unwrap();
        let mut block = Aligned::new(4096);
        let takes_512 = rustix::io::pwrite(&file, &block.buf()[..512], 512).is_ok();
        assert_eq!(align, if takes_512 { 512 } else { 4096 });
        let whole = align as usize;
        assert!(rustix::io::pwrite(&file, &block.buf()[..whole], align).is_ok());
    }

    #[test]
    fn fitting_never_exceeds_its_share() {
        // 80% of 10 GiB over 128 files, in 1 GiB blocks: none fits, so nothing is promised.
        assert_eq!(fitting_size(10 << 30, 128, 1 << 30), 0);
        for (free, files, align) in [(1000, 3, 7), (u64::MAX, 16, 4096), (5 << 30, 128, 65536)] {
            let size = fitting_size(free, files, align);
            assert_eq!(size % align, 0);
            assert!(size as u128 * files as u128 <= free as u128 * 4 / 5);
        }
    }
}

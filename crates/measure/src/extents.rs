//! A file's layout on disk from the FIEMAP ioctl: its extents and the fragment count, the
//! fragmentation figure of every data workload. FIEMAP works on ext4, xfs and btrfs alike
//! (alloc-perf's FIBMAP-era tool could not count on btrfs), and on ext2/ext3 block-mapped files,
//! where the kernel merges contiguous blocks into extents.

use std::os::fd::{AsFd, AsRawFd};

use rustix::io::Errno;

/// `_IOWR('f', 11, struct fiemap)`.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
/// Write dirty data back first, so delayed allocations have their final place.
const FIEMAP_FLAG_SYNC: u32 = 0x1;
const FIEMAP_EXTENT_LAST: u32 = 0x1;
/// `statfs`'s type of every FUSE filesystem (ntfs-3g, zfs-fuse).
const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;
/// Extents fetched per ioctl; files with more take several calls.
const BATCH: usize = 292;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct RawExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

#[repr(C)]
struct Request {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extents: [RawExtent; BATCH],
}

/// One extent: byte offsets in the file and on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    /// `FIEMAP_EXTENT_*` flags (unwritten, shared, inline...).
    pub flags: u32,
}

/// Counts of a file's layout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtentCount {
    /// Extents as the filesystem reports them (ext4 splits contiguous runs at 128 MiB).
    pub extents: u64,
    /// Physically discontiguous pieces, counted as `filefrag` counts them: an extent that
    /// continues the previous one on disk is not a new fragment. The seed articles' figure.
    pub fragments: u64,
}

/// The note of a phase whose extents could not be counted: `unsupported` where the filesystem
/// has no FIEMAP (FUSE), never a count of 0.
pub fn not_counted(e: Errno) -> String {
    match e {
        Errno::OPNOTSUPP | Errno::NOTTY => {
            "extents: unsupported (the filesystem has no FIEMAP)".to_string()
        }
        e => format!("extents not counted: FIEMAP failed ({e})"),
    }
}

/// Reusable ioctl buffer, so counting many files allocates once.
pub struct Mapper {
    request: Box<Request>,
    /// False where the filesystem's driver declares no FIEMAP: nothing is asked of it.
    fiemap: bool,
}

impl Default for Mapper {
    fn default() -> Self {
        Mapper::new()
    }
}

impl Mapper {
    pub fn new() -> Mapper {
        Mapper {
            request: Box::new(Request {
                start: 0,
                length: 0,
                flags: 0,
                mapped_extents: 0,
                extent_count: 0,
                reserved: 0,
                extents: [RawExtent::default(); BATCH],
            }),
            fiemap: true,
        }
    }

    /// Holds the mapper to whether the filesystem is declared to have FIEMAP (a user
    /// driver's flag): without it every count is "unsupported", as on FUSE.
    pub fn declare_fiemap(&mut self, has: bool) {
        self.fiemap = has;
    }

    /// Visits `file`'s extents in logical order; stops early when `visit` returns false.
    fn walk(
        &mut self,
        file: impl AsFd,
        mut visit: impl FnMut(&RawExtent) -> bool,
    ) -> Result<(), Errno> {
        // FUSE answers FIEMAP with no extents at all: a count of 0, never a real one.
        let st = rustix::fs::fstatfs(file.as_fd())?;
        if !self.fiemap || st.f_type as i64 == FUSE_SUPER_MAGIC {
            return Err(Errno::OPNOTSUPP);
        }
        let fd = file.as_fd().as_raw_fd();
        let mut start = 0u64;
        loop {
            let r = &mut *self.request;
            r.start = start;
            r.length = u64::MAX - start;
            r.flags = FIEMAP_FLAG_SYNC;
            r.mapped_extents = 0;
            r.extent_count = BATCH as u32;
            // SAFETY: the request is a properly laid out `struct fiemap` with room for
            // `extent_count` extents; the kernel writes no more than that.
            let rc = unsafe { libc::ioctl(fd, FS_IOC_FIEMAP as _, r as *mut Request) };
            if rc < 0 {
                return Err(Errno::from_raw_os_error(
                    std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
                ));
            }
            let n = r.mapped_extents as usize;
            if n == 0 {
                return Ok(());
            }
            for e in &r.extents[..n] {
                if !visit(e) {
                    return Ok(());
                }
            }
            let last = r.extents[n - 1];
            if last.flags & FIEMAP_EXTENT_LAST != 0 {
                return Ok(());
            }
            start = last.logical + last.length;
        }
    }

    /// Extent and fragment counts of `file`, allocating nothing.
    pub fn count(&mut self, file: impl AsFd) -> Result<ExtentCount, Errno> {
        let mut count = ExtentCount::default();
        let mut previous: Option<RawExtent> = None;
        self.walk(file, |e| {
            count.extents += 1;
            if continues(previous.as_ref(), e) {
                count.fragments = count.fragments.max(1);
            } else {
                count.fragments += 1;
            }
            previous = Some(*e);
            true
        })?;
        Ok(count)
    }

    /// `file`'s layout: every extent.
    pub fn layout(&mut self, file: impl AsFd) -> Result<Vec<Extent>, Errno> {
        let mut out = Vec::new();
        self.walk(file, |e| {
            out.push(Extent {
                logical: e.logical,
                physical: e.physical,
                length: e.length,
                flags: e.flags,
            });
            true
        })?;
        Ok(out)
    }
}

/// Whether `e` continues `previous` on disk, by filefrag's rule: it starts where the previous
/// extent ends, or where it would if the file's hole between them were mapped; the first
/// extent of the file (logical 0) never starts a new fragment once there is one.
fn continues(previous: Option<&RawExtent>, e: &RawExtent) -> bool {
    let Some(p) = previous else {
        return e.logical == 0;
    };
    e.logical == 0
        || e.physical == p.physical + p.length
        || e.physical == p.physical.wrapping_add(e.logical.wrapping_sub(p.logical))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(logical: u64, physical: u64, length: u64) -> RawExtent {
        RawExtent {
            logical,
            physical,
            length,
            ..RawExtent::default()
        }
    }

    #[test]
    fn request_has_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<RawExtent>(), 56);
        assert_eq!(std::mem::offset_of!(Request, extents), 32);
    }

    #[test]
    fn contiguous_extents_are_one_fragment() {
        let a = raw(0, 4096, 8192);
        assert!(continues(None, &a));
        // Adjacent on disk: ext4 splitting a long run.
        assert!(continues(Some(&a), &raw(8192, 12288, 4096)));
        // Across a hole, where it would be had the hole been written.
        assert!(continues(Some(&a), &raw(16384, 20480, 4096)));
        // Elsewhere on disk: a new fragment.
        assert!(!continues(Some(&a), &raw(8192, 1 << 30, 4096)));
    }
}

//! The aging churn: seeded creates, appends, overwrites and deletes in a directory tree until
//! the filesystem is as full as the profile asks and has been written as much.
//!
//! Hot-loop rules: every call is an `*at()` call on a directory descriptor held open, names
//! are built in a stack buffer, one data buffer is reused, and the only state that grows is
//! 16 bytes per live file (the churn must pick files to append to and delete; the live set is
//! bounded by the filesystem's size over the smallest file).

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::time::Instant;

use fsbench_model::aging::AgingStats;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::profile::{Rng, SizeDistExt};
use super::{Usage, write_all_at};
use fsbench_measure::calls::numbered_name;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::Progress;
use fsbench_model::aging::AgeProfile;

/// The directory the aged tree lives in, below the filesystem's root.
pub(crate) const AGED_DIR: &str = "aged";

#[derive(Clone, Copy)]
struct Live {
    id: u32,
    dir: u16,
    size: u64,
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Create,
    Append,
    Overwrite,
    Delete,
}

/// `f<id>` NUL-terminated in place.
struct Name([u8; 16]);

impl Name {
    fn file(&mut self, prefix: u8, id: u32) -> &CStr {
        numbered_name(&mut self.0, &[prefix], u64::from(id))
    }
}

struct Churn<'a> {
    profile: &'a AgeProfile,
    rng: Rng,
    dirs: Vec<OwnedFd>,
    live: Vec<Live>,
    next_id: u32,
    name: Name,
    buf: Vec<u8>,
    block: u64,
    /// Used bytes as fsbench accounts them (file sizes in whole blocks), so decisions do not
    /// depend on when the filesystem updates statvfs: the same seed, the same tree.
    est_used: u64,
    stats: AgingStats,
    progress: &'a Progress,
}

/// Ages the filesystem of `root` by `profile`. `progress.done` counts MiB written.
pub fn age(
    root: BorrowedFd<'_>,
    profile: &AgeProfile,
    progress: &Progress,
) -> Result<AgingStats, FsbenchError> {
    let start = Instant::now();
    let usage = Usage::of(root)?;
    let aged = super::make_dir(root, AGED_DIR)?;
    let mut rng = Rng::new(profile.seed);
    let mut buf = vec![0u8; 1 << 20];
    for chunk in buf.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes()[..chunk.len()]);
    }
    let mut churn = Churn {
        profile,
        rng,
        dirs: vec![aged],
        live: Vec::new(),
        next_id: 0,
        name: Name([0; 16]),
        buf,
        block: usage.block.max(512),
        est_used: usage.used,
        stats: AgingStats {
            profile: profile.name.clone(),
            seed: profile.seed,
            secs: 0.0,
            bytes_written: 0,
            files: 0,
            dirs: profile.dirs,
            creates: 0,
            appends: 0,
            overwrites: 0,
            deletes: 0,
            enospc: 0,
            target_util_percent: profile.target_util_percent,
            util_percent: 0.0,
            capacity_bytes: usage.total,
        },
        progress,
    };
    churn.make_dirs()?;
    let total = usage.total;
    let target = (total as f64 * profile.target_util_percent / 100.0) as u64;
    let write_target = (total as f64 * profile.write_multiple) as u64;
    // Half a point either side: statvfs's own accounting (metadata, CoW) adds to it.
    let tolerance = total / 200;
    let cap = (total / 16).max(1);
    // The peak first: files over the whole device, which the deletes down to the target
    // then leave holes among.
    let peak = (total as f64 * profile.peak_util_percent / 100.0) as u64;
    while churn.est_used + tolerance < peak {
        churn.check_cancel()?;
        let op = churn.pick(peak, tolerance);
        churn.step(op, cap, peak + tolerance)?;
    }
    loop {
        churn.check_cancel()?;
        // Within the band: a churn down from its peak is not there yet.
        let at_target = churn.est_used.abs_diff(target) <= tolerance;
        if churn.stats.bytes_written >= write_target && at_target {
            break;
        }
        let op = churn.pick(target, tolerance);
        churn.step(op, cap, target + tolerance)?;
    }
    churn.settle(root, target, cap)?;
    let usage = Usage::of(root)?;
    churn.stats.util_percent = usage.percent();
    churn.stats.files = churn.live.len() as u64;
    churn.stats.secs = start.elapsed().as_secs_f64();
    Ok(churn.stats)
}

impl Churn<'_> {
    fn check_cancel(&self) -> Result<(), FsbenchError> {
        if self.progress.cancel.load(Ordering::Relaxed) {
            return Err(FsbenchError::Interrupted);
        }
        Ok(())
    }

    /// Directories at Poisson depths, each below a directory one level up (or the deepest
    /// there is), all held open.
    fn make_dirs(&mut self) -> Result<(), FsbenchError> {
        let mut depths = vec![0u32];
        for i in 1..self.profile.dirs {
            let depth = self
                .rng
                .poisson(self.profile.depth_mean)
                .clamp(1, self.profile.max_depth);
            let deepest = depths
                .iter()
                .copied()
                .filter(|d| *d < depth)
                .max()
                .unwrap_or(0);
            let candidates = depths.iter().filter(|d| **d == deepest).count() as u64;
            let nth = self.rng.below(candidates) as usize;
            let parent = (depths.iter().enumerate())
                .filter(|(_, d)| **d == deepest)
                .nth(nth)
                .map_or(0, |(p, _)| p);
            let name = self.name.file(b'd', i);
            let fd = super::make_dir(self.dirs[parent].as_fd(), name)?;
            self.dirs.push(fd);
            depths.push(deepest + 1);
        }
        Ok(())
    }

    /// The profile's operation, steered: above the target only deletes, and nothing but
    /// creates while there is nothing to work on.
    fn pick(&mut self, target: u64, tolerance: u64) -> Op {
        if self.live.is_empty() {
            // Nothing left to delete: what the count says is used is the filesystem's own.
            if let Ok(usage) = Usage::of(self.dirs[0].as_fd()) {
                self.est_used = self.est_used.min(usage.used);
            }
            return Op::Create;
        }
        if self.est_used > target + tolerance {
            return Op::Delete;
        }
        let w = self.profile.ops;
        let total = u64::from(w.create + w.append + w.overwrite + w.delete);
        let mut pick = self.rng.below(total);
        for (op, weight) in [
            (Op::Create, w.create),
            (Op::Append, w.append),
            (Op::Overwrite, w.overwrite),
        ] {
            if pick < u64::from(weight) {
                return op;
            }
            pick -= u64::from(weight);
        }
        Op::Delete
    }

    fn round(&self, size: u64) -> u64 {
        size.div_ceil(self.block) * self.block
    }

    /// One operation; a create or append that would pass `ceiling` deletes instead.
    fn step(&mut self, op: Op, cap: u64, ceiling: u64) -> Result<(), FsbenchError> {
        let result = match op {
            Op::Create => {
                let size = self.profile.sizes.draw(&mut self.rng, cap);
                if self.est_used + self.round(size) > ceiling && !self.live.is_empty() {
                    self.delete()
                } else {
                    self.create(size)
                }
            }
            Op::Append => {
                let n = self
                    .profile
                    .sizes
                    .draw(&mut self.rng, self.profile.write_block);
                let index = self.rng.below(self.live.len() as u64) as usize;
                let f = self.live[index];
                let grow = self.round(f.size + n) - self.round(f.size);
                if self.est_used + grow > ceiling {
                    self.delete()
                } else {
                    self.append(index, n)
                }
            }
            Op::Overwrite => self.overwrite(),
            Op::Delete => self.delete(),
        };
        match result {
            Err(Errno::NOSPC) => {
                // Full before fsbench's count says so (metadata, CoW): believe statvfs.
                self.stats.enospc += 1;
                let root = self.dirs[0].as_fd();
                let _ = rustix::fs::syncfs(root);
                // xfs's preallocation past appended files' ends is not used space: counted,
                // it stood for half the device, and a churn down to 50% emptied the tree.
                free_speculative_preallocation(root);
                self.est_used = self.est_used.max(Usage::of(root)?.used);
                self.delete().map_err(|e| errno_error("unlink", e))
            }
            other => other.map_err(|e| errno_error("write", e)),
        }
    }

    fn open(&mut self, f: Live, flags: OFlags) -> Result<OwnedFd, Errno> {
        let name = self.name.file(b'f', f.id);
        rustix::fs::openat(
            &self.dirs[f.dir as usize],
            name,
            flags | OFlags::CLOEXEC,
            Mode::from(0o644),
        )
    }

    fn create(&mut self, size: u64) -> Result<(), Errno> {
        let f = Live {
            id: self.next_id,
            dir: self.rng.below(self.dirs.len() as u64) as u16,
            size,
        };
        self.next_id += 1;
        let fd = self.open(f, OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY)?;
        if let Err(e) = self.write(&fd, 0, size) {
            drop(fd);
            let name = self.name.file(b'f', f.id);
            let _ = rustix::fs::unlinkat(&self.dirs[f.dir as usize], name, AtFlags::empty());
            return Err(e);
        }
        self.est_used += self.round(size);
        self.live.push(f);
        self.stats.creates += 1;
        Ok(())
    }

    fn append(&mut self, index: usize, n: u64) -> Result<(), Errno> {
        let f = self.live[index];
        let fd = self.open(f, OFlags::WRONLY)?;
        self.write(&fd, f.size, n)?;
        self.est_used += self.round(f.size + n) - self.round(f.size);
        self.live[index].size += n;
        self.stats.appends += 1;
        Ok(())
    }

    fn overwrite(&mut self) -> Result<(), Errno> {
        let index = self.rng.below(self.live.len() as u64) as usize;
        let f = self.live[index];
        let n = f.size.min(self.profile.write_block);
        let offset = self.rng.below(f.size - n + 1);
        let fd = self.open(f, OFlags::WRONLY)?;
        self.write(&fd, offset, n)?;
        self.stats.overwrites += 1;
        Ok(())
    }

    fn delete(&mut self) -> Result<(), Errno> {
        if self.live.is_empty() {
            return Ok(());
        }
        let index = self.rng.below(self.live.len() as u64) as usize;
        let f = self.live.swap_remove(index);
        let name = self.name.file(b'f', f.id);
        rustix::fs::unlinkat(&self.dirs[f.dir as usize], name, AtFlags::empty())?;
        self.est_used = self.est_used.saturating_sub(self.round(f.size));
        self.stats.deletes += 1;
        Ok(())
    }

    fn write(&mut self, fd: &OwnedFd, offset: u64, len: u64) -> Result<(), Errno> {
        write_all_at(fd, &self.buf, offset, len)?;
        self.stats.bytes_written += len;
        self.progress
            .done
            .store(self.stats.bytes_written >> 20, Ordering::Relaxed);
        Ok(())
    }

    /// Brings statvfs's utilisation within a point of the target: fsbench's count leaves out
    /// metadata and copy-on-write, which only the filesystem knows.
    fn settle(&mut self, root: BorrowedFd<'_>, target: u64, cap: u64) -> Result<(), FsbenchError> {
        for _ in 0..50 {
            self.check_cancel()?;
            rustix::fs::syncfs(root).map_err(|e| errno_error("syncfs", e))?;
            free_speculative_preallocation(root);
            let usage = Usage::of(root)?;
            let point = (usage.total / 100).max(1);
            let off = usage.used.abs_diff(target);
            if off <= point * 8 / 10 {
                break;
            }
            // In whole points: two runs of one seed differ by a few blocks of the
            // filesystem's own accounting (btrfs's metadata, written as its transactions
            // happened to commit), and a correction to the byte would then differ by a file.
            let amount = ((off + point / 2) / point).max(1) * point;
            if usage.used > target {
                let mut freed = 0;
                while freed < amount && !self.live.is_empty() {
                    let before = self.est_used;
                    self.delete().map_err(|e| errno_error("unlink", e))?;
                    freed += before - self.est_used;
                }
            } else {
                let mut added = 0;
                while added < amount {
                    let size = self
                        .profile
                        .sizes
                        .draw(&mut self.rng, cap.min(amount - added).max(1));
                    self.create(size).map_err(|e| errno_error("write", e))?;
                    added += self.round(size);
                }
            }
        }
        Ok(())
    }
}

/// xfs keeps blocks past the end of appended files for a while (speculative preallocation)
/// and frees them when its background worker gets round to it: statvfs would count a
/// different amount on every run and the correction below would add or delete different
/// files. Freed now, on every file, as `xfs_spaceman -c prealloc` does (XFS_IOC_FREE_EOFBLOCKS);
/// other filesystems refuse the ioctl (ENOTTY), which is fine: they have none.
fn free_speculative_preallocation(root: BorrowedFd<'_>) {
    /// `struct xfs_fs_eofblocks`, version 1.
    #[repr(C)]
    struct EofBlocks {
        version: u32,
        flags: u32,
        uid: u32,
        gid: u32,
        prid: u32,
        pad32: u32,
        min_file_size: u64,
        pad64: [u64; 12],
    }
    const XFS_EOF_FLAGS_SYNC: u32 = 1;
    // _IOR('X', 58, struct xfs_fs_eofblocks)
    const XFS_IOC_FREE_EOFBLOCKS: u64 =
        (2 << 30) | ((std::mem::size_of::<EofBlocks>() as u64) << 16) | (0x58 << 8) | 58;
    let mut request = EofBlocks {
        version: 1,
        flags: XFS_EOF_FLAGS_SYNC,
        uid: 0,
        gid: 0,
        prid: 0,
        pad32: 0,
        min_file_size: 0,
        pad64: [0; 12],
    };
    use std::os::fd::AsRawFd;
    // SAFETY: the request is a properly laid out `struct xfs_fs_eofblocks`, which the kernel
    // only reads; the descriptor is open for the call's duration.
    let _ = unsafe {
        libc::ioctl(
            root.as_raw_fd(),
            XFS_IOC_FREE_EOFBLOCKS as _,
            &mut request as *mut EofBlocks,
        )
    };
}

fn errno_error(what: &str, e: Errno) -> FsbenchError {
    FsbenchError::Failed(format!("aging: {what} failed: {e}"))
}

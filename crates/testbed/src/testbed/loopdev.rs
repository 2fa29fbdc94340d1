//! Loop devices: attached with direct I/O by default, so an image's writes reach the device
//! behind it instead of settling in the host's page cache, with the loop's logical block size
//! set to that device's (the kernel uses direct I/O only when the loop's block size is at least
//! the backing device's).
//!
//! fsbench shells out to `losetup --direct-io=on --sector-size N` rather than issuing the
//! ioctls itself: losetup finds a free device through /dev/loop-control, retries when another
//! process takes it first, and sets backing file, direct I/O and block size in one
//! `LOOP_CONFIGURE` (falling back to `LOOP_SET_FD` + `LOOP_SET_DIRECT_IO` on older kernels); the
//! cleanup already detaches with losetup. Whether direct I/O is on is never assumed: it is read
//! back from sysfs (`loop/dio`) while the filesystem is mounted.

use std::path::{Path, PathBuf};

use anyhow::Context;
use fsbench_model::testbed::LoopInfo;

use super::{device, mounts};
use fsbench_measure::tools;

/// The loop block size when the backing file's device is unknown (tmpfs): the kernel's default.
const DEFAULT_SECTOR: u32 = 512;

/// A loop device attached by [`attach`].
pub(crate) struct Attached {
    pub device: PathBuf,
    /// Set when direct I/O was asked for but the backing filesystem refuses it.
    pub fallback: Option<String>,
}

fn sysfs_loop(device: &Path) -> PathBuf {
    Path::new("/sys/block").join(device.file_name().unwrap_or_default())
}

/// Whether `device` does direct I/O on its backing file now (sysfs `loop/dio`).
pub(crate) fn direct_io(device: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(sysfs_loop(device).join("loop/dio")).ok()?;
    Some(text.trim() == "1")
}

/// `device`'s state now, with `fallback` as recorded when it was attached; a loop that was
/// asked for direct I/O and reads back without it gets a fallback reason of its own.
pub(crate) fn read_back(
    device: &Path,
    wanted_direct_io: bool,
    fallback: Option<String>,
) -> LoopInfo {
    let direct_io = direct_io(device).unwrap_or(false);
    let logical_block_size =
        std::fs::read_to_string(sysfs_loop(device).join("queue/logical_block_size"))
            .ok()
            .and_then(|s| s.trim().parse().ok());
    let fallback = fallback.or_else(|| {
        (wanted_direct_io && !direct_io).then(|| {
            format!(
                "the kernel attached {} without direct I/O (sysfs loop/dio is 0)",
                device.display()
            )
        })
    });
    LoopInfo {
        device: device.to_path_buf(),
        direct_io,
        logical_block_size,
        fallback,
    }
}

/// The logical block size of the device holding `file`'s filesystem (512 when it has none).
fn backing_sector_size(file: &Path) -> u32 {
    let dir = file.parent().unwrap_or(file);
    device::block_info_of_path(dir)
        .and_then(|b| b.logical_block_size)
        .unwrap_or(DEFAULT_SECTOR)
}

/// Why the filesystem holding `file` refuses direct I/O, if it does: an O_DIRECT open fails
/// with EINVAL there (ramfs, some network and FUSE filesystems).
fn refuses_direct_io(file: &Path) -> anyhow::Result<Option<String>> {
    use rustix::fs::{Mode, OFlags};
    match rustix::fs::open(
        file,
        OFlags::RDWR | OFlags::DIRECT | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(_) => Ok(None),
        Err(rustix::io::Errno::INVAL) => {
            let (fstype, at) = mounts::mount_containing(file).map_or_else(
                || ("filesystem".to_string(), file.to_path_buf()),
                |m| (m.fstype, m.target),
            );
            Ok(Some(format!(
                "the {fstype} at {} refuses direct I/O (O_DIRECT: EINVAL)",
                at.display()
            )))
        }
        Err(e) => Err(e).with_context(|| format!("cannot open {}", file.display())),
    }
}

/// Attaches `file` to a free loop device with the backing device's logical block size, with
/// direct I/O when `direct_io` and the backing filesystem allows it (otherwise buffered, and
/// the reason is returned).
pub(crate) fn attach(file: &Path, direct_io: bool) -> anyhow::Result<Attached> {
    let losetup = tools::require("losetup", "mount")?;
    let fallback = if direct_io {
        refuses_direct_io(file)?
    } else {
        None
    };
    let dio = if direct_io && fallback.is_none() {
        "on"
    } else {
        "off"
    };
    let args = [
        "--find".to_string(),
        "--show".into(),
        format!("--direct-io={dio}"),
        "--sector-size".into(),
        backing_sector_size(file).to_string(),
        file.display().to_string(),
    ];
    let run = tools::run_ok(&losetup, &args).context("cannot attach a loop device")?;
    let device = run
        .output
        .lines()
        .rev()
        .find(|l| l.starts_with("/dev/"))
        .map(PathBuf::from)
        .context("losetup did not name the loop device")?;
    Ok(Attached { device, fallback })
}

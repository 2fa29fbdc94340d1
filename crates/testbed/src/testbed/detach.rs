//! Undoing a mount or a loop device, patiently: what a suite's teardown and `fsbench clean`
//! both do, each step verified.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use rustix::mount::UnmountFlags;

use super::mounts;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::tools;

/// Unmounts `target`, retrying while it is briefly busy; falls back to a lazy unmount.
pub fn unmount(target: &Path) -> anyhow::Result<()> {
    for _ in 0..50 {
        match rustix::mount::unmount(target, UnmountFlags::empty()) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::BUSY) => std::thread::sleep(Duration::from_millis(100)),
            Err(rustix::io::Errno::INVAL) if mounts::mount_at(target).is_none() => return Ok(()),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot unmount {}", target.display()));
            }
        }
    }
    rustix::mount::unmount(target, UnmountFlags::DETACH)
        .with_context(|| format!("cannot unmount {} (busy)", target.display()))?;
    anyhow::bail!(
        "{} stayed busy for 5 s and was detached lazily",
        target.display()
    )
}

/// Waits until no process holds `device` exclusively: a FUSE daemon (ntfs-3g) goes on
/// writing and holds its device for a moment after its mount is gone.
pub fn wait_released(device: &Path) -> anyhow::Result<()> {
    use rustix::fs::{Mode, OFlags};
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        match rustix::fs::open(device, OFlags::RDONLY | OFlags::EXCL, Mode::empty()) {
            Err(rustix::io::Errno::BUSY) => std::thread::sleep(Duration::from_millis(20)),
            _ => return Ok(()),
        }
    }
    anyhow::bail!(
        "{} is still held 10 s after unmounting (its FUSE daemon did not exit)",
        device.display()
    )
}

/// Loop devices and their backing files, from sysfs.
pub fn loop_devices() -> Vec<(PathBuf, PathBuf)> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            let backing = backing.trim_end().trim_end_matches(" (deleted)");
            Some((PathBuf::from("/dev").join(name), PathBuf::from(backing)))
        })
        .collect()
}

/// How long a suite waits for a loop device it detaches to be gone.
pub(super) const DETACH_PATIENCE: Duration = Duration::from_secs(10);

/// Detaches `device`, retrying while udev or the kernel still hold it.
pub fn detach_loop(device: &Path) -> anyhow::Result<()> {
    detach_loop_within(device, DETACH_PATIENCE)
}

/// [`detach_loop`], waiting at most `patience` for the device to be gone. A device still
/// attached then fails the run that used it, not the suite
/// ([`FsbenchError::RunLost`]): the kernel detaches it once its holder lets go, and the
/// suite's end (or `fsbench clean`) undoes what is left.
pub fn detach_loop_within(device: &Path, patience: Duration) -> anyhow::Result<()> {
    let losetup = tools::require("losetup", "util-linux")?;
    let args = ["-d".to_string(), device.display().to_string()];
    let mut last = None;
    for _ in 0..20 {
        match tools::run_ok(&losetup, &args) {
            Ok(_) => {
                last = None;
                break;
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if let Some(e) = last {
        return Err(e);
    }
    // While anything else (udev, a probing tool) holds the device open, the kernel only marks
    // it for automatic detach; wait until it is really gone, so nothing is left attached.
    let backing = Path::new("/sys/block")
        .join(device.file_name().unwrap_or_default())
        .join("loop/backing_file");
    let start = std::time::Instant::now();
    while start.elapsed() < patience {
        if !backing.exists() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(FsbenchError::RunLost(format!(
        "{} is still attached {} s after detaching (held open by another process): this run \
         fails, the suite goes on",
        device.display(),
        patience.as_secs_f64()
    ))
    .into())
}

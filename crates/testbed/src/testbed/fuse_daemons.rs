//! The FUSE daemons a killed run left serving its filesystems (ntfs-3g, a user driver's):
//! found by what they hold open, a device of the run and `/dev/fuse`, and stopped before
//! `clean` unmounts, so that a daemon never outlives its run holding a loop device.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

/// `/dev/fuse`'s device number (major 10, minor 229 on every Linux).
const FUSE_DEVICE: (u32, u32) = (10, 229);

/// How long a daemon may take to exit after SIGTERM (it unmounts and flushes first).
const STOP_PATIENCE: Duration = Duration::from_secs(10);

/// Where a process's descriptors lead: whether one is `/dev/fuse` and whether one is the
/// block device numbered `rdev`.
fn holds(pid: u32, rdev: u64) -> (bool, bool) {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return (false, false);
    };
    let (mut fuse, mut device) = (false, false);
    for fd in fds.flatten() {
        let Ok(meta) = std::fs::metadata(fd.path()) else {
            continue;
        };
        let number = (
            rustix::fs::major(meta.rdev()),
            rustix::fs::minor(meta.rdev()),
        );
        fuse |= meta.file_type().is_char_device() && number == FUSE_DEVICE;
        device |= meta.file_type().is_block_device() && meta.rdev() == rdev;
    }
    (fuse, device)
}

/// The pids of the FUSE daemons holding block device `device` open.
pub(super) fn serving(device: &Path) -> Vec<u32> {
    let Ok(meta) = std::fs::metadata(device) else {
        return Vec::new();
    };
    if !meta.file_type().is_block_device() {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id();
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != own && holds(*pid, meta.rdev()) == (true, true))
        .collect()
}

/// Whether `pid` is running (gone, or a zombie waiting for its parent, is not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rfind(')')
            .and_then(|at| stat[at + 1..].split_whitespace().next());
        state.is_some_and(|s| s != "Z" && s != "X")
    })
}

/// The name a process runs under (`ntfs-3g`), for what `clean` says.
fn name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).map_or_else(
        |_| "a FUSE daemon".to_string(),
        |c| c.trim_end().to_string(),
    )
}

/// Stops daemon `pid` of `device`: SIGTERM (it unmounts and exits), then SIGKILL; says what
/// it did or why it could not.
pub(super) fn stop(pid: u32, device: &Path) -> Result<String, String> {
    let what = format!("{} (pid {pid}) of {}", name(pid), device.display());
    let Some(raw) = Pid::from_raw(pid as i32) else {
        return Err(format!("{what}: not a pid"));
    };
    let _ = rustix::process::kill_process(raw, Signal::TERM);
    let start = Instant::now();
    while running(pid) {
        if start.elapsed() > STOP_PATIENCE {
            let _ = rustix::process::kill_process(raw, Signal::KILL);
            std::thread::sleep(Duration::from_millis(200));
            return match running(pid) {
                true => Err(format!("FUSE daemon {what} survived SIGKILL")),
                false => Ok(format!(
                    "killed FUSE daemon {what} (it ignored SIGTERM for {} s)",
                    STOP_PATIENCE.as_secs()
                )),
            };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(format!("stopped FUSE daemon {what}"))
}

//! The scratch directory: everything fsbench creates for a suite (images, mount points, the
//! work tree) lives below one directory, recorded in a state file. Undoing a suite is then one
//! generic step — unmount what is mounted below it, detach loop devices backed by files below
//! it, remove it — used on success, on error, on panic (Drop) and by `fsbench clean` after a
//! SIGKILL.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use rustix::mount::UnmountFlags;
use serde::{Deserialize, Serialize};

use super::mounts;
use crate::tools;

/// What a running suite has created, as saved in its state file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct State {
    pub pid: u32,
    /// Start time of the process (clock ticks since boot), so a reused pid is not mistaken.
    pub start_ticks: u64,
    pub scratch: PathBuf,
    /// User-given image files fsbench attached to loop devices (they are not removed).
    pub attached_files: Vec<PathBuf>,
}

/// Where state files live: `$FSBENCH_STATE_DIR`, `/var/lib/fsbench/state` for root, or
/// `$XDG_STATE_HOME/fsbench` (default `~/.local/state/fsbench`).
pub fn state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FSBENCH_STATE_DIR") {
        return PathBuf::from(dir);
    }
    if tools::is_root() {
        return PathBuf::from("/var/lib/fsbench/state");
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("fsbench")
}

/// Start time of process `pid` in clock ticks since boot; with the pid it names a process
/// uniquely, since pids are reused.
pub fn process_start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; fields after its closing parenthesis are plain.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The scratch directory of the running suite. Dropping it undoes everything below it.
#[derive(Debug)]
pub struct Scratch {
    state: State,
    state_file: PathBuf,
}

impl Scratch {
    /// Creates `parent/fsbench.<pid>[.n]` and the state file that records it.
    pub fn create(parent: &Path) -> anyhow::Result<Scratch> {
        let pid = std::process::id();
        let dir = (0..1000)
            .map(|n| match n {
                0 => parent.join(format!("fsbench.{pid}")),
                n => parent.join(format!("fsbench.{pid}.{n}")),
            })
            .find(|candidate| std::fs::create_dir(candidate).is_ok())
            .with_context(|| {
                format!("cannot create a scratch directory in {}", parent.display())
            })?;
        let scratch = dir.canonicalize()?;
        let state_dir = state_dir();
        let state_file = state_dir.join(format!(
            "{}.json",
            scratch.file_name().unwrap().to_string_lossy()
        ));
        let scratch = Scratch {
            state: State {
                pid,
                start_ticks: process_start_ticks(pid).unwrap_or(0),
                scratch,
                attached_files: Vec::new(),
            },
            state_file,
        };
        std::fs::create_dir_all(&state_dir)
            .with_context(|| format!("cannot create state directory {}", state_dir.display()))?;
        if let Err(e) = scratch.save() {
            let _ = std::fs::remove_dir(&scratch.state.scratch);
            return Err(e);
        }
        Ok(scratch)
    }

    pub fn path(&self) -> &Path {
        &self.state.scratch
    }

    /// Records a user's image file before fsbench attaches it to a loop device.
    pub fn note_attached_file(&mut self, file: &Path) -> anyhow::Result<()> {
        if !self.state.attached_files.iter().any(|f| f == file) {
            self.state.attached_files.push(file.to_path_buf());
            self.save()?;
        }
        Ok(())
    }

    fn save(&self) -> anyhow::Result<()> {
        let tmp = self.state_file.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&self.state)?)
            .with_context(|| format!("cannot write state file {}", tmp.display()))?;
        std::fs::rename(&tmp, &self.state_file)
            .with_context(|| format!("cannot write state file {}", self.state_file.display()))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        match undo(&self.state) {
            Ok(_) => {
                let _ = std::fs::remove_file(&self.state_file);
            }
            Err(e) => eprintln!(
                "fsbench: cleanup incomplete ({e:#}); run `fsbench clean` to finish it (state in {})",
                self.state_file.display()
            ),
        }
    }
}

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

/// Detaches `device`, retrying while udev or the kernel still hold it.
pub fn detach_loop(device: &Path) -> anyhow::Result<()> {
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
    for _ in 0..100 {
        if !backing.exists() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    anyhow::bail!(
        "{} is still attached 10 s after detaching (held open by another process)",
        device.display()
    )
}

/// Undoes everything `state` records. Returns what it did, one line per action.
pub fn undo(state: &State) -> anyhow::Result<Vec<String>> {
    let mut done = Vec::new();
    let scratch = &state.scratch;
    for target in mounts::mounts_below(scratch) {
        unmount(&target)?;
        done.push(format!("unmounted {}", target.display()));
    }
    for (device, backing) in loop_devices() {
        if backing.starts_with(scratch) || state.attached_files.contains(&backing) {
            detach_loop(&device)?;
            done.push(format!(
                "detached {} ({})",
                device.display(),
                backing.display()
            ));
        }
    }
    if scratch.exists() {
        // Never recurse into anything still mounted: that could be a user's filesystem.
        if let Some(still) = mounts::mounts_below(scratch).first() {
            anyhow::bail!(
                "{} is still mounted; not removing {}",
                still.display(),
                scratch.display()
            );
        }
        std::fs::remove_dir_all(scratch)
            .with_context(|| format!("cannot remove {}", scratch.display()))?;
        done.push(format!("removed {}", scratch.display()));
    }
    Ok(done)
}

/// Undoes what suites that are no longer running left behind (`fsbench clean`).
/// Returns the actions taken; suites still running are left alone and reported.
pub fn clean_stale() -> anyhow::Result<Vec<String>> {
    let dir = state_dir();
    let mut report = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(report);
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let state: State = match std::fs::read(&path)
            .map_err(anyhow::Error::from)
            .and_then(|b| Ok(serde_json::from_slice(&b)?))
        {
            Ok(s) => s,
            Err(e) => {
                report.push(format!(
                    "skipped unreadable state file {}: {e}",
                    path.display()
                ));
                continue;
            }
        };
        if state.pid != std::process::id()
            && process_start_ticks(state.pid).is_some_and(|t| t == state.start_ticks)
        {
            report.push(format!(
                "left {} alone: fsbench pid {} is still running",
                state.scratch.display(),
                state.pid
            ));
            continue;
        }
        report.extend(undo(&state)?);
        std::fs::remove_file(&path)?;
        report.push(format!("removed state file {}", path.display()));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_ticks_of_self_and_nobody() {
        assert!(process_start_ticks(std::process::id()).is_some());
        assert!(process_start_ticks(u32::MAX).is_none());
    }
}

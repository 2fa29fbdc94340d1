//! Undoing what a suite made, from its state file: at the suite's end (on success, error,
//! signal and panic) and by `fsbench clean` after a SIGKILL. Nothing is trusted because a state
//! file names it: the directory must carry the marker fsbench wrote into it, a mount must be
//! one fsbench makes (`run<N>/mnt` inside that directory, of this run's image, the recorded
//! device or a tmpfs), a loop device must be backed by the image fsbench made there or be the
//! one it recorded for a user's file. Anything else is left and reported.
//!
//! What a killed run started is finished first, in this order: what its commands left
//! running in their cgroups (it keeps mounts busy), its zfs pools and daemons, the FUSE
//! daemons serving its devices; then its queue settings are put back, its mounts unmounted,
//! its loop devices detached and its directory removed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use super::detach::{detach_loop_within, loop_devices, unmount};
use super::state::{MARKER, State, is_scratch_name, pid_namespace, state_dir};
use super::{device, mounts};
use fsbench_measure::sysinfo::process_start_ticks;

/// How long `fsbench clean` waits for one loop device to go: a device something else holds
/// open is reported, not waited for.
const CLEAN_PATIENCE: Duration = Duration::from_secs(2);

pub use super::state::Undone;

/// What is at a state's scratch path.
#[derive(Debug, PartialEq)]
pub(crate) enum Found {
    /// Nothing: the owner died after recording its intent.
    Absent,
    /// An empty directory without the marker (killed before writing it): removable.
    Empty,
    /// A directory carrying the marker the state names.
    Marked,
}

/// Whether `state` names a scratch directory fsbench made: fsbench's name, directly in the
/// recorded base, a real directory of ours, and (unless empty) carrying the state's marker.
pub(crate) fn check_scratch_dir(state: &State) -> anyhow::Result<Found> {
    use std::os::unix::fs::MetadataExt;
    let scratch = &state.scratch;
    let refuse = |why: &str| {
        anyhow::anyhow!(
            "{} is not a scratch directory fsbench made ({why}); left alone",
            scratch.display()
        )
    };
    let named = scratch
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(is_scratch_name);
    if !named {
        return Err(refuse("not fsbench's name"));
    }
    let Some(base) = &state.base else {
        return Err(refuse("its state file names no base directory"));
    };
    if scratch.parent() != Some(base.as_path()) {
        return Err(refuse("not directly in its base directory"));
    }
    let meta = match scratch.symlink_metadata() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Absent),
        Err(e) => return Err(e).with_context(|| format!("cannot inspect {}", scratch.display())),
        Ok(meta) => meta,
    };
    if !meta.is_dir() || meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(refuse("not a directory of ours"));
    }
    if has_marker(scratch, state.marker.as_deref()) {
        return Ok(Found::Marked);
    }
    let empty = std::fs::read_dir(scratch).is_ok_and(|mut d| d.next().is_none());
    if empty {
        Ok(Found::Empty)
    } else {
        Err(refuse("no marker of its state file in it"))
    }
}

/// Whether `dir` holds fsbench's marker file (a regular file, not a link) with `token`.
fn has_marker(dir: &Path, token: Option<&str>) -> bool {
    use rustix::fs::{Mode, OFlags};
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return false;
    };
    let Ok(fd) = rustix::fs::open(
        dir.join(MARKER),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    let mut buf = [0u8; 64];
    let n = rustix::io::read(&fd, &mut buf).unwrap_or(0);
    &buf[..n] == token.as_bytes()
}

/// The device number of the block device at `path`.
fn rdev(path: &Path) -> Option<(u32, u32)> {
    let st = rustix::fs::stat(path).ok()?;
    (rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::BlockDevice)
        .then(|| (rustix::fs::major(st.st_rdev), rustix::fs::minor(st.st_rdev)))
}

/// The image fsbench makes for a run: `<scratch>/run<N>/image`.
fn is_run_image(scratch: &Path, file: &Path) -> bool {
    file.file_name().is_some_and(|n| n == "image") && is_run_dir(scratch, file.parent())
}

/// Whether `dir` is `<scratch>/run<N>`.
fn is_run_dir(scratch: &Path, dir: Option<&Path>) -> bool {
    dir.is_some_and(|d| {
        d.parent() == Some(scratch)
            && d.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("run"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Whether `device` (backed by `backing`) is a loop device this state's run attached.
fn loop_is_ours(state: &State, device: &Path, backing: &Path) -> bool {
    is_run_image(&state.scratch, backing)
        || state
            .loops
            .iter()
            .any(|l| l.device == device && l.file == backing)
}

/// Whether the mount at `target` is one fsbench makes: at `<scratch>/run<N>/mnt`, of a loop
/// device of this run, of the recorded block device, or a tmpfs.
fn mount_is_ours(state: &State, target: &Path, loops: &[(PathBuf, PathBuf)]) -> bool {
    if target.file_name().is_none_or(|n| n != "mnt") || !is_run_dir(&state.scratch, target.parent())
    {
        return false;
    }
    let Some(entry) = mounts::mount_at(target) else {
        return false;
    };
    if entry.fstype == "tmpfs" && entry.source == "tmpfs" {
        return true;
    }
    if super::zfs::mount_is_recorded(&entry, &state.zfs) {
        return true;
    }
    // By the source, not mountinfo's device number: btrfs shows an anonymous one there.
    let Some(dev) = rdev(Path::new(&entry.source)) else {
        return false;
    };
    let ours_loop = loops
        .iter()
        .any(|(device, backing)| rdev(device) == Some(dev) && loop_is_ours(state, device, backing));
    ours_loop || state.device.as_deref().and_then(rdev) == Some(dev)
}

/// Why `device` cannot be detached now without waiting: mounted, or held by something else.
fn loop_in_use(device: &Path) -> Option<String> {
    let (major, minor) = rdev(device)?;
    if let Some(at) = device::sysfs_node(major, minor).and_then(|node| device::mounted(&node)) {
        return Some(format!("mounted at {}", at.display()));
    }
    device::held(device).map(|e| format!("busy ({e})"))
}

/// Undoes what `state`'s run made, each step verified; waits at most `patience` for a loop
/// device to go.
pub fn undo(state: &State, patience: Duration) -> Undone {
    let mut undone = Undone::default();
    undo_cgroups(state, &mut undone);
    let scratch = &state.scratch;
    // Before anything is unmounted below it: a state file naming `/` must undo nothing.
    let found = match check_scratch_dir(state) {
        Ok(found) => found,
        Err(e) => {
            undone.left.push(format!("{e:#}"));
            return undone;
        }
    };
    if found == Found::Marked {
        // Before the generic steps: a recording's mounts and loop devices hold its daemon.
        crate::crash::undo::undo(
            scratch,
            &state.recorders,
            &mut undone.done,
            &mut undone.left,
        );
        // A live daemon unmounts its dataset and lets go of the loop device once its pool is
        // destroyed and it is stopped.
        super::zfs::undo(&state.zfs, &mut undone.done, &mut undone.left);
        let loops = loop_devices();
        stop_fuse_daemons(state, &loops, &mut undone);
        let still_ours = |device: &Path| {
            (loops.iter()).any(|(d, backing)| d == device && loop_is_ours(state, d, backing))
        };
        super::queue::undo(&state.queues, still_ours, &mut undone);
        undo_mounts_and_loops(state, patience, &mut undone);
    }
    if found == Found::Absent {
        return undone;
    }
    let in_use = mounts::mounts_below(scratch).first().cloned().or_else(|| {
        loop_devices()
            .into_iter()
            .find(|(_, backing)| backing.starts_with(scratch))
            .map(|(device, _)| device)
    });
    if let Some(still) = in_use {
        // Never recurse into anything still mounted or backing a loop device: it could be
        // a user's.
        undone.left.push(format!(
            "{} kept: {} is still in use below it",
            scratch.display(),
            still.display()
        ));
        return undone;
    }
    let removed = match found {
        Found::Marked => std::fs::remove_dir_all(scratch),
        // rmdir removes only an empty directory: nothing to lose.
        _ => std::fs::remove_dir(scratch),
    };
    let made_by = (state.made_by.as_deref()).map_or(String::new(), |m| format!(" ({m})"));
    match removed {
        Ok(()) => undone
            .done
            .push(format!("removed {}{made_by}", scratch.display())),
        Err(e) => undone
            .left
            .push(format!("cannot remove {}: {e}", scratch.display())),
    }
    undone
}

/// Kills what the run's commands left in their cgroups and removes those, unless the state
/// file names a place outside the cgroup hierarchy. Done whatever its scratch directory holds:
/// the cgroups are found by the run's pid and decided stale by their lock.
fn undo_cgroups(state: &State, undone: &mut Undone) {
    use fsbench_workloads::command::cgroup;
    let Some(parent) = &state.cgroup_parent else {
        return;
    };
    if !cgroup::in_hierarchy(parent) {
        undone.left.push(format!(
            "{} is not a cgroup v2 directory; no cgroup of the run looked for there",
            parent.display()
        ));
        return;
    }
    for said in cgroup::sweep(parent, Some(state.pid)) {
        match said {
            Ok(done) => undone.done.push(done),
            Err(left) => undone.left.push(left),
        }
    }
}

/// Stops the FUSE daemons serving the run's devices (its loop devices, the recorded
/// `--device` for a daemon whose command line names the scratch directory).
fn stop_fuse_daemons(state: &State, loops: &[(PathBuf, PathBuf)], undone: &mut Undone) {
    let ours = loops
        .iter()
        .filter(|(device, backing)| loop_is_ours(state, device, backing))
        .map(|(device, _)| (device.as_path(), true));
    let given = state.device.as_deref().map(|d| (d, false));
    for (device, loop_of_ours) in ours.chain(given) {
        for pid in super::fuse_daemons::serving(device) {
            if !loop_of_ours && !names_scratch(pid, &state.scratch) {
                continue;
            }
            match super::fuse_daemons::stop(pid, device) {
                Ok(done) => undone.done.push(done),
                Err(left) => undone.left.push(left),
            }
        }
    }
}

/// Whether process `pid`'s command line names `scratch` (a FUSE daemon names its mount point).
fn names_scratch(pid: u32, scratch: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    (cmdline.split(|b| *b == 0))
        .any(|arg| Path::new(std::ffi::OsStr::from_bytes(arg)).starts_with(scratch))
}

/// Unmounts fsbench's own mounts below the (marked) scratch directory, then detaches the loop
/// devices its run attached, unless something else still uses them.
fn undo_mounts_and_loops(state: &State, patience: Duration, undone: &mut Undone) {
    let scratch = &state.scratch;
    let loops = loop_devices();
    for target in mounts::mounts_below(scratch) {
        if !mount_is_ours(state, &target, &loops) {
            undone.left.push(format!(
                "{} is mounted below {} but not by fsbench; left mounted",
                target.display(),
                scratch.display()
            ));
            continue;
        }
        match unmount(&target) {
            Ok(()) => undone.done.push(format!("unmounted {}", target.display())),
            Err(e) => undone.left.push(format!("{e:#}")),
        }
    }
    for (device, backing) in loops {
        if !loop_is_ours(state, &device, &backing) {
            if state.attached_files.contains(&backing) {
                undone.left.push(format!(
                    "{} (backed by {}) is not the loop device fsbench recorded for it; \
                     left attached",
                    device.display(),
                    backing.display()
                ));
            }
            continue;
        }
        if let Some(why) = loop_in_use(&device) {
            undone.left.push(format!(
                "{} ({}) is {why}; left attached",
                device.display(),
                backing.display()
            ));
            continue;
        }
        match detach_loop_within(&device, patience) {
            Ok(()) => undone.done.push(format!(
                "detached {} ({})",
                device.display(),
                backing.display()
            )),
            Err(e) => undone.left.push(format!("{e:#}")),
        }
    }
}

/// Whether the suite of a state file may still be running, and why. A held lock is certain;
/// without a lock file (an older fsbench), the pid and start time decide, and a different PID
/// namespace (the pid means nothing here) counts as alive.
pub(crate) fn owner_alive(state: &State, state_file: &Path) -> Option<String> {
    use std::os::fd::AsFd;
    let lock_path = state_file.with_extension("lock");
    if let Ok(lock) = std::fs::OpenOptions::new().write(true).open(&lock_path) {
        return match rustix::fs::flock(
            lock.as_fd(),
            rustix::fs::FlockOperation::NonBlockingLockExclusive,
        ) {
            Ok(()) => None,
            Err(_) => Some(format!("its fsbench (pid {}) holds its lock", state.pid)),
        };
    }
    if state.pid_namespace.is_some() && state.pid_namespace != pid_namespace() {
        return Some(format!(
            "pid {} belongs to another PID namespace, so whether it runs cannot be told",
            state.pid
        ));
    }
    (state.pid != std::process::id()
        && process_start_ticks(state.pid).is_some_and(|t| t == state.start_ticks))
    .then(|| format!("fsbench pid {} is still running", state.pid))
}

/// What `fsbench clean` did, and what it left behind with why (suites still running aside).
#[derive(Debug, Default)]
pub struct CleanReport {
    pub done: Vec<String>,
    pub left: Vec<String>,
}

/// Undoes what suites that are no longer running left behind (`fsbench clean`), one state
/// file at a time: what one cannot undo is reported and the next is cleaned all the same.
/// A state file is removed only once everything it names is undone.
pub fn clean_stale() -> CleanReport {
    let mut report = CleanReport::default();
    let Ok(entries) = std::fs::read_dir(state_dir()) else {
        return report;
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for path in files {
        let state: State = match std::fs::read(&path)
            .map_err(anyhow::Error::from)
            .and_then(|b| Ok(serde_json::from_slice(&b)?))
        {
            Ok(s) => s,
            Err(e) => {
                report.left.push(format!(
                    "unreadable state file {} kept: {e}",
                    path.display()
                ));
                continue;
            }
        };
        if let Some(why) = owner_alive(&state, &path) {
            report
                .done
                .push(format!("left {} alone: {why}", state.scratch.display()));
            continue;
        }
        let undone = undo(&state, CLEAN_PATIENCE);
        report.done.extend(undone.done);
        if !undone.left.is_empty() {
            report.left.extend(undone.left);
            report
                .left
                .push(format!("state file {} kept", path.display()));
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => {
                let _ = std::fs::remove_file(path.with_extension("lock"));
                report
                    .done
                    .push(format!("removed state file {}", path.display()));
            }
            Err(e) => report
                .left
                .push(format!("cannot remove state file {}: {e}", path.display())),
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_for(base: &Path, scratch: PathBuf) -> State {
        State {
            pid: u32::MAX,
            start_ticks: 0,
            pid_namespace: None,
            base: Some(base.to_path_buf()),
            scratch,
            attached_files: Vec::new(),
            marker: Some("token".into()),
            device: None,
            loops: Vec::new(),
            zfs: Vec::new(),
            queues: Vec::new(),
            cgroup_parent: None,
            made_by: None,
            recorders: Vec::new(),
        }
    }

    #[test]
    fn a_state_file_naming_another_directory_undoes_nothing() {
        let base = tempfile::tempdir().unwrap();
        let precious = base.path().join("precious");
        std::fs::create_dir(&precious).unwrap();
        let state = state_for(base.path(), precious.clone());
        assert!(!undo(&state, CLEAN_PATIENCE).left.is_empty());
        assert!(precious.exists());
        let root = State {
            scratch: PathBuf::from("/"),
            base: None,
            ..state
        };
        assert!(!undo(&root, CLEAN_PATIENCE).left.is_empty());
    }

    #[test]
    fn only_a_marked_or_empty_directory_is_removed() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("fsbench.99999");
        std::fs::create_dir(&dir).unwrap();
        let state = state_for(base.path(), dir.clone());
        // Empty, unmarked (killed before the marker): removed.
        assert!(undo(&state, CLEAN_PATIENCE).left.is_empty());
        assert!(!dir.exists());
        // A user's data, no marker, or another token, or no base: kept.
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("data"), b"mine").unwrap();
        assert!(!undo(&state, CLEAN_PATIENCE).left.is_empty());
        std::fs::write(dir.join(MARKER), b"other").unwrap();
        assert!(!undo(&state, CLEAN_PATIENCE).left.is_empty());
        std::fs::write(dir.join(MARKER), b"token").unwrap();
        let no_base = State {
            base: None,
            ..state.clone()
        };
        assert!(!undo(&no_base, CLEAN_PATIENCE).left.is_empty());
        assert!(dir.join("data").exists());
        // Its own marker: removed.
        let undone = undo(&state, CLEAN_PATIENCE);
        assert!(undone.left.is_empty(), "{:?}", undone.left);
        assert!(!dir.exists());
    }

    #[test]
    fn run_images_and_mount_points_are_recognised_by_place() {
        let scratch = Path::new("/b/fsbench.1");
        assert!(is_run_image(scratch, Path::new("/b/fsbench.1/run3/image")));
        for not in [
            "/b/fsbench.1/image",
            "/b/fsbench.1/run3/x/image",
            "/b/fsbench.1/runx/image",
            "/b/fsbench.1/run/image",
            "/b/fsbench.2/run3/image",
        ] {
            assert!(!is_run_image(scratch, Path::new(not)), "{not}");
        }
    }
}

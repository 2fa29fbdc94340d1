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
    /// The owner's PID namespace (the inode of /proc/self/ns/pid): a pid means nothing to a
    /// `clean` in another namespace.
    #[serde(default)]
    pub pid_namespace: Option<u64>,
    /// The directory the scratch directory was made in; `clean` removes only a directory of
    /// fsbench's naming directly inside it.
    #[serde(default)]
    pub base: Option<PathBuf>,
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

/// The inode of this process's PID namespace.
fn pid_namespace() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").ok().map(|m| m.ino())
}

/// The names of a suite's scratch directory (`fsbench.<pid>`) and of the directory its
/// template images are kept in (`fsbench-templates.<pid>`), which outlives an interrupted
/// suite so that a resume can start from them.
pub(crate) const PREFIXES: [&str; 2] = ["fsbench", "fsbench-templates"];

/// Whether `name` is one fsbench gives scratch directories: a prefix, `.<pid>` and maybe
/// `.<n>`.
fn is_scratch_name(name: &str) -> bool {
    let Some(rest) = PREFIXES
        .iter()
        .find_map(|p| name.strip_prefix(p)?.strip_prefix('.'))
    else {
        return false;
    };
    let mut parts = rest.split('.');
    let digits =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    digits(parts.next()) && {
        let n = parts.next();
        n.is_none() || (digits(n) && parts.next().is_none())
    }
}

/// The scratch directory of the running suite. Dropping it undoes everything below it.
#[derive(Debug)]
pub struct Scratch {
    state: State,
    state_file: PathBuf,
    /// An exclusive lock on the state's lock file, held while the suite runs: `clean` sees a
    /// live owner by it, in any PID namespace, and the kernel drops it when the owner dies.
    _lock: std::fs::File,
    /// Left in place when dropped, state file and all, for a later process to adopt or
    /// `fsbench clean` to remove.
    keep: bool,
}

impl Scratch {
    /// Creates `parent/fsbench.<pid>[.n]`, recording the intent first: the locked state file
    /// names the directory before it exists, so a SIGKILL at any moment leaves nothing that
    /// `fsbench clean` cannot find.
    pub fn create(parent: &Path) -> anyhow::Result<Scratch> {
        Scratch::create_named(parent, PREFIXES[0])
    }

    /// Like [`Scratch::create`], named `prefix.<pid>[.n]` (one of [`PREFIXES`]).
    pub(crate) fn create_named(parent: &Path, prefix: &str) -> anyhow::Result<Scratch> {
        let (mut scratch, name) = Scratch::reserve(parent, prefix)?;
        let dir = parent.join(&name);
        // On failure, dropping `scratch` removes its state and lock files.
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let made = dir.canonicalize()?;
        if made != scratch.state.scratch {
            // The base was reached through a symlink: record where the directory really is.
            scratch.state.scratch = made;
            scratch.save()?;
        }
        Ok(scratch)
    }

    /// Claims a scratch name: its state file, created exclusively and locked, naming the
    /// directory that is about to be made. Returns the name.
    fn reserve(parent: &Path, prefix: &str) -> anyhow::Result<(Scratch, String)> {
        use std::os::fd::AsFd;
        let pid = std::process::id();
        let base = parent
            .canonicalize()
            .with_context(|| format!("cannot use {}", parent.display()))?;
        let state_dir = state_dir();
        std::fs::create_dir_all(&state_dir)
            .with_context(|| format!("cannot create state directory {}", state_dir.display()))?;
        for n in 0..1000 {
            let name = match n {
                0 => format!("{prefix}.{pid}"),
                n => format!("{prefix}.{pid}.{n}"),
            };
            if base.join(&name).symlink_metadata().is_ok() {
                continue;
            }
            let lock_path = state_dir.join(format!("{name}.lock"));
            let lock = match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock_path)
            {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("cannot create {}", lock_path.display()));
                }
            };
            rustix::fs::flock(
                lock.as_fd(),
                rustix::fs::FlockOperation::NonBlockingLockExclusive,
            )
            .with_context(|| format!("cannot lock {}", lock_path.display()))?;
            let scratch = Scratch {
                state: State {
                    pid,
                    start_ticks: process_start_ticks(pid).unwrap_or(0),
                    pid_namespace: pid_namespace(),
                    base: Some(base.clone()),
                    scratch: base.join(&name),
                    attached_files: Vec::new(),
                },
                state_file: state_dir.join(format!("{name}.json")),
                _lock: lock,
                keep: false,
            };
            if let Err(e) = scratch.save() {
                let _ = std::fs::remove_file(&lock_path);
                return Err(e);
            }
            return Ok((scratch, name));
        }
        anyhow::bail!("cannot create a scratch directory in {}", parent.display())
    }

    /// Takes over `dir`, a directory an earlier fsbench kept ([`Scratch::keep`]): its state
    /// file now names this process, which holds its lock. Refused while another process
    /// holds it, or when no state file of this state directory names `dir`.
    pub(crate) fn adopt(dir: &Path) -> anyhow::Result<Scratch> {
        use std::os::fd::AsFd;
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| is_scratch_name(n))
            .with_context(|| format!("{} is not a directory fsbench made", dir.display()))?;
        let state_file = state_dir().join(format!("{name}.json"));
        let lock_path = state_file.with_extension("lock");
        let lock = std::fs::OpenOptions::new()
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("cannot open {}", lock_path.display()))?;
        rustix::fs::flock(
            lock.as_fd(),
            rustix::fs::FlockOperation::NonBlockingLockExclusive,
        )
        .with_context(|| format!("{} is in use by another fsbench", dir.display()))?;
        let mut state: State = std::fs::read(&state_file)
            .map_err(anyhow::Error::from)
            .and_then(|b| Ok(serde_json::from_slice(&b)?))
            .with_context(|| format!("cannot read state file {}", state_file.display()))?;
        if state.scratch != dir {
            anyhow::bail!(
                "state file {} names {}, not {}",
                state_file.display(),
                state.scratch.display(),
                dir.display()
            );
        }
        check_scratch_dir(&state)?;
        let pid = std::process::id();
        state.pid = pid;
        state.start_ticks = process_start_ticks(pid).unwrap_or(0);
        state.pid_namespace = pid_namespace();
        let scratch = Scratch {
            state,
            state_file,
            _lock: lock,
            keep: false,
        };
        scratch.save()?;
        Ok(scratch)
    }

    /// Dropping this leaves the directory in place, for [`Scratch::adopt`] or `clean`.
    pub(crate) fn keep(&mut self) {
        self.keep = true;
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
        if self.keep {
            return;
        }
        match undo(&self.state) {
            Ok(_) => {
                let _ = std::fs::remove_file(&self.state_file);
                let _ = std::fs::remove_file(self.state_file.with_extension("lock"));
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
    // Before anything is unmounted below it: a state file naming `/` must undo nothing.
    check_scratch_dir(state)?;
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
    if scratch.symlink_metadata().is_ok() {
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

/// Refuses to remove a directory fsbench did not make: it must carry fsbench's name, sit
/// directly in the recorded base, be a real directory (not a symlink) and belong to us.
fn check_scratch_dir(state: &State) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let scratch = &state.scratch;
    let named = scratch
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(is_scratch_name);
    let placed = state
        .base
        .as_deref()
        .is_none_or(|base| scratch.parent() == Some(base));
    // A directory not made yet (the owner died right after recording its intent) is fine.
    let ours = scratch.symlink_metadata().map_or(true, |meta| {
        meta.is_dir() && meta.uid() == rustix::process::geteuid().as_raw()
    });
    if named && placed && ours {
        Ok(())
    } else {
        anyhow::bail!(
            "{} is not a scratch directory fsbench made (name, place or owner differ); left alone",
            scratch.display()
        )
    }
}

/// Whether the suite of a state file may still be running, and why. A held lock is certain;
/// without a lock file (an older fsbench), the pid and start time decide, and a different PID
/// namespace (the pid means nothing here) counts as alive.
fn owner_alive(state: &State, state_file: &Path) -> Option<String> {
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
        if let Some(why) = owner_alive(&state, &path) {
            report.push(format!("left {} alone: {why}", state.scratch.display()));
            continue;
        }
        if let Err(e) = check_scratch_dir(&state) {
            report.push(format!("left {} alone: {e:#}", state.scratch.display()));
            continue;
        }
        report.extend(undo(&state)?);
        std::fs::remove_file(&path)?;
        let _ = std::fs::remove_file(path.with_extension("lock"));
        report.push(format!("removed state file {}", path.display()));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_fsbench_names_are_scratch_names() {
        for ok in [
            "fsbench.12",
            "fsbench.12.3",
            "fsbench-templates.12",
            "fsbench-templates.12.3",
        ] {
            assert!(is_scratch_name(ok), "{ok}");
        }
        for bad in [
            "fsbench.",
            "fsbench.x",
            "fsbench.1.2.3",
            "home",
            "fsbench.1.",
            "fsbench-templates",
            "fsbench-other.12",
            "/",
        ] {
            assert!(!is_scratch_name(bad), "{bad}");
        }
    }

    #[test]
    fn intent_is_recorded_before_the_directory_exists() {
        let base = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        // SAFETY: this test alone sets the variable, before anything reads it.
        unsafe { std::env::set_var("FSBENCH_STATE_DIR", state.path()) };
        let (scratch, name) = Scratch::reserve(base.path(), PREFIXES[0]).unwrap();
        let recorded: State =
            serde_json::from_slice(&std::fs::read(&scratch.state_file).unwrap()).unwrap();
        assert!(recorded.scratch.ends_with(&name));
        assert!(
            !recorded.scratch.exists(),
            "made before its intent was recorded"
        );
        // Its owner alive (the lock is held): `clean` leaves it alone.
        assert!(owner_alive(&recorded, &scratch.state_file).is_some());
        drop(scratch);
        assert!(std::fs::read_dir(state.path()).unwrap().next().is_none());

        // (The same state directory: the variable is this test's.) A kept directory stays
        // with its state file, and another process adopts it, once at a time.
        let mut kept = Scratch::create_named(base.path(), PREFIXES[1]).unwrap();
        let dir = kept.path().to_path_buf();
        std::fs::write(dir.join("template-c0.img"), b"t").unwrap();
        kept.keep();
        drop(kept);
        assert!(dir.join("template-c0.img").exists());
        let adopted = Scratch::adopt(&dir).unwrap();
        assert!(Scratch::adopt(&dir).is_err(), "adopted twice at once");
        assert!(
            Scratch::adopt(base.path()).is_err(),
            "not fsbench's directory"
        );
        drop(adopted);
        assert!(!dir.exists());
        assert!(std::fs::read_dir(state.path()).unwrap().next().is_none());
    }

    #[test]
    fn a_state_file_naming_another_directory_undoes_nothing() {
        let base = tempfile::tempdir().unwrap();
        let precious = base.path().join("precious");
        std::fs::create_dir(&precious).unwrap();
        let state = State {
            pid: u32::MAX,
            start_ticks: 0,
            pid_namespace: None,
            base: Some(base.path().to_path_buf()),
            scratch: precious.clone(),
            attached_files: Vec::new(),
        };
        assert!(undo(&state).is_err());
        assert!(precious.exists());
        let root = State {
            scratch: PathBuf::from("/"),
            base: None,
            ..state
        };
        assert!(undo(&root).is_err());
    }

    #[test]
    fn start_ticks_of_self_and_nobody() {
        assert!(process_start_ticks(std::process::id()).is_some());
        assert!(process_start_ticks(u32::MAX).is_none());
    }
}

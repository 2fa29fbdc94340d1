//! The scratch directory: everything fsbench creates for a suite (images, mount points, the
//! work tree) lives below one directory, recorded in a state file and marked by a file whose
//! token the state file holds. Undoing a suite is then one generic step ([`super::clean`]) —
//! unmount fsbench's own mounts below it, detach the loop devices it attached, remove it —
//! used on success, on error, on panic (Drop) and by `fsbench clean` after a SIGKILL.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};

use anyhow::Context;

use super::clean;
use super::detach::DETACH_PATIENCE;
pub use super::detach::{detach_loop, detach_loop_within, loop_devices, unmount, wait_released};
pub use super::state::{AttachedLoop, MARKER, QueueRecord, State, state_dir};
pub(crate) use super::state::{PREFIXES, is_scratch_name, pid_namespace};
use fsbench_measure::sysinfo::process_start_ticks;

/// Where this process's commands get their cgroups, if the machine has cgroup v2.
fn command_cgroups() -> Option<PathBuf> {
    fsbench_workloads::command::cgroup::parent().ok()
}

/// 128 random bits in hex: a scratch directory's marker token.
fn random_token() -> anyhow::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read /dev/urandom")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// What a second signal says it leaves behind (the scratch directory it names, the message):
/// set when a process makes its first scratch directory, read by the signal handler, so never
/// freed (a few hundred bytes a suite).
static LEAVING_NOTE: AtomicPtr<(PathBuf, Box<[u8]>)> = AtomicPtr::new(std::ptr::null_mut());

fn set_leaving_note(scratch: &Path) {
    let note = format!(
        "fsbench: second signal: exiting at once, leaving {} (with what is mounted and \
         attached below it) and its state file in {}; `fsbench clean` removes them\n",
        scratch.display(),
        state_dir().display()
    );
    let note = Box::into_raw(Box::new((
        scratch.to_path_buf(),
        note.into_bytes().into_boxed_slice(),
    )));
    if LEAVING_NOTE
        .compare_exchange(
            std::ptr::null_mut(),
            note,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        // SAFETY: never published, so no one else can see it.
        drop(unsafe { Box::from_raw(note) });
    }
}

/// Forgets the note once `scratch` is undone or kept (it is left in place either way).
fn forget_leaving_note(scratch: &Path) {
    let note = LEAVING_NOTE.load(Ordering::Acquire);
    // SAFETY: a published note is never freed.
    if !note.is_null() && unsafe { &(*note).0 } == scratch {
        LEAVING_NOTE.store(std::ptr::null_mut(), Ordering::Release);
    }
}

/// Writes to stderr what this process leaves behind when it exits now: for a signal handler,
/// so it only loads a pointer and calls write(2).
pub fn write_leaving_note() {
    let note = LEAVING_NOTE.load(Ordering::Acquire);
    if note.is_null() {
        return;
    }
    // SAFETY: a published note is never freed; write(2) is async-signal-safe.
    unsafe {
        let bytes = &(*note).1;
        libc::write(libc::STDERR_FILENO, bytes.as_ptr().cast(), bytes.len());
    }
}

/// The scratch directory of the running suite (or capture). Dropping it undoes everything
/// below it.
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
        // Killed before the marker is written, the directory is empty, which `clean` removes.
        let token = scratch.state.marker.as_deref().unwrap_or_default();
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(MARKER))
            .and_then(|mut f| std::io::Write::write_all(&mut f, token.as_bytes()))
            .with_context(|| format!("cannot mark {}", dir.display()))?;
        let made = dir.canonicalize()?;
        if made != scratch.state.scratch {
            // The base was reached through a symlink: record where the directory really is.
            scratch.state.scratch = made;
            scratch.save()?;
        }
        set_leaving_note(&scratch.state.scratch);
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
        let marker = random_token()?;
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
                    marker: Some(marker),
                    device: None,
                    loops: Vec::new(),
                    zfs: Vec::new(),
                    queues: Vec::new(),
                    cgroup_parent: command_cgroups(),
                    made_by: None,
                    recorders: Vec::new(),
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
        if clean::check_scratch_dir(&state)? != clean::Found::Marked {
            anyhow::bail!("{} is not a directory fsbench made", dir.display());
        }
        let pid = std::process::id();
        state.pid = pid;
        state.start_ticks = process_start_ticks(pid).unwrap_or(0);
        state.pid_namespace = pid_namespace();
        state.cgroup_parent = command_cgroups();
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
    pub(crate) fn note_attached_file(&mut self, file: &Path) -> anyhow::Result<()> {
        if !self.state.attached_files.iter().any(|f| f == file) {
            self.state.attached_files.push(file.to_path_buf());
            self.save()?;
        }
        Ok(())
    }

    /// Records the loop device fsbench has just attached `file` (one of the attached files) to.
    pub(crate) fn note_loop(&mut self, device: &Path, file: &Path) -> anyhow::Result<()> {
        self.state.loops.retain(|l| l.file != file);
        self.state.loops.push(AttachedLoop {
            device: device.to_path_buf(),
            file: file.to_path_buf(),
        });
        self.save()
    }

    /// Records the zfs-fuse daemon (and the pool it is to hold) a run has just started.
    pub(crate) fn note_zfs(&mut self, record: super::zfs::Record) -> anyhow::Result<()> {
        self.state.zfs.push(record);
        self.save()
    }

    /// Records a queue's scheduler before a run changes it (once: the first is the original).
    pub(crate) fn note_queue(&mut self, record: QueueRecord) -> anyhow::Result<()> {
        if self.state.queues.iter().any(|q| q.file == record.file) {
            return Ok(());
        }
        self.state.queues.push(record);
        self.save()
    }

    /// Records what made the state file where it is not a suite, for `clean` to say.
    pub fn note_made_by(&mut self, what: String) -> anyhow::Result<()> {
        self.state.made_by = Some(what);
        self.save()
    }

    /// Records a crash recorder: before it starts, then with its daemon's pid.
    pub(crate) fn note_recorder(
        &mut self,
        record: crate::crash::RecorderRecord,
    ) -> anyhow::Result<()> {
        self.state.recorders.retain(|r| r.dir != record.dir);
        self.state.recorders.push(record);
        self.save()
    }

    /// Records the block device the suite mounts below its scratch directory.
    pub(crate) fn note_device(&mut self, device: &Path) -> anyhow::Result<()> {
        self.state.device = Some(device.to_path_buf());
        self.save()
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
        if !self.keep {
            let undone = clean::undo(&self.state, DETACH_PATIENCE);
            if undone.left.is_empty() {
                let _ = std::fs::remove_file(&self.state_file);
                let _ = std::fs::remove_file(self.state_file.with_extension("lock"));
            } else {
                fsbench_measure::diag::say(&format!(
                    "fsbench: cleanup incomplete ({}); run `fsbench clean` to finish it (state in {})",
                    undone.left.join("; "),
                    self.state_file.display()
                ));
            }
        }
        // Only now: a second signal during the undo still says what it leaves.
        forget_leaving_note(&self.state.scratch);
    }
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
        assert!(clean::owner_alive(&recorded, &scratch.state_file).is_some());
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
}

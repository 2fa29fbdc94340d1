//! The state file's record of what a suite made, and the names and facts that decide what
//! is fsbench's: read by the suite that writes it and by `fsbench clean`, which trusts only
//! what it names.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use fsbench_measure::tools;

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
    /// User-given image files fsbench attaches to loop devices (they are not removed),
    /// recorded before they are attached.
    pub attached_files: Vec<PathBuf>,
    /// The random token of the marker file fsbench wrote into `scratch` when it made it:
    /// `clean` removes only a directory that carries it.
    #[serde(default)]
    pub marker: Option<String>,
    /// The block device the suite mounts (`--device`), whose mounts below `scratch` are
    /// fsbench's own.
    #[serde(default)]
    pub device: Option<PathBuf>,
    /// The loop device each of `attached_files` was last attached to, recorded once attached:
    /// `clean` detaches a loop device of a user's file only when it is named here.
    #[serde(default)]
    pub loops: Vec<AttachedLoop>,
    /// The zfs-fuse daemons and pools the suite's zfs runs started, recorded once started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zfs: Vec<ZfsRecord>,
    /// Queues whose I/O scheduler a run set outside what fsbench made (the backing disk,
    /// `--sched-backing`), recorded before they are changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<QueueRecord>,
    /// The cgroup the run's commands get cgroups of their own in (`fsbench-PID-N`, locked
    /// while their maker lives): `clean` kills what is left in those of `pid`, and removes
    /// them, before it unmounts anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_parent: Option<PathBuf>,
    /// What made the state file, where it is not a suite (`fsbench capture -o TRACE`):
    /// `clean` says it with what it removes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub made_by: Option<String>,
    /// Crash recorders a run started (`crash=N`), recorded before each starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recorders: Vec<crate::crash::recorder::RecorderRecord>,
}

/// A queue's `scheduler` (or `write_cache`) file and the value to put back in it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QueueRecord {
    pub file: PathBuf,
    pub previous: String,
    /// The loop device of the run whose queue it is: `clean` puts it back only while that
    /// device is still the run's (a detached one may be someone else's by now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_device: Option<PathBuf>,
}

/// A loop device fsbench attached to a user's image file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AttachedLoop {
    pub device: PathBuf,
    pub file: PathBuf,
}

/// The file fsbench writes into every scratch directory it makes, holding [`State::marker`].
pub const MARKER: &str = ".fsbench-scratch";

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

/// The inode of this process's PID namespace.
pub(crate) fn pid_namespace() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").ok().map(|m| m.ino())
}

/// The names of a suite's scratch directory (`fsbench.<pid>`) and of the directory its
/// template images are kept in (`fsbench-templates.<pid>`), which outlives an interrupted
/// suite so that a resume can start from them.
pub(crate) const PREFIXES: [&str; 2] = ["fsbench", "fsbench-templates"];

/// Whether `name` is one fsbench gives scratch directories: a prefix, `.<pid>` and maybe
/// `.<n>`.
pub(crate) fn is_scratch_name(name: &str) -> bool {
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

/// The pool and daemon a run made, as its state file records them for `fsbench clean`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ZfsRecord {
    pub pool: String,
    pub daemon_pid: u32,
    /// With the pid, names the daemon uniquely (pids are reused).
    pub daemon_start_ticks: u64,
}

/// What an undo did and what it left (with why), one line each.
#[derive(Debug, Default)]
pub struct Undone {
    pub done: Vec<String>,
    pub left: Vec<String>,
}

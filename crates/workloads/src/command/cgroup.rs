//! A cgroup v2 per command: every process the command starts lands in it (however it forks
//! or detaches), so its figures are the whole tree's and one write kills the whole tree.
//!
//! The cgroup is made below the one fsbench runs in. fsbench changes no controller setting:
//! the figures whose controller that cgroup does not pass down (memory, io) come from the
//! rusage / `/proc/PID/io` fallback, and the phase says so.
//!
//! Its maker holds an exclusive `flock` on the cgroup's directory for as long as the cgroup
//! lives; the kernel drops it when the maker dies, however it dies. A cgroup nobody holds is
//! a killed fsbench's: the next one (or `fsbench clean`) kills what is left in it and removes
//! it. A name, a pid or a PID namespace decides nothing.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, Mode, OFlags};

/// What a cgroup measured once its processes were gone.
#[derive(Debug, Default)]
pub(super) struct CgroupUsage {
    /// User and system CPU time (`cpu.stat`, present without the cpu controller).
    pub cpu: Option<(Duration, Duration)>,
    /// Bytes read from and written to block devices, summed over devices (`io.stat`).
    pub io: Option<(u64, u64)>,
    /// The tree's peak memory (`memory.peak`).
    pub peak_memory: Option<u64>,
}

pub(crate) struct Cgroup {
    path: PathBuf,
    /// `cgroup.procs`, ready for the child to join between fork and exec (no allocation).
    procs: CString,
    /// The lock on the cgroup's directory that says its maker lives (close-on-exec, so no
    /// command inherits it); released after the cgroup is removed.
    _lock: OwnedFd,
}

/// How long a stale cgroup's processes may take to die once killed.
const KILL_PATIENCE: Duration = Duration::from_secs(10);

/// Distinct names for the cgroups of one fsbench process.
static SERIAL: AtomicU64 = AtomicU64::new(0);

impl Cgroup {
    /// A fresh cgroup below fsbench's own, locked as its maker's, after killed fsbench
    /// processes' cgroups are swept: with what the sweep could not undo. The error says why
    /// there is none.
    pub(crate) fn create() -> Result<(Cgroup, Vec<String>), String> {
        let parent = parent()?;
        let unswept = sweep(&parent, None).into_iter().filter_map(Result::err);
        let unswept = unswept.collect();
        // A name taken (a run in another PID namespace has the same pid) or a cgroup another
        // fsbench's sweep took in the instant before it was locked: the next name.
        for _ in 0..16 {
            let name = format!(
                "fsbench-{}-{}",
                std::process::id(),
                SERIAL.fetch_add(1, Ordering::Relaxed)
            );
            let path = parent.join(name);
            match std::fs::create_dir(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(format!(
                        "cannot create a cgroup in {}: {e}",
                        parent.display()
                    ));
                }
                Ok(()) => {}
            }
            let Some(lock) = try_lock(&path) else {
                continue;
            };
            let procs = CString::new(path.join("cgroup.procs").as_os_str().as_bytes())
                .map_err(|_| "the cgroup's path holds a NUL byte".to_string())?;
            let cgroup = Cgroup {
                path,
                procs,
                _lock: lock,
            };
            return Ok((cgroup, unswept));
        }
        Err(format!("cannot claim a cgroup in {}", parent.display()))
    }

    /// Its directory: its id is the directory's inode.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn procs_path(&self) -> &std::ffi::CStr {
        &self.procs
    }

    /// Controllers this cgroup has (those its parent passes down).
    fn has_controller(&self, name: &str) -> bool {
        std::fs::read_to_string(self.path.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|w| w == name))
    }

    /// Why a figure falls back: the controllers missing for memory and io.
    pub(super) fn missing_controllers(&self) -> Vec<&'static str> {
        ["memory", "io"]
            .into_iter()
            .filter(|c| !self.has_controller(c))
            .collect()
    }

    /// Kills every process in the cgroup (`cgroup.kill`; one by one on kernels before 5.14)
    /// and waits up to `limit` for them to be gone; whether they are.
    pub(crate) fn kill_all(&self, limit: Duration) -> bool {
        if std::fs::write(self.path.join("cgroup.kill"), "1").is_err() {
            self.kill_listed();
        }
        let deadline = Instant::now() + limit;
        loop {
            if self.is_empty() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            // A process that forked while it was listed is killed on the next look.
            self.kill_listed();
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn kill_listed(&self) {
        let Ok(procs) = std::fs::read_to_string(self.path.join("cgroup.procs")) else {
            return;
        };
        for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }

    /// No live process left (zombies not yet reaped leave `populated` at 0 too).
    fn is_empty(&self) -> bool {
        std::fs::read_to_string(self.path.join("cgroup.events"))
            .map(|e| e.lines().any(|l| l == "populated 0"))
            .unwrap_or(true)
    }

    pub(super) fn usage(&self) -> CgroupUsage {
        let read = |file: &str| std::fs::read_to_string(self.path.join(file)).ok();
        let cpu = read("cpu.stat").and_then(|stat| {
            let usec = |key: &str| flat_value(&stat, key).map(Duration::from_micros);
            Some((usec("user_usec")?, usec("system_usec")?))
        });
        let io = read("io.stat")
            .filter(|_| self.has_controller("io"))
            .map(|stat| io_bytes(&stat));
        let peak_memory = read("memory.peak").and_then(|p| p.trim().parse().ok());
        CgroupUsage {
            cpu,
            io,
            peak_memory,
        }
    }
}

impl Drop for Cgroup {
    /// Nothing the command started outlives it; the empty cgroup goes.
    fn drop(&mut self) {
        self.kill_all(Duration::from_secs(5));
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// Where fsbench makes the cgroups of its commands: below the cgroup it runs in.
pub fn parent() -> Result<PathBuf, String> {
    let mount = cgroup2_mount().ok_or("no cgroup v2 hierarchy is mounted")?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let own = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("fsbench is in no cgroup v2")?;
    Ok(mount.join(own.trim_start_matches('/')))
}

/// The directory's lock, if no one else holds it.
fn try_lock(dir: &Path) -> Option<OwnedFd> {
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive).ok()?;
    Some(fd)
}

/// The pid in a name fsbench gives its cgroups, `fsbench-PID-SERIAL`.
fn maker_pid(name: &str) -> Option<u32> {
    let (pid, serial) = name.strip_prefix("fsbench-")?.split_once('-')?;
    serial.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Kills what is left in the cgroups of `parent` that killed fsbench processes made (those
/// of pid `maker` only, if given) and removes them: one line each on what was done, or why
/// it could not be. A cgroup whose maker lives (it holds the lock) is left alone, silently.
pub fn sweep(parent: &Path, maker: Option<u32>) -> Vec<Result<String, String>> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut said = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(maker_pid) else {
            continue;
        };
        if maker.is_some_and(|m| m != pid) {
            continue;
        }
        let path = entry.path();
        let Some(lock) = try_lock(&path) else {
            continue;
        };
        let Ok(procs) = CString::new(path.join("cgroup.procs").as_os_str().as_bytes()) else {
            continue;
        };
        // Dropped once removed: its Drop finds nothing left to kill or remove.
        let stale = Cgroup {
            path,
            procs,
            _lock: lock,
        };
        said.push(stale.remove());
    }
    said
}

/// Whether `parent` is a directory in the cgroup v2 hierarchy (a state file names it).
pub fn in_hierarchy(parent: &Path) -> bool {
    cgroup2_mount().is_some_and(|mount| parent.starts_with(mount)) && parent.is_dir()
}

impl Cgroup {
    /// Kills what is left in a stale cgroup, waits for it to empty and removes it.
    fn remove(&self) -> Result<String, String> {
        let left = self.process_count();
        if !self.kill_all(KILL_PATIENCE) {
            return Err(format!(
                "the processes in cgroup {} did not die within {} s of SIGKILL; it is left",
                self.path.display(),
                KILL_PATIENCE.as_secs()
            ));
        }
        std::fs::remove_dir(&self.path)
            .map_err(|e| format!("cannot remove cgroup {}: {e}", self.path.display()))?;
        Ok(match left {
            0 => format!("removed cgroup {}", self.path.display()),
            n => format!(
                "killed {n} process(es) left in cgroup {} and removed it",
                self.path.display()
            ),
        })
    }

    /// How many processes the cgroup holds now.
    fn process_count(&self) -> usize {
        std::fs::read_to_string(self.path.join("cgroup.procs"))
            .map(|p| p.lines().count())
            .unwrap_or(0)
    }
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `…/unified` on a hybrid
/// system), from the mount table.
fn cgroup2_mount() -> Option<PathBuf> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    table.lines().find_map(|line| {
        let (fields, tail) = line.split_once(" - ")?;
        let point = fields.split_whitespace().nth(4)?;
        (tail.split_whitespace().next()? == "cgroup2").then(|| Path::new(point).to_path_buf())
    })
}

/// `key value` from a flat-keyed cgroup file.
fn flat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// `rbytes` and `wbytes` summed over the devices of an `io.stat`.
fn io_bytes(stat: &str) -> (u64, u64) {
    let mut total = (0, 0);
    for field in stat.split_whitespace() {
        if let Some(v) = field.strip_prefix("rbytes=") {
            total.0 += v.parse::<u64>().unwrap_or(0);
        } else if let Some(v) = field.strip_prefix("wbytes=") {
            total.1 += v.parse::<u64>().unwrap_or(0);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_stat_sums_every_device() {
        let stat = "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n\
                    7:3 rbytes=100 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n";
        assert_eq!(io_bytes(stat), (4196, 8192));
    }

    #[test]
    fn cpu_stat_values_are_read_by_key() {
        let stat = "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n";
        assert_eq!(flat_value(stat, "user_usec"), Some(1000));
        assert_eq!(flat_value(stat, "system_usec"), Some(500));
        assert_eq!(flat_value(stat, "nr_periods"), None);
    }
}

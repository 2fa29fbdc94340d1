//! zfs through zfs-fuse. Each run starts a zfs-fuse daemon of its own, makes a pool on the
//! run's device with its root dataset mounted at the run's mount point, and at its end
//! unmounts the dataset, destroys the pool (retrying while zfs-fuse still calls it busy) and
//! stops the daemon. zfs-fuse 0.7 has one control socket for the whole machine, so a daemon
//! fsbench did not start is refused, never shared: fsbench's zpool commands would reach its
//! pools. Pools are made with `cachefile=none`, so no daemon imports one again.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::detach::unmount;
use super::mounts;
pub use super::state::ZfsRecord as Record;
use crate::drivers::zfs::{DAEMON, PACKAGE, SOCKET, is_daemon, refuse_foreign_daemon};
use fsbench_measure::sysinfo::process_start_ticks;
use fsbench_measure::tools;

/// How long the daemon may take to listen, and a new mount to appear or go.
const START_LIMIT: Duration = Duration::from_secs(15);
/// How long `zpool destroy` is retried while the pool is busy (just after its unmount).
const BUSY_LIMIT: Duration = Duration::from_secs(30);
/// How long the daemon may take to exit after SIGTERM before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(20);
/// The daemon's settings file, recorded with each run (it sets the ARC size and FUSE caching).
const ZFSRC: &str = "/etc/zfs/zfsrc";

/// Pool and dataset properties as `-o`/`-O` arguments: `pool` holds `name=value` words,
/// `dataset` a comma-separated list.
fn property_args(pool: &[String], dataset: &str) -> Vec<String> {
    let pool = pool.iter().flat_map(|p| p.split(','));
    let pool = pool.filter(|p| !p.is_empty()).flat_map(|p| ["-o", p]);
    let dataset = dataset.split(',').filter(|p| !p.is_empty());
    pool.chain(dataset.flat_map(|p| ["-O", p]))
        .map(String::from)
        .collect()
}

/// `zpool create`'s arguments: `name` on `device`, its root dataset mounted at `mnt`.
pub(crate) fn create_args(
    name: &str,
    device: &Path,
    mnt: &Path,
    pool: &[String],
    dataset: &str,
) -> Vec<String> {
    let mut args: Vec<String> = ["create", "-f", "-o", "cachefile=none"]
        .map(String::from)
        .into();
    args.extend(property_args(pool, dataset));
    args.extend([
        "-O".into(),
        format!("mountpoint={}", mnt.display()),
        name.into(),
        device.display().to_string(),
    ]);
    args
}

/// A run's daemon and pool; dropping it destroys the pool and stops the daemon.
pub(crate) struct Pool {
    pub(crate) name: String,
    daemon: Option<Child>,
    created: bool,
    zpool: PathBuf,
    zfs: PathBuf,
    tool_dir: PathBuf,
    mnt: PathBuf,
}

impl Pool {
    /// Starts a daemon for pool `name` (its output goes to `log`), in a process group of its
    /// own so that Ctrl-C reaches fsbench, which destroys the pool first, and not the daemon.
    pub(crate) fn start(
        name: &str,
        mnt: &Path,
        tool_dir: &Path,
        log: &Path,
    ) -> anyhow::Result<(Pool, Record)> {
        refuse_foreign_daemon()?;
        let daemon = tools::require(DAEMON, PACKAGE)?;
        let out = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let child = Command::new(&daemon)
            .args(["--no-daemon", "--no-kstat-mount"])
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .current_dir(tool_dir)
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {}", daemon.display()))?;
        let record = Record {
            pool: name.to_string(),
            daemon_pid: child.id(),
            daemon_start_ticks: process_start_ticks(child.id()).unwrap_or(0),
        };
        let mut pool = Pool {
            name: name.to_string(),
            daemon: Some(child),
            created: false,
            zpool: tools::require("zpool", PACKAGE)?,
            zfs: tools::require("zfs", PACKAGE)?,
            tool_dir: tool_dir.to_path_buf(),
            mnt: mnt.to_path_buf(),
        };
        pool.wait_listening(log)?;
        Ok((pool, record))
    }

    fn wait_listening(&mut self, log: &Path) -> anyhow::Result<()> {
        let start = Instant::now();
        loop {
            if std::os::unix::net::UnixStream::connect(SOCKET).is_ok() {
                return Ok(());
            }
            let child = self.daemon.as_mut().context("the daemon is running")?;
            if let Some(status) = child.try_wait()? {
                self.daemon = None;
                anyhow::bail!(
                    "zfs-fuse exited at start ({status}): {}",
                    std::fs::read_to_string(log).unwrap_or_default().trim_end()
                );
            }
            if start.elapsed() > START_LIMIT {
                anyhow::bail!(
                    "zfs-fuse did not listen on {SOCKET} within {} s",
                    START_LIMIT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Makes the pool with `args` ([`create_args`]); returns how long `zpool create` took.
    pub(crate) fn create(&mut self, args: &[String]) -> anyhow::Result<f64> {
        // Marked first: a create that fails half-way may still leave a pool to destroy.
        self.created = true;
        let run = tools::run_ok_in(&self.zpool, args, &self.tool_dir)?;
        self.wait_mounted(true)?;
        Ok(run.elapsed.as_secs_f64())
    }

    fn wait_mounted(&self, mounted: bool) -> anyhow::Result<()> {
        let what = format!("zfs-fuse's mount of {}", self.name);
        mounts::wait_for(&self.mnt, mounted, START_LIMIT, &what)
    }

    /// Pool properties set by the user or fsbench, then the dataset's, then the daemon's
    /// settings: `pool: ashift=12, cachefile=none; dataset: recordsize=16K; zfsrc: ...`.
    pub(crate) fn properties(&self) -> String {
        let local = |program: &Path, args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            tools::run_in(program, &args, &self.tool_dir)
                .ok()
                .filter(|r| r.success)
                .map(|r| local_properties(&r.output))
                .unwrap_or_default()
        };
        let pool = local(&self.zpool, &["get", "all", &self.name]);
        let dataset = local(&self.zfs, &["get", "-s", "local", "all", &self.name]);
        let zfsrc = std::fs::read_to_string(ZFSRC)
            .map(|text| {
                let lines = text.lines().map(str::trim);
                let set = lines.filter(|l| !l.is_empty() && !l.starts_with('#'));
                set.map(|l| l.replace(' ', ""))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        format!("pool: {pool}; dataset: {dataset}; {ZFSRC}: {zfsrc}")
    }

    /// Whether the daemon still runs (it may die mid-run).
    pub(crate) fn daemon_alive(&mut self) -> bool {
        self.daemon
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Unmounts the dataset through zfs-fuse, waiting until the mount is gone; a dead
    /// daemon's mount (every call on it fails, so the run has failed) is the kernel's to undo.
    pub(crate) fn unmount(&mut self) -> anyhow::Result<()> {
        if !self.daemon_alive() {
            return unmount(&self.mnt);
        }
        let args = ["unmount".to_string(), self.name.clone()];
        tools::run_ok_in(&self.zfs, &args, &self.tool_dir)?;
        self.wait_mounted(false)
    }

    /// Mounts the dataset again at its mount point.
    pub(crate) fn mount(&self) -> anyhow::Result<()> {
        let args = ["mount".to_string(), self.name.clone()];
        tools::run_ok_in(&self.zfs, &args, &self.tool_dir)?;
        self.wait_mounted(true)
    }

    /// Destroys the pool and stops the daemon; safe to call more than once.
    pub(crate) fn release(&mut self) -> anyhow::Result<()> {
        // A pool dies with its daemon: it is in no cache file to be imported again.
        let alive = self.daemon_alive();
        let destroyed = if std::mem::take(&mut self.created) && alive {
            destroy(&self.zpool, &self.name, &self.tool_dir)
        } else {
            Ok(())
        };
        if let Some(child) = self.daemon.take() {
            stop(child)?;
        }
        destroyed
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            fsbench_measure::diag::say(&format!(
                "fsbench: cleanup of zfs pool {} failed: {e:#}",
                self.name
            ));
        }
    }
}

/// The `NAME PROPERTY VALUE SOURCE` rows of `zpool get`/`zfs get` whose source is `local`,
/// as `property=value, ...`.
fn local_properties(output: &str) -> String {
    let rows = output.lines().skip(1).filter_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        (cols.len() == 4 && cols[3] == "local").then(|| format!("{}={}", cols[1], cols[2]))
    });
    rows.collect::<Vec<_>>().join(", ")
}

/// `zpool destroy -f name`, retried while zfs-fuse answers "pool is busy" (it does for a
/// moment after the dataset's unmount); "no such pool" is done already.
fn destroy(zpool: &Path, name: &str, dir: &Path) -> anyhow::Result<()> {
    let args = ["destroy", "-f", name].map(String::from);
    let start = Instant::now();
    loop {
        let run = tools::run_in(zpool, &args, dir)?;
        if run.success || run.output.contains("no such pool") {
            return Ok(());
        }
        if !run.output.contains("busy") || start.elapsed() > BUSY_LIMIT {
            anyhow::bail!(
                "`zpool destroy -f {name}` failed after {:.0} s: {}",
                start.elapsed().as_secs_f64(),
                run.output.trim_end()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SIGTERM, then SIGKILL after [`STOP_LIMIT`]; reaps the daemon.
fn stop(mut child: Child) -> anyhow::Result<()> {
    let pid = rustix::process::Pid::from_child(&child);
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    let start = Instant::now();
    while start.elapsed() < STOP_LIMIT {
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill()?;
    child.wait()?;
    anyhow::bail!(
        "zfs-fuse (pid {}) did not exit within {} s of SIGTERM and was killed",
        child.id(),
        STOP_LIMIT.as_secs()
    )
}

/// `fsbench clean`: for each recorded daemon still running (the same process: pid, start time
/// and name), destroys its pool and stops it. A daemon that is gone took its pool with it
/// (never in a cache file); its mount, if left, is unmounted with the run's others.
pub(crate) fn undo(records: &[Record], done: &mut Vec<String>, left: &mut Vec<String>) {
    for r in records {
        let alive = is_daemon(r.daemon_pid)
            && process_start_ticks(r.daemon_pid) == Some(r.daemon_start_ticks);
        if !alive {
            continue;
        }
        let dir = std::env::temp_dir();
        let destroyed = tools::require("zpool", PACKAGE)
            .map_err(anyhow::Error::from)
            .and_then(|zpool| destroy(&zpool, &r.pool, &dir));
        match destroyed {
            Ok(()) => done.push(format!("destroyed zfs pool {}", r.pool)),
            Err(e) => left.push(format!("{e:#}")),
        }
        match stop_foreign(r.daemon_pid) {
            Ok(()) => done.push(format!("stopped zfs-fuse (pid {})", r.daemon_pid)),
            Err(e) => left.push(format!("{e:#}")),
        }
    }
}

/// Stops a daemon this process did not start (so cannot reap): SIGTERM, then SIGKILL.
fn stop_foreign(pid: u32) -> anyhow::Result<()> {
    let raw = rustix::process::Pid::from_raw(pid as i32).context("a daemon's pid")?;
    let _ = rustix::process::kill_process(raw, rustix::process::Signal::TERM);
    let start = Instant::now();
    while is_daemon(pid) {
        if start.elapsed() > STOP_LIMIT {
            rustix::process::kill_process(raw, rustix::process::Signal::KILL)
                .with_context(|| format!("cannot kill zfs-fuse (pid {pid})"))?;
            anyhow::bail!(
                "zfs-fuse (pid {pid}) ignored SIGTERM for {} s and was killed",
                STOP_LIMIT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Whether the mount `entry` is the dataset of one of `records`' pools (a FUSE mount's
/// source is the dataset's name, not a device).
pub(crate) fn mount_is_recorded(entry: &mounts::MountEntry, records: &[Record]) -> bool {
    entry.fstype == "fuse.zfs" && records.iter().any(|r| r.pool == entry.source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_become_create_arguments() {
        let args = create_args(
            "fsbench.1-run2",
            Path::new("/dev/loop3"),
            Path::new("/s/run2/mnt"),
            &["ashift=12,autoexpand=on".into()],
            "recordsize=16k,compression=on",
        );
        assert_eq!(
            args,
            [
                "create",
                "-f",
                "-o",
                "cachefile=none",
                "-o",
                "ashift=12",
                "-o",
                "autoexpand=on",
                "-O",
                "recordsize=16k",
                "-O",
                "compression=on",
                "-O",
                "mountpoint=/s/run2/mnt",
                "fsbench.1-run2",
                "/dev/loop3"
            ]
        );
    }

    #[test]
    fn only_local_properties_are_recorded() {
        let out = "NAME  PROPERTY  VALUE  SOURCE\np  size  1016M  -\np  ashift  12  local\n\
                   p  cachefile  none  local\np  version  23  default\n";
        assert_eq!(local_properties(out), "ashift=12, cachefile=none");
    }
}

//! zfs-fuse as a driver: its tools, the package's version, and the one daemon it allows
//! (checked before anything is made). The pool and daemon of a run are testbed::zfs's.

use std::path::PathBuf;

use super::Toolset;
use crate::error::FsbenchError;
use crate::tools;

/// zfs-fuse's control socket, fixed in the daemon and in zpool and zfs.
pub(crate) const SOCKET: &str = "/var/run/zfs/zfs_socket";
pub(crate) const DAEMON: &str = "zfs-fuse";
pub(crate) const PACKAGE: &str = "zfs-fuse";
/// The tools, the package's version, and no foreign daemon: checked before anything is made.
pub(crate) fn toolset(zpool: PathBuf, package: &str) -> Result<Toolset, FsbenchError> {
    tools::require(DAEMON, package)?;
    tools::require("zfs", package)?;
    refuse_foreign_daemon()?;
    // zfs-fuse has no version flag: the package's version says which it is.
    let version = tools::find("dpkg-query")
        .and_then(|q| {
            let args = ["-W", "-f", "${Version}", PACKAGE].map(String::from);
            tools::run(&q, &args).ok().filter(|r| r.success)
        })
        .map_or_else(
            || "zfs-fuse (version unknown)".to_string(),
            |r| format!("zfs-fuse {}", r.output.trim()),
        );
    Ok(Toolset {
        mkfs: Some(zpool),
        fsck: None,
        version: Some(version),
        // Said where the other filesystems' fsck version is.
        fsck_version: Some(
            "none: zfs has no offline check (zpool scrub checks a live pool)".into(),
        ),
    })
}

/// The pids of running zfs-fuse daemons.
pub(crate) fn running_daemons() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| is_daemon(*pid))
        .collect()
}

pub(crate) fn is_daemon(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == DAEMON)
}

pub(crate) fn refuse_foreign_daemon() -> Result<(), FsbenchError> {
    match running_daemons().first() {
        None => Ok(()),
        Some(pid) => Err(FsbenchError::Refused {
            path: PathBuf::from(SOCKET),
            reason: format!(
                "a zfs-fuse daemon fsbench did not start is running (pid {pid}); fsbench starts \
                 its own for each zfs run, and zfs-fuse's one control socket would reach that \
                 daemon's pools: stop it first (`/etc/init.d/zfs-fuse stop`)"
            ),
        }),
    }
}

//! zfs-fuse as a driver: its tools, the package's version, and the one daemon it allows
//! (checked before anything is made). The pool and daemon of a run are testbed::zfs's.

use std::path::PathBuf;

use super::Toolset;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::tools;

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

/// Properties fsbench sets itself: where the pool's cache file goes (nowhere) and where its
/// dataset is mounted (the run's mount point).
const SET_BY_FSBENCH: [&str; 3] = ["cachefile", "altroot", "mountpoint"];

/// Checks pool and dataset properties before anything is made: `name=value` items, none of
/// [`SET_BY_FSBENCH`]. (testbed/named.rs checks their values as it checks mount options'.)
pub(crate) fn check_properties(pool: &[String], dataset: &str) -> anyhow::Result<()> {
    let pool = pool.iter().flat_map(|p| p.split(',')).map(|p| ("pool", p));
    let dataset = dataset.split(',').map(|p| ("dataset", p));
    for (what, item) in pool.chain(dataset).filter(|(_, p)| !p.is_empty()) {
        let Some((name, value)) = fsbench_measure::units::name_value(item) else {
            return Err(invalid(format!(
                "zfs {what} property `{item}`: expected NAME=VALUE (e.g. `{what}=recordsize=16k`)"
            )));
        };
        if SET_BY_FSBENCH.contains(&name) {
            return Err(invalid(format!(
                "zfs {what} property `{name}={value}`: fsbench sets {} itself (no cache file, the \
                 dataset mounted at the run's mount point); leave it out",
                SET_BY_FSBENCH.join(", ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_fsbench_sets_or_without_a_value_are_refused() {
        assert!(check_properties(&["ashift=12".into()], "recordsize=16k,atime=off").is_ok());
        for (pool, dataset, want) in [
            ("cachefile=/etc/x", "", "fsbench sets"),
            ("", "mountpoint=/home", "fsbench sets"),
            ("altroot=/", "", "fsbench sets"),
            ("ashift", "", "NAME=VALUE"),
            ("", "compression=", "NAME=VALUE"),
        ] {
            let pool: Vec<String> = [pool]
                .into_iter()
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect();
            let err = check_properties(&pool, dataset).unwrap_err().to_string();
            assert!(err.contains(want), "{pool:?} {dataset}: {err}");
        }
    }
}

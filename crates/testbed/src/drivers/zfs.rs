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
    let Some(pid) = running_daemons().first().copied() else {
        return Ok(());
    };
    let reason = match started_by_fsbench(pid) {
        Some(Starter::Running { run, scratch }) => format!(
            "another fsbench run ({run}) holds the zfs-fuse daemon (pid {pid}) for its pool in              {}; zfs-fuse has one control socket per machine, so zfs runs go one at a time:              run this once that one has ended",
            scratch.display()
        ),
        Some(Starter::Killed { scratch }) => format!(
            "the zfs-fuse daemon (pid {pid}) of a killed fsbench run ({}) is still running;              `fsbench clean` (with that run's state directory) stops it",
            scratch.display()
        ),
        None => format!(
            "a zfs-fuse daemon fsbench did not start is running (pid {pid}); fsbench starts              its own for each zfs run, and zfs-fuse's one control socket would reach that              daemon's pools: stop it first (`/etc/init.d/zfs-fuse stop`)"
        ),
    };
    Err(FsbenchError::Refused {
        path: PathBuf::from(SOCKET),
        reason,
    })
}

/// Who started a daemon fsbench starts: a run still running, or one killed since.
enum Starter {
    Running { run: String, scratch: PathBuf },
    Killed { scratch: PathBuf },
}

/// Whether daemon `pid` is one an fsbench run started, by where fsbench starts it: in the
/// empty tool directory of a run below a scratch directory carrying fsbench's marker; and
/// whether the run that started it (its parent) still runs.
fn started_by_fsbench(pid: u32) -> Option<Starter> {
    use crate::testbed::state::{MARKER, is_scratch_name};
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
    let scratch = cwd.parent()?.parent()?;
    let named = (scratch.file_name()?.to_str()).is_some_and(is_scratch_name);
    if !named || cwd.file_name()? != "empty" || !scratch.join(MARKER).is_file() {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ppid: u32 = stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{ppid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = (cmdline.split(|b| *b == 0))
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    // Orphaned, the daemon is init's or a subreaper's, which has nothing of the run open;
    // the run that started it holds its state file's lock, `<scratch name>.lock`.
    let lock_name = format!("{}.lock", scratch.file_name()?.to_str()?);
    let holds_lock = std::fs::read_dir(format!("/proc/{ppid}/fd")).is_ok_and(|fds| {
        fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|p| p.file_name().is_some_and(|n| *n == *lock_name))
        })
    });
    let parent_started_it = ppid > 1 && holds_lock;
    let scratch = scratch.to_path_buf();
    Some(match parent_started_it {
        true => Starter::Running {
            run: format!("pid {ppid}: `{}`", words.join(" ")),
            scratch,
        },
        false => Starter::Killed { scratch },
    })
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

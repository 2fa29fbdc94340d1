//! One run's claim on a queue setting: an exclusive `flock` on its sysfs file, which the
//! kernel drops when the run ends however it ends. Another run's claim is named by the pid
//! the kernel lists for it in `/proc/locks`, and that process's command line.

use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{FlockOperation, Mode, OFlags};

use fsbench_measure::error::FsbenchError;

/// How much of the holder's command line a refusal quotes.
const COMMAND_SHOWN: usize = 160;

/// Claims the setting in sysfs file `file` (`what` of `device`'s queue), or says which run
/// holds it.
pub(super) fn take(file: &Path, device: &Path, what: &str) -> anyhow::Result<OwnedFd> {
    let fd = rustix::fs::open(file, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", file.display()))?;
    match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(fd),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(FsbenchError::Refused {
            path: device.to_path_buf(),
            reason: format!(
                "its {what} ({}) is held by another fsbench run ({}): one run at a time sets \
                 a queue, so that every run's phases run under the setting its label names; \
                 run this once that one has ended",
                file.display(),
                holder(file)
            ),
        }
        .into()),
        Err(e) => Err(anyhow::anyhow!("cannot lock {}: {e}", file.display())),
    }
}

/// Who holds the lock on `file`: `pid 123: fsbench run ...`, or why that is unknown.
fn holder(file: &Path) -> String {
    let Some(pid) = holder_pid(file) else {
        return "its pid is not listed in /proc/locks".into();
    };
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = (cmdline.split(|b| *b == 0))
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    let mut line = words.join(" ");
    if let Some((cut, _)) = line.char_indices().nth(COMMAND_SHOWN) {
        line.truncate(cut);
        line.push('…');
    }
    match line.is_empty() {
        true => format!("pid {pid}"),
        false => format!("pid {pid}: `{line}`"),
    }
}

/// The pid `/proc/locks` lists for the flock held on `file`.
fn holder_pid(file: &Path) -> Option<u32> {
    let meta = std::fs::metadata(file).ok()?;
    let (dev, ino) = (meta.dev(), meta.ino());
    let key = format!(
        "{:02x}:{:02x}:{ino}",
        rustix::fs::major(dev),
        rustix::fs::minor(dev)
    );
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    holder_in(&locks, &key)
}

/// The pid of the granted FLOCK on inode `key` (`MAJ:MIN:INODE`) in `/proc/locks`' text.
fn holder_in(locks: &str, key: &str) -> Option<u32> {
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // `1: FLOCK ADVISORY WRITE 123 00:16:6968 0 EOF`; a waiter's line has `->` after `1:`.
        match fields.as_slice() {
            [_, "FLOCK", _, _, pid, k, ..] if *k == key => pid.parse().ok(),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_granted_lock_names_its_holder_and_a_waiter_does_not() {
        let locks = "1: FLOCK  ADVISORY  WRITE 26757 00:16:6968 0 EOF\n\
                     1: -> FLOCK  ADVISORY  WRITE 999 00:16:6968 0 EOF\n\
                     2: POSIX  ADVISORY  WRITE 5 00:16:7000 0 EOF\n";
        assert_eq!(holder_in(locks, "00:16:6968"), Some(26757));
        assert_eq!(holder_in(locks, "00:16:7000"), None);
        assert_eq!(holder_in(locks, "00:16:1"), None);
    }

    #[test]
    fn a_second_claim_is_refused_naming_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("scheduler");
        std::fs::write(&file, "none [bfq]\n").unwrap();
        let first = take(&file, Path::new("/dev/loop9"), "I/O scheduler").unwrap();
        let err = take(&file, Path::new("/dev/loop9"), "I/O scheduler").unwrap_err();
        let said = err.to_string();
        assert!(
            said.contains("/dev/loop9") && said.contains(&format!("pid {}", std::process::id())),
            "{said}"
        );
        drop(first);
        assert!(take(&file, Path::new("/dev/loop9"), "I/O scheduler").is_ok());
    }
}

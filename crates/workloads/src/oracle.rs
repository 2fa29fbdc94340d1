//! What a workload was promised durable: each call that promises it (fsync, fdatasync, an
//! O_SYNC write, a directory's fsync, syncfs) and what it covered, noted the moment it
//! returned with the crash recorder's log position then. A crash state that contains the log
//! up to that position must show it; the checker reads these facts back.
//!
//! Off (no recording), a workload holds `None` and pays one branch per durability call.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// One promise, at `at`: the recorder's log position when the call returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fact", rename_all = "kebab-case")]
pub enum Fact {
    /// The workload starts here (the filesystem mounted): earlier crash states are mkfs's.
    Start { at: u64 },
    /// The file at `path` (relative to the run's root) held `len` bytes with this CRC-32.
    /// `stable`: the workload leaves it as it is until a [`Fact::Void`], so every later
    /// crash state must show it; otherwise only a crash at this very moment must (later
    /// writes, not yet promised, may have changed it).
    File {
        at: u64,
        path: String,
        len: u64,
        crc: u32,
        stable: bool,
    },
    /// The directory at `dir` held (at least) these entries; `stable` as for a file.
    Entries {
        at: u64,
        dir: String,
        names: Vec<String>,
        stable: bool,
    },
    /// From here the workload changes what it was promised (removes, rewrites): earlier
    /// facts bind no crash state at or after this position.
    Void { at: u64 },
}

impl Fact {
    pub fn at(&self) -> u64 {
        match self {
            Fact::Start { at }
            | Fact::File { at, .. }
            | Fact::Entries { at, .. }
            | Fact::Void { at } => *at,
        }
    }
}

/// Where a run's facts go; cloned into each thread of a workload. Everything is reached by
/// path and the facts are kept in memory until [`Oracle::finish`]: a workload's threads may
/// have descriptor tables of their own, without the oracle's descriptors.
#[derive(Clone)]
pub struct Oracle {
    /// The recorder's log, whose size is the position of everything sent so far.
    log: Arc<PathBuf>,
    root: Arc<PathBuf>,
    facts: Arc<Mutex<Vec<Fact>>>,
    out: Arc<PathBuf>,
}

impl Oracle {
    /// An oracle for a run whose root is `root`, its recorder logging to `log`, writing its
    /// facts to `facts` (created); notes the workload's start.
    pub fn create(log: &Path, root: &Path, facts: &Path) -> anyhow::Result<Oracle> {
        use anyhow::Context;
        File::create_new(facts).with_context(|| format!("cannot create {}", facts.display()))?;
        let oracle = Oracle {
            log: Arc::new(log.to_path_buf()),
            root: Arc::new(root.to_path_buf()),
            facts: Arc::default(),
            out: Arc::new(facts.to_path_buf()),
        };
        let at = oracle.position();
        anyhow::ensure!(at != u64::MAX, "cannot read the size of {}", log.display());
        oracle.note(Fact::Start { at });
        Ok(oracle)
    }

    /// The recorder's log position now (its size: the recorder writes its log out before it
    /// answers a flush, so this is at least the position of the flush a call waited for).
    fn position(&self) -> u64 {
        rustix::fs::stat(&*self.log).map_or(u64::MAX, |st| st.st_size as u64)
    }

    fn note(&self, fact: Fact) {
        self.facts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(fact);
    }

    /// The path of open file `fd` relative to the root, as the kernel names it (the
    /// thread's own table: workers may have one of their own).
    fn relative(&self, fd: BorrowedFd<'_>) -> Option<String> {
        use std::os::fd::AsRawFd;
        let path = std::fs::read_link(format!("/proc/thread-self/fd/{}", fd.as_raw_fd())).ok()?;
        let rel = path.strip_prefix(&*self.root).ok()?;
        Some(rel.to_string_lossy().into_owned())
    }

    /// `fd`'s file was just made durable (fsync, fdatasync, an O_SYNC write): notes its
    /// content, read back through `fd`; `stable`: the workload leaves it so until a void.
    pub fn file_synced(&self, fd: BorrowedFd<'_>, stable: bool) {
        let at = self.position();
        let Some(path) = self.relative(fd) else {
            return;
        };
        // Opened anew, buffered and readable: `fd` may be write-only or O_DIRECT.
        use std::os::fd::AsRawFd;
        let Ok(file) = File::open(format!("/proc/thread-self/fd/{}", fd.as_raw_fd())) else {
            return;
        };
        let Ok((len, crc)) = content(&file) else {
            return;
        };
        self.note(Fact::File {
            at,
            path,
            len,
            crc,
            stable,
        });
    }

    /// Directory `dir` was just made durable (its fsync): notes its entries; `stable` as
    /// for a file.
    pub fn dir_synced(&self, dir: BorrowedFd<'_>, stable: bool) {
        let at = self.position();
        let Some(path) = self.relative(dir) else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(self.root.join(&path)) else {
            return;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        self.note(Fact::Entries {
            at,
            dir: path,
            names,
            stable,
        });
    }

    /// The workload is about to change what it was promised.
    pub fn void(&self) {
        let at = self.position();
        self.note(Fact::Void { at });
    }

    /// Writes the facts out, one JSON object a line.
    pub fn finish(&self) -> anyhow::Result<()> {
        use anyhow::Context;
        let facts = self.facts.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = BufWriter::new(File::create(&*self.out)?);
        for fact in facts.iter() {
            serde_json::to_writer(&mut out, fact)?;
            out.write_all(b"\n")?;
        }
        out.flush()
            .with_context(|| format!("cannot write {}", self.out.display()))
    }
}

/// A file's length and the CRC-32 of its content, as promises note them.
pub fn content(file: &File) -> std::io::Result<(u64, u32)> {
    use std::os::unix::fs::FileExt;
    let mut crc = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0u64;
    loop {
        match file.read_at(&mut buf, len) {
            Ok(0) => return Ok((len, crc.finalize())),
            Ok(n) => {
                crc.update(&buf[..n]);
                len += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Reads a facts file back.
pub fn read_facts(path: &Path) -> anyhow::Result<Vec<Fact>> {
    use anyhow::Context;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line)
                .with_context(|| format!("{}: line {} is not a fact", path.display(), i + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn facts_note_content_entries_and_positions() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(&log, vec![0u8; 100]).unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let facts = dir.path().join("facts");
        let oracle = Oracle::create(&log, &root, &facts).unwrap();
        std::fs::write(root.join("a"), b"hello").unwrap();
        let file = File::open(root.join("a")).unwrap();
        std::fs::write(&log, vec![0u8; 150]).unwrap();
        oracle.file_synced(file.as_fd(), true);
        let d = File::open(&root).unwrap();
        oracle.dir_synced(d.as_fd(), false);
        oracle.void();
        oracle.finish().unwrap();
        let read = read_facts(&facts).unwrap();
        assert_eq!(read[0], Fact::Start { at: 100 });
        assert_eq!(
            read[1],
            Fact::File {
                at: 150,
                path: "a".into(),
                len: 5,
                crc: crc32fast::hash(b"hello"),
                stable: true,
            }
        );
        assert!(
            matches!(&read[2], Fact::Entries { dir, names, stable: false, .. } if dir.is_empty() && names == &["a"])
        );
        assert_eq!(read[3], Fact::Void { at: 150 });
    }
}

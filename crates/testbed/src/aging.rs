//! Aged filesystems and fill levels: the filesystem users have, not a pristine one.
//!
//! A configuration may be aged (a seeded churn, [`churn`]) and filled to a level ([`fill`])
//! before its measured phases. On loop images this is done once per configuration and kept
//! as a template image ([`image`]) that every run gets a copy of; on a device it is done
//! before every run. How aged the result is, is measured by [`probe`].

pub mod churn;
pub mod digest;
pub mod fill;
pub mod image;
pub mod probe;
pub mod profile;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use fsbench_model::aging::AgeProfile;
use fsbench_model::aging::Preparation;
use fsbench_model::filesystem::Capability;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::Progress;

/// Used and total space as `df` counts them: total = used + available to the caller.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    pub used: u64,
    pub total: u64,
    pub block: u64,
    /// Inodes free for the caller; unlimited (u64::MAX) where the filesystem has no fixed
    /// number of them.
    pub free_inodes: u64,
}

impl Usage {
    pub fn of(fd: impl AsFd) -> Result<Usage, FsbenchError> {
        let st = rustix::fs::fstatvfs(fd)
            .map_err(|e| FsbenchError::Failed(format!("statvfs failed: {e}")))?;
        let used = st.f_blocks.saturating_sub(st.f_bfree) * st.f_frsize;
        Ok(Usage {
            used,
            total: used + st.f_bavail * st.f_frsize,
            block: st.f_frsize,
            // btrfs has no inode table (f_files 0): inodes are not what runs out.
            free_inodes: if st.f_files == 0 {
                u64::MAX
            } else {
                st.f_favail
            },
        })
    }

    /// df's `Use%`, unrounded.
    pub fn percent(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        self.used as f64 * 100.0 / self.total as f64
    }
}

/// How to prepare a configuration's filesystem: an aging profile, a fill level, or both.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub age: Option<AgeProfile>,
    pub fill_percent: Option<u8>,
    /// What the filesystem is declared to lack (a user driver's flags), for the probe.
    pub lacks: Vec<Capability>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.age.is_none() && self.fill_percent.is_none_or(|f| f == 0)
    }

    /// The utilisation the prepared filesystem will be at, at most.
    pub fn level_percent(&self) -> f64 {
        let age = self.age.as_ref().map_or(0.0, |a| a.target_util_percent);
        age.max(f64::from(self.fill_percent.unwrap_or(0)))
    }
}

/// Ages and fills the mounted filesystem of `root` as `plan` says, probing its free space
/// before and after. `progress.done` counts MiB written.
pub fn prepare(
    root: BorrowedFd<'_>,
    plan: &Plan,
    progress: &Progress,
) -> Result<Preparation, FsbenchError> {
    let mut prep = Preparation {
        probe_fresh: probe::probe(root, &plan.lacks)?,
        ..Preparation::default()
    };
    if let Some(profile) = &plan.age {
        prep.aging = Some(churn::age(root, profile, progress)?);
    }
    if let Some(level) = plan.fill_percent.filter(|l| *l > 0) {
        prep.fill = Some(fill::fill_to(root, level, progress)?);
    }
    prep.probe_prepared = probe::probe(root, &plan.lacks)?;
    let usage = Usage::of(root)?;
    prep.free_bytes = usage.total - usage.used;
    prep.free_inodes = usage.free_inodes;
    Ok(prep)
}

/// Creates directory `name` in `parent` and opens it.
pub(crate) fn make_dir<P: rustix::path::Arg + Copy>(
    parent: BorrowedFd<'_>,
    name: P,
) -> Result<OwnedFd, FsbenchError> {
    let fail = |what: &str, e: Errno| FsbenchError::Failed(format!("aging: {what} failed: {e}"));
    rustix::fs::mkdirat(parent, name, Mode::from(0o755)).map_err(|e| fail("mkdir", e))?;
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| fail("open of a directory", e))
}

/// Writes `len` bytes at `offset` from `buf`, repeated as often as it takes.
pub(crate) fn write_all_at(fd: &OwnedFd, buf: &[u8], offset: u64, len: u64) -> Result<(), Errno> {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        let written = rustix::io::pwrite(fd, &buf[..n], offset + done)?;
        if written == 0 {
            return Err(Errno::NOSPC);
        }
        done += written as u64;
    }
    Ok(())
}

/// A fill level: a whole percentage from 0 to 95 (a fuller filesystem leaves no room to
/// measure anything).
pub fn parse_fill(text: &str) -> anyhow::Result<u8> {
    match text.trim().trim_end_matches('%').parse::<u8>() {
        Ok(level) if level <= 95 => Ok(level),
        _ => Err(invalid(format!(
            "fill level `{text}` is not a whole percentage from 0 to 95"
        ))),
    }
}

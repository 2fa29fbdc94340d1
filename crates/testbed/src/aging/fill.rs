//! Fill levels: a deterministic file set that brings the filesystem to a stated utilisation
//! before the measured phases (fs_mark's `-F`, but the same fill on a fresh filesystem for
//! every run).

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering;
use std::time::Instant;

use fsbench_model::aging::FillStats;
use rustix::fs::{Mode, OFlags};

use super::{Usage, write_all_at};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::Progress;

/// The directory the fill files live in.
pub(crate) const FILL_DIR: &str = "fill";

/// Files of the fill are this large (the last of a round smaller).
const FILE_SIZE: u64 = 8 << 20;

/// Fills the filesystem of `root` to `level` percent used (within a point; never above by
/// more than a file's rounding). A filesystem already fuller is left as it is.
pub(crate) fn fill_to(
    root: BorrowedFd<'_>,
    level: u8,
    progress: &Progress,
) -> Result<FillStats, FsbenchError> {
    let start = Instant::now();
    let fail = |what: &str, e: rustix::io::Errno| {
        FsbenchError::Failed(format!("filling to {level}%: {what} failed: {e}"))
    };
    let dir = super::make_dir(root, FILL_DIR)?;
    let buf: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let (mut files, mut written) = (0u64, 0u64);
    let mut name = String::with_capacity(16);
    for _ in 0..20 {
        rustix::fs::syncfs(root).map_err(|e| fail("syncfs", e))?;
        let usage = Usage::of(root)?;
        let target = usage.total / 100 * u64::from(level);
        // Stop within 0.8 points below the level, so metadata never pushes it over.
        if usage.used + usage.total / 125 >= target {
            break;
        }
        let mut want = target - usage.used - usage.total / 500;
        while want > 0 {
            if progress.cancel.load(Ordering::Relaxed) {
                return Err(FsbenchError::Interrupted);
            }
            let size = want.min(FILE_SIZE);
            name.clear();
            use std::fmt::Write;
            let _ = write!(name, "f{files}");
            let fd = rustix::fs::openat(
                dir.as_fd(),
                name.as_str(),
                OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::from(0o644),
            )
            .map_err(|e| fail("create", e))?;
            write_all_at(&fd, &buf, 0, size).map_err(|e| fail("write", e))?;
            files += 1;
            written += size;
            want -= size;
            progress.done.store(written >> 20, Ordering::Relaxed);
        }
    }
    rustix::fs::syncfs(root).map_err(|e| fail("syncfs", e))?;
    let usage = Usage::of(root)?;
    Ok(FillStats {
        level_percent: level,
        files,
        bytes_written: written,
        secs: start.elapsed().as_secs_f64(),
        util_percent: usage.percent(),
        free_bytes: usage.total - usage.used,
    })
}

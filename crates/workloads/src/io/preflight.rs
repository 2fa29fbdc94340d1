//! What would make a job's I/O fail on its target, refused before any of it runs.

use std::os::fd::BorrowedFd;

use super::{Engine, IoParams, e4defrag, uring};
use fsbench_measure::error::FsbenchError;

/// Everything that would make a job's I/O fail, refused before any of it: io_uring
/// unavailable, O_DIRECT refused or misaligned, polling the device cannot do.
pub(super) fn check_job(p: &IoParams, dir: BorrowedFd<'_>) -> Result<(), FsbenchError> {
    if p.engine == Engine::IoUring {
        uring::check_available(p)?;
    }
    if p.engine == Engine::E4defrag {
        e4defrag::check_ext4(dir)?;
    }
    if p.raw_device {
        return check_device(p);
    }
    if p.direct && !p.engine.pmem() {
        let (fs, align) = fsbench_measure::calls::direct_alignment(dir)?;
        let sizes = p.block_sizes().map(|b| ("bs", b));
        let sizes = sizes.chain([("offset", p.offset), ("filesize", p.filesize)]);
        for (what, v) in sizes {
            if v % align != 0 {
                return Err(FsbenchError::InvalidInput(format!(
                    "io: with `direct`, {what} must be a multiple of {fs}'s logical block size ({align} bytes); {v} is not"
                )));
            }
        }
    }
    if p.hipri && !device_polls(dir) {
        return Err(FsbenchError::InvalidInput(
            "io: `hipri` needs a device that polls (its queue/io_poll is 0 or absent, as on loop devices and most virtual disks): run without `hipri`".into(),
        ));
    }
    Ok(())
}

/// A job on the block device fsbench was given: its every copy's region lies on it (the
/// kernel refuses a misaligned direct I/O on its own).
fn check_device(p: &IoParams) -> Result<(), FsbenchError> {
    use std::io::{Seek, SeekFrom};
    if p.on_kernel_device() {
        // Endless: /dev/zero reads zeros and /dev/null takes every write at any offset.
        return Ok(());
    }
    let name = &p.filename[0];
    let size = std::fs::File::open(name)
        .and_then(|mut f| f.seek(SeekFrom::End(0)))
        .map_err(|e| FsbenchError::Failed(format!("io: {name}: {e}")))?;
    let need = p.copy_filesize(p.numjobs.saturating_sub(1));
    if need > size {
        return Err(FsbenchError::InvalidInput(format!(
            "io: the job's I/O reaches {need} bytes into {name}, which has {size}"
        )));
    }
    Ok(())
}

/// Whether the block device under `dir` completes polled I/O (its `queue/io_poll` is 1; a
/// partition's queue is its disk's).
fn device_polls(dir: BorrowedFd<'_>) -> bool {
    let Ok(st) = rustix::fs::fstat(dir) else {
        return false;
    };
    let (major, minor) = (rustix::fs::major(st.st_dev), rustix::fs::minor(st.st_dev));
    let base = format!("/sys/dev/block/{major}:{minor}");
    [
        format!("{base}/queue/io_poll"),
        format!("{base}/../queue/io_poll"),
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok())
    .is_some_and(|v| v.trim() == "1")
}

//! The raw device's own speed before any filesystem is made on it (`--baseline 3s`, the FFSB
//! report's `hdparm -t`): sequential 1 MiB requests with O_DIRECT, written (the device is about
//! to be made a filesystem anyway) then read, each for a few seconds.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use fsbench_model::testbed::raw::{Pass, RawBaseline};
use rustix::fs::{Mode, OFlags, SeekFrom};

/// One request's size.
const MIB: usize = 1 << 20;
/// O_DIRECT needs the buffer aligned to the logical block size; a page covers every device.
const ALIGN: usize = 4096;

/// Writes `device` (when `write`) and then reads it, sequentially from its start and round
/// again at its end, for `limit` each; stops with an error once `cancel` is set (Ctrl-C).
pub fn measure(
    device: &Path,
    limit: Duration,
    write: bool,
    cancel: &AtomicBool,
) -> anyhow::Result<RawBaseline> {
    let flags = if write { OFlags::RDWR } else { OFlags::RDONLY };
    let fd = rustix::fs::open(
        device,
        flags | OFlags::DIRECT | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {} with O_DIRECT", device.display()))?;
    let size = rustix::fs::seek(&fd, SeekFrom::End(0))
        .with_context(|| format!("cannot find the size of {}", device.display()))?;
    let requests_in = size / MIB as u64;
    if requests_in == 0 {
        anyhow::bail!("{} is smaller than one 1 MiB request", device.display());
    }
    // An aligned 1 MiB window of one allocation, reused for every request.
    let mut raw = vec![0xa5u8; MIB + ALIGN];
    let start = raw.as_ptr().align_offset(ALIGN);
    let buf = &mut raw[start..start + MIB];
    let fail = |what: &str, e: rustix::io::Errno| {
        anyhow::anyhow!("raw-device baseline: {what} {}: {e}", device.display())
    };
    let write = if write {
        let pass = timed(limit, requests_in, cancel, |offset| {
            rustix::io::pwrite(&fd, buf, offset).map_err(|e| fail("writing", e))
        })?;
        // The data on the device, not in its cache: the flush is part of the writing.
        let synced = Instant::now();
        rustix::fs::fdatasync(&fd).map_err(|e| fail("flushing", e))?;
        Some(Pass {
            secs: pass.secs + synced.elapsed().as_secs_f64(),
            ..pass
        })
    } else {
        None
    };
    let read = timed(limit, requests_in, cancel, |offset| {
        rustix::io::pread(&fd, &mut *buf, offset).map_err(|e| fail("reading", e))
    })?;
    Ok(RawBaseline {
        device: device.display().to_string(),
        read,
        write,
    })
}

/// Requests of 1 MiB at offsets 0, 1 MiB, ... (round again past `requests_in`) until `limit`.
fn timed(
    limit: Duration,
    requests_in: u64,
    cancel: &AtomicBool,
    mut request: impl FnMut(u64) -> anyhow::Result<usize>,
) -> anyhow::Result<Pass> {
    let start = Instant::now();
    let mut requests = 0u64;
    while start.elapsed() < limit {
        if cancel.load(Ordering::Relaxed) {
            return Err(fsbench_measure::error::FsbenchError::Interrupted.into());
        }
        let offset = (requests % requests_in) * MIB as u64;
        let done = request(offset)?;
        if done != MIB {
            anyhow::bail!("raw-device baseline: a 1 MiB request at byte {offset} did {done} bytes");
        }
        requests += 1;
    }
    Ok(Pass {
        requests,
        bytes: requests * MIB as u64,
        secs: start.elapsed().as_secs_f64(),
    })
}

impl super::Target {
    /// The raw-device baseline of this target, before its first mkfs: the device itself, a
    /// user's image file on a loop device, or an image of the runs' size made for it (and
    /// removed after).
    pub fn baseline(
        &mut self,
        limit: Duration,
        cancel: &AtomicBool,
    ) -> anyhow::Result<RawBaseline> {
        let direct_io = self.spec.loop_direct_io();
        let (file, made) = match (&self.spec, self.device_kind) {
            (super::TargetSpec::Device { path, .. }, Some(super::DeviceKind::Block)) => {
                return measure(&path.clone(), limit, true, cancel);
            }
            (super::TargetSpec::Device { path, .. }, _) => {
                let path = path.clone();
                self.scratch.note_attached_file(&path)?;
                (path, false)
            }
            (super::TargetSpec::Image { .. }, _) => {
                let image = self.scratch.path().join("baseline.img");
                super::create_image(&image, self.image_size)?;
                (image, true)
            }
            (super::TargetSpec::Dir { .. }, _) => {
                anyhow::bail!("--baseline needs a block device (a loop image or --device)")
            }
        };
        // Detached and removed whatever the measurement did.
        let measured = super::loopdev::attach(&file, direct_io).and_then(|a| {
            let noted = if made {
                Ok(())
            } else {
                self.scratch.note_loop(&a.device, &file)
            };
            let measured = noted.and_then(|()| measure(&a.device, limit, true, cancel));
            let detached = super::detach::detach_loop(&a.device);
            let measured = measured?;
            detached.map(|()| measured)
        });
        if made {
            std::fs::remove_file(&file)
                .with_context(|| format!("cannot remove {}", file.display()))?;
        }
        measured
    }
}

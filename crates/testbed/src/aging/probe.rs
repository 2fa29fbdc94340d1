//! How aged is it: free-space fragmentation, by a filesystem-neutral probe (fallocate a
//! tenth of the free space, count its extents with fsbench's FIEMAP, remove it) and by the
//! filesystem's own tools where they exist.

use std::os::fd::BorrowedFd;
use std::path::Path;

use fsbench_model::aging::{NativeView, Probe};
use fsbench_model::filesystem::{Capability, FsType};
use rustix::fs::{AtFlags, FallocateFlags, Mode, OFlags};
use rustix::io::Errno;

use super::Usage;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::extents::{ExtentCount, Mapper};
use fsbench_measure::tools;

const PROBE: &str = ".fsbench-probe";

/// Allocates a tenth, then half, of the free space (whole MiB) as one file, counts its
/// extents, removes it. `None` where the filesystem cannot fallocate (ext2, ext3) or map
/// extents (tmpfs), or is declared to lack either (`lacks`: a user driver's flags), or has
/// under 10 MiB free.
pub fn probe(root: BorrowedFd<'_>, lacks: &[Capability]) -> Result<Option<Probe>, FsbenchError> {
    if lacks.contains(&Capability::Fallocate) || lacks.contains(&Capability::Fiemap) {
        return Ok(None);
    }
    let usage = Usage::of(root)?;
    let free = usage.total - usage.used;
    let share = |part: u64| free / part / (1 << 20) * (1 << 20);
    let (tenth, half) = (share(10), share(2));
    if tenth == 0 {
        return Ok(None);
    }
    let (Some(small), Some(large)) = (allocate(root, tenth)?, allocate(root, half)?) else {
        return Ok(None);
    };
    Ok(Some(Probe {
        bytes: tenth,
        extents: small.extents,
        fragments: small.fragments,
        half_bytes: half,
        half_fragments: large.fragments,
    }))
}

/// One probe file of `bytes`: allocated, counted, removed (and the removal synced).
fn allocate(root: BorrowedFd<'_>, bytes: u64) -> Result<Option<ExtentCount>, FsbenchError> {
    let fail =
        |what: &str, e: Errno| FsbenchError::Failed(format!("free-space probe: {what}: {e}"));
    let fd = rustix::fs::openat(
        root,
        PROBE,
        OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from(0o600),
    )
    .map_err(|e| fail("create", e))?;
    let allocated = rustix::fs::fallocate(&fd, FallocateFlags::empty(), 0, bytes);
    // No fallocate (ext2, ext3) or no FIEMAP (tmpfs): no probe.
    let counted = match allocated.and_then(|()| Mapper::new().count(&fd)) {
        Ok(count) => Some(count),
        Err(Errno::OPNOTSUPP) => None,
        Err(e) => {
            let _ = rustix::fs::unlinkat(root, PROBE, AtFlags::empty());
            return Err(fail("fallocate or FIEMAP", e));
        }
    };
    drop(fd);
    rustix::fs::unlinkat(root, PROBE, AtFlags::empty()).map_err(|e| fail("remove", e))?;
    rustix::fs::syncfs(root).map_err(|e| fail("syncfs", e))?;
    Ok(counted)
}

/// Whether `fs`'s native view needs the filesystem mounted (btrfs) or unmounted (the others
/// read the device, which is only consistent unmounted).
pub fn native_needs_mount(fs: FsType) -> bool {
    fs == FsType::Btrfs
}

/// The filesystem's own view of its free space, where its tool is installed: `e2freefrag`,
/// `xfs_db -r -c 'freesp -s'` on the device, `btrfs filesystem usage -b` on the mount point.
pub fn native_view(fs: FsType, device: &Path, mountpoint: Option<&Path>) -> Option<NativeView> {
    let dev = device.display().to_string();
    let (tool, args): (&str, Vec<String>) = match fs {
        FsType::Ext2 | FsType::Ext3 | FsType::Ext4 => ("e2freefrag", vec![dev]),
        FsType::Xfs => (
            "xfs_db",
            vec!["-r".into(), "-c".into(), "freesp -s".into(), dev],
        ),
        FsType::Btrfs => (
            "btrfs",
            vec![
                "filesystem".into(),
                "usage".into(),
                "-b".into(),
                mountpoint?.display().to_string(),
            ],
        ),
        _ => return None,
    };
    let program = tools::find(tool)?;
    let run = tools::run(&program, &args).ok()?;
    let mut output = run.output;
    if output.len() > 8192 {
        let cut = (0..=8192)
            .rev()
            .find(|i| output.is_char_boundary(*i))
            .unwrap_or(0);
        output.truncate(cut);
        output.push_str("\n[…]");
    }
    Some(NativeView {
        command: format!("{tool} {}", args.join(" ")),
        output,
    })
}

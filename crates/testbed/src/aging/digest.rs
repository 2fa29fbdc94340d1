//! A digest of a prepared tree — every path below the aged and fill directories with its
//! size, in name order — so that runs can show they started from the same tree and a seed
//! can be shown to give the same tree twice.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

use fsbench_measure::error::FsbenchError;

/// The digest of what `root`'s prepared directories hold (`None` when it has neither), and
/// how many entries went into it.
pub fn tree_digest(root: BorrowedFd<'_>) -> Result<Option<(String, u64)>, FsbenchError> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut entries = 0u64;
    let mut any = false;
    for top in [super::churn::AGED_DIR, super::fill::FILL_DIR] {
        let Ok(fd) = open_dir(root, top) else {
            continue;
        };
        any = true;
        walk(fd, top, &mut |path, size| {
            for b in path.bytes().chain(size.to_le_bytes()) {
                hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
            entries += 1;
        })?;
    }
    Ok(any.then(|| (format!("{hash:016x}"), entries)))
}

fn open_dir(parent: BorrowedFd<'_>, name: &str) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )
}

/// Calls `visit(path, size)` for every entry below `dir` (directories with size 0), in
/// name order, depth first. A check, not a hot loop: it sorts each directory's names.
fn walk(dir: OwnedFd, path: &str, visit: &mut dyn FnMut(&str, u64)) -> Result<(), FsbenchError> {
    let fail = |e: rustix::io::Errno| FsbenchError::Failed(format!("reading {path}: {e}"));
    let mut names = Vec::new();
    for entry in Dir::read_from(&dir).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != "." && name != ".." {
            names.push(name);
        }
    }
    names.sort_unstable();
    for name in names {
        let st = rustix::fs::statat(dir.as_fd(), name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            .map_err(fail)?;
        let child = format!("{path}/{name}");
        if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
            visit(&child, 0);
            walk(open_dir(dir.as_fd(), &name).map_err(fail)?, &child, visit)?;
        } else {
            visit(&child, st.st_size as u64);
        }
    }
    Ok(())
}

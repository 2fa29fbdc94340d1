//! Where the replay's paths lead: beneath the run's directory, always.

use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::Outcome;
use crate::archive::extract::split_member;

pub(super) const BENEATH: ResolveFlags = ResolveFlags::BENEATH;

/// How an open resolves its path: beneath the directory, with the RESOLVE_* flags an
/// openat2 was given (above its flags in A). RESOLVE_IN_ROOT confines as BENEATH does, and
/// the kernel refuses the two together.
pub(super) fn resolution(a: u64) -> ResolveFlags {
    let recorded = ResolveFlags::from_bits_truncate(a >> 32);
    if recorded.contains(ResolveFlags::IN_ROOT) {
        recorded
    } else {
        recorded | BENEATH
    }
}

/// `path` lexically normalized into `full` (`.` for the directory itself); `None` for an
/// absolute or climbing path.
pub(super) fn normalized<'b>(
    path: &[u8],
    parent: &mut Vec<u8>,
    full: &'b mut Vec<u8>,
) -> Option<&'b [u8]> {
    full.clear();
    if path == b"." {
        full.push(b'.');
        return Some(full);
    }
    let name = split_member(path, parent)?;
    full.extend_from_slice(parent);
    if !full.is_empty() {
        full.push(b'/');
    }
    full.extend_from_slice(name);
    Some(full)
}

/// The directory to make an `*at()` call in for `path`, and the name in it: the directory
/// itself with the normalized path when no symlink can exist below it, else the parent
/// opened beneath it by the kernel (held open by the first value).
pub(super) fn resolve<'b>(
    root: BorrowedFd<'_>,
    symlinks: bool,
    path: &'b [u8],
    parent: &mut Vec<u8>,
    full: &'b mut Vec<u8>,
) -> Result<(Option<OwnedFd>, &'b [u8]), Outcome> {
    if !symlinks {
        return normalized(path, parent, full)
            .map(|p| (None, p))
            .ok_or(Outcome::Refused);
    }
    if path == b"." {
        return Ok((None, path));
    }
    let name = split_member(path, parent).ok_or(Outcome::Refused)?;
    if parent.is_empty() {
        return Ok((None, name));
    }
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    match rustix::fs::openat2(root, &parent[..], flags, Mode::empty(), BENEATH) {
        Ok(fd) => Ok((Some(fd), name)),
        Err(Errno::XDEV) => Err(Outcome::Refused),
        Err(e) => Err(Outcome::Failed(e)),
    }
}

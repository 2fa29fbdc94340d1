//! The root's initial state: listed before a capture (names, types, sizes, hard links) and
//! made again, untimed, before a replay — with the archive extraction's rules, so that a
//! hostile trace cannot make anything outside the run's directory.

use std::collections::HashMap;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

use super::trace::{Entry, TraceWriter};
use crate::archive::extract::split_member;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::units::shown;

/// Lists everything below `root` into `out`, parents before children, names sorted.
pub fn snapshot<W: Write>(root: &Path, out: &mut TraceWriter<W>) -> anyhow::Result<u64> {
    let mut links: HashMap<(u64, u64), Vec<u8>> = HashMap::new();
    let mut stack = vec![Vec::new()];
    let mut count = 0;
    while let Some(rel) = stack.pop() {
        let dir = root.join(std::ffi::OsStr::from_bytes(&rel));
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| invalid(format!("--root: cannot list {}: {e}", dir.display())))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(|e| invalid(format!("--root: cannot list {}: {e}", dir.display())))?;
        names.sort();
        let mut subdirs = Vec::new();
        for name in names {
            let mut path = rel.clone();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(name.as_encoded_bytes());
            let full = dir.join(&name);
            let meta = std::fs::symlink_metadata(&full)
                .map_err(|e| invalid(format!("--root: {}: {e}", full.display())))?;
            let entry = if meta.is_dir() {
                subdirs.push(path.clone());
                Entry::Dir(path)
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&full)
                    .map_err(|e| invalid(format!("--root: {}: {e}", full.display())))?;
                Entry::Symlink(path, target.into_os_string().into_encoded_bytes())
            } else if meta.is_file() {
                match (meta.nlink() > 1)
                    .then(|| links.get(&(meta.dev(), meta.ino())))
                    .flatten()
                {
                    Some(first) => Entry::HardLink(path, first.clone()),
                    None => {
                        if meta.nlink() > 1 {
                            links.insert((meta.dev(), meta.ino()), path.clone());
                        }
                        Entry::File(path, meta.len())
                    }
                }
            } else {
                // FIFOs, sockets, devices: a replay has nothing to make them with.
                continue;
            };
            out.entry(&entry)?;
            count += 1;
        }
        // Depth first, in name order.
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(count)
}

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS);

/// Makes the initial state again below `dir`; files are filled with a pattern. An entry
/// outside the directory (`..`, absolute) is refused; one that cannot be made is an error.
pub(crate) fn recreate(dir: BorrowedFd<'_>, entries: &[Entry]) -> Result<u64, FsbenchError> {
    let mut parent = Vec::new();
    let mut refused = 0;
    let pattern = vec![0x5a_u8; 1 << 20];
    for e in entries {
        let path = match e {
            Entry::Dir(p) | Entry::File(p, _) | Entry::Symlink(p, _) | Entry::HardLink(p, _) => p,
        };
        let Some(name) = split_member(path, &mut parent) else {
            refused += 1;
            continue;
        };
        let fail = |what: &str, err: rustix::io::Errno| {
            FsbenchError::Failed(format!(
                "the trace's initial state: cannot make {what} {}: {err}",
                shown(path)
            ))
        };
        let at = open_dir(dir, &parent).map_err(|e| fail("the directory of", e))?;
        let at = at.as_ref().map_or(dir, |f| f.as_fd());
        match e {
            Entry::Dir(_) => {
                rustix::fs::mkdirat(at, name, Mode::from(0o755)).map_err(|e| fail("dir", e))?
            }
            Entry::Symlink(_, target) => rustix::fs::symlinkat(target.as_slice(), at, name)
                .map_err(|e| fail("symlink", e))?,
            Entry::File(_, size) => {
                let flags = OFlags::WRONLY
                    | OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC;
                let file = rustix::fs::openat(at, name, flags, Mode::from(0o644))
                    .map_err(|e| fail("file", e))?;
                let mut left = *size;
                while left > 0 {
                    let n = left.min(pattern.len() as u64) as usize;
                    let w = rustix::io::write(&file, &pattern[..n]).map_err(|e| fail("file", e))?;
                    left -= w as u64;
                }
            }
            Entry::HardLink(_, first) => {
                let mut first_parent = Vec::new();
                let Some(first_name) = split_member(first, &mut first_parent) else {
                    refused += 1;
                    continue;
                };
                let from =
                    open_dir(dir, &first_parent).map_err(|e| fail("the link's target of", e))?;
                let from = from.as_ref().map_or(dir, |f| f.as_fd());
                rustix::fs::linkat(from, first_name, at, name, AtFlags::empty())
                    .map_err(|e| fail("hard link", e))?
            }
        }
    }
    Ok(refused)
}

/// Directory `path` below `dir`, never through a symlink; `None` for `dir` itself.
fn open_dir(dir: BorrowedFd<'_>, path: &[u8]) -> rustix::io::Result<Option<OwnedFd>> {
    if path.is_empty() {
        return Ok(None);
    }
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::openat2(dir, path, flags, Mode::empty(), BENEATH).map(Some)
}

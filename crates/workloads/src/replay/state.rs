//! The root's state: listed before a capture (names, types, sizes, modes, hard links) and
//! made again, untimed, before a replay — with the archive extraction's rules, so that a
//! hostile trace cannot make anything outside the run's directory; listed again after the
//! program ran (the tree it left), and after a replay, to compare the two.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

use super::trace::{Entry, Left, OUTSIDE};
use crate::archive::extract::split_member;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::units::shown;

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS);

/// What [`walk`] calls for each entry: its path, its status, a symlink's target.
type Visit<'v> = dyn FnMut(&[u8], &rustix::fs::Stat, &[u8]) -> anyhow::Result<()> + 'v;

/// Everything below `dir`, parents before children, names sorted: each entry's path, its
/// status and a symlink's target. `skip` leaves a top-level name (and what it holds) out.
fn walk(dir: BorrowedFd<'_>, skip: &[u8], visit: &mut Visit<'_>) -> anyhow::Result<()> {
    let mut stack = vec![Vec::new()];
    let mut target = Vec::new();
    while let Some(rel) = stack.pop() {
        let shown_dir = if rel.is_empty() {
            ".".into()
        } else {
            shown(&rel)
        };
        let cannot = |e: rustix::io::Errno| invalid(format!("cannot list {shown_dir}: {e}"));
        let held = match rel.is_empty() {
            true => None,
            false => {
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
                Some(
                    rustix::fs::openat2(dir, &rel[..], flags, Mode::empty(), BENEATH)
                        .map_err(cannot)?,
                )
            }
        };
        let here = match &held {
            Some(fd) => fd.as_fd(),
            None => dir,
        };
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(here).map_err(cannot)? {
            let name = entry.map_err(cannot)?.file_name().to_bytes().to_vec();
            if name != b"." && name != b".." && !(rel.is_empty() && name == skip) {
                names.push(name);
            }
        }
        names.sort();
        let mut subdirs = Vec::new();
        for name in names {
            let mut path = rel.clone();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(&name);
            let stat = rustix::fs::statat(here, &name[..], AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| invalid(format!("{}: {e}", shown(&path))))?;
            target.clear();
            match FileType::from_raw_mode(stat.st_mode) {
                FileType::Directory => subdirs.push(path.clone()),
                FileType::Symlink => {
                    let t = rustix::fs::readlinkat(here, &name[..], Vec::new())
                        .map_err(|e| invalid(format!("{}: {e}", shown(&path))))?;
                    target.extend_from_slice(t.as_bytes());
                }
                _ => {}
            }
            visit(&path, &stat, &target)?;
        }
        // Depth first, in name order.
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(())
}

/// Lists everything below `root` as initial entries (FIFOs, sockets and devices left out:
/// a replay has nothing to make them with).
pub fn snapshot(root: &Path) -> anyhow::Result<Vec<Entry>> {
    let dir = open_root(root)?;
    let mut links: HashMap<(u64, u64), Vec<u8>> = HashMap::new();
    let mut entries = Vec::new();
    walk(dir.as_fd(), b"", &mut |path, stat, target| {
        let mode = stat.st_mode & 0o7777;
        let entry = match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => Entry::Dir(path.to_vec(), mode),
            FileType::Symlink => Entry::Symlink(path.to_vec(), target.to_vec()),
            FileType::RegularFile => {
                let id = (stat.st_dev, stat.st_ino);
                match (stat.st_nlink > 1).then(|| links.get(&id)).flatten() {
                    Some(first) => Entry::HardLink(path.to_vec(), first.clone()),
                    None => {
                        if stat.st_nlink > 1 {
                            links.insert(id, path.to_vec());
                        }
                        Entry::File(path.to_vec(), stat.st_size as u64, mode)
                    }
                }
            }
            _ => return Ok(()),
        };
        entries.push(entry);
        Ok(())
    })
    .map_err(|e| invalid(format!("--root {}: {e:#}", root.display())))?;
    Ok(entries)
}

/// The tree below `dir` as a replay's is compared with a program's: names, types, sizes,
/// modes and files' link counts; what the replay made for files from outside left out.
pub(super) fn left(dir: BorrowedFd<'_>) -> anyhow::Result<Vec<Left>> {
    let mut out = Vec::new();
    walk(dir, OUTSIDE, &mut |path, stat, target| {
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => b'd',
            FileType::Symlink => b'l',
            FileType::RegularFile => b'f',
            _ => return Ok(()),
        };
        out.push(Left {
            path: path.to_vec(),
            kind,
            size: match kind {
                b'f' => stat.st_size as u64,
                b'l' => target.len() as u64,
                _ => 0,
            },
            mode: if kind == b'l' {
                0o777
            } else {
                stat.st_mode & 0o7777
            },
            nlink: if kind == b'f' { stat.st_nlink } else { 1 },
            target: target.to_vec(),
        });
        Ok(())
    })?;
    Ok(out)
}

/// The tree the program left below `root`.
pub fn left_at(root: &Path) -> anyhow::Result<Vec<Left>> {
    let dir = open_root(root)?;
    left(dir.as_fd()).map_err(|e| invalid(format!("--root {}: {e:#}", root.display())))
}

fn open_root(root: &Path) -> anyhow::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::open(root, flags, Mode::empty())
        .map_err(|e| invalid(format!("--root {}: {e}", root.display())))
}

/// Makes the initial state again below `dir`; files are filled with a pattern, files and
/// directories get their modes (directories' last, so that a read-only one is filled
/// first). An entry outside the directory (`..`, absolute) is refused; one that cannot be
/// made is an error. `cancel` (Ctrl-C) stops it between entries and between MiB of a file.
pub(crate) fn recreate(
    dir: BorrowedFd<'_>,
    entries: &[Entry],
    cancel: &AtomicBool,
) -> Result<u64, FsbenchError> {
    let mut parent = Vec::new();
    let mut refused = 0;
    let pattern = vec![0x5a_u8; 1 << 20];
    let stopped = || cancel.load(Ordering::Relaxed);
    let mut dir_modes = Vec::new();
    for e in entries {
        if stopped() {
            return Err(FsbenchError::Interrupted);
        }
        let path = e.path();
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
            Entry::Dir(_, mode) => {
                rustix::fs::mkdirat(at, name, Mode::from(0o755)).map_err(|e| fail("dir", e))?;
                if *mode != 0o755 {
                    dir_modes.push((path, *mode));
                }
            }
            Entry::Symlink(_, target) => rustix::fs::symlinkat(target.as_slice(), at, name)
                .map_err(|e| fail("symlink", e))?,
            Entry::File(_, size, mode) => {
                let flags = OFlags::WRONLY
                    | OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC;
                let file = rustix::fs::openat(at, name, flags, Mode::from(0o600))
                    .map_err(|e| fail("file", e))?;
                match fill(&file, *size, &pattern, cancel) {
                    Ok(true) => return Err(FsbenchError::Interrupted),
                    Ok(false) => {}
                    Err(e) => return Err(fail("file", e)),
                }
                rustix::fs::fchmod(&file, Mode::from_bits_truncate(*mode))
                    .map_err(|e| fail("file", e))?;
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
    set_modes(dir, dir_modes)?;
    Ok(refused)
}

/// Writes `size` bytes of `pattern` to `file`, a MiB at a time; `true` when `cancel` stopped it.
fn fill(
    file: &OwnedFd,
    size: u64,
    pattern: &[u8],
    cancel: &AtomicBool,
) -> rustix::io::Result<bool> {
    let mut left = size;
    while left > 0 {
        if cancel.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let n = left.min(pattern.len() as u64) as usize;
        left -= rustix::io::write(file, &pattern[..n])? as u64;
    }
    Ok(false)
}

/// The directories' own modes, set once everything in them is made: children first, since a
/// directory made read-only no longer takes its children's modes.
fn set_modes(dir: BorrowedFd<'_>, dir_modes: Vec<(&[u8], u32)>) -> Result<(), FsbenchError> {
    for (path, mode) in dir_modes.into_iter().rev() {
        let fail = |err: rustix::io::Errno| {
            FsbenchError::Failed(format!(
                "the trace's initial state: cannot set the mode of {}: {err}",
                shown(path)
            ))
        };
        let held = open_dir(dir, path).map_err(fail)?;
        let held = held.as_ref().map_or(dir, |f| f.as_fd());
        let name = super::engine::ProcFd::of(held);
        let mode = Mode::from_bits_truncate(mode);
        rustix::fs::chmodat(rustix::fs::CWD, name.name(), mode, AtFlags::empty()).map_err(fail)?;
    }
    Ok(())
}

/// Directory `path` below `dir`, never through a symlink; `None` for `dir` itself.
fn open_dir(dir: BorrowedFd<'_>, path: &[u8]) -> rustix::io::Result<Option<OwnedFd>> {
    if path.is_empty() {
        return Ok(None);
    }
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::openat2(dir, path, flags, Mode::empty(), BENEATH).map(Some)
}

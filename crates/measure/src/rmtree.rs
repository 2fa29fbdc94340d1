//! `rm -rf` with getdents and unlinkat, depth first, one directory buffer per level (on the
//! stack), so memory does not grow with the tree.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};
use rustix::io::Errno;

use crate::error::FsbenchError;
use crate::measure::{OpKind, PhaseRecorder};

/// Below this depth the walk recurses (16 KiB of stack and one descriptor per level); deeper
/// subtrees are removed by [`remove_deep`], which holds one descriptor whatever the depth.
pub const MAX_DEPTH: usize = 256;

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Removes everything in `dir` (not `dir` itself); each removed entry is one unit.
pub fn remove_all_in(dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
    for _ in 0..3 {
        if remove_contents(dir, 0, rec)? == 0 {
            break;
        }
    }
    Ok(())
}

/// Removes `name` in `dir`, recursively; each removed entry is one unit.
pub fn remove(
    dir: BorrowedFd<'_>,
    name: &[u8],
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    remove_entry(dir, name, FileType::Unknown, 0, rec)
}

fn remove_entry(
    dir: BorrowedFd<'_>,
    name: &[u8],
    kind: FileType,
    depth: usize,
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    if kind != FileType::Directory {
        match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) => {
                rec.record(OpKind::Unlink, Ok(()))?;
                return rec.unit_done(0);
            }
            // Not a file after all (d_type unknown): fall through to the directory path.
            Err(Errno::ISDIR) | Err(Errno::PERM) if kind == FileType::Unknown => {}
            Err(e) => {
                rec.record::<()>(OpKind::Unlink, Err(e))?;
                rec.note_failure(|| String::from_utf8_lossy(name).into_owned());
                return Ok(());
            }
        }
    }
    if depth >= MAX_DEPTH {
        return remove_deep(dir, name, rec);
    }
    let Some(child) = rec.record(
        OpKind::OpenDir,
        rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty()),
    )?
    else {
        rec.note_failure(|| String::from_utf8_lossy(name).into_owned());
        return Ok(());
    };
    // Entries removed while reading may make getdents skip some: read again until empty.
    for _ in 0..3 {
        if remove_contents(child.as_fd(), depth, rec)? == 0 {
            break;
        }
    }
    drop(child);
    rec.record(OpKind::Close, Ok(()))?;
    let removed = rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR);
    if rec.record(OpKind::Rmdir, removed)?.is_some() {
        rec.unit_done(0)
    } else {
        rec.note_failure(|| String::from_utf8_lossy(name).into_owned());
        Ok(())
    }
}

/// Removes the directory `name` in `top` however deep it goes, iteratively: it descends into
/// the first non-empty subdirectory it finds, and climbs back through `..` (checked to be the
/// directory it came from) once a directory is empty, re-reading the parent from its start.
/// Slower than the recursive walk (directories are re-read), but with one descriptor and no
/// recursion: for the rare trees deeper than [`MAX_DEPTH`].
fn remove_deep(
    top: BorrowedFd<'_>,
    name: &[u8],
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    let open =
        |at: BorrowedFd<'_>, name: &[u8]| rustix::fs::openat(at, name, DIR_FLAGS, Mode::empty());
    let identity = |fd: BorrowedFd<'_>| rustix::fs::fstat(fd).map(|st| (st.st_dev, st.st_ino));
    let Some(mut current) = rec.record(OpKind::OpenDir, open(top, name))? else {
        rec.note_failure(|| String::from_utf8_lossy(name).into_owned());
        return Ok(());
    };
    // The names from `top` down to `current`, and the identities of their directories.
    let mut names: Vec<Vec<u8>> = vec![name.to_vec()];
    let mut ids = vec![identity(current.as_fd()).map_err(|e| errno_failure(name, e))?];
    let mut buf = vec![MaybeUninit::<u8>::uninit(); 16 << 10];
    loop {
        rustix::fs::seek(&current, rustix::fs::SeekFrom::Start(0))
            .map_err(|e| errno_failure(name, e))?;
        let (seen, removed, child) = sweep(current.as_fd(), &mut buf, rec)?;
        if let Some(child) = child {
            let Some(next) = rec.record(OpKind::OpenDir, open(current.as_fd(), &child))? else {
                rec.note_failure(|| String::from_utf8_lossy(&child).into_owned());
                return Ok(());
            };
            ids.push(identity(next.as_fd()).map_err(|e| errno_failure(&child, e))?);
            names.push(child);
            current = next;
            continue;
        }
        if seen > removed && removed > 0 {
            continue; // some went, others may now go (getdents may have skipped some)
        }
        // Empty (or nothing more can go): remove it from its parent and climb.
        let name = names.pop().expect("a directory is being removed");
        ids.pop();
        let parent = match ids.last() {
            None => None,
            Some(&expected) => {
                let parent = open(current.as_fd(), b"..").map_err(|e| errno_failure(&name, e))?;
                if identity(parent.as_fd()).ok() != Some(expected) {
                    return Err(FsbenchError::Failed(format!(
                        "rm -rf: a directory above {} moved during the removal",
                        String::from_utf8_lossy(&name)
                    )));
                }
                Some(parent)
            }
        };
        drop(current);
        let at = parent.as_ref().map_or(top, |p| p.as_fd());
        let removed = rustix::fs::unlinkat(at, &name, AtFlags::REMOVEDIR);
        if rec.record(OpKind::Rmdir, removed)?.is_some() {
            rec.unit_done(0)?;
        } else {
            rec.note_failure(|| String::from_utf8_lossy(&name).into_owned());
        }
        match parent {
            Some(parent) => current = parent,
            None => return Ok(()),
        }
    }
}

/// One pass over `current`: removes what it can until a subdirectory that is not empty;
/// returns the entries seen, those removed and that subdirectory's name, if one stopped it.
fn sweep(
    current: BorrowedFd<'_>,
    buf: &mut [MaybeUninit<u8>],
    rec: &mut PhaseRecorder,
) -> Result<(u64, u64, Option<Vec<u8>>), FsbenchError> {
    let (mut seen, mut removed, mut child) = (0u64, 0u64, None);
    let mut entries = RawDir::new(current, buf);
    while let Some(entry) = entries.next() {
        let Ok(entry) = entry else { break };
        let entry_name = entry.file_name().to_bytes();
        if entry_name == b"." || entry_name == b".." {
            continue;
        }
        seen += 1;
        let gone = if entry.file_type() == FileType::Directory {
            rustix::fs::unlinkat(current, entry_name, AtFlags::REMOVEDIR)
        } else {
            rustix::fs::unlinkat(current, entry_name, AtFlags::empty())
        };
        match gone {
            Ok(()) => {
                rec.record(OpKind::Unlink, Ok(()))?;
                rec.unit_done(0)?;
                removed += 1;
            }
            Err(Errno::NOTEMPTY) | Err(Errno::EXIST) => {
                child = Some(entry_name.to_vec());
                break;
            }
            Err(Errno::ISDIR) => {
                child = Some(entry_name.to_vec());
                break;
            }
            Err(e) => {
                rec.record::<()>(OpKind::Unlink, Err(e))?;
                rec.note_failure(|| String::from_utf8_lossy(entry_name).into_owned());
            }
        }
    }
    Ok((seen, removed, child))
}

fn errno_failure(name: &[u8], e: Errno) -> FsbenchError {
    FsbenchError::Failed(format!("rm -rf: {}: {e}", crate::units::shown(name)))
}

/// Removes everything in `dir`; returns how many entries it saw.
fn remove_contents(
    dir: BorrowedFd<'_>,
    depth: usize,
    rec: &mut PhaseRecorder,
) -> Result<u64, FsbenchError> {
    let mut buf = [MaybeUninit::<u8>::uninit(); 16 << 10];
    let mut entries = RawDir::new(dir, &mut buf);
    let mut seen = 0;
    // getdents reads the directory from where it left off, so the offset survives the
    // unlinks between calls; the stack buffer is refilled in place.
    while let Some(entry) = entries.next() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                rec.record::<()>(OpKind::OpenDir, Err(e))?;
                break;
            }
        };
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        seen += 1;
        let kind = entry.file_type();
        // The name lives in the getdents buffer, which recursion does not touch.
        let mut name_buf = [0u8; 256];
        let name = &mut name_buf[..name.len().min(255)];
        name.copy_from_slice(&entry.file_name().to_bytes()[..name.len()]);
        remove_entry(dir, name, kind, depth + 1, rec)?;
    }
    Ok(seen)
}

/// Removes `path` and everything below it, unmeasured, for cleaning up after a run. Unlike
/// `rm -rf`, which opens and reads every directory before removing it, it tries `rmdir`
/// first, so that each empty directory (an FFSB set's millions of `datadirN`) costs one call
/// and the tree goes about as fast as it was made. Like [`remove`], it works relative to
/// directory descriptors opened without following symlinks, so nothing outside is touched;
/// like `std::fs::remove_dir_all`, which it replaces, it holds one descriptor per level.
pub fn purge(path: &std::path::Path) -> std::io::Result<()> {
    let parent = path.parent().unwrap_or(std::path::Path::new("/"));
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other(format!("{}: no name", path.display())))?;
    let parent = rustix::fs::open(parent, DIR_FLAGS, Mode::empty())?;
    purge_at(parent.as_fd(), std::os::unix::ffi::OsStrExt::as_bytes(name))?;
    Ok(())
}

fn purge_at(dir: BorrowedFd<'_>, name: &[u8]) -> Result<(), Errno> {
    // Entries removed while reading may make getdents skip some: read again, twice.
    for _ in 0..3 {
        match rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
            Err(Errno::NOTEMPTY | Errno::EXIST) => {}
            done => return done,
        }
        let child = rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty())?;
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 16 << 10];
        let mut entries = RawDir::new(&child, &mut buf);
        while let Some(entry) = entries.next() {
            let entry = entry?;
            let entry_name = entry.file_name().to_bytes();
            if entry_name == b"." || entry_name == b".." {
                continue;
            }
            let removed = match entry.file_type() {
                FileType::Directory => purge_at(child.as_fd(), entry_name),
                kind => match rustix::fs::unlinkat(&child, entry_name, AtFlags::empty()) {
                    Err(Errno::ISDIR | Errno::PERM) if kind == FileType::Unknown => {
                        purge_at(child.as_fd(), entry_name)
                    }
                    other => other,
                },
            };
            // Gone already: someone else removed it.
            if !matches!(removed, Ok(()) | Err(Errno::NOENT)) {
                return removed;
            }
        }
    }
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    #[test]
    fn purge_removes_a_tree_and_nothing_a_symlink_in_it_names() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "precious").unwrap();
        let base = tempfile::tempdir().unwrap();
        let top = base.path().join("run1");
        for d in 0..300 {
            std::fs::create_dir_all(top.join(format!("data/datadir{d}"))).unwrap();
        }
        std::fs::create_dir_all(top.join("a/b/c")).unwrap();
        std::fs::write(top.join("a/b/c/f"), "x").unwrap();
        std::fs::write(top.join("a/f"), "x").unwrap();
        symlink(outside.path(), top.join("a/link")).unwrap();
        symlink(outside.path().join("keep"), top.join("data/datadir7/l")).unwrap();
        super::purge(&top).unwrap();
        assert!(!top.exists());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("keep")).unwrap(),
            "precious"
        );
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
    }

    #[test]
    fn purge_of_a_symlink_removes_nothing_it_names() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let base = tempfile::tempdir().unwrap();
        let link = base.path().join("run1");
        symlink(outside.path(), &link).unwrap();
        assert!(super::purge(&link).is_err());
        assert!(outside.path().join("keep").exists());
    }
}

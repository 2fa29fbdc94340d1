//! `rm -rf` with getdents and unlinkat, depth first, one directory buffer per level (on the
//! stack), so memory does not grow with the tree.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};
use rustix::io::Errno;

use crate::error::FsbenchError;
use crate::measure::{OpKind, PhaseRecorder};

/// Deeper trees are refused rather than risk the stack (16 KiB of it per level).
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
        return Err(FsbenchError::Failed(format!(
            "tree deeper than {MAX_DEPTH} levels"
        )));
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

//! Extraction in archive order, as GNU tar does it, with raw `*at()` calls relative to cached
//! parent directories. Members that would land outside the target — absolute paths, `..`, a
//! path through a symlink the archive made — are refused and counted, never written: parents
//! are opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), and files are created with
//! O_EXCL | O_NOFOLLOW, so nothing is ever written through a symlink.

use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::{Entry, EntryKind};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::{OpKind, PhaseRecorder};
use fsbench_measure::units::shown;

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);
const CREATE_FLAGS: OFlags = OFlags::WRONLY
    .union(OFlags::CREATE)
    .union(OFlags::EXCL)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS);

/// Normalizes a member path into `parent` (components joined by `/`) and returns its last
/// component, or `None` when the path is absolute, climbs with `..`, or is empty.
pub(crate) fn split_member<'p>(path: &'p [u8], parent: &mut Vec<u8>) -> Option<&'p [u8]> {
    if path.first() == Some(&b'/') {
        return None;
    }
    parent.clear();
    let mut last: Option<&[u8]> = None;
    for part in path
        .split(|&c| c == b'/')
        .filter(|p| !p.is_empty() && *p != b".")
    {
        if part == b".." || part.contains(&0) {
            return None;
        }
        if let Some(prev) = last.replace(part) {
            if !parent.is_empty() {
                parent.push(b'/');
            }
            parent.extend_from_slice(prev);
        }
    }
    last
}

/// An open directory and the member path it was opened for.
#[derive(Default)]
struct CachedDir {
    path: Vec<u8>,
    fd: Option<OwnedFd>,
}

/// Extracts entries below `root`.
pub(crate) struct Extractor<'a> {
    root: BorrowedFd<'a>,
    parent: CachedDir,
    link_parent: CachedDir,
    wanted: Vec<u8>,
    link_wanted: Vec<u8>,
    buf: Vec<u8>,
    /// True while no symlink exists below the root (it started empty and the archive has
    /// made none): a lexically checked path then cannot leave the root, so hard links can
    /// name their target by path, one linkat instead of opening its directory first.
    symlink_free: bool,
}

/// How opening a member's parent went.
enum Parent {
    Open,
    /// Refused (outside the target) or failed (counted already).
    Skip,
}

impl<'a> Extractor<'a> {
    pub(crate) fn new(root: BorrowedFd<'a>) -> Extractor<'a> {
        let empty = rustix::fs::Dir::read_from(root)
            .map(|mut d| {
                d.all(|e| e.is_ok_and(|e| matches!(e.file_name().to_bytes(), b"." | b"..")))
            })
            .unwrap_or(false);
        Extractor {
            symlink_free: empty,
            root,
            parent: CachedDir::default(),
            link_parent: CachedDir::default(),
            wanted: Vec::with_capacity(256),
            link_wanted: Vec::with_capacity(256),
            buf: vec![0; 128 << 10],
        }
    }

    fn fd<'c>(root: BorrowedFd<'c>, cache: &'c CachedDir) -> BorrowedFd<'c> {
        cache.fd.as_ref().map_or(root, |f| f.as_fd())
    }

    /// Makes `cache` hold the directory `wanted` (relative to the root), creating missing
    /// directories as GNU tar does.
    fn open(
        root: BorrowedFd<'a>,
        cache: &mut CachedDir,
        wanted: &[u8],
        member: &[u8],
        rec: &mut PhaseRecorder,
    ) -> Result<Parent, FsbenchError> {
        if wanted.is_empty() {
            cache.path.clear();
            cache.fd = None;
            return Ok(Parent::Open);
        }
        if cache.fd.is_some() && cache.path == wanted {
            return Ok(Parent::Open);
        }
        cache.fd = None;
        let mut result = rustix::fs::openat2(root, wanted, DIR_FLAGS, Mode::empty(), BENEATH);
        if matches!(result, Err(Errno::NOENT)) {
            make_dirs(root, wanted, rec)?;
            result = rustix::fs::openat2(root, wanted, DIR_FLAGS, Mode::empty(), BENEATH);
        }
        match result {
            Err(Errno::LOOP) | Err(Errno::XDEV) => {
                rec.refuse(|| format!("{}: path through a symlink", shown(member)));
                Ok(Parent::Skip)
            }
            other => match rec.record(OpKind::OpenDir, other)? {
                Some(fd) => {
                    cache.fd = Some(fd);
                    cache.path.clear();
                    cache.path.extend_from_slice(wanted);
                    Ok(Parent::Open)
                }
                None => {
                    rec.note_failure(|| shown(member));
                    Ok(Parent::Skip)
                }
            },
        }
    }

    /// Extracts one entry; `data` yields a file's content.
    pub(crate) fn extract(
        &mut self,
        e: &Entry<'_>,
        data: &mut dyn Read,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        let Some(name) = split_member(e.path, &mut self.wanted) else {
            // `./`, the first member of every `tar -C dir .`: the target itself, which exists.
            if e.kind == EntryKind::Dir && is_the_root(e.path) {
                return rec.unit_done(0);
            }
            rec.refuse(|| format!("{}: absolute or climbing path", shown(e.path)));
            return Ok(());
        };
        if let EntryKind::Other(why) = e.kind {
            rec.refuse(|| format!("{}: {why}", shown(e.path)));
            return Ok(());
        }
        if let Parent::Skip = Self::open(self.root, &mut self.parent, &self.wanted, e.path, rec)? {
            return Ok(());
        }
        let dir = Self::fd(self.root, &self.parent);
        let (done, bytes) = match e.kind {
            EntryKind::Dir => {
                let made = rustix::fs::mkdirat(dir, name, Mode::from(0o755));
                // An existing directory is fine, as for tar.
                let made = match made {
                    Err(Errno::EXIST) if is_dir(dir, name) => Ok(()),
                    made => made,
                };
                (rec.record(OpKind::Mkdir, made)?.is_some(), 0)
            }
            EntryKind::File => {
                let created = replacing(dir, name, || {
                    rustix::fs::openat(dir, name, CREATE_FLAGS, Mode::from(0o644))
                });
                match rec.record(OpKind::Create, created)? {
                    Some(file) => {
                        let bytes = copy(data, &file, &mut self.buf, e.size, rec)?;
                        drop(file);
                        rec.record(OpKind::Close, Ok(()))?;
                        (true, bytes)
                    }
                    None => (false, 0),
                }
            }
            EntryKind::Symlink => {
                // From now on a lexically checked path may pass through a symlink: every path
                // (hard links' targets too) goes through the symlink-refusing resolution.
                self.symlink_free = false;
                let made = replacing(dir, name, || rustix::fs::symlinkat(e.link, dir, name));
                (rec.record(OpKind::Symlink, made)?.is_some(), 0)
            }
            EntryKind::Fifo => {
                let made = replacing(dir, name, || mkfifo(dir, name));
                (rec.record(OpKind::Create, made)?.is_some(), 0)
            }
            EntryKind::Other(_) => unreachable!("refused above"),
            EntryKind::HardLink => match self.hard_link(e, name, rec)? {
                Some(done) => (done, 0),
                None => return Ok(()),
            },
        };
        if done {
            rec.unit_done(bytes)
        } else {
            rec.note_failure(|| shown(e.path));
            Ok(())
        }
    }

    /// A hard link `name` (in the member's parent) to the member's target: by the target's
    /// path while no symlink exists below the root, else in its opened parent. Whether it was
    /// made; `None` where the target is refused or its parent cannot be opened (counted).
    fn hard_link(
        &mut self,
        e: &Entry<'_>,
        name: &[u8],
        rec: &mut PhaseRecorder,
    ) -> Result<Option<bool>, FsbenchError> {
        let Some(target) = split_member(e.link, &mut self.link_wanted) else {
            rec.refuse(|| format!("{}: link to an absolute or climbing path", shown(e.path)));
            return Ok(None);
        };
        let dir = Self::fd(self.root, &self.parent);
        let link = |from: BorrowedFd<'_>, target: &[u8]| {
            replacing(dir, name, || {
                rustix::fs::linkat(from, target, dir, name, AtFlags::empty())
            })
        };
        let made = if self.symlink_free {
            // The normalized path: parent, '/', name.
            if !self.link_wanted.is_empty() {
                self.link_wanted.push(b'/');
            }
            self.link_wanted.extend_from_slice(target);
            link(self.root, &self.link_wanted)
        } else {
            let opened = Self::open(
                self.root,
                &mut self.link_parent,
                &self.link_wanted,
                e.path,
                rec,
            )?;
            if let Parent::Skip = opened {
                return Ok(None);
            }
            link(Self::fd(self.root, &self.link_parent), target)
        };
        Ok(Some(rec.record(OpKind::Link, made)?.is_some()))
    }
}

/// `make()`, and again after removing what is there if the name exists: an entry replaces
/// what is there (never writing through it), as GNU tar does.
fn replacing<T>(
    dir: BorrowedFd<'_>,
    name: &[u8],
    make: impl Fn() -> rustix::io::Result<T>,
) -> rustix::io::Result<T> {
    match make() {
        Err(Errno::EXIST) => {
            let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
            make()
        }
        made => made,
    }
}

fn mkfifo(dir: BorrowedFd<'_>, name: &[u8]) -> rustix::io::Result<()> {
    rustix::fs::mknodat(dir, name, rustix::fs::FileType::Fifo, Mode::from(0o644), 0)
}

/// A path of only `.` components (`.`, `./`, `.//./`): the extraction's root.
fn is_the_root(path: &[u8]) -> bool {
    !path.is_empty()
        && path
            .split(|&c| c == b'/')
            .all(|part| part.is_empty() || part == b".")
        && path[0] != b'/'
}

fn is_dir(dir: BorrowedFd<'_>, name: &[u8]) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
    })
}

/// Creates the missing directories of `path` below `root`, never following symlinks.
fn make_dirs(
    root: BorrowedFd<'_>,
    path: &[u8],
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    let mut end = 0;
    while end < path.len() {
        end = path[end + 1..]
            .iter()
            .position(|&c| c == b'/')
            .map_or(path.len(), |p| end + 1 + p);
        let prefix = &path[..end];
        let (parent, name) = match prefix.iter().rposition(|&c| c == b'/') {
            Some(i) => (&prefix[..i], &prefix[i + 1..]),
            None => (&prefix[..0], prefix),
        };
        let dir = if parent.is_empty() {
            None
        } else {
            match rustix::fs::openat2(root, parent, DIR_FLAGS, Mode::empty(), BENEATH) {
                Ok(fd) => Some(fd),
                Err(_) => return Ok(()),
            }
        };
        let at = dir.as_ref().map_or(root, |f| f.as_fd());
        let made = rustix::fs::mkdirat(at, name, Mode::from(0o755));
        if made != Err(Errno::EXIST) {
            rec.record(OpKind::Mkdir, made)?;
        }
    }
    Ok(())
}

/// Copies a file's content from the archive, in 128 KiB writes.
fn copy(
    data: &mut dyn Read,
    file: &OwnedFd,
    buf: &mut [u8],
    size: u64,
    rec: &mut PhaseRecorder,
) -> Result<u64, FsbenchError> {
    let mut total = 0u64;
    while total < size {
        let want = buf.len().min((size - total) as usize);
        let n = match data.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FsbenchError::Failed(format!("reading the archive: {e}"))),
        };
        let mut off = 0;
        while off < n {
            match rec.record(OpKind::Write, rustix::io::write(file, &buf[off..n]))? {
                Some(0) | None => return Ok(total + off as u64),
                Some(w) => off += w,
            }
        }
        total += n as u64;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(p: &str) -> Option<(String, String)> {
        let mut parent = Vec::new();
        let name = split_member(p.as_bytes(), &mut parent)?;
        Some((
            String::from_utf8(parent).unwrap(),
            String::from_utf8(name.to_vec()).unwrap(),
        ))
    }

    #[test]
    fn member_paths_are_normalized_or_refused() {
        assert_eq!(split("a/b/c"), Some(("a/b".into(), "c".into())));
        assert_eq!(split("./a//b/"), Some(("a".into(), "b".into())));
        assert_eq!(split("top"), Some(("".into(), "top".into())));
        assert_eq!(split("/etc/passwd"), None);
        assert_eq!(split("../x"), None);
        assert_eq!(split("a/../../x"), None);
        assert_eq!(split("./"), None);
        assert_eq!(split(""), None);
    }
}

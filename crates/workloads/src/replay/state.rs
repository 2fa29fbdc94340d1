//! The root's state: listed before a capture (names, types, sizes, modes, hard links) and
//! made again, untimed, before a replay — with the archive extraction's rules, so that a
//! hostile trace cannot make anything outside the run's directory; listed again after the
//! program ran (the tree it left), and after a replay, to compare the two (in one order, see
//! [`walk_order`], entry by entry). Each entry with its extended attributes
//! ([`xattrs`]).

mod xattrs;

use std::cmp::Ordering as Order;
use std::collections::HashMap;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

use super::load::open_to_others;
use super::trace::{Entry, Left, OUTSIDE, Xattr, entry_line, xattr_line};
use crate::archive::extract::split_member;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::units::shown;
use xattrs::Setter;
pub(crate) use xattrs::Unmade;

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS);

/// What [`walk`] calls for each entry: its path, its status, a symlink's target, its
/// attributes.
type Visit<'v> = dyn FnMut(&[u8], &rustix::fs::Stat, &[u8], &[Xattr]) -> anyhow::Result<()> + 'v;

/// Everything below `dir`, parents before children, names sorted: each entry's path, its
/// status, a symlink's target and, with `xattrs`, the attributes of directories, files and
/// symlinks. `skip` leaves a top-level name (and what it holds) out.
fn walk(
    dir: BorrowedFd<'_>,
    skip: &[u8],
    xattrs: bool,
    visit: &mut Visit<'_>,
) -> anyhow::Result<()> {
    let mut stack = vec![Vec::new()];
    let (mut target, mut found) = (Vec::new(), Vec::new());
    let mut lister = xattrs.then(xattrs::Lister::new);
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
            let kind = FileType::from_raw_mode(stat.st_mode);
            match kind {
                FileType::Directory => subdirs.push(path.clone()),
                FileType::Symlink => {
                    let t = rustix::fs::readlinkat(here, &name[..], Vec::new())
                        .map_err(|e| invalid(format!("{}: {e}", shown(&path))))?;
                    target.extend_from_slice(t.as_bytes());
                }
                _ => {}
            }
            found.clear();
            let listed = matches!(
                kind,
                FileType::Directory | FileType::Symlink | FileType::RegularFile
            );
            if let Some(lister) = lister.as_mut().filter(|_| listed) {
                let symlink = kind == FileType::Symlink;
                lister.list(here, &name, symlink, &mut found).map_err(|e| {
                    invalid(format!(
                        "cannot list the attributes of {}: {e}",
                        shown(&path)
                    ))
                })?;
            }
            visit(&path, &stat, &target, &found)?;
        }
        // Depth first, in name order.
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(())
}

/// What [`snapshot`] kept of the root's state in memory, the rest written as it was walked:
/// the number of entries, and the symlinks (which the parser follows; as many as the user's
/// tree has, usually few).
#[derive(Debug, Default)]
pub struct Snapshot {
    pub entries: u64,
    pub symlinks: Vec<Entry>,
}

/// Lists everything below `root` as initial entries with their attributes (FIFOs, sockets
/// and devices left out: a replay has nothing to make them with), writing their lines to
/// the new file `out` as it walks, so that memory does not grow with the entries: only the
/// first name of each file with more than one link is held (its further names are written
/// as links to it), and the symlinks.
pub fn snapshot(root: &Path, out: &Path) -> anyhow::Result<Snapshot> {
    let dir = open_root(root)?;
    let unwritten = |e: std::io::Error| FsbenchError::Failed(format!("{}: {e}", out.display()));
    let file = std::fs::File::create(out).map_err(unwritten)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut links: HashMap<(u64, u64), Vec<u8>> = HashMap::new();
    let mut state = Snapshot::default();
    let mut line = Vec::new();
    walk(dir.as_fd(), b"", true, &mut |path, stat, target, xattrs| {
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
        line.clear();
        entry_line(&entry, &mut line)?;
        line.push(b'\n');
        // A hard link's attributes are its first name's, listed with it.
        if !matches!(entry, Entry::HardLink(..)) {
            for x in xattrs {
                xattr_line(b"x", path, x, true, &mut line)?;
                line.push(b'\n');
            }
        }
        out.write_all(&line)?;
        state.entries += 1;
        if let Entry::Symlink(..) = entry {
            state.symlinks.push(entry);
        }
        Ok(())
    })
    // The walk's own errors are the root's; an I/O error, the file's.
    .map_err(|e| match e.downcast::<std::io::Error>() {
        Ok(e) => unwritten(e).into(),
        Err(e) => invalid(format!("--root {}: {e:#}", root.display())),
    })?;
    out.flush().map_err(unwritten)?;
    Ok(state)
}

/// Each entry of the tree below `dir` in [`walk`]'s order (see [`walk_order`]), as a
/// replay's is compared with a program's: names, types, sizes, modes, files' link counts and,
/// with `xattrs`, the attributes' names and sizes; what the replay made for files from
/// outside left out. One [`Left`] is reused throughout.
pub(super) fn each_left(
    dir: BorrowedFd<'_>,
    xattrs: bool,
    visit: &mut dyn FnMut(&Left) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut one = Left::default();
    walk(dir, OUTSIDE, xattrs, &mut |path, stat, target, xattrs| {
        one.kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => b'd',
            FileType::Symlink => b'l',
            FileType::RegularFile => b'f',
            _ => return Ok(()),
        };
        one.path.clear();
        one.path.extend_from_slice(path);
        one.size = match one.kind {
            b'f' => stat.st_size as u64,
            b'l' => target.len() as u64,
            _ => 0,
        };
        one.mode = match one.kind {
            b'l' => 0o777,
            _ => stat.st_mode & 0o7777,
        };
        one.nlink = if one.kind == b'f' { stat.st_nlink } else { 1 };
        one.target.clear();
        one.target.extend_from_slice(target);
        one.xattrs.clear();
        // The values are not compared: a replay's are a pattern.
        let sized = xattrs.iter().map(|x| Xattr {
            value: None,
            ..x.clone()
        });
        one.xattrs.extend(sized);
        visit(&one)
    })
}

/// The order [`walk`] lists paths in: by their directory, directories in depth-first order
/// of their names (a directory's path compared component by component, so `a/b/x` before
/// `a/b0`), then by name. A tree walked twice, or two trees, come in this order, so that
/// they can be compared entry by entry.
pub(super) fn walk_order(a: &[u8], b: &[u8]) -> Order {
    fn split(path: &[u8]) -> (&[u8], &[u8]) {
        match path.iter().rposition(|&c| c == b'/') {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => (&[], path),
        }
    }
    fn components(dir: &[u8]) -> impl Iterator<Item = &[u8]> {
        dir.split(|&c| c == b'/')
    }
    let ((dir_a, name_a), (dir_b, name_b)) = (split(a), split(b));
    (components(dir_a).cmp(components(dir_b))).then(name_a.cmp(name_b))
}

/// Each entry of the tree the program left below `root`, as [`each_left`] visits them.
pub fn each_left_at(
    root: &Path,
    visit: &mut dyn FnMut(&Left) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let dir = open_root(root)?;
    each_left(dir.as_fd(), true, visit)
        .map_err(|e| invalid(format!("--root {}: {e:#}", root.display())))
}

/// What making the initial state found.
pub(crate) struct Made {
    /// The entries refused (outside the directory).
    pub refused: u64,
    /// Whether a directory got a mode that lets other users move names in it.
    pub open: bool,
    /// The attributes that could not be made.
    pub unmade: Unmade,
}

fn open_root(root: &Path) -> anyhow::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::open(root, flags, Mode::empty())
        .map_err(|e| invalid(format!("--root {}: {e}", root.display())))
}

/// Makes the trace's initial state again below `dir`, reading it as a stream; files are
/// filled with a pattern and get their attributes and modes, directories and symlinks their
/// attributes, directories their modes once everything is made (so that a read-only one is
/// filled first). An entry outside the directory (`..`, absolute) is refused; one that
/// cannot be made is an error, an attribute the target refuses is counted. `cancel`
/// (Ctrl-C) stops it between entries and between MiB of a file.
pub(crate) fn recreate(
    dir: BorrowedFd<'_>,
    trace: Option<&Path>,
    cancel: &AtomicBool,
) -> Result<Made, FsbenchError> {
    let mut parent = Vec::new();
    let mut refused = 0;
    let mut setter = Setter::default();
    let pattern = vec![0x5a_u8; 1 << 20];
    let mut entries = Entries::open(trace)?;
    while let Some(e) = entries.next_entry()? {
        if cancel.load(Ordering::Relaxed) {
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
        let set_xattrs =
            |setter: &mut Setter| setter.set(at, name, path, entries.0.xattrs(), &pattern);
        match &e {
            Entry::Dir(..) => {
                rustix::fs::mkdirat(at, name, Mode::from(0o755)).map_err(|e| fail("dir", e))?
            }
            Entry::Symlink(_, target) => rustix::fs::symlinkat(target.as_slice(), at, name)
                .map_err(|e| fail("symlink", e))?,
            Entry::File(_, size, mode) => {
                let file = match new_file(at, name, *size, &pattern, cancel) {
                    Ok(Some(file)) => file,
                    Ok(None) => return Err(FsbenchError::Interrupted),
                    Err(e) => return Err(fail("file", e)),
                };
                // Before the mode: a read-only file's `user.` attributes take the right to
                // write it (an ACL's mask and the mode agree, whichever is set last).
                set_xattrs(&mut setter);
                rustix::fs::fchmod(&file, Mode::from_bits_truncate(*mode))
                    .map_err(|e| fail("file", e))?;
                continue;
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
        set_xattrs(&mut setter);
    }
    // One trace's decoder at a time (its window is up to 8 MiB).
    drop(entries);
    let open = set_modes(dir, trace)?;
    Ok(Made {
        refused,
        open,
        unmade: setter.unmade,
    })
}

/// A new file `name` in `at` (mode 600), filled with `size` bytes of `pattern`; `None` when
/// `cancel` stopped it.
fn new_file(
    at: BorrowedFd<'_>,
    name: &[u8],
    size: u64,
    pattern: &[u8],
    cancel: &AtomicBool,
) -> rustix::io::Result<Option<OwnedFd>> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file = rustix::fs::openat(at, name, flags, Mode::from(0o600))?;
    Ok((!fill(&file, size, pattern, cancel)?).then_some(file))
}

/// The initial state's entries, read from the trace as a stream.
struct Entries(super::trace::TraceReader);

impl Entries {
    fn open(trace: Option<&Path>) -> Result<Entries, FsbenchError> {
        let reader = super::trace::TraceReader::open(trace)
            .map_err(|e| FsbenchError::InvalidInput(format!("{e:#}")))?;
        Ok(Entries(reader))
    }

    fn next_entry(&mut self) -> Result<Option<Entry>, FsbenchError> {
        (self.0.entry()).map_err(|e| FsbenchError::InvalidInput(format!("{e:#}")))
    }
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

/// The directories' own modes, set once everything in them is made, in a second pass over
/// the trace. Setting a mode takes only the search right on the directories above, so the
/// modes are set as they come, parents first, but for directories whose owner may not search
/// them (as a user that is not root, nothing below one could be reached after it): those are
/// kept, rare as they are, and set last, children first. Whether one of the modes lets other
/// users move names ([`open_to_others`]).
fn set_modes(dir: BorrowedFd<'_>, trace: Option<&Path>) -> Result<bool, FsbenchError> {
    let mut unsearchable = Vec::new();
    let mut parent = Vec::new();
    let mut open = false;
    let mut entries = Entries::open(trace)?;
    while let Some(e) = entries.next_entry()? {
        let Entry::Dir(path, mode) = e else { continue };
        open |= open_to_others(mode);
        if mode == 0o755 || split_member(&path, &mut parent).is_none() {
            continue;
        }
        match mode & 0o100 {
            0 => unsearchable.push((path, mode)),
            _ => set_mode(dir, &path, mode)?,
        }
    }
    for (path, mode) in unsearchable.into_iter().rev() {
        set_mode(dir, &path, mode)?;
    }
    Ok(open)
}

fn set_mode(dir: BorrowedFd<'_>, path: &[u8], mode: u32) -> Result<(), FsbenchError> {
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
    rustix::fs::chmodat(rustix::fs::CWD, name.name(), mode, AtFlags::empty()).map_err(fail)
}

/// Directory `path` below `dir`, never through a symlink; `None` for `dir` itself.
fn open_dir(dir: BorrowedFd<'_>, path: &[u8]) -> rustix::io::Result<Option<OwnedFd>> {
    if path.is_empty() {
        return Ok(None);
    }
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::openat2(dir, path, flags, Mode::empty(), BENEATH).map(Some)
}

//! Where the replay's paths lead: beneath the run's directory, whatever races with a call.
//! No call checks a name and then uses it again: every name is resolved once, by the kernel
//! (`openat2` with `RESOLVE_BENEATH`), into a descriptor, and the call is made on that
//! descriptor — on the parent directory and the last name, for the calls that do not follow
//! a last symlink, or on the file itself (an `O_PATH` descriptor) for those that do. A rename
//! racing with the call can change which file inside the directory it reaches, never make it
//! reach one outside. Parent directories stay open between calls ([`Dirs`]) until a rename
//! or a directory's removal anywhere in the replay: a call on a name is then the one system
//! call the program made.

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::Outcome;
use crate::archive::extract::split_member;
pub(crate) use fsbench_measure::calls::ProcFd;

/// How every replayed name is resolved: beneath the run's directory, and never through a
/// `/proc` magic link (which could lead anywhere).
pub(super) const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);
/// How often a resolution is tried again when the kernel asks to (`EAGAIN`: a rename raced
/// with a walk through `..`, which the kernel cannot then vouch for).
const TRIES: u32 = 16;

/// How an open resolves its path: beneath the directory, with the RESOLVE_* flags an
/// openat2 was given (above its flags in A). RESOLVE_IN_ROOT confines as BENEATH does, and
/// the kernel refuses the two together.
pub(super) fn resolution(a: u64) -> ResolveFlags {
    let recorded = ResolveFlags::from_bits_truncate(a >> 32);
    if recorded.contains(ResolveFlags::IN_ROOT) {
        recorded | ResolveFlags::NO_MAGICLINKS
    } else {
        recorded | BENEATH
    }
}

/// Opens `path` (a C string, see [`Scratch::normalized`]) beneath `root`; a path that leads outside
/// is refused.
pub(super) fn open_beneath(
    root: BorrowedFd<'_>,
    path: &CStr,
    flags: OFlags,
    mode: Mode,
    resolve: ResolveFlags,
) -> Result<OwnedFd, Outcome> {
    let mut tries = 1;
    loop {
        match rustix::fs::openat2(root, path, flags | OFlags::CLOEXEC, mode, resolve) {
            Ok(fd) => return Ok(fd),
            Err(Errno::AGAIN) if tries < TRIES => tries += 1,
            Err(Errno::XDEV) => return Err(Outcome::Refused),
            Err(e) => return Err(Outcome::Failed(e)),
        }
    }
}

/// The file `path` names, as an `O_PATH` descriptor opened beneath `root`: the last symlink
/// followed (beneath `root` too) when `follow`, else the symlink itself.
pub(super) fn file(
    root: BorrowedFd<'_>,
    path: &[u8],
    follow: bool,
    scratch: &mut Scratch,
) -> Result<OwnedFd, Outcome> {
    let path = scratch.normalized(path)?;
    let nofollow = if follow {
        OFlags::empty()
    } else {
        OFlags::NOFOLLOW
    };
    open_beneath(root, path, OFlags::PATH | nofollow, Mode::empty(), BENEATH)
}

/// Reused buffers for resolving one path without allocating.
#[derive(Default)]
pub(super) struct Scratch {
    parent: Vec<u8>,
    full: Vec<u8>,
}

impl Scratch {
    /// `path` lexically normalized, as a C string (`.` for the directory itself); an
    /// absolute or climbing path (`..`) is refused.
    pub(super) fn normalized(&mut self, path: &[u8]) -> Result<&CStr, Outcome> {
        let Scratch { parent, full } = self;
        full.clear();
        if path == b"." {
            full.push(b'.');
        } else {
            let name = split_member(path, parent).ok_or(Outcome::Refused)?;
            full.extend_from_slice(parent);
            if !full.is_empty() {
                full.push(b'/');
            }
            full.extend_from_slice(name);
        }
        c_string(full)
    }
}

/// A worker's directories kept open between calls, so that a call on a name in one of them
/// is the one system call the program made, not an `openat2` of the directory, the call
/// and a `close`. Only a directory reached through no symlink is kept: its path can then
/// lead elsewhere only after a rename or a directory's removal, which every worker counts in
/// `moved` (shared by the replay's threads and processes); a worker that sees the count
/// change closes them all. Fixed slots, chosen by the path's hash: memory and descriptors
/// stay bounded whatever the number of directories. No directory is kept (`moved` is
/// `None`) where another user's process could move one out of the run's directory: where
/// some directory there may be written by others
/// ([`crate::replay::load::open_to_others`]).
pub(super) struct Dirs<'a> {
    slots: Vec<Slot>,
    /// `moved` when the slots were last checked.
    seen: u64,
    moved: Option<&'a AtomicU64>,
}

#[derive(Default)]
struct Slot {
    path: Vec<u8>,
    fd: Option<OwnedFd>,
}

/// Directories a worker keeps open: few enough that a program's own descriptors near the
/// limit are not crowded out (and an `EMFILE` empties them).
const SLOTS: usize = 32;

/// Where a call on a path's last name is made: the run's directory itself, a directory kept
/// in a slot, or one opened for this call only.
pub(super) enum Parent {
    Root,
    Kept(usize),
    Held(OwnedFd),
}

impl Parent {
    fn slot(&self) -> Option<usize> {
        match self {
            Parent::Kept(i) => Some(*i),
            _ => None,
        }
    }
}

impl<'a> Dirs<'a> {
    pub(super) fn new(moved: Option<&'a AtomicU64>) -> Dirs<'a> {
        let slots = if moved.is_some() { SLOTS } else { 0 };
        Dirs {
            slots: (0..slots).map(|_| Slot::default()).collect(),
            seen: moved.map_or(0, |m| m.load(Ordering::Acquire)),
            moved,
        }
    }

    /// A directory was renamed or removed (or a rename moved something else over a name):
    /// every worker's kept directories may now stand for other paths. Counted before the
    /// call that made it is counted done, so that a call that waits for it sees the count.
    pub(super) fn moved(&self) {
        if let Some(moved) = self.moved {
            moved.fetch_add(1, Ordering::Release);
        }
    }

    /// Closes the kept directories but `keep` (they may hold the descriptor a call needs).
    pub(super) fn close_all_but(&mut self, keep: Option<usize>) {
        for (i, s) in self.slots.iter_mut().enumerate() {
            if keep != Some(i) {
                s.fd = None;
            }
        }
    }

    /// The directory a call on `path`'s last name is made in, and that name, as a C string
    /// in `scratch`. The name is one component, never `..`: a call that does not follow it
    /// stays in that directory. The second path of a call passes the first's [`Parent`] as
    /// `keep`, which is then never evicted.
    pub(super) fn parent_and_name<'b>(
        &mut self,
        root: BorrowedFd<'_>,
        path: &[u8],
        scratch: &'b mut Scratch,
        keep: Option<&Parent>,
    ) -> Result<(Parent, &'b CStr), Outcome> {
        let Scratch { parent, full } = scratch;
        full.clear();
        if path == b"." {
            full.push(b'.');
            return Ok((Parent::Root, c_string(full)?));
        }
        let name = split_member(path, parent).ok_or(Outcome::Refused)?;
        full.extend_from_slice(name);
        let dir = if parent.is_empty() {
            Parent::Root
        } else {
            self.directory(root, parent, keep.and_then(Parent::slot))?
        };
        Ok((dir, c_string(full)?))
    }

    /// The directory `path` (a relative, normalized, non-empty path) names, kept where it
    /// can be; the slot `keep` stays as it is.
    fn directory(
        &mut self,
        root: BorrowedFd<'_>,
        path: &mut Vec<u8>,
        keep: Option<usize>,
    ) -> Result<Parent, Outcome> {
        let flags = OFlags::PATH | OFlags::DIRECTORY;
        let Some(moved) = self.moved else {
            let dir = c_string(path)?;
            return Ok(Parent::Held(open_beneath(
                root,
                dir,
                flags,
                Mode::empty(),
                BENEATH,
            )?));
        };
        let now = moved.load(Ordering::Acquire);
        if now != self.seen {
            self.close_all_but(keep);
            self.seen = now;
        }
        let i = (crate::replay::load::path_key(path) % SLOTS as u64) as usize;
        if self.slots[i].fd.is_some() && self.slots[i].path == *path {
            return Ok(Parent::Kept(i));
        }
        let len = path.len();
        let dir = c_string(path)?;
        let plain = BENEATH | ResolveFlags::NO_SYMLINKS;
        let mut opened = open_beneath(root, dir, flags, Mode::empty(), plain);
        if matches!(opened, Err(Outcome::Failed(Errno::MFILE))) {
            self.close_all_but(keep);
            opened = open_beneath(root, dir, flags, Mode::empty(), plain);
        }
        let parent = match opened {
            Ok(fd) if keep != Some(i) => {
                let slot = &mut self.slots[i];
                slot.path.clear();
                slot.path.extend_from_slice(&dir.to_bytes()[..len]);
                slot.fd = Some(fd);
                Parent::Kept(i)
            }
            Ok(fd) => Parent::Held(fd),
            // Through a symlink (beneath the directory still): not kept, as a change to the
            // symlink would not be seen.
            Err(Outcome::Failed(Errno::LOOP)) => {
                Parent::Held(open_beneath(root, dir, flags, Mode::empty(), BENEATH)?)
            }
            Err(o) => return Err(o),
        };
        Ok(parent)
    }

    /// The descriptor of `parent`.
    pub(super) fn fd<'s>(&'s self, root: BorrowedFd<'s>, parent: &'s Parent) -> BorrowedFd<'s> {
        match parent {
            Parent::Root => root,
            // Only `directory` empties a slot, and never the one a call still holds.
            Parent::Kept(i) => (self.slots[*i].fd.as_ref())
                .expect("a kept directory stays open until its call is made")
                .as_fd(),
            Parent::Held(fd) => fd.as_fd(),
        }
    }
}

/// `bytes` with a NUL appended, as a C string; a byte string holding a NUL names nothing.
pub(super) fn c_string(bytes: &mut Vec<u8>) -> Result<&CStr, Outcome> {
    bytes.push(0);
    CStr::from_bytes_with_nul(bytes).map_err(|_| Outcome::Failed(Errno::INVAL))
}

/// `fchmodat2(dir, name, mode, AT_SYMLINK_NOFOLLOW)` on one name in `dir`: a symlink's own
/// mode cannot change (`EOPNOTSUPP`), anything else's does. Before Linux 6.6 (`ENOSYS`) as
/// glibc makes it: the name opened without following it, refused if a symlink, else changed
/// by its `/proc` name.
pub(super) fn chmod_nofollow(dir: BorrowedFd<'_>, name: &CStr, mode: Mode) -> Result<(), Errno> {
    // SAFETY: a plain system call; `name` is a C string that outlives it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_fchmodat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            mode.bits(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let errno = super::data::last_errno();
    if errno != Errno::NOSYS {
        return Err(errno);
    }
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file = rustix::fs::openat(dir, name, flags, Mode::empty())?;
    if rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&file)?.st_mode).is_symlink() {
        return Err(Errno::OPNOTSUPP);
    }
    let proc = ProcFd::of(std::os::fd::AsFd::as_fd(&file));
    rustix::fs::chmodat(
        rustix::fs::CWD,
        proc.name(),
        mode,
        rustix::fs::AtFlags::empty(),
    )
}

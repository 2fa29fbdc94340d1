//! Where the replay's paths lead: beneath the run's directory, whatever races with a call.
//! No call checks a name and then uses it again: every name is resolved once, by the kernel
//! (`openat2` with `RESOLVE_BENEATH`), into a descriptor, and the call is made on that
//! descriptor — on the parent directory and the last name, for the calls that do not follow
//! a last symlink, or on the file itself (an `O_PATH` descriptor) for those that do. A rename
//! racing with the call can change which file inside the directory it reaches, never make it
//! reach one outside.

use std::ffi::CStr;
use std::io::Write;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::Outcome;
use crate::archive::extract::split_member;

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

/// The directory a call on `path`'s last name is made in — `root` itself (`None`) or its
/// subdirectory opened beneath it, held open by the descriptor returned — and that name,
/// as a C string in `scratch`. The name is one component, never `..`: a call that does not
/// follow it stays in that directory.
pub(super) fn parent_and_name<'b>(
    root: BorrowedFd<'_>,
    path: &[u8],
    scratch: &'b mut Scratch,
) -> Result<(Option<OwnedFd>, &'b CStr), Outcome> {
    let Scratch { parent, full } = scratch;
    full.clear();
    if path == b"." {
        full.push(b'.');
        return Ok((None, c_string(full)?));
    }
    let name = split_member(path, parent).ok_or(Outcome::Refused)?;
    full.extend_from_slice(name);
    let held = if parent.is_empty() {
        None
    } else {
        let dir = c_string(parent)?;
        let flags = OFlags::PATH | OFlags::DIRECTORY;
        Some(open_beneath(root, dir, flags, Mode::empty(), BENEATH)?)
    };
    Ok((held, c_string(full)?))
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

/// `/proc/thread-self/fd/N`: the name of the file an `O_PATH` descriptor is, for the calls
/// that have no form taking such a descriptor (chmod, utimens, the xattr calls). The
/// kernel follows it to that file and no further. `thread-self`, not `self`: each replay
/// thread has a descriptor table of its own, and `/proc/self/fd` shows the process's.
pub(crate) struct ProcFd([u8; 40]);

impl ProcFd {
    pub(crate) fn of(fd: BorrowedFd<'_>) -> ProcFd {
        let mut name = [0u8; 40];
        let mut at = &mut name[..];
        // 19 bytes and at most 11 digits (and the NUL, already there) always fit.
        let _ = write!(at, "/proc/thread-self/fd/{}", fd.as_raw_fd());
        ProcFd(name)
    }

    pub(crate) fn name(&self) -> &CStr {
        CStr::from_bytes_until_nul(&self.0).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::{AsFd, AsRawFd};

    use rustix::fs::{Mode, OFlags};

    use super::ProcFd;

    #[test]
    fn proc_fd_names_the_threads_own_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let (mine, process) = (dir.path().join("mine"), dir.path().join("process"));
        std::fs::write(&mine, b"").unwrap();
        std::fs::write(&process, b"").unwrap();
        let open = |p: &std::path::Path| {
            rustix::fs::open(p, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).unwrap()
        };
        let theirs = open(&process);
        let number = theirs.as_raw_fd();
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: affects this thread only, which then replaces its copy of `number`.
                assert_eq!(unsafe { libc::unshare(libc::CLONE_FILES) }, 0);
                unsafe { libc::close(number) };
                let own = open(&mine);
                // The same number: the process's table still has the other file there.
                assert_eq!(own.as_raw_fd(), number);
                let named = rustix::fs::stat(ProcFd::of(own.as_fd()).name()).unwrap();
                let real = rustix::fs::fstat(&own).unwrap();
                assert_eq!((named.st_dev, named.st_ino), (real.st_dev, real.st_ino));
            });
        });
        let still = rustix::fs::fstat(&theirs).unwrap();
        let process_file = rustix::fs::stat(&process).unwrap();
        assert_eq!(still.st_ino, process_file.st_ino);
    }
}

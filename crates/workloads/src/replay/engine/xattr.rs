//! The extended-attribute calls' pieces: the call on a descriptor, on a name in its
//! directory without following it (on any kernel), the attribute's name and setxattr's
//! flags.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd};

use rustix::fs::XattrFlags;
use rustix::io::Errno;

use super::Outcome;
use super::paths::{ProcFd, c_string};
use crate::replay::load::{Op, ThreadCalls};
use crate::replay::trace::Kind;

/// An xattr call on a descriptor.
pub(super) fn fd_xattr(
    fd: BorrowedFd<'_>,
    name: &std::ffi::CStr,
    buf: &mut [u8],
    op: &Op,
) -> rustix::io::Result<u64> {
    match op.kind {
        Kind::GetXattr => rustix::fs::fgetxattr(fd, name, buf).map(|n| n as u64),
        Kind::SetXattr => rustix::fs::fsetxattr(fd, name, buf, xattr_flags(op)).map(|()| 0),
        Kind::ListXattr => rustix::fs::flistxattr(fd, buf).map(|n| n as u64),
        _ => rustix::fs::fremovexattr(fd, name).map(|()| 0),
    }
}

/// Linux 6.13's `setxattrat`, `getxattrat`, `listxattrat`, `removexattrat` (one numbering on
/// x86-64 and the generic table).
const XATTRAT: [libc::c_long; 4] = [463, 464, 465, 466];

/// `struct xattr_args` of linux/xattr.h.
#[repr(C)]
struct XattrArgs {
    value: u64,
    size: u32,
    flags: u32,
}

/// A name's own attributes in a directory opened beneath the run, the name never followed
/// (a symlink's own, as the `l` calls reach them): by Linux 6.13's `*xattrat` calls on the
/// directory and the name until the kernel says it has none, then by the `l` calls on
/// `/proc/thread-self/fd/D/NAME`, which reach the same: the kernel follows the descriptor's
/// name to D, and NAME, one component and never `..`, is looked up in D, not followed.
#[derive(Default)]
pub(crate) struct NoFollow {
    by_proc: bool,
    path: Vec<u8>,
}

impl NoFollow {
    /// `kind`'s call on attribute `name` of `file` in `dir`: `buf` the value (set, get) or
    /// the list (list), `flags` setxattr's; the length got (get, list), else 0.
    pub(crate) fn call(
        &mut self,
        kind: Kind,
        (dir, file): (BorrowedFd<'_>, &CStr),
        name: &CStr,
        buf: &mut [u8],
        flags: XattrFlags,
    ) -> rustix::io::Result<usize> {
        if !self.by_proc {
            match xattrat(kind, dir, file, name, buf, flags) {
                Err(Errno::NOSYS) => self.by_proc = true,
                got => return got,
            }
        }
        self.path.clear();
        self.path
            .extend_from_slice(ProcFd::of(dir).name().to_bytes());
        self.path.push(b'/');
        self.path.extend_from_slice(file.to_bytes_with_nul());
        let at = CStr::from_bytes_with_nul(&self.path).map_err(|_| Errno::INVAL)?;
        match kind {
            Kind::ListXattr => rustix::fs::llistxattr(at, buf),
            Kind::GetXattr => rustix::fs::lgetxattr(at, name, buf),
            Kind::SetXattr => rustix::fs::lsetxattr(at, name, buf, flags).map(|()| 0),
            _ => rustix::fs::lremovexattr(at, name).map(|()| 0),
        }
    }

    /// With `by_proc`, goes by `/proc` from the first call, as on a kernel without
    /// `*xattrat`.
    #[cfg(test)]
    pub(crate) fn with(by_proc: bool) -> NoFollow {
        NoFollow {
            by_proc,
            path: Vec::new(),
        }
    }
}

/// `kind`'s `*xattrat` call (Linux 6.13) on `file` in `dir`, not following it, as
/// [`NoFollow::call`]; `NOSYS` before 6.13.
fn xattrat(
    kind: Kind,
    dir: BorrowedFd<'_>,
    file: &CStr,
    name: &CStr,
    buf: &mut [u8],
    flags: XattrFlags,
) -> rustix::io::Result<usize> {
    let (dir, file, name) = (dir.as_raw_fd(), file.as_ptr(), name.as_ptr());
    let nofollow = libc::AT_SYMLINK_NOFOLLOW;
    let mut args = XattrArgs {
        value: buf.as_mut_ptr() as u64,
        size: buf.len() as u32,
        flags: if kind == Kind::SetXattr {
            flags.bits()
        } else {
            0
        },
    };
    let args_ptr = std::ptr::from_mut(&mut args);
    let args_len = std::mem::size_of::<XattrArgs>();
    // SAFETY: plain system calls; the strings are C strings and `args` and `buf` are
    // writable for their sizes, all outliving the call.
    let r = unsafe {
        match kind {
            Kind::SetXattr => {
                libc::syscall(XATTRAT[0], dir, file, nofollow, name, args_ptr, args_len)
            }
            Kind::GetXattr => {
                libc::syscall(XATTRAT[1], dir, file, nofollow, name, args_ptr, args_len)
            }
            Kind::ListXattr => {
                libc::syscall(XATTRAT[2], dir, file, nofollow, args.value, buf.len())
            }
            _ => libc::syscall(XATTRAT[3], dir, file, nofollow, name),
        }
    };
    if r < 0 {
        Err(super::data::last_errno())
    } else {
        Ok(r as usize)
    }
}

/// The bytes an xattr call gives or gets: a setxattr's recorded value (a POSIX ACL's, which
/// the kernel reads), copied to `value`, else the first A bytes of the replay's `buf` (its
/// pattern, for a setxattr).
pub(super) fn xattr_bytes<'b>(
    value: &'b mut Vec<u8>,
    buf: &'b mut [u8],
    calls: &ThreadCalls,
    op: &Op,
) -> &'b mut [u8] {
    let len = op.a.min(buf.len() as u64) as usize;
    match calls.value(op) {
        Some(v) => {
            value.clear();
            value.extend_from_slice(v);
            value
        }
        None => &mut buf[..len],
    }
}

/// The attribute's name (PATH2) as a C string in `text`.
pub(super) fn xattr_name<'t>(
    text: &'t mut Vec<u8>,
    calls: &ThreadCalls,
    op: &Op,
) -> Result<&'t std::ffi::CStr, Outcome> {
    text.clear();
    text.extend_from_slice(calls.path(op.path2));
    c_string(text)
}

/// setxattr's XATTR_CREATE and XATTR_REPLACE (FD2).
pub(super) fn xattr_flags(op: &Op) -> XattrFlags {
    XattrFlags::from_bits_truncate(op.fd2 as u32)
}

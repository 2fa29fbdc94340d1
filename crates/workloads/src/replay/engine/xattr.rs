//! The extended-attribute calls' pieces: the call on a descriptor, on a name in its
//! directory without following it, the attribute's name and setxattr's flags.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd};

use rustix::fs::XattrFlags;

use super::Outcome;
use super::paths::c_string;
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

/// An xattr call on `file` in `dir` that does not follow it (the `*xattrat` calls with
/// `AT_SYMLINK_NOFOLLOW`): a symlink's own attributes, as lgetxattr reaches them, where the
/// name is one component in a directory opened beneath the run. `NOSYS` before Linux 6.13.
pub(super) fn xattr_nofollow(
    dir: BorrowedFd<'_>,
    file: &CStr,
    name: &CStr,
    buf: &mut [u8],
    op: &Op,
) -> rustix::io::Result<()> {
    xattrat(op.kind, dir, file, name, buf, xattr_flags(op)).map(|_| ())
}

/// `kind`'s `*xattrat` call (Linux 6.13) on `file` in `dir`, not following it: `buf` the
/// value (set, get) or the list (list), `flags` setxattr's. The length got (get, list), else
/// 0; `NOSYS` before 6.13.
pub(crate) fn xattrat(
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

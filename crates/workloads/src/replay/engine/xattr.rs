//! The extended-attribute calls' pieces: the call on a descriptor, the attribute's name and
//! setxattr's flags.

use std::os::fd::BorrowedFd;

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

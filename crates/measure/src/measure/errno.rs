//! Errors by name, and the ones that end a phase.

use rustix::io::Errno;

use crate::error::{FsbenchError, SPACE_REMEDY};

/// The errors that end a phase, whoever meets them: a full disk, or a filesystem failing (a
/// storm of I/O errors or a filesystem gone read-only makes going on pointless). `None` for an
/// error that is counted and tolerated.
pub fn fatal_error(errno: Errno, phase: &str, ops: u64) -> Option<FsbenchError> {
    let name = errno_name(errno.raw_os_error());
    if errno == Errno::NOSPC || errno == Errno::DQUOT {
        return Some(FsbenchError::DiskFull {
            phase: phase.to_string(),
            ops,
            errno: name,
            remedy: SPACE_REMEDY,
        });
    }
    (errno == Errno::IO || errno == Errno::ROFS).then(|| {
        FsbenchError::Failed(format!(
            "phase `{phase}`: {name} after {ops} operations; the filesystem is failing"
        ))
    })
}

/// `ENOSPC`-style name of an errno, falling back to the number.
pub fn errno_name(errno: i32) -> String {
    const NAMES: &[(i32, &str)] = &[
        (libc::EPERM, "EPERM"),
        (libc::ENOENT, "ENOENT"),
        (libc::EIO, "EIO"),
        (libc::EBADF, "EBADF"),
        (libc::EACCES, "EACCES"),
        (libc::EEXIST, "EEXIST"),
        (libc::ENOTDIR, "ENOTDIR"),
        (libc::EISDIR, "EISDIR"),
        (libc::EINVAL, "EINVAL"),
        (libc::EMFILE, "EMFILE"),
        (libc::EFBIG, "EFBIG"),
        (libc::ENOSPC, "ENOSPC"),
        (libc::EROFS, "EROFS"),
        (libc::EMLINK, "EMLINK"),
        (libc::ENAMETOOLONG, "ENAMETOOLONG"),
        (libc::ENOTEMPTY, "ENOTEMPTY"),
        (libc::EDQUOT, "EDQUOT"),
        (libc::EBUSY, "EBUSY"),
        (libc::ELOOP, "ELOOP"),
        (libc::EOPNOTSUPP, "EOPNOTSUPP"),
        (libc::EAGAIN, "EAGAIN"),
        (libc::EXDEV, "EXDEV"),
        (libc::ENOTTY, "ENOTTY"),
        (libc::ESPIPE, "ESPIPE"),
        (libc::ENODATA, "ENODATA"),
        (libc::ENOSYS, "ENOSYS"),
    ];
    NAMES
        .iter()
        .find(|(n, _)| *n == errno)
        .map(|(_, s)| s.to_string())
        .unwrap_or_else(|| format!("errno {errno}"))
}

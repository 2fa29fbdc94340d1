//! fio's `continue_on_error` and `ignore_error`: which failed I/Os a job counts and goes
//! past rather than ending (fio's `td_non_fatal_error`).

use serde::{Deserialize, Serialize};

use crate::options::Parsed;
use fsbench_measure::error::invalid;

/// fio's kinds of error (its `error_type_bit`): a read's, a write's (a trim's too), a
/// verify mismatch's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    Read = 0,
    Write = 1,
    Verify = 2,
}

/// The errors fio names in `ignore_error` (its `str2error`): Linux's errno 1 to 34, in order.
const NAMES: [&str; 34] = [
    "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
    "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
    "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
    "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
];

/// What fio goes past of a kind whose `ignore_error` names nothing: EIO and EILSEQ.
const NON_FATAL: [i32; 2] = [libc::EIO, libc::EILSEQ];

/// A job's policy on failed I/Os: the kinds it goes past and, per kind, which errors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorPolicy {
    /// Bits of the kinds gone past ([`ErrorKind`]: read 1, write 2, verify 4).
    pub kinds: u8,
    /// Per kind, the errnos gone past (none named: EIO and EILSEQ, as fio).
    pub ignore: [Vec<i32>; 3],
}

impl ErrorPolicy {
    pub fn is_default(&self) -> bool {
        *self == ErrorPolicy::default()
    }

    /// Whether the job goes past any error (fio prints its error counts then).
    pub fn continues_any(&self) -> bool {
        self.kinds != 0
    }

    /// Whether a failed I/O of `kind` with `errno` is counted and gone past.
    pub(crate) fn continues(&self, kind: ErrorKind, errno: i32) -> bool {
        if self.kinds & (1 << kind as u8) == 0 {
            return false;
        }
        match &self.ignore[kind as usize] {
            list if list.is_empty() => NON_FATAL.contains(&errno),
            list => list.contains(&errno),
        }
    }
}

impl super::IoParams {
    /// A job written for a filesystem that fills up (fio's enospc-pressure example): it
    /// goes past ENOSPC on writes, never reads, and its layout allocates nothing
    /// (`fallocate=none`): it needs no room up front.
    pub(crate) fn fills_up(&self) -> bool {
        self.errors.continues(ErrorKind::Write, libc::ENOSPC)
            && self.rw.read_percent(self.rwmixread) == 0
            && self.fallocate == super::Fallocate::None
    }
}

/// fio's kind of an error: EILSEQ is a verify mismatch's, any other its I/O's direction's.
pub(crate) fn kind_of(read: bool, errno: i32) -> ErrorKind {
    match (errno, read) {
        (libc::EILSEQ, _) => ErrorKind::Verify,
        (_, true) => ErrorKind::Read,
        (_, false) => ErrorKind::Write,
    }
}

/// The job's `continue_on_error` and `ignore_error` (a kind `ignore_error` names errors of
/// is gone past too, as in fio; fsbench adds both up, whatever their order).
pub(super) fn error_policy(p: &Parsed) -> anyhow::Result<ErrorPolicy> {
    let mut policy = ErrorPolicy {
        kinds: match p.text("continue-on-error") {
            None | Some("none" | "0") => 0,
            Some("read") => 1,
            Some("write") => 2,
            Some("io") => 3,
            Some("verify") => 4,
            Some(_) => 7,
        },
        ..ErrorPolicy::default()
    };
    let Some(text) = p.text("ignore-error") else {
        return Ok(policy);
    };
    let lists: Vec<&str> = text.trim().split(',').collect();
    if lists.len() > 3 {
        return Err(invalid(format!(
            "io: `ignore_error={text}`: fio's kinds are READ,WRITE,VERIFY (Illegal error type)"
        )));
    }
    for (kind, list) in lists.into_iter().enumerate() {
        // As fio's: the list ends at its first empty name.
        let errors = (list.split(':').take_while(|name| !name.is_empty()))
            .map(|name| errno_of(name).ok_or(name))
            .collect::<Result<Vec<i32>, &str>>()
            .map_err(|name| {
                invalid(format!(
                    "io: `ignore_error={text}`: unknown error `{name}` (fio's names are {} to {}; else give its number)",
                    NAMES[0], NAMES[NAMES.len() - 1]
                ))
            })?;
        if !errors.is_empty() {
            policy.kinds |= 1 << kind;
            policy.ignore[kind] = errors;
        }
    }
    Ok(policy)
}

/// fio's reading of an error in `ignore_error`: a name of [`NAMES`], or a number (its sign
/// dropped); 0 or anything else is unknown.
fn errno_of(name: &str) -> Option<i32> {
    if name.starts_with('E') {
        let at = NAMES.iter().position(|n| *n == name)?;
        return Some(at as i32 + 1);
    }
    let n: i32 = name.parse().ok()?;
    (n != 0).then(|| n.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_linux_errnos() {
        assert_eq!(errno_of("ENOSPC"), Some(libc::ENOSPC));
        assert_eq!(errno_of("ERANGE"), Some(libc::ERANGE));
        assert_eq!(errno_of("-5"), Some(libc::EIO));
        assert_eq!(errno_of("EWHAT"), None);
        assert_eq!(errno_of("0"), None);
    }

    #[test]
    fn a_kind_goes_past_eio_and_eilseq_unless_its_errors_are_named() {
        let write = ErrorPolicy {
            kinds: 2,
            ..ErrorPolicy::default()
        };
        assert!(write.continues(ErrorKind::Write, libc::EIO));
        assert!(!write.continues(ErrorKind::Write, libc::ENOSPC));
        assert!(!write.continues(ErrorKind::Read, libc::EIO));
        let named = ErrorPolicy {
            kinds: 2,
            ignore: [Vec::new(), vec![libc::ENOSPC], Vec::new()],
        };
        assert!(named.continues(ErrorKind::Write, libc::ENOSPC));
        assert!(!named.continues(ErrorKind::Write, libc::EIO));
        assert_eq!(kind_of(true, libc::EILSEQ), ErrorKind::Verify);
    }
}

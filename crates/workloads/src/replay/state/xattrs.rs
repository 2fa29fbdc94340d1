//! The entries' extended attributes: listed with the state (each name, its value's size, the
//! POSIX ACLs' values) and made again with it. An entry's attributes are reached as
//! `/proc/thread-self/fd/D/NAME` with the `l` calls: D a directory opened beneath the root
//! (or the run's directory) without symlinks, NAME one component of it, never followed — so
//! a symlink's own attributes are listed and set as well, and no name of a trace leads
//! outside the run.

use std::ffi::CStr;
use std::os::fd::BorrowedFd;

use rustix::fs::XattrFlags;
use rustix::io::Errno;

use crate::replay::engine::ProcFd;
use crate::replay::trace::{XATTR_LIST_MAX, XATTR_SIZE_MAX, XATTR_VALUE_MAX, Xattr};
use fsbench_measure::measure::errno_name;
use fsbench_measure::units::shown;
use fsbench_model::units::group_thousands;

/// Attributes not made again named in the note.
const NAMED: usize = 3;

/// Lists entries' attributes, with buffers for the longest list and value.
pub(super) struct Lister {
    names: Vec<u8>,
    value: Vec<u8>,
    at: Vec<u8>,
}

impl Lister {
    pub(super) fn new() -> Lister {
        Lister {
            names: vec![0; XATTR_LIST_MAX],
            value: vec![0; XATTR_SIZE_MAX as usize],
            at: Vec::new(),
        }
    }

    /// The attributes of `name` in `dir` into `out`, in name order: none where the
    /// filesystem keeps none (`EOPNOTSUPP`), nor, for a symlink, where the kernel does not
    /// list its own.
    pub(super) fn list(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &[u8],
        symlink: bool,
        out: &mut Vec<Xattr>,
    ) -> rustix::io::Result<()> {
        out.clear();
        let at = entry_name(&mut self.at, dir, name)?;
        let n = match rustix::fs::llistxattr(at, &mut self.names[..]) {
            Ok(n) => n,
            Err(Errno::NOTSUP) => return Ok(()),
            Err(_) if symlink => return Ok(()),
            Err(e) => return Err(e),
        };
        for attr in self.names[..n].split(|&b| b == 0).filter(|a| !a.is_empty()) {
            // Each value read whole (64 KiB at most): its size, and an ACL's bytes.
            let size = match rustix::fs::lgetxattr(at, attr, &mut self.value[..]) {
                Ok(size) => size,
                // Removed since the list was read; or one this user may not read (a `user.`
                // attribute of a file it cannot read): left out, as it would be unreadable in
                // a replay by this user too.
                Err(Errno::NODATA | Errno::ACCESS | Errno::PERM) => continue,
                Err(e) => return Err(e),
            };
            let value = (Xattr::valued(attr) && size <= XATTR_VALUE_MAX)
                .then(|| self.value[..size].to_vec());
            let name = attr.to_vec();
            let size = size as u64;
            out.push(Xattr { name, size, value });
        }
        out.sort();
        Ok(())
    }
}

/// `/proc/thread-self/fd/D/NAME` in `buf`, D being `dir`'s descriptor.
fn entry_name<'b>(
    buf: &'b mut Vec<u8>,
    dir: BorrowedFd<'_>,
    name: &[u8],
) -> Result<&'b CStr, Errno> {
    buf.clear();
    buf.extend_from_slice(ProcFd::of(dir).name().to_bytes());
    buf.push(b'/');
    buf.extend_from_slice(name);
    buf.push(0);
    CStr::from_bytes_with_nul(buf).map_err(|_| Errno::INVAL)
}

/// The initial state's attributes that were not made again: how many, a few named.
#[derive(Default)]
pub(crate) struct Unmade {
    count: u64,
    named: Vec<String>,
}

impl Unmade {
    fn add(&mut self, path: &[u8], x: &Xattr, why: &str) {
        self.count += 1;
        if self.named.len() < NAMED {
            let name = shown(&x.name);
            self.named.push(format!("{name} of {}: {why}", shown(path)));
        }
    }

    /// The note that says which were not made, if any were not.
    pub(crate) fn note(&self) -> Option<String> {
        (self.count > 0).then(|| {
            format!(
                "{} extended attributes of the initial state were not made (the calls that \
                 read them may come out otherwise): {}",
                group_thousands(self.count),
                self.named.join("; ")
            )
        })
    }
}

/// Sets attributes `xattrs` on `name` in `dir` (the entry of `path`, just made), each with
/// its recorded value or `size` bytes of `pattern`; those the target refuses (a namespace
/// it keeps not, or not to this user, no space) are counted in `unmade`, never an error.
pub(super) fn set(
    dir: BorrowedFd<'_>,
    name: &[u8],
    path: &[u8],
    xattrs: &[Xattr],
    pattern: &[u8],
    unmade: &mut Unmade,
) {
    let mut buf = Vec::new();
    for x in xattrs {
        let value = match &x.value {
            Some(value) => &value[..],
            // The kernel reads it: a pattern would be refused.
            None if Xattr::valued(&x.name) => {
                unmade.add(path, x, "its value was too long to record");
                continue;
            }
            None => &pattern[..(x.size as usize).min(pattern.len())],
        };
        let set = entry_name(&mut buf, dir, name)
            .and_then(|at| rustix::fs::lsetxattr(at, &x.name[..], value, XattrFlags::empty()));
        if let Err(e) = set {
            unmade.add(path, x, &errno_name(e.raw_os_error()));
        }
    }
}

//! The entries' extended attributes: listed with the state (each name, its value's size, the
//! POSIX ACLs' values) and made again with it. An entry's attributes are reached by its
//! directory D, opened beneath the root (or the run's directory) without symlinks, and NAME,
//! one component of it, never followed — so a symlink's own attributes are listed and set as
//! well, and no name of a trace leads outside the run: Linux 6.13's `*xattrat` calls on D and
//! NAME, or before 6.13 the `l` calls on `/proc/thread-self/fd/D/NAME`. Capture's two listings
//! of 200,000 files on ext4 without attributes took 1.8 s without them, 3.0 s with
//! `*xattrat`, 4.8 s through `/proc`.

use std::ffi::CStr;
use std::os::fd::BorrowedFd;

use rustix::fs::XattrFlags;
use rustix::io::Errno;

use crate::replay::engine::NoFollow;
use crate::replay::trace::{Kind, XATTR_LIST_MAX, XATTR_SIZE_MAX, XATTR_VALUE_MAX, Xattr};
use fsbench_measure::measure::errno_name;
use fsbench_measure::units::shown;
use fsbench_model::units::group_thousands;

/// Attributes not made again named in the note.
const NAMED: usize = 3;

/// Reaches an entry's attributes, its name and the attribute's as C strings.
#[derive(Default)]
struct Reach {
    nofollow: NoFollow,
    entry: Vec<u8>,
    attr: Vec<u8>,
}

impl Reach {
    /// `kind`'s call (list, get or set) of attribute `attr` of `name` in `dir`, not following
    /// it, `buf` the list's or value's bytes: the length got (list, get).
    fn call(
        &mut self,
        kind: Kind,
        dir: BorrowedFd<'_>,
        name: &[u8],
        attr: &[u8],
        buf: &mut [u8],
    ) -> rustix::io::Result<usize> {
        let attr = c_string(&mut self.attr, attr)?;
        let entry = c_string(&mut self.entry, name)?;
        (self.nofollow).call(kind, (dir, entry), attr, buf, XattrFlags::empty())
    }
}

/// `bytes` with a NUL in `buf`, as a C string.
fn c_string<'b>(buf: &'b mut Vec<u8>, bytes: &[u8]) -> Result<&'b CStr, Errno> {
    buf.clear();
    buf.extend_from_slice(bytes);
    buf.push(0);
    CStr::from_bytes_with_nul(buf).map_err(|_| Errno::INVAL)
}

/// Lists entries' attributes, with buffers for the longest list and value.
pub(super) struct Lister {
    names: Vec<u8>,
    value: Vec<u8>,
    reach: Reach,
}

impl Lister {
    pub(super) fn new() -> Lister {
        Lister {
            names: vec![0; XATTR_LIST_MAX],
            value: vec![0; XATTR_SIZE_MAX as usize],
            reach: Reach::default(),
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
        let n = match (self.reach).call(Kind::ListXattr, dir, name, b"", &mut self.names[..]) {
            Ok(n) => n,
            Err(Errno::NOTSUP) => return Ok(()),
            Err(_) if symlink => return Ok(()),
            Err(e) => return Err(e),
        };
        for attr in self.names[..n].split(|&b| b == 0).filter(|a| !a.is_empty()) {
            // Each value read whole (64 KiB at most): its size, and an ACL's bytes.
            let got = (self.reach).call(Kind::GetXattr, dir, name, attr, &mut self.value[..]);
            let size = match got {
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

/// Makes the initial state's attributes again, counting those the target refuses.
#[derive(Default)]
pub(super) struct Setter {
    reach: Reach,
    value: Vec<u8>,
    pub(super) unmade: Unmade,
}

impl Setter {
    /// Sets attributes `xattrs` on `name` in `dir` (the entry of `path`, just made), each
    /// with its recorded value or `size` bytes of `pattern`; those the target refuses (a
    /// namespace it keeps not, or not to this user, no space) are counted, never an error.
    pub(super) fn set(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &[u8],
        path: &[u8],
        xattrs: &[Xattr],
        pattern: &[u8],
    ) {
        for x in xattrs {
            self.value.clear();
            match &x.value {
                Some(value) => self.value.extend_from_slice(value),
                // The kernel reads it: a pattern would be refused.
                None if Xattr::valued(&x.name) => {
                    self.unmade.add(path, x, "its value was too long to record");
                    continue;
                }
                None => self
                    .value
                    .extend_from_slice(&pattern[..(x.size as usize).min(pattern.len())]),
            }
            let set = (self.reach).call(Kind::SetXattr, dir, name, &x.name, &mut self.value);
            if let Err(e) = set {
                self.unmade.add(path, x, &errno_name(e.raw_os_error()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;

    /// Both routes to an entry list and set the same attributes: `*xattrat`, and `/proc`
    /// (the kernels before 6.13, which this machine's is not).
    #[test]
    fn xattrat_and_proc_reach_the_same_attributes() {
        let scratch = tempfile::tempdir_in("/var/tmp").unwrap();
        let dir = std::fs::File::open(scratch.path()).unwrap();
        std::fs::write(scratch.path().join("f"), b"").unwrap();
        std::os::unix::fs::symlink("f", scratch.path().join("l")).unwrap();
        let x = |name: &str, size| Xattr {
            name: name.as_bytes().to_vec(),
            size,
            value: None,
        };
        let wanted = [x("user.a", 3), x("user.bb", 70)];
        let mut setter = Setter::default();
        setter.set(dir.as_fd(), b"f", b"f", &wanted, &[0x5a; 100]);
        assert_eq!(setter.unmade.count, 0);
        for by_proc in [false, true] {
            let mut lister = Lister::new();
            lister.reach.nofollow = NoFollow::with(by_proc);
            let mut got = Vec::new();
            lister.list(dir.as_fd(), b"f", false, &mut got).unwrap();
            assert_eq!(got, wanted, "by /proc: {by_proc}");
            // The symlink's own (none), not its file's.
            lister.list(dir.as_fd(), b"l", true, &mut got).unwrap();
            assert!(got.iter().all(|x| !x.name.starts_with(b"user.")), "{got:?}");
            // Set by this route on a second file.
            let name = if by_proc { "g1" } else { "g0" };
            std::fs::write(scratch.path().join(name), b"").unwrap();
            let mut setter = Setter::default();
            setter.reach.nofollow = NoFollow::with(by_proc);
            let path = name.as_bytes();
            setter.set(dir.as_fd(), path, path, &wanted, &[0x5a; 100]);
            lister.list(dir.as_fd(), path, false, &mut got).unwrap();
            assert_eq!(got, wanted, "set by /proc: {by_proc}");
        }
        // `user.` attributes on a symlink are refused (EPERM), counted, not an error.
        let mut setter = Setter::default();
        setter.set(dir.as_fd(), b"l", b"l", &wanted[..1], &[0x5a; 100]);
        assert_eq!(setter.unmade.count, 1);
        assert!(
            setter.unmade.named[0].contains("EPERM"),
            "{:?}",
            setter.unmade.named
        );
    }
}

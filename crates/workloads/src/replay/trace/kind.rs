//! The kinds of call a trace records: each a family of system calls, with what a replay
//! needs to know of it.

/// The replayed kinds of call; each a family of system calls (`read` is read, pread64,
/// readv, preadv and preadv2).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[repr(u8)]
pub enum Kind {
    Open,
    Close,
    Read,
    Write,
    Copy,
    Sendfile,
    Lseek,
    Fsync,
    Fdatasync,
    SyncRange,
    Truncate,
    Fallocate,
    Mkdir,
    Rmdir,
    Unlink,
    Rename,
    Link,
    Symlink,
    Readlink,
    Stat,
    Getdents,
    Chmod,
    Chown,
    Utimens,
    Dup,
    GetXattr,
    SetXattr,
    ListXattr,
    RemoveXattr,
    /// A file mapped: replayed as a mapping of the same range whose pages are faulted in.
    Mmap,
}

impl Kind {
    pub const ALL: [Kind; 30] = [
        Kind::Open,
        Kind::Close,
        Kind::Read,
        Kind::Write,
        Kind::Copy,
        Kind::Sendfile,
        Kind::Lseek,
        Kind::Fsync,
        Kind::Fdatasync,
        Kind::SyncRange,
        Kind::Truncate,
        Kind::Fallocate,
        Kind::Mkdir,
        Kind::Rmdir,
        Kind::Unlink,
        Kind::Rename,
        Kind::Link,
        Kind::Symlink,
        Kind::Readlink,
        Kind::Stat,
        Kind::Getdents,
        Kind::Chmod,
        Kind::Chown,
        Kind::Utimens,
        Kind::Dup,
        Kind::GetXattr,
        Kind::SetXattr,
        Kind::ListXattr,
        Kind::RemoveXattr,
        Kind::Mmap,
    ];

    pub fn name(self) -> &'static str {
        [
            "open",
            "close",
            "read",
            "write",
            "copy",
            "sendfile",
            "lseek",
            "fsync",
            "fdatasync",
            "sync-range",
            "truncate",
            "fallocate",
            "mkdir",
            "rmdir",
            "unlink",
            "rename",
            "link",
            "symlink",
            "readlink",
            "stat",
            "getdents",
            "chmod",
            "chown",
            "utimens",
            "dup",
            "getxattr",
            "setxattr",
            "listxattr",
            "removexattr",
            "mmap",
        ][self as usize]
    }

    pub(super) fn named(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the call moves bytes through the replay's buffer (its length in A).
    pub(crate) fn uses_buffer(self) -> bool {
        matches!(
            self,
            Kind::Read
                | Kind::Write
                | Kind::Readlink
                | Kind::Getdents
                | Kind::GetXattr
                | Kind::SetXattr
                | Kind::ListXattr
        )
    }

    /// Whether the call changes the names or the data of what it touches (for ordering
    /// calls of different threads on one path).
    pub(crate) fn modifies(self) -> bool {
        matches!(
            self,
            Kind::Write
                | Kind::Copy
                | Kind::Sendfile
                | Kind::Truncate
                | Kind::Fallocate
                | Kind::Mkdir
                | Kind::Rmdir
                | Kind::Unlink
                | Kind::Rename
                | Kind::Link
                | Kind::Symlink
                | Kind::Chmod
                | Kind::Chown
                | Kind::Utimens
                | Kind::SetXattr
                | Kind::RemoveXattr
        )
    }
}

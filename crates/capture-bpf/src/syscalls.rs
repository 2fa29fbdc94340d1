//! The system calls the BPF program records, by number, and what it reads of each: the
//! calls of strace's set that fsbench records, those that follow processes, those that
//! make or drop descriptors (which strace's `-y` followed for fsbench), and the
//! extended-attribute calls, which strace's text cannot give (it prints no names).

/// What the BPF program reads of a call (SELECT's value; the bits of `capture.bpf.c`).
const TRACED: u32 = 1 << 31;
const NO_EXIT: u32 = 1 << 30;
const EXEC: u32 = 1 << 29;
const FLAGS_ARG0: u32 = 1 << 28;
const FLAGS_STRUCT: u32 = 1 << 27;
const FLAGS_VFORK: u32 = 1 << 26;
const ENTER_RECORD: u32 = 1 << 25;
const WAITS: u32 = 1 << 24;
const VALUE: u32 = 1 << 6;

/// Arguments that are path strings (bit per argument).
const fn paths(args: &[u32]) -> u32 {
    let mut mask = 0;
    let mut i = 0;
    while i < args.len() {
        mask |= 1 << args[i];
        i += 1;
    }
    mask
}

/// The `len` bytes (8, 16 or 24) argument `arg` points to.
const fn data(arg: u32, len: u32) -> u32 {
    (arg + 1) << 8 | len << 16
}

/// One recorded call: its number on this architecture, its name and what the BPF program
/// reads of it.
pub(crate) struct Syscall {
    pub(crate) nr: i64,
    pub(crate) name: &'static str,
    pub(crate) select: u32,
}

/// A call's number: libc's, or the one given where libc has none yet.
macro_rules! nr {
    ($name:ident) => {
        libc::$name
    };
    ($name:ident $nr:literal) => {
        $nr
    };
}

macro_rules! calls {
    ($($name:ident $(= $nr:literal)? $(: $how:expr)?),* $(,)?) => {
        &[$(Syscall {
            nr: nr!($name $($nr)?),
            name: stringify!($name),
            select: TRACED $(| $how)?,
        }),*]
    };
}

/// The table; the names are strace's (without the `SYS_`).
#[cfg(target_arch = "x86_64")]
const TABLE: &[Syscall] = calls![
    SYS_open: paths(&[0]),
    SYS_creat: paths(&[0]),
    SYS_openat: paths(&[1]),
    SYS_openat2: paths(&[1]) | data(2, 24),
    SYS_close: ENTER_RECORD,
    SYS_read,
    SYS_pread64,
    SYS_readv,
    SYS_preadv,
    SYS_preadv2,
    SYS_write,
    SYS_pwrite64,
    SYS_writev,
    SYS_pwritev,
    SYS_pwritev2,
    SYS_copy_file_range: data(1, 8),
    SYS_sendfile: data(2, 8),
    SYS_lseek,
    SYS_fsync,
    SYS_fdatasync,
    SYS_sync_file_range,
    SYS_truncate: paths(&[0]),
    SYS_ftruncate,
    SYS_fallocate,
    SYS_mkdir: paths(&[0]),
    SYS_mkdirat: paths(&[1]),
    SYS_rmdir: paths(&[0]),
    SYS_unlink: paths(&[0]),
    SYS_unlinkat: paths(&[1]),
    SYS_rename: paths(&[0, 1]),
    SYS_renameat: paths(&[1, 3]),
    SYS_renameat2: paths(&[1, 3]),
    SYS_link: paths(&[0, 1]),
    SYS_linkat: paths(&[1, 3]),
    SYS_symlink: paths(&[0, 1]),
    SYS_symlinkat: paths(&[0, 2]),
    SYS_readlink: paths(&[0]),
    SYS_readlinkat: paths(&[1]),
    SYS_stat: paths(&[0]),
    SYS_lstat: paths(&[0]),
    SYS_fstat,
    SYS_newfstatat: paths(&[1]),
    SYS_statx: paths(&[1]),
    SYS_getdents64,
    SYS_chmod: paths(&[0]),
    SYS_fchmod,
    SYS_fchmodat: paths(&[1]),
    SYS_fchmodat2: paths(&[1]),
    SYS_chown: paths(&[0]),
    SYS_fchown,
    SYS_lchown: paths(&[0]),
    SYS_fchownat: paths(&[1]),
    SYS_utimensat: paths(&[1]),
    SYS_dup,
    SYS_dup2,
    SYS_dup3,
    SYS_fcntl,
    SYS_mmap,
    SYS_chdir: paths(&[0]),
    SYS_fchdir,
    SYS_clone: NO_EXIT | FLAGS_ARG0,
    SYS_clone3: NO_EXIT | FLAGS_STRUCT,
    SYS_fork: NO_EXIT,
    SYS_vfork: NO_EXIT | FLAGS_VFORK,
    SYS_execve: EXEC,
    SYS_execveat: EXEC,
    SYS_wait4: WAITS,
    SYS_close_range,
    SYS_pipe: data(0, 8),
    SYS_pipe2: data(0, 8),
    SYS_socketpair: data(3, 8),
    SYS_socket,
    SYS_accept,
    SYS_accept4,
    SYS_eventfd,
    SYS_eventfd2,
    SYS_memfd_create,
    SYS_epoll_create,
    SYS_epoll_create1,
    SYS_timerfd_create,
    SYS_signalfd,
    SYS_signalfd4,
    SYS_inotify_init,
    SYS_inotify_init1,
    SYS_fanotify_init,
    SYS_userfaultfd,
    SYS_perf_event_open,
    SYS_pidfd_open,
    SYS_pidfd_getfd,
    SYS_io_uring_setup,
    SYS_open_tree,
    SYS_fsopen,
    SYS_fsmount,
    SYS_open_tree_attr = 467,
    // Extended attributes: the file, the attribute's name (a string read as paths are,
    // to `PATH_MAX`), the `*xattrat` forms' `struct xattr_args` (value, size, flags); a
    // setxattr of a POSIX ACL its value too (VALUE).
    SYS_getxattr: paths(&[0, 1]),
    SYS_lgetxattr: paths(&[0, 1]),
    SYS_fgetxattr: paths(&[1]),
    SYS_setxattr: paths(&[0, 1]) | VALUE,
    SYS_lsetxattr: paths(&[0, 1]) | VALUE,
    SYS_fsetxattr: paths(&[1]) | VALUE,
    SYS_listxattr: paths(&[0]),
    SYS_llistxattr: paths(&[0]),
    SYS_flistxattr,
    SYS_removexattr: paths(&[0, 1]),
    SYS_lremovexattr: paths(&[0, 1]),
    SYS_fremovexattr: paths(&[1]),
    SYS_setxattrat = 463: paths(&[1, 3]) | data(4, 16) | VALUE,
    SYS_getxattrat = 464: paths(&[1, 3]) | data(4, 16),
    SYS_listxattrat = 465: paths(&[1]),
    SYS_removexattrat = 466: paths(&[1, 3]),
    // Counted by name, not recorded (see the parser's `named.rs`).
    SYS_cachestat = 451,
    SYS_file_getattr = 468: paths(&[1]),
    SYS_file_setattr = 469: paths(&[1]),
];

#[cfg(not(target_arch = "x86_64"))]
const TABLE: &[Syscall] = &[];

/// Every recorded call; empty where the table is not written for this architecture.
pub(crate) fn table() -> &'static [Syscall] {
    TABLE
}

/// The name of call number `nr`, `SYS_` left out.
pub(crate) fn name_of(nr: u32) -> Option<&'static str> {
    let call = TABLE.iter().find(|c| c.nr == i64::from(nr))?;
    Some(&call.name[4..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_number_is_one_calls_and_below_the_programs_limit() {
        let mut seen = std::collections::BTreeSet::new();
        for c in table() {
            assert!((0..512).contains(&c.nr), "{}", c.name);
            assert!(seen.insert(c.nr), "{} twice", c.name);
        }
        if cfg!(target_arch = "x86_64") {
            assert_eq!(name_of(257), Some("openat"));
            assert_eq!(name_of(2), Some("open"));
            assert_eq!(name_of(452), Some("fchmodat2"));
            assert_eq!(name_of(469), Some("file_setattr"));
        }
    }
}

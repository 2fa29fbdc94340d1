//! One system call as the kernel saw it: what the bpf tracer of `fsbench capture` records
//! and the capture's parser reads.

/// A path argument: which argument it is, and its string (`None`: the tracer could not read
/// it).
pub type PathArg<'a> = (usize, Option<&'a [u8]>);

/// A call, its arguments as the registers held them, with the strings and the structure the
/// tracer read from the program's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyscallRecord<'a> {
    /// Its start and end on the kernel's monotonic clock.
    pub start_ns: u64,
    pub end_ns: u64,
    pub tid: u32,
    pub pid: u32,
    /// strace's name for it (`openat`, `pread64`).
    pub name: &'static str,
    pub args: [u64; 6],
    /// The kernel's return value: `-errno` when it failed.
    pub ret: i64,
    /// The strings its path arguments named, by argument: `None` for one the tracer could
    /// not read (an argument that is NULL or points nowhere).
    pub paths: [Option<PathArg<'a>>; 2],
    /// The structure it points to (its first 8 or 24 bytes), when it has one the tracer
    /// read; `data_unread` when it could not.
    pub data: Option<[u64; 3]>,
    pub data_unread: bool,
    /// The value a setxattr of a POSIX ACL set (`system.posix_acl_*`), where the tracer
    /// read it: the kernel reads those values, so a replay needs them.
    pub value: Option<&'a [u8]>,
    /// What tracing had cost its task before it started, in ns: its start on the program's
    /// own clock is `start_ns` less this.
    pub cost_ns: u64,
}

impl SyscallRecord<'_> {
    /// The string argument `arg` named: `Some(None)` when it could not be read, `None` when
    /// it is no path argument.
    pub fn path(&self, arg: usize) -> Option<Option<&[u8]>> {
        self.paths
            .iter()
            .flatten()
            .find(|(i, _)| *i == arg)
            .map(|(_, p)| *p)
    }
}

//! The calls capture counts by their name rather than records, and the calls Linux added
//! after 6.1, which Debian 12's strace 6.1 does not know: it prints each as
//! `syscall_0x1c4(...)`, its arguments raw, whatever `-e trace=` says — where its seccomp
//! filter stops the program at them, which the linear form of that filter does for every
//! number past strace's table and the bitmap form for none (see `XATTR_BY_STRACE`; a test
//! holds `STRACE_ARGS` to the linear form). Under either tracer:
//! fchmodat2 is recorded (the bpf tracer reads its path; strace 6.1's text has none, so
//! there it is counted by name), the calls on files that fsbench does not replay are
//! counted by name, the others touch no file. The extended-attribute calls are recorded
//! from the bpf tracer's records and counted by name from strace's lines.

use super::syntax::Arg;
use super::xattr::xattr_call;
use super::{Parser, Skip};

/// What capture does with a newer call.
#[derive(Clone, Copy)]
enum Handling {
    /// Recorded where its arguments can be read; from strace 6.1's raw text, counted so.
    Recorded { undecoded: &'static str },
    /// Counted by name under either tracer, never recorded.
    Counted(&'static str),
    /// No file's data or metadata goes through it.
    NoFile,
}

use Handling::{Counted, NoFile, Recorded};

/// The calls added since Linux 6.1 by number (one numbering on x86-64 and the generic
/// table, arm64's, from 424 on), name and handling.
const NEWER: &[(u32, &str, Handling)] = &[
    (
        451,
        "cachestat",
        Counted("of cachestat (a file's page cache state: not replayed)"),
    ),
    (
        452,
        "fchmodat2",
        Recorded {
            undecoded: "of fchmodat2, which strace 6.1 does not decode (use --tracer bpf)",
        },
    ),
    (453, "map_shadow_stack", NoFile),
    (454, "futex_wake", NoFile),
    (455, "futex_wait", NoFile),
    (456, "futex_requeue", NoFile),
    // The mount table, not the files below the root.
    (457, "statmount", NoFile),
    (458, "listmount", NoFile),
    (459, "lsm_get_self_attr", NoFile),
    (460, "lsm_set_self_attr", NoFile),
    (461, "lsm_list_modules", NoFile),
    (462, "mseal", NoFile),
    (
        463,
        "setxattrat",
        Recorded {
            undecoded: "of setxattrat (extended attributes: recorded by --tracer bpf only)",
        },
    ),
    (
        464,
        "getxattrat",
        Recorded {
            undecoded: "of getxattrat (extended attributes: recorded by --tracer bpf only)",
        },
    ),
    (
        465,
        "listxattrat",
        Recorded {
            undecoded: "of listxattrat (extended attributes: recorded by --tracer bpf only)",
        },
    ),
    (
        466,
        "removexattrat",
        Recorded {
            undecoded: "of removexattrat (extended attributes: recorded by --tracer bpf only)",
        },
    ),
    // A mount's descriptor (the bpf tracer follows it as no file).
    (467, "open_tree_attr", NoFile),
    (
        468,
        "file_getattr",
        Counted("of file_getattr (a file's inode flags: not recorded)"),
    ),
    (
        469,
        "file_setattr",
        Counted("of file_setattr (a file's inode flags: not recorded)"),
    ),
    (470, "listns", NoFile),
];

/// Why strace's lines of each extended-attribute call are counted, not recorded: `-s 0`
/// prints no attribute's name (`""...`), and a larger `-s` would print that much of every
/// read's and write's data. strace is not asked for the calls before 6.13 either: with them
/// its seccomp filter's linear form is as long as its bitmap form (161 instructions each,
/// capture's list alone 155), one range short of the form that lets the calls it does not
/// know run untraced — fchmodat2 among them. The bpf tracer records them all (`xattr.rs`).
macro_rules! by_bpf_only {
    ($($name:literal),* $(,)?) => {
        &[$(($name, concat!("of ", $name, " (extended attributes: recorded by --tracer bpf only)"))),*]
    };
}
const XATTR_BY_STRACE: &[(&str, &str)] = by_bpf_only![
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "getxattrat",
    "setxattrat",
    "listxattrat",
    "removexattrat",
];

/// Why a call strace 6.1 printed by number is not recorded (a call newer than both it and
/// fsbench: counted too, as one it could not name).
const UNKNOWN: &str = "of system calls newer than strace and fsbench (not recorded)";

/// What the parser makes of call `name` when it is one not recorded as a call: `Ok(false)`
/// for one that touches no file, `Err` with the reason it is counted by. `None` for every
/// other call, fchmodat2 by its name among them.
fn not_recorded(name: &str) -> Option<Result<bool, Skip>> {
    if let Some(hex) = name.strip_prefix("syscall_0x") {
        let nr = u32::from_str_radix(hex, 16).ok();
        let handling = NEWER.iter().find(|(n, ..)| Some(*n) == nr).map(|c| c.2);
        return Some(match handling {
            Some(Recorded { undecoded }) => Err(Skip::Named(undecoded)),
            Some(Counted(why)) => Err(Skip::Named(why)),
            Some(NoFile) => Ok(false),
            // x86-64's own (uretprobe): no file.
            None if cfg!(target_arch = "x86_64") && nr == Some(335) => Ok(false),
            None => Err(Skip::Named(UNKNOWN)),
        });
    }
    if let Some((_, why)) = XATTR_BY_STRACE.iter().find(|(n, _)| *n == name) {
        return Some(Err(Skip::Named(why)));
    }
    match NEWER.iter().find(|(_, n, _)| *n == name)?.2 {
        Counted(why) => Some(Err(Skip::Named(why))),
        Recorded { .. } | NoFile => None,
    }
}

impl Parser {
    /// [`not_recorded`] for thread `tid`'s call `name`: a call counted by name that its
    /// decoded path or descriptor puts outside the root, or on no file, is counted so (a
    /// call strace printed by number has nothing decoded). The bpf tracer's records of the
    /// extended-attribute calls are recorded.
    pub(super) fn named_call(
        &mut self,
        tid: u32,
        name: &str,
        args: &[Arg],
    ) -> Option<Result<bool, Skip>> {
        let outcome = not_recorded(name)?;
        if self.follows_fds && xattr_call(name).is_some() {
            return None;
        }
        match outcome {
            Err(why) if !name.starts_with("syscall_0x") => {
                Some(Err(self.named_where(tid, args, why)))
            }
            outcome => Some(outcome),
        }
    }

    /// Why a call counted by name (`why`) was not recorded: where its path or descriptor
    /// says it is outside the root or no file, that; else `why`. The path is its first
    /// argument, or its second below the directory descriptor in its first (the `*at`
    /// forms); a descriptor alone, its first.
    fn named_where(&mut self, tid: u32, args: &[Arg], why: Skip) -> Skip {
        let abs = match (args.first(), args.get(1)) {
            (Some(Arg::Str(path)), _) => {
                self.absolute(tid, None, path);
                std::mem::take(&mut self.abs)
            }
            (Some(Arg::Num(_, Some(dir))), Some(Arg::Str(path))) if !path.is_empty() => {
                let dir = dir.path.clone();
                self.absolute(tid, Some(&dir), path);
                std::mem::take(&mut self.abs)
            }
            (Some(Arg::Num(_, Some(file))), _) => file.path.clone(),
            (Some(Arg::Num(fd, None)), _) if *fd >= 0 => return Skip::NotAFile,
            _ => return why,
        };
        if self.relative_of(&abs).is_none() {
            return Skip::Outside;
        }
        why
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_strace_prints_by_number_is_named_or_known_to_touch_no_file() {
        let fchmodat2 = not_recorded("syscall_0x1c4");
        assert!(
            matches!(fchmodat2, Some(Err(Skip::Named(why))) if why.contains("fchmodat2")),
            "{fchmodat2:?}"
        );
        let set = not_recorded("syscall_0x1cf");
        assert!(matches!(set, Some(Err(Skip::Named(why))) if why.contains("setxattrat")));
        assert_eq!(not_recorded("syscall_0x1c7"), Some(Ok(false)), "futex_wait");
        assert_eq!(
            not_recorded("syscall_0x1ff"),
            Some(Err(Skip::Named(UNKNOWN)))
        );
        assert_eq!(
            not_recorded("syscall_0xzz"),
            Some(Err(Skip::Named(UNKNOWN)))
        );
    }

    #[test]
    fn by_name_fchmodat2_is_recorded_and_straces_xattr_calls_counted() {
        assert_eq!(not_recorded("fchmodat2"), None);
        assert_eq!(not_recorded("openat"), None);
        assert_eq!(not_recorded("futex_wake"), None);
        let why = not_recorded("fremovexattr");
        assert!(matches!(why, Some(Err(Skip::Named(w))) if w.contains("fremovexattr")));
        let why = not_recorded("getxattrat");
        assert!(matches!(why, Some(Err(Skip::Named(w))) if w.contains("--tracer bpf only")));
        assert!(XATTR_BY_STRACE.iter().all(|(n, _)| xattr_call(n).is_some()));
        let why = not_recorded("file_setattr");
        assert!(matches!(why, Some(Err(Skip::Named(w))) if w.contains("file_setattr")));
    }

    /// A strace that knows them prints them by name only when asked to (6.1 prints them by
    /// number, when its seccomp filter lets them stop the program).
    #[test]
    fn strace_is_asked_for_every_newer_call_on_files() {
        let trace = super::super::STRACE_ARGS.last().unwrap();
        let asked = |name: &str| trace.split(',').any(|c| c == format!("?{name}"));
        for (_, name, handling) in NEWER {
            assert_eq!(asked(name), !matches!(handling, NoFile), "{name}");
        }
        for (name, _) in XATTR_BY_STRACE {
            assert_eq!(asked(name), name.ends_with("at"), "{name}");
        }
    }

    #[test]
    fn the_numbers_are_the_kernels() {
        if cfg!(target_arch = "x86_64") {
            assert_eq!(i64::from(NEWER[1].0), libc::SYS_fchmodat2);
            assert_eq!(i64::from(NEWER[11].0), libc::SYS_mseal);
        }
        for pair in NEWER.windows(2) {
            assert_eq!(pair[0].0 + 1, pair[1].0, "{}", pair[1].1);
        }
    }
}

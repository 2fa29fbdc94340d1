//! The system calls Linux added after 6.1, which Debian 12's strace 6.1 does not know: it
//! prints each as `syscall_0x1c4(...)`, its arguments raw, whatever `-e trace=` says. What
//! capture does with each, under either tracer: fchmodat2 is recorded (the bpf tracer reads
//! its path; strace 6.1's text has none, so there it is counted by name), the calls on files
//! that fsbench does not replay are counted by name, the others touch no file.

use super::Skip;

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
        Counted("of setxattrat (extended attributes: not recorded)"),
    ),
    (
        464,
        "getxattrat",
        Counted("of getxattrat (extended attributes: not recorded)"),
    ),
    (
        465,
        "listxattrat",
        Counted("of listxattrat (extended attributes: not recorded)"),
    ),
    (
        466,
        "removexattrat",
        Counted("of removexattrat (extended attributes: not recorded)"),
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

/// Why a call strace 6.1 printed by number is not recorded (a call newer than both it and
/// fsbench: counted too, as one it could not name).
const UNKNOWN: &str = "of system calls newer than strace and fsbench (not recorded)";

/// What the parser makes of call `name` when it is a newer one that is not recorded as a
/// call: `Ok(false)` for one that touches no file, `Err` with the reason it is counted by.
/// `None` for every other call, fchmodat2 by its name among them.
pub(super) fn not_recorded(name: &str) -> Option<Result<bool, Skip>> {
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
    match NEWER.iter().find(|(_, n, _)| *n == name)?.2 {
        Counted(why) => Some(Err(Skip::Named(why))),
        Recorded { .. } | NoFile => None,
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
    fn by_name_fchmodat2_is_recorded_and_the_xattr_at_calls_counted() {
        assert_eq!(not_recorded("fchmodat2"), None);
        assert_eq!(not_recorded("openat"), None);
        assert_eq!(not_recorded("futex_wake"), None);
        let why = not_recorded("file_setattr");
        assert!(matches!(why, Some(Err(Skip::Named(w))) if w.contains("file_setattr")));
    }

    /// A strace that knows them prints them by name only when asked to (6.1 prints them by
    /// number whatever it is asked).
    #[test]
    fn strace_is_asked_for_every_newer_call_on_files() {
        let trace = super::super::STRACE_ARGS.last().unwrap();
        for (_, name, handling) in NEWER {
            let asked = trace.split(',').any(|c| c == format!("?{name}"));
            assert_eq!(asked, !matches!(handling, NoFile), "{name}");
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

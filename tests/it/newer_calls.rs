//! System calls newer than Debian 12's strace 6.1, captured by each tracer: fchmodat2
//! (Linux 6.6; glibc 2.39 makes `fchmodat(..., AT_SYMLINK_NOFOLLOW)` with it) recorded by
//! the bpf tracer and replayed as itself, counted by name under strace; setxattrat (6.13)
//! and the older calls that change extended attributes recorded by the bpf tracer, strace
//! 6.1's line of setxattrat counted by name (strace is not asked for the older ones).
//! Debian 12's glibc calls neither new one, so the program is compiled here and makes them
//! by number. And strace's seccomp filter, which must stop the program at the calls strace
//! does not know for any of this to be seen. And fsbench on Debian 12's kernel, 6.1, which
//! lacks these calls and others fsbench makes (a seccomp filter fails every call 6.1 lacks
//! with ENOSYS): each has its way around there.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::common::capture::*;
use crate::common::seccomp::{knows_this_arch, replayed_on_6_1, run_on_6_1};
use crate::common::*;

const PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

static long chmod2(int dir, const char *path, mode_t mode, int flags) {
    return syscall(452, dir, path, mode, flags);
}

struct xattr_args { uint64_t value; uint32_t size; uint32_t flags; };

int main(void) {
    int f = open("f", O_CREAT | O_WRONLY, 0644);
    if (f < 0 || mkdir("d", 0755) || mkdir("d/e", 0755) || symlink("f", "l")) return 1;
    int d = open("d", O_RDONLY | O_DIRECTORY);
    if (d < 0) return 2;
    if (chmod2(AT_FDCWD, "f", 0600, 0)) return 3;
    /* A directory, as glibc 2.39's fchmodat(AT_SYMLINK_NOFOLLOW) makes it. */
    if (chmod2(AT_FDCWD, "d", 0700, AT_SYMLINK_NOFOLLOW)) return 4;
    /* A symlink's own mode: Linux refuses it. */
    if (chmod2(AT_FDCWD, "l", 0777, AT_SYMLINK_NOFOLLOW) == 0 || errno != EOPNOTSUPP) return 5;
    /* Through the symlink, to f. */
    if (chmod2(AT_FDCWD, "l", 0640, 0)) return 6;
    /* The descriptor's file. */
    if (chmod2(f, "", 0604, AT_EMPTY_PATH)) return 7;
    if (chmod2(d, "e", 0751, AT_SYMLINK_NOFOLLOW)) return 8;
    /* An O_PATH descriptor's file, which fchmod refuses. */
    int e = open("d/e", O_PATH);
    if (e < 0 || chmod2(e, "", 0711, AT_EMPTY_PATH)) return 9;
    /* /proc's own link, not followed: refused, the file untouched. */
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", f);
    if (chmod2(AT_FDCWD, proc, 0666, AT_SYMLINK_NOFOLLOW) == 0 || errno != EOPNOTSUPP) return 10;
    /* An empty path without AT_EMPTY_PATH: no file. */
    struct stat st;
    if (fstatat(f, "", &st, 0) == 0 || errno != ENOENT) return 11;
    /* Whether tmpfs keeps it or not (Linux 6.6 and later do), the replay meets the same. */
    struct xattr_args set = { (uint64_t)(uintptr_t)"v", 1, 0 };
    syscall(463, AT_FDCWD, "f", 0, "user.k", &set, sizeof set);
    setxattr("f", "user.j", "v", 1, 0);
    fremovexattr(f, "user.j");
    close(f);
    close(d);
    close(e);
    return 0;
}
"#;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// The `skipped` reasons `capture --show` prints, whole lines.
fn shown_reasons(trace: &Path) -> String {
    let state = tempdir();
    let out = run(fsbench(state.path()).args(["capture", "--show"]).arg(trace));
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn fchmodat2_is_replayed_from_bpf_and_named_under_strace() {
    if !can_capture("fchmodat2 capture and replay", &["cc"]) {
        return;
    }
    let work = tmpfs_tempdir();
    let program = compiled(work.path(), "chmod2", PROGRAM);
    for tracer in tracers("fchmodat2 capture and replay") {
        let cmd = [program.to_str().unwrap()];
        let name = format!("chmod2-{tracer}");
        let orig = work.path().join(&name);
        std::fs::create_dir(&orig).unwrap();
        let trace = work.path().join(format!("{name}.trace"));
        let said = text(&capture_by(&orig, &trace, &cmd, Some(tracer)).stderr);
        let modes = |root: &Path| ["f", "d", "d/e"].map(|p| mode(&root.join(p)));
        let empty = "1 with an empty path and no AT_EMPTY_PATH (ENOENT: no file)";
        assert!(shown_reasons(&trace).contains(empty), "{tracer}");
        assert_eq!(modes(&orig), [0o604, 0o700, 0o711], "{tracer}");
        let replayed = work.path().join(format!("replayed-{tracer}"));
        let report = replay(&trace, &replayed);
        let shown = shown_reasons(&trace);
        // strace is not asked for the older ones (see `named.rs`); bpf records all three.
        let named = "1 calls of setxattrat (extended attributes: recorded by --tracer bpf only)";
        let noted = report.notes.iter().any(|n| n.contains(named));
        assert_eq!(noted, tracer == "strace", "{tracer}: {:?}", report.notes);
        assert_eq!(said.contains(named), tracer == "strace", "{tracer}: {said}");
        let listed = shown.contains("1 of setxattrat (extended attributes");
        assert_eq!(listed, tracer == "strace", "{tracer}: {shown}");
        if tracer == "bpf" {
            let c = &report.captured;
            assert_eq!((c["setxattr"], c["removexattr"]), (2, 1), "{c:?}");
            // The refused chmod of the symlink is refused in the replay too.
            assert_faithful(&report, &orig, &replayed);
            assert_eq!(report.captured["chmod"], 7, "{:?}", report.captured);
            assert_eq!(modes(&replayed), [0o604, 0o700, 0o711]);
            assert!(!shown.contains("fchmodat2"), "{shown}");
            assert!(!said.contains("fchmodat2"), "{said}");
        } else {
            // strace 6.1 prints `syscall_0x1c4(...)`, the path a raw pointer: counted by name.
            let named = "8 calls of fchmodat2, which strace 6.1 does not decode (use \
                         --tracer bpf)";
            assert!(
                report.notes.iter().any(|n| n.contains(named)),
                "{:?}",
                report.notes
            );
            assert!(shown.contains("8 of fchmodat2"), "{shown}");
            assert!(said.contains(&format!("not recorded: {named}")), "{said}");
            assert!(
                !report.captured.contains_key("chmod"),
                "{:?}",
                report.captured
            );
            assert!(
                report.tree_differs.is_some_and(|n| n > 0),
                "{:?}",
                report.notes
            );
        }
    }
}

/// strace builds its seccomp filter in two forms and takes the shorter: the linear one stops
/// the program at every call past strace's table (how strace 6.1 sees fchmodat2 at all),
/// the bitmap one (`BPF_JSET`) at none. Capture's `-e trace=` must keep the linear one
/// shorter; one more range of calls there can tip it.
#[test]
fn straces_filter_stops_at_the_calls_it_does_not_know() {
    if !can_capture("strace's seccomp filter", &[]) {
        return;
    }
    let out = output_within(
        Command::new("strace")
            .arg("-d")
            .args(fsbench_workloads::replay::strace::STRACE_ARGS)
            .arg("true"),
        limit(),
    );
    let dump = text(&out.stderr);
    assert!(out.status.success(), "{dump}");
    assert!(
        dump.contains("SECCOMP_RET_TRACE"),
        "no filter dumped: {dump}"
    );
    assert!(!dump.contains("BPF_JSET"), "the bitmap filter: {dump}");
}

/// The bpf trace of PROGRAM (fchmodat2 and setxattrat among its calls), replayed on Linux
/// 6.1: fchmodat2 made as chmod through `/proc` (a symlink's own mode refused, as 6.6
/// refuses it), setxattrat as lsetxattr through `/proc`: every call comes out as captured,
/// the tree as the program left it. And a suite of the workloads whose calls 6.1 lacks
/// some of (io_uring's, crash recording's) runs there.
#[test]
fn replay_and_workloads_run_on_linux_6_1() {
    const TEST: &str = "Linux 6.1's calls";
    if !knows_this_arch(TEST) {
        return;
    }
    if !can_capture(TEST, &["cc", "mkfs.ext4"]) || !tracers(TEST).contains(&"bpf") {
        return;
    }
    let work = tmpfs_tempdir();
    let program = compiled(work.path(), "chmod2", PROGRAM);
    let (orig, trace) = (work.path().join("orig"), work.path().join("bpf.trace"));
    std::fs::create_dir(&orig).unwrap();
    capture_by(&orig, &trace, &[program.to_str().unwrap()], Some("bpf"));
    let phase = replayed_on_6_1(&trace);
    assert!(phase["ops"].as_u64().unwrap() >= 7, "{phase}");
    let workloads = [
        "tree:dirs=3,files=3,levels=2,size=1",
        "io:ioengine=io_uring,size=8m",
    ];
    let mut args = vec!["--runs", "1", "--fs", "ext4:crash=2"];
    args.extend(workloads.iter().flat_map(|w| ["-w", w]));
    let state = tempdir();
    let doc = run_on_6_1(state.path(), &args);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), workloads.len(), "{doc}");
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{doc}");
}

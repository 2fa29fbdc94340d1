//! Extended attributes through capture and replay: the bpf tracer records every form of the
//! calls (by path, without following, on a descriptor, Linux 6.13's `*xattrat`) with the
//! attribute's name, the value's length or buffer's size and the flags, and the replay makes
//! them, leaving the attributes where the program left them. A name at and past the
//! kernel's bound and past the tracer's, and a call outside the root, are followed as the
//! program met them. strace's lines carry no names: under it they are not recorded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::capture::{
    assert_faithful, can_capture, capture_by, compiled, replay, trace_text, tracers,
};
use crate::common::seccomp::{knows_this_arch, replayed_on_6_1};
use crate::common::*;

/// Every form, with a name at the kernel's bound (255 bytes), one past it and one past the
/// tracer's (4,095 bytes, as paths), and a call on `argv[1]`, outside the root. Leaves f
/// with `user.b` (3,000 bytes) and the longest name, and d/g with `user.k` where the
/// kernel has the `*xattrat` calls; there, the `l` forms on a symlink too.
const PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

struct xattr_args { uint64_t value; uint32_t size; uint32_t flags; };
static char buf[8192], val[4096], name[5001] = "user.";

#define CHECK(n, call, err) \
    if ((err) ? ((call) != -1 || errno != (err)) : (call) < 0) return n

int main(int argc, char **argv) {
    memset(val, 'v', sizeof val);
    int f = open("f", O_CREAT | O_WRONLY, 0644);
    if (argc < 2 || f < 0 || mkdir("d", 0755)) return 1;
    int g = open("d/g", O_CREAT | O_WRONLY, 0644);
    if (g < 0) return 2;
    CHECK(3, setxattr("f", "user.a", val, 100, XATTR_CREATE), 0);
    CHECK(4, setxattr("f", "user.a", val, 100, XATTR_CREATE), EEXIST);
    CHECK(5, fsetxattr(f, "user.b", val, 3000, 0), 0);
    CHECK(6, lsetxattr("d/g", "user.c", val, 5, XATTR_REPLACE), ENODATA);
    CHECK(7, getxattr("f", "user.a", NULL, 0), 0);
    CHECK(8, fgetxattr(f, "user.b", buf, 4096), 0);
    CHECK(9, lgetxattr("f", "user.zz", buf, 8), ENODATA);
    CHECK(10, listxattr("f", buf, 256), 0);
    CHECK(11, llistxattr("d/g", NULL, 0), 0);
    CHECK(12, flistxattr(f, buf, 64), 0);
    memset(name + 5, 'n', 250);
    CHECK(13, setxattr("f", name, val, 1, 0), 0);
    memset(name + 5, 'n', 251);
    CHECK(14, setxattr("f", name, val, 1, 0), ERANGE);
    memset(name + 5, 'n', 4995);
    CHECK(15, getxattr("f", name, buf, 8), ERANGE);
    CHECK(16, setxattr(argv[1], "user.out", val, 1, 0), 0);
    CHECK(17, removexattr("f", "user.a"), 0);
    CHECK(18, lremovexattr("f", "user.zz"), ENODATA);
    CHECK(19, fremovexattr(f, "user.zz"), ENODATA);
    struct xattr_args set = { (uintptr_t)val, 7, XATTR_CREATE };
    if (syscall(463, AT_FDCWD, "d/g", AT_SYMLINK_NOFOLLOW, "user.k", &set, sizeof set) == 0) {
        struct xattr_args get = { (uintptr_t)buf, 4096, 0 };
        CHECK(20, syscall(464, g, "", AT_EMPTY_PATH, "user.k", &get, sizeof get), 0);
        CHECK(21, syscall(465, AT_FDCWD, "d/g", 0, buf, 100), 0);
        CHECK(22, syscall(463, AT_FDCWD, "d/g", 0, "user.m", &set, sizeof set), 0);
        CHECK(23, syscall(466, AT_FDCWD, "d/g", 0, "user.m"), 0);
        /* A symlink's own attributes, which the replay reaches with these calls too. */
        CHECK(25, symlink("f", "l"), 0);
        CHECK(26, lgetxattr("l", "user.a", buf, 8), ENODATA);
        CHECK(27, llistxattr("l", buf, 256), 0);
        CHECK(28, lsetxattr("l", "user.s", val, 1, 0), EPERM);
    } else if (errno != ENOSYS) {
        return 24;
    }
    close(f);
    close(g);
    return 0;
}
"#;

/// A file's attributes: each name with its value's length.
fn attrs(path: &Path) -> BTreeMap<Vec<u8>, usize> {
    let mut names = vec![0u8; 65_536];
    let n = rustix::fs::llistxattr(path, &mut names[..]).unwrap();
    let mut value = vec![0u8; 65_536];
    (names[..n].split(|&b| b == 0).filter(|n| !n.is_empty()))
        .map(|name| {
            let len = rustix::fs::lgetxattr(path, name, &mut value[..]).unwrap();
            (name.to_vec(), len)
        })
        .collect()
}

/// A scratch directory whose filesystem keeps `user.` attributes (tmpfs does from Linux 6.6
/// only), or `None`, said as a skip.
fn xattr_tempdir(test: &str) -> Option<tempfile::TempDir> {
    let work = tempdir();
    let probe = work.path().join("probe");
    std::fs::write(&probe, b"").unwrap();
    let flags = rustix::fs::XattrFlags::empty();
    if let Err(e) = rustix::fs::setxattr(&probe, "user.probe", b"v", flags) {
        skip(&format!(
            "{test}: {} keeps no user attributes: {e}",
            work.path().display()
        ));
        return None;
    }
    std::fs::remove_file(probe).unwrap();
    Some(work)
}

/// Where the bpf tracer can capture a program using `tools`: a scratch directory that keeps
/// `user.` attributes; `None`, said as a skip, elsewhere.
fn bpf_xattr_tempdir(test: &str, tools: &[&str]) -> Option<tempfile::TempDir> {
    if !can_capture(test, tools) || !tracers(test).contains(&"bpf") {
        return None;
    }
    xattr_tempdir(test)
}

/// The trace's calls of the xattr kinds, as their fields: kind, errno, fd, fd2, a, b, path,
/// path2.
fn xattr_lines(trace: &Path) -> Vec<Vec<String>> {
    (trace_text(trace).lines())
        .map(|l| l.split('\t').map(str::to_string).collect::<Vec<_>>())
        .filter(|f| f.len() >= 14 && f[3].ends_with("xattr"))
        .map(|f| [3, 5, 6, 7, 8, 9, 10, 11].map(|i| f[i].clone()).to_vec())
        .collect()
}

#[test]
fn every_xattr_call_is_captured_by_bpf_and_replayed() {
    const TEST: &str = "xattr calls captured";
    let Some(work) = bpf_xattr_tempdir(TEST, &["cc"]) else {
        return;
    };
    let (orig, trace, outside) = captured_program(work.path());
    let lines = xattr_lines(&trace);
    let at = |i: usize| lines[i].iter().map(String::as_str).collect::<Vec<_>>();
    let n255 = format!("user.{}", "n".repeat(250));
    let (n256, n4095) = (format!("{n255}n"), format!("user.{}", "n".repeat(4090)));
    // kind, errno, fd, fd2, A, B, path, name.
    let want: [[&str; 8]; 17] = [
        ["setxattr", "0", "-1", "1", "100", "1", "f", "user.a"],
        ["setxattr", "17", "-1", "1", "100", "1", "f", "user.a"],
        ["setxattr", "0", "3", "0", "3000", "1", "f", "user.b"],
        ["setxattr", "61", "-1", "2", "5", "0", "d/g", "user.c"],
        ["getxattr", "0", "-1", "-1", "0", "1", "f", "user.a"],
        ["getxattr", "0", "3", "-1", "4096", "1", "f", "user.b"],
        ["getxattr", "61", "-1", "-1", "8", "0", "f", "user.zz"],
        ["listxattr", "0", "-1", "-1", "256", "1", "f", "-"],
        ["listxattr", "0", "-1", "-1", "0", "0", "d/g", "-"],
        ["listxattr", "0", "3", "-1", "64", "1", "f", "-"],
        ["setxattr", "0", "-1", "0", "1", "1", "f", &n255],
        ["setxattr", "34", "-1", "0", "1", "1", "f", &n256],
        // Cut at the tracer's bound: refused (ERANGE) as the whole name was.
        ["getxattr", "34", "-1", "-1", "8", "1", "f", &n4095],
        ["removexattr", "0", "-1", "-1", "0", "1", "f", "user.a"],
        ["removexattr", "61", "-1", "-1", "0", "0", "f", "user.zz"],
        ["removexattr", "61", "3", "-1", "0", "1", "f", "user.zz"],
        ["setxattr", "0", "-1", "1", "7", "0", "d/g", "user.k"],
    ];
    // The `*xattrat` calls where the kernel has them (6.13).
    let newer = lines.len() > 16;
    assert_eq!(lines.len(), if newer { 24 } else { 16 }, "{lines:?}");
    for (i, w) in want[..lines.len().min(17)].iter().enumerate() {
        assert_eq!(at(i), w, "call {i}");
    }
    if newer {
        assert_eq!(at(17)[..6], ["getxattr", "0", "4", "-1", "4096", "1"]);
        assert_eq!(
            at(18)[..7],
            ["listxattr", "0", "-1", "-1", "100", "1", "d/g"]
        );
        assert_eq!(
            at(20)[..8],
            ["removexattr", "0", "-1", "-1", "0", "1", "d/g", "user.m"]
        );
        let symlink_calls = [&at(21)[..8], &at(23)[..8]];
        let want = [
            ["getxattr", "61", "-1", "-1", "8", "0", "l", "user.a"],
            ["setxattr", "1", "-1", "0", "1", "0", "l", "user.s"],
        ];
        assert_eq!(symlink_calls, want);
    }
    let state = tempdir();
    let shown = text(
        &run(fsbench(state.path())
            .args(["capture", "--show"])
            .arg(&trace))
        .stdout,
    );
    assert!(shown.contains("outside the root"), "{shown}");
    // The call outside the root is not replayed.
    rustix::fs::removexattr(&outside, "user.out").unwrap();
    let replayed = work.path().join("replayed");
    let report = replay(&trace, &replayed);
    assert_faithful(&report, &orig, &replayed);
    for kind in ["getxattr", "setxattr", "listxattr", "removexattr"] {
        let want = lines.iter().filter(|l| l[0] == kind).count() as u64;
        assert_eq!(report.calls[kind], want, "{kind}: {:?}", report.calls);
    }
    for file in ["f", "d/g"] {
        assert_eq!(
            attrs(&replayed.join(file)),
            attrs(&orig.join(file)),
            "{file}"
        );
    }
    assert_eq!(attrs(&orig.join("f")).len(), 2);
    assert!(
        attrs(&outside).is_empty(),
        "the replay reached outside the root"
    );
}

/// PROGRAM compiled in `work`, captured by bpf in a root of its own: the root, the trace and
/// the file outside the root that it was given.
fn captured_program(work: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let program = compiled(work, "xattrs", PROGRAM);
    let outside = work.join("outside");
    std::fs::write(&outside, b"").unwrap();
    let (orig, trace) = (work.join("root"), work.join("x.trace"));
    std::fs::create_dir(&orig).unwrap();
    let cmd = [program.to_str().unwrap(), outside.to_str().unwrap()];
    capture_by(&orig, &trace, &cmd, Some("bpf"));
    (orig, trace, outside)
}

/// The replay on Debian 12's kernel, 6.1 (a seccomp filter fails every call it lacks with
/// ENOSYS), without Linux 6.13's `*xattrat` calls: the `l` calls on the symlink and the
/// program's own `*xattrat` calls reach the same attributes through `/proc`, and every call
/// comes out as the program's did. Before, each call on the symlink was refused as leading
/// outside the run's directory.
#[test]
fn a_symlinks_own_attributes_replay_on_a_kernel_without_xattrat() {
    const TEST: &str = "symlink attributes without *xattrat";
    if !knows_this_arch(TEST) {
        return;
    }
    let Some(work) = bpf_xattr_tempdir(TEST, &["cc"]) else {
        return;
    };
    let (_, trace, _) = captured_program(work.path());
    if xattr_lines(&trace).len() <= 16 {
        skip(&format!(
            "{TEST}: this kernel has no *xattrat calls, so the program made no symlink calls"
        ));
        return;
    }
    let phase = replayed_on_6_1(&trace);
    let calls = (trace_text(&trace).lines())
        .skip_while(|l| *l != "calls")
        .skip(1)
        .take_while(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .count();
    assert_eq!(phase["ops"].as_u64(), Some(calls as u64), "{phase}");
}

/// A real program's loop of attribute calls (as a `setfattr` loop makes them): Python's
/// `os.setxattr`, `os.getxattr`, `os.listxattr`, `os.removexattr`. Under bpf every call is
/// recorded and replayed, the attributes left where the program left them; under strace,
/// which is not asked for them, none is recorded, the replay's files have none, and the
/// comparison of the trees says which attributes the program's had.
#[test]
fn a_python_attribute_loop_replays_its_attributes() {
    const TEST: &str = "a Python attribute loop";
    if !can_capture(TEST, &["python3"]) {
        return;
    }
    let Some(work) = xattr_tempdir(TEST) else {
        return;
    };
    let script = "import os\n\
        for i in range(20):\n\
        \x20   open(f'f{i}', 'w').close()\n\
        \x20   os.setxattr(f'f{i}', 'user.tag', b'x' * (i + 1))\n\
        \x20   os.setxattr(f'f{i}', 'user.big', b'y' * 2000)\n\
        for i in range(20):\n\
        \x20   assert os.getxattr(f'f{i}', 'user.tag') == b'x' * (i + 1)\n\
        \x20   os.listxattr(f'f{i}')\n\
        \x20   if i % 2:\n\
        \x20       os.removexattr(f'f{i}', 'user.big')\n";
    for tracer in tracers(TEST) {
        let orig = work.path().join(format!("root-{tracer}"));
        std::fs::create_dir(&orig).unwrap();
        let trace = work.path().join(format!("{tracer}.trace"));
        capture_by(&orig, &trace, &["python3", "-c", script], Some(tracer));
        let replayed = work.path().join(format!("replayed-{tracer}"));
        let report = replay(&trace, &replayed);
        if tracer == "bpf" {
            assert_faithful(&report, &orig, &replayed);
        } else {
            assert_eq!(report.mismatched, 0, "{:?}", report.notes);
            assert_eq!(tree(&orig), tree(&replayed));
            assert_eq!(report.tree_differs, Some(20), "{:?}", report.notes);
            let f0 =
                "f0: attributes: the program's user.big 2000 B, user.tag 1 B, the replay's none";
            assert!(
                report.notes.iter().any(|n| n.contains(f0)),
                "{:?}",
                report.notes
            );
        }
        let c = &report.captured;
        let left = |root: &Path| {
            (0..20)
                .map(|i| attrs(&root.join(format!("f{i}"))))
                .collect()
        };
        let (orig_attrs, replayed_attrs): (Vec<_>, Vec<_>) = (left(&orig), left(&replayed));
        if tracer == "bpf" {
            assert_eq!((c["setxattr"], c["removexattr"]), (40, 10), "{c:?}");
            assert!(c["getxattr"] >= 20 && c["listxattr"] >= 20, "{c:?}");
            assert_eq!(replayed_attrs, orig_attrs);
            assert_eq!(orig_attrs[1].len(), 1);
            assert_eq!(orig_attrs[2][&b"user.big"[..]], 2000);
        } else {
            assert!(!c.keys().any(|k| k.ends_with("xattr")), "{c:?}");
            assert!(replayed_attrs.iter().all(BTreeMap::is_empty));
        }
    }
}

/// A file's POSIX ACL, its value as the kernel keeps it (empty: none).
fn acl(path: &Path) -> Vec<u8> {
    acl_named(path, "system.posix_acl_access")
}

/// A file's attribute `name`, a POSIX ACL's, its value as the kernel keeps it (empty: none).
fn acl_named(path: &Path, name: &str) -> Vec<u8> {
    let mut value = vec![0u8; 4096];
    let n = rustix::fs::lgetxattr(path, name, &mut value[..]).unwrap_or(0);
    value.truncate(n);
    value
}

/// `setfacl` as the program: an access ACL with a named user on a file, a default ACL on a
/// directory. The kernel reads those values and refuses a pattern; the calls' values are
/// recorded (trace version 5) and the replay sets them as they were, so every call comes out
/// as it did and each replayed ACL equals the program's. Before, both setxattr calls came
/// out `EINVAL`/`EOPNOTSUPP` and the replay's files had none.
#[test]
fn setfacls_acls_are_replayed_with_their_values() {
    const TEST: &str = "setfacl's ACLs replayed";
    let Some(work) = bpf_xattr_tempdir(TEST, &["setfacl"]) else {
        return;
    };
    let orig = work.path().join("root");
    std::fs::create_dir_all(orig.join("d")).unwrap();
    std::fs::write(orig.join("f"), b"x").unwrap();
    let trace = work.path().join("acl.trace");
    let script = "setfacl -m u:nobody:rw f && setfacl -d -m u:nobody:r d";
    capture_by(&orig, &trace, &["sh", "-c", script], Some("bpf"));
    let lines = trace_text(&trace);
    let valued = (lines.lines())
        .filter(|l| l.contains("\tsetxattr\t") && l.split('\t').count() == 15)
        .count();
    assert_eq!(valued, 2, "{lines}");
    let replayed = work.path().join("replayed");
    let report = replay(&trace, &replayed);
    assert_faithful(&report, &orig, &replayed);
    for (file, name) in [
        ("f", "system.posix_acl_access"),
        ("d", "system.posix_acl_default"),
    ] {
        let want = acl_named(&orig.join(file), name);
        assert!(want.len() > 28, "{file}: an ACL with a named user");
        assert_eq!(acl_named(&replayed.join(file), name), want, "{file}");
    }
}

/// `cp -a` of files that had attributes before the capture (and an ACL, where `setfacl` is
/// installed): the trace's initial state lists them, the replay makes them again, so that
/// cp's getxattr calls of them succeed as they did and the replay's tree has the program's
/// attributes (names and sizes; the ACL's value too). Before, each came out `ENODATA`. A
/// trace whose tree left lists an attribute the replay does not make is told apart, the
/// attribute named.
#[test]
fn cp_a_of_files_with_attributes_replays_their_reads_and_the_tree_compares_them() {
    const TEST: &str = "cp -a of files with attributes";
    let Some(work) = bpf_xattr_tempdir(TEST, &["cp"]) else {
        return;
    };
    let orig = work.path().join("root");
    std::fs::create_dir_all(orig.join("copy")).unwrap();
    let (a, b) = (orig.join("a"), orig.join("b"));
    std::fs::write(&a, b"hello").unwrap();
    std::fs::write(&b, b"world!").unwrap();
    let set = |file: &Path, name: &str, value: &[u8]| {
        rustix::fs::setxattr(file, name, value, rustix::fs::XattrFlags::empty()).unwrap();
    };
    set(&a, "user.one", b"12345");
    set(&a, "user.two", b"abc");
    set(&b, "user.one", &[7; 3000]);
    let with_acl = has_tool("setfacl");
    if with_acl {
        let out = run(Command::new("setfacl").args(["-m", "u:nobody:r"]).arg(&b));
        assert!(out.status.success(), "setfacl: {}", text(&out.stderr));
    } else {
        skip(&format!(
            "{TEST}: an ACL: setfacl is not installed (scripts/test.sh installs it)"
        ));
    }
    let trace = work.path().join("cp.trace");
    capture_by(&orig, &trace, &["cp", "-a", "a", "b", "copy"], Some("bpf"));
    let lines = trace_text(&trace);
    assert!(lines.contains("\nx\ta\tuser.one\t5\n"), "{lines}");
    let state = tempdir();
    let show = run(fsbench(state.path())
        .args(["capture", "--show"])
        .arg(&trace));
    let xattrs = if with_acl { 4 } else { 3 };
    let before = format!("before    3 entries, 11 B, {xattrs} extended attributes");
    assert!(
        text(&show.stdout).contains(&before),
        "{}",
        text(&show.stdout)
    );
    assert!(
        lines.contains("\nfinal\tx\tcopy/b\tuser.one\t3000\n"),
        "{lines}"
    );
    let replayed = work.path().join("replayed");
    let report = replay(&trace, &replayed);
    // cp read each attribute of a and b, and set the ACL it built from each copy's mode
    // (recorded with its value): none came out otherwise, the copies' modes as cp left them.
    assert!(report.calls["getxattr"] >= 3, "{:?}", report.calls);
    assert!(report.calls["setxattr"] >= 2, "{:?}", report.calls);
    assert_eq!(report.mismatched, 0, "{:?}", report.notes);
    assert!(
        !report
            .notes
            .iter()
            .any(|n| n.contains("came out otherwise")),
        "{:?}",
        report.notes
    );
    assert_eq!(report.tree_differs, Some(0), "{:?}", report.notes);
    for file in ["a", "b", "copy/a", "copy/b"] {
        let want = attrs(&orig.join(file));
        assert_eq!(attrs(&replayed.join(file)), want, "{file}");
    }
    assert_eq!(attrs(&replayed.join("copy/b"))[&b"user.one"[..]], 3000);
    if with_acl {
        assert!(!acl(&b).is_empty());
        assert_eq!(acl(&replayed.join("b")), acl(&b));
        assert_eq!(acl(&replayed.join("copy/b")), acl(&b));
        assert!(
            lines.contains("\nx\tb\tsystem.posix_acl_access\t"),
            "{lines}"
        );
    }
    assert!(
        !report.notes.iter().any(|n| n.contains("attributes:")),
        "{:?}",
        report.notes
    );
    // The tree left lists one attribute more on a: the replay's tree is told apart.
    let edited = lines.replacen(
        "\nfinal\tf\ta\t5\t644\t1\n",
        "\nfinal\tf\ta\t5\t644\t1\nfinal\tx\ta\tuser.gone\t7\n",
        1,
    );
    assert_ne!(edited, lines);
    std::fs::write(&trace, zstd::encode_all(edited.as_bytes(), 3).unwrap()).unwrap();
    let again = replay(&trace, &work.path().join("again"));
    let note = again.notes.iter().find(|n| n.contains("tree differs"));
    let note = note.unwrap_or_else(|| panic!("{:?}", again.notes));
    assert!(
        note.contains("a: attributes: the program's user.gone 7 B, the replay's none"),
        "{note}"
    );
    assert_eq!(
        again.tree_differs,
        report.tree_differs.map(|n| n + 1),
        "{:?}",
        again.notes
    );
}

/// Hostile attribute lines in a trace's initial state: a name past 255 bytes, a value past
/// 64 KiB, one of a path not the entry before it (outside the root, or another file): each
/// refused naming its line before anything is made. An entry outside the root is refused
/// with its attributes, and a symlink's own attribute leads nowhere beyond it: nothing
/// outside the run changes.
#[test]
fn hostile_attribute_lines_replay_nothing_outside() {
    let work = tempdir();
    let (outside, dir) = (work.path().join("outside"), work.path().join("run"));
    std::fs::write(&outside, b"keep").unwrap();
    std::fs::create_dir(&dir).unwrap();
    let trace = work.path().join("t.trace");
    let state = tempdir();
    let replay_of = |entries: &[&str]| {
        crate::traces::hand_trace(&trace, 4, entries, &[]);
        output_within(
            fsbench(state.path())
                .args(["capture", "--replay"])
                .arg(&trace)
                .arg("-C")
                .arg(&dir),
            limit(),
        )
    };
    let long = format!("x\tf\tuser.{}\t1", "n".repeat(251));
    let refused = [
        (long.as_str(), "longer than 255 bytes (XATTR_NAME_MAX)"),
        (
            "x\tf\tuser.a\t65537",
            "larger than 65,536 bytes (XATTR_SIZE_MAX)",
        ),
        (
            "x\t../outside\tuser.a\t1",
            "an attribute of ../outside, which is not the entry",
        ),
        (
            "x\tg\tuser.a\t1",
            "an attribute of g, which is not the entry before it",
        ),
    ];
    for (line, why) in refused {
        let out = replay_of(&["f\tf\t1\t644", line]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line}: {err}");
        assert!(
            err.contains("damaged trace at line 4: ") && err.contains(why),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{line}");
    }
    let path = outside.to_str().unwrap();
    let entries = [
        "f\t../escape\t1\t644",
        "x\t../escape\tuser.a\t1",
        &format!("l\tout\t{path}"),
        "x\tout\tuser.a\t1",
    ];
    let out = replay_of(&entries);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{said}");
    assert!(said.contains("lead outside the run's directory"), "{said}");
    // user. attributes are refused on a symlink.
    let unmade = "1 extended attributes of the initial state were not made";
    assert!(
        said.contains(unmade) && said.contains("user.a of out: EPERM"),
        "{said}"
    );
    assert!(!work.path().join("escape").exists());
    assert!(attrs(&outside).is_empty());
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
}

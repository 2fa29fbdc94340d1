//! Capture and replay: real programs (tar, sqlite3) captured by each tracer and replayed on
//! tmpfs (and a loop ext4 as root), asserting that the replay makes as many calls of each kind
//! as the capture recorded and leaves the tree the program left; hostile traces that touch
//! nothing outside the run's directory; bad input with clear messages.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::common::capture::*;
use crate::common::*;
use crate::traces::hand_trace;
use fsbench_model::workload::WorkerMode;

/// A source tree with data of several sizes, an empty file, a hard link and a symlink.
fn source_tree(dir: &Path) {
    std::fs::create_dir_all(dir.join("a/b")).unwrap();
    for (name, size) in [
        ("a/f0", 0),
        ("a/f1", 1),
        ("a/b/f5k", 5000),
        ("big", 200_000),
    ] {
        std::fs::write(dir.join(name), vec![7u8; size]).unwrap();
    }
    std::fs::hard_link(dir.join("a/b/f5k"), dir.join("a/hard")).unwrap();
    std::os::unix::fs::symlink("b/f5k", dir.join("a/soft")).unwrap();
}

#[test]
fn tar_x_replayed_makes_the_same_calls_and_tree() {
    if !can_capture("tar -x capture and replay", &["tar"]) {
        return;
    }
    let work = tmpfs_tempdir();
    let src = work.path().join("src");
    source_tree(&src);
    let tarball = work.path().join("src.tar");
    assert!(
        status(
            Command::new("tar")
                .arg("-cf")
                .arg(&tarball)
                .arg("-C")
                .arg(&src)
                .arg(".")
        )
        .success()
    );
    let mut traced = None;
    for tracer in tracers("tar -x capture and replay") {
        // The root holds something before tar runs: the replay must make it first.
        let orig = work.path().join(format!("orig-{tracer}"));
        std::fs::create_dir_all(orig.join("pre")).unwrap();
        std::fs::write(orig.join("pre/kept"), b"0123456789").unwrap();
        let trace = work.path().join(format!("{tracer}/tar.trace"));
        std::fs::create_dir(work.path().join(tracer)).unwrap();
        capture_by(&orig, &trace, &["tar", "-xf", "../src.tar"], Some(tracer));

        let replayed = work.path().join(format!("replayed-{tracer}"));
        let report = replay(&trace, &replayed);
        assert_faithful(&report, &orig, &replayed);
        let t = tree(&replayed);
        assert_eq!(t["a/hard"], ('f', 5000, 2), "{tracer}: {t:?}");
        assert_eq!(t["a/soft"].0, 'l');
        assert_eq!(t["pre/kept"], ('f', 10, 1));
        traced = Some((trace, report));
    }
    let (trace, report) = traced.unwrap();

    // The same through `fsbench run`: one latency histogram per kind, with every call.
    let state = tempdir();
    let run_dir = work.path().join("run");
    std::fs::create_dir(&run_dir).unwrap();
    let workload = format!("replay:trace={}", trace.display());
    let out = run(json_run(state.path())
        .args(["--runs", "1", "-w", &workload, "--dir"])
        .arg(&run_dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let phase = &doc["runs"][0]["phases"][0];
    assert_eq!(phase["name"], "replay");
    for (kind, n) in &report.captured {
        assert_eq!(phase["latency"][kind]["count"], *n, "{kind}");
    }
    assert_eq!(phase["ops"], report.captured.values().sum::<u64>());
    // With the recorded think times: the same calls, and at least the capture's pauses.
    let think = format!("replay:trace={},mode=think", trace.display());
    let out = run(json_run(state.path())
        .args(["--runs", "1", "-w", &think, "--dir"])
        .arg(&run_dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["runs"][0]["workload"], "replay:tar.trace,think");
    assert_eq!(
        doc["runs"][0]["phases"][0]["ops"],
        report.captured.values().sum::<u64>()
    );

    // On a loop ext4 as root: a fresh filesystem, the same calls.
    if can_run("replay on a loop ext4", &["mkfs.ext4"]) {
        let images = tempdir();
        let (out, doc) = image_run_json(
            images.path(),
            state.path(),
            &["--fs", "ext4", "--runs", "1", "-w", &workload],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let phase = &doc["runs"][0]["phases"][0];
        for (kind, n) in &report.captured {
            assert_eq!(phase["latency"][kind]["count"], *n, "ext4 {kind}");
        }
        assert!(
            doc["runs"][0]["phases"][0]["errors"]
                .as_object()
                .is_none_or(|e| e.is_empty())
        );
        assert_nothing_left(images.path());
    }
}

#[test]
fn sqlite3_wal_replayed_makes_the_same_calls_and_tree() {
    if !can_capture("sqlite3 capture and replay", &["sqlite3"]) {
        return;
    }
    let work = tmpfs_tempdir();
    let script = "PRAGMA journal_mode=WAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); \
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 3000) \
        INSERT INTO t SELECT i, hex(randomblob(40)) FROM n; \
        UPDATE t SET v = 'x' || v WHERE k % 3 = 0; DELETE FROM t WHERE k % 7 = 0;";
    for tracer in tracers("sqlite3 capture and replay") {
        let name = format!("sqlite-{tracer}");
        let cmd = ["sqlite3", "db.sqlite", script];
        let (orig, trace) = captured_by(work.path(), &name, &cmd, Some(tracer));
        let replayed = work.path().join(format!("replayed-{tracer}"));
        let report = replay(&trace, &replayed);
        assert_faithful(&report, &orig, &replayed);
        assert!(report.captured["write"] > 10, "{:?}", report.captured);
    }
}

#[test]
fn git_clone_and_checkout_replayed_make_the_same_calls_and_tree() {
    if !can_capture("git capture and replay", &["git"]) {
        return;
    }
    let work = tmpfs_tempdir();
    let repo = work.path().join("repo");
    let git = |args: &[&str]| {
        let mut c = Command::new("git");
        c.args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ]);
        assert!(
            status(c.arg("-C").arg(&repo).args(args)).success(),
            "{args:?}"
        );
    };
    std::fs::create_dir(&repo).unwrap();
    git(&["init", "-q"]);
    source_tree(&repo);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "one"]);
    git(&["checkout", "-qb", "other"]);
    std::fs::write(repo.join("a/f1"), b"changed").unwrap();
    std::fs::remove_file(repo.join("big")).unwrap();
    git(&["commit", "-qam", "two"]);
    git(&["checkout", "-q", "main"]);
    // --no-local: the objects travel through git's pack protocol, as from a server; without
    // it, the clone hard-links them from the repository outside the root, which the
    // replay makes first (below .fsbench-outside).
    let cases = [
        ("packed", "git clone -q --no-local"),
        ("linked", "git clone -q"),
    ];
    let tracers = tracers("git capture and replay");
    for (tracer, (name, clone)) in tracers.iter().flat_map(|t| cases.map(|c| (*t, c))) {
        // A repository of each one's own: a clone's hard links count in its objects' links.
        let copy = work.path().join(format!("repo-{tracer}-{name}"));
        assert!(status(Command::new("cp").arg("-a").arg(&repo).arg(&copy)).success());
        let cmd = format!(
            "{clone} ../{} c && git -C c checkout -q other && git -C c status",
            copy.file_name().unwrap().to_str().unwrap()
        );
        let name = format!("{name}-{tracer}");
        let (orig, trace) = captured_by(work.path(), &name, &["sh", "-c", &cmd], Some(tracer));
        let replayed = work.path().join(format!("{name}-replayed"));
        let report = replay(&trace, &replayed);
        assert_faithful(&report, &orig, &replayed);
        assert_eq!(tree(&replayed)["c/a/f1"], ('f', 7, 1));
        if name.starts_with("linked") {
            assert!(report.captured["link"] > 3, "{:?}", report.captured);
        }
    }
}

/// A program that opens with openat2 (the `struct open_how` flags, mode and RESOLVE_*
/// flags: one open through a symlink fails with ELOOP because of RESOLVE_NO_SYMLINKS, one
/// absolute path is below its directory descriptor because of RESOLVE_IN_ROOT) and copies
/// with sendfile and copy_file_range. Debian's programs do not call openat2 yet (glibc's
/// open() is openat), so it is compiled here.
const OPENAT2_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int open2(int dir, const char *path, unsigned long long flags,
                 unsigned long long mode, unsigned long long resolve) {
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = flags;
    how.mode = mode;
    how.resolve = resolve;
    return syscall(SYS_openat2, dir, path, &how, sizeof how);
}

int main(void) {
    if (mkdir("d", 0750)) return 1;
    int d = open2(AT_FDCWD, "d", O_RDONLY | O_DIRECTORY, 0, RESOLVE_BENEATH);
    int a = open2(d, "a.txt", O_CREAT | O_WRONLY | O_TRUNC, 0640,
                  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
    if (d < 0 || a < 0 || write(a, "hello, openat2\n", 15) != 15) return 2;
    close(a);
    if (symlink("a.txt", "d/link")) return 3;
    if (open2(d, "link", O_RDONLY, 0, RESOLVE_NO_SYMLINKS) >= 0 || errno != ELOOP) return 4;
    int in = open2(d, "/a.txt", O_RDONLY, 0, RESOLVE_IN_ROOT);
    int out = open2(AT_FDCWD, "d/b.txt", O_CREAT | O_WRONLY, 0600, 0);
    if (in < 0 || out < 0 || sendfile(out, in, NULL, 15) != 15) return 5;
    int c = open2(d, "c.txt", O_CREAT | O_WRONLY | O_EXCL, 0644, RESOLVE_BENEATH);
    off_t at = 0;
    if (c < 0 || copy_file_range(in, &at, c, NULL, 15, 0) != 15) return 6;
    close(in);
    close(out);
    close(c);
    close(d);
    return 0;
}
"#;

#[test]
fn openat2_sendfile_and_copy_file_range_are_replayed() {
    if !can_capture("openat2 capture and replay", &["cc"]) {
        return;
    }
    let work = tmpfs_tempdir();
    let source = work.path().join("open2.c");
    std::fs::write(&source, OPENAT2_PROGRAM).unwrap();
    let program = work.path().join("open2");
    let built = run(Command::new("cc")
        .arg("-O")
        .arg("-o")
        .arg(&program)
        .arg(&source));
    assert!(built.status.success(), "cc: {}", text(&built.stderr));
    for tracer in tracers("openat2 capture and replay") {
        let cmd = [program.to_str().unwrap()];
        let name = format!("open2-{tracer}");
        let (orig, trace) = captured_by(work.path(), &name, &cmd, Some(tracer));
        let replayed = work.path().join(format!("replayed-{tracer}"));
        let report = replay(&trace, &replayed);
        // The ELOOP open fails here too: RESOLVE_NO_SYMLINKS was kept.
        assert_faithful(&report, &orig, &replayed);
        let c = &report.captured;
        assert_eq!(
            (c["open"], c["copy"], c["sendfile"]),
            (6, 1, 1),
            "{tracer}: {c:?}"
        );
        let t = tree(&replayed);
        for name in ["d/a.txt", "d/b.txt", "d/c.txt"] {
            assert_eq!(t[name], ('f', 15, 1), "{tracer} {name}: {t:?}");
        }
    }
}

#[test]
fn threads_keep_the_orders_their_results_depend_on() {
    // Thread 2 opens, reads and removes what thread 1 makes; thread 1 then removes the
    // directory. Replayed as fast as possible without the orders, thread 2 would start first.
    let calls = [
        "1:mkdir\t0\t0\t-1\t-1\t493\t-1\td\t-",
        "1:open\t3\t0\t-1\t3\t65\t420\td/f\t-",
        "1:write\t4096\t0\t3\t-1\t4096\t-1\td/f\t-",
        "1:close\t0\t0\t3\t-1\t0\t-1\td/f\t-",
        "2:open\t5\t0\t-1\t5\t0\t0\td/f\t-",
        "2:read\t4096\t0\t5\t-1\t4096\t-1\td/f\t-",
        "2:close\t0\t0\t5\t-1\t0\t-1\td/f\t-",
        "2:unlink\t0\t0\t-1\t-1\t0\t-1\td/f\t-",
        "1:rmdir\t0\t0\t-1\t-1\t0\t-1\td\t-",
        "3:stat\t-1\t2\t-1\t-1\t1\t-1\td/f\t-",
    ];
    let work = tmpfs_tempdir();
    // Version 1: threads of one process; version 3 without `task` lines: each thread a
    // process of its own, ordered through the worker processes' shared counts.
    use WorkerMode::{Processes, Threads};
    for (version, mode) in [(1, Processes), (3, Processes), (3, Threads)] {
        let trace = work.path().join(format!("threads{version}.trace"));
        hand_trace(&trace, version, &[], &calls);
        for round in 0..20 {
            let target = work.path().join(format!("r{version}{mode:?}{round}"));
            let report = replay_as(&trace, &target, mode);
            let said = format!("v{version} {mode:?} round {round}: {:?}", report.notes);
            assert_eq!(report.mismatched, 0, "{said}");
            assert_eq!(report.calls["read"], 1, "{said}");
            assert!(tree(&target).is_empty(), "{said}");
        }
    }
}

#[test]
fn hostile_traces_touch_nothing_outside() {
    let work = tempdir();
    let canary = work.path().join("canary");
    std::fs::create_dir(&canary).unwrap();
    std::fs::write(canary.join("victim"), b"keep").unwrap();
    std::fs::set_permissions(
        canary.join("victim"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let before = tree(work.path());
    let c = canary.display().to_string();
    // KIND RESULT ERRNO FD FD2 A B PATH PATH2; open's A is its flags (0o101: O_CREAT|O_WRONLY).
    let attacks = [
        "open\t3\t0\t-1\t3\t65\t420\t../x\t-".to_string(),
        format!("open\t3\t0\t-1\t3\t65\t420\t{c}/new\t-"),
        "open\t3\t0\t-1\t3\t513\t420\ta/esc/victim\t-".into(),
        "open\t3\t0\t-1\t3\t65\t420\tup/canary/new\t-".into(),
        "write\t4\t0\t7\t-1\t4\t-1\ta/esc/victim\t-".into(),
        "mkdir\t0\t0\t-1\t-1\t493\t-1\ta/esc/d\t-".into(),
        "unlink\t0\t0\t-1\t-1\t0\t-1\ta/esc/victim\t-".into(),
        "rename\t0\t0\t-1\t-1\t0\t-1\ta/esc/victim\tstolen".into(),
        "rename\t0\t0\t-1\t-1\t0\t-1\tpre\ta/esc/pre".into(),
        "link\t0\t0\t-1\t-1\t0\t-1\ta/esc/victim\tstolen".into(),
        "truncate\t0\t0\t-1\t-1\t0\t-1\ta/esc/victim\t-".into(),
        "chmod\t0\t0\t-1\t-1\t511\t-1\ta/esc\t-".into(),
        "chmod\t0\t0\t-1\t-1\t511\t-1\ta/esc/victim\t-".into(),
        "symlink\t0\t0\t-1\t-1\t0\t-1\ts2\t/".into(),
        format!("unlink\t0\t0\t-1\t-1\t0\t-1\ts2{c}/victim\t-"),
        "unlink\t0\t0\t-1\t-1\t0\t-1\t../canary/victim\t-".into(),
    ];
    let calls: Vec<&str> = attacks.iter().map(String::as_str).collect();
    let esc = format!("l\ta/esc\t{c}");
    let entries = [
        "d\ta",
        "d\tpre",
        &esc,
        "l\tup\t..",
        "f\t../escape\t10",
        "h\ta/hl\t../canary/victim",
    ];
    let trace = work.path().join("hostile.trace");
    hand_trace(&trace, 1, &entries, &calls);
    let target = work.path().join("run");
    let report = replay(&trace, &target);
    assert!(report.refused >= 10, "{report:?}");
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("outside the run's directory")),
        "{:?}",
        report.notes
    );
    std::fs::remove_dir_all(&target).unwrap();
    std::fs::remove_file(&trace).unwrap();
    assert_eq!(tree(work.path()), before);
    assert_eq!(std::fs::read(canary.join("victim")).unwrap(), b"keep");
    let mode = std::fs::metadata(canary.join("victim"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);

    // Without symlinks the paths are checked lexically: `..` and absolute ones are refused.
    let trace = work.path().join("lexical.trace");
    hand_trace(
        &trace,
        1,
        &["d\ta"],
        &[
            "open\t3\t0\t-1\t3\t65\t420\ta/../../x\t-",
            &format!("mkdir\t0\t0\t-1\t-1\t493\t-1\t{c}/d\t-"),
            "rename\t0\t0\t-1\t-1\t0\t-1\ta\t../a2",
        ],
    );
    let report = replay(&trace, &target);
    assert_eq!(report.refused, 3, "{report:?}");
    std::fs::remove_dir_all(&target).unwrap();
    std::fs::remove_file(&trace).unwrap();
    assert_eq!(tree(work.path()), before);
}

#[test]
fn bad_input_gets_a_clear_message() {
    let work = tempdir();
    let trace = work.path().join("t.trace");
    let t = trace.to_str().unwrap();
    let root = work.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let r = root.to_str().unwrap();
    if can_capture("capture of missing and failing commands", &[]) {
        fails_with(
            &[
                "capture",
                "-o",
                t,
                "--root",
                r,
                "--",
                "no-such-command-fsbench",
            ],
            2,
            "command not found: `no-such-command-fsbench`",
        );
        fails_with(
            &[
                "capture",
                "-o",
                t,
                "--root",
                r,
                "--",
                "sh",
                "-c",
                "echo why >&2; exit 3",
            ],
            1,
            "failed (exit status: 3) under capture: no trace written; its last lines of \
             stderr:\nwhy",
        );
        assert!(!trace.exists());
        fails_with(
            &[
                "capture",
                "--timeout",
                "1",
                "-o",
                t,
                "--root",
                r,
                "--",
                "sleep",
                "30",
            ],
            1,
            "ran past --timeout 1s and was killed under capture",
        );
        assert!(!trace.exists());
        let inside = root.join("t.trace");
        fails_with(
            &[
                "capture",
                "-o",
                inside.to_str().unwrap(),
                "--root",
                r,
                "--",
                "true",
            ],
            2,
            "outside the root",
        );
    }
    let dir = work.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let replay_of = |t: &str| format!("replay:trace={t}");
    // Another version, a damaged one, something else, none at all.
    hand_trace(&trace, 6, &[], &[]);
    fails_with(
        &["run", "--dir", d, "-w", &replay_of(t)],
        2,
        "trace format version 6; this fsbench reads versions 1 to 5",
    );
    hand_trace(
        &trace,
        1,
        &["d\ta"],
        &["mkdir\t0\t0\t-1\t-1\t493\t-1\ta/b\t-"],
    );
    let whole = std::fs::read(&trace).unwrap();
    std::fs::write(&trace, &whole[..whole.len() / 2]).unwrap();
    fails_with(
        &["run", "--dir", d, "-w", &replay_of(t)],
        2,
        "damaged trace",
    );
    std::fs::write(&trace, b"hello\n").unwrap();
    fails_with(
        &["run", "--dir", d, "-w", &replay_of(t)],
        2,
        "not an fsbench trace",
    );
    // A hard link to a file the initial state never had.
    hand_trace(&trace, 1, &["h\tb\tmissing"], &[]);
    let state = tempdir();
    let out = run(json_run(state.path()).args(["--runs", "1", "-w", &replay_of(t), "--dir", d]));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("initial state: cannot make hard link b"),
        "{}",
        text(&out.stderr)
    );

    // Calls that fail here but succeeded in the capture: counted by errno and named.
    hand_trace(
        &trace,
        1,
        &[],
        &[
            "open\t3\t0\t-1\t3\t0\t0\tgone\t-",
            "stat\t0\t0\t-1\t-1\t1\t-1\tgone\t-",
            // Failed in the capture, succeeds here: a difference too.
            "stat\t-1\t2\t-1\t-1\t1\t-1\t.\t-",
        ],
    );
    let out = run(json_run(state.path()).args(["--runs", "1", "-w", &replay_of(t), "--dir", d]));
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("ENOENT"), "{all}");
    assert!(
        all.contains("3 of the replay's calls came out otherwise than in the capture"),
        "{all}"
    );
    assert!(
        all.contains("open gone: ENOENT here, succeeded in the capture"),
        "{all}"
    );
}

//! What a new user meets in the first hour, without root: the launcher script, a closed
//! stderr, misspelt names, the help texts and the query commands' friendlier arguments.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::common::*;

/// `path` as an executable shell script with `body`.
fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn run_sh_runs_the_binary_cargo_built_in_cargo_target_dir() {
    // A cargo whose build does nothing (the test must not build a release): metadata is the
    // real cargo's, so where the script looks is where cargo itself would put the binary.
    let dir = tempdir();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // Its absolute path: a bare `cargo` would find the fake itself on PATH and exec forever
    // (the test binary run by hand has no CARGO).
    let real = std::env::var("CARGO").unwrap_or_else(|_| {
        let path = std::env::var("PATH").unwrap_or_default();
        (std::env::split_paths(&path).map(|d| d.join("cargo")))
            .find(|c| c.is_file())
            .expect("cargo on PATH")
            .display()
            .to_string()
    });
    script(
        &bin.join("cargo"),
        &format!("[ \"$1\" = build ] && exit 0\nexec '{real}' \"$@\""),
    );
    let target = dir.path().join("elsewhere");
    std::fs::create_dir_all(target.join("release")).unwrap();
    script(
        &target.join("release/fsbench"),
        "[ \"$1\" = generate ] && exit 0\necho \"fsbench from CARGO_TARGET_DIR: $*\"",
    );
    // Where the script installs the man pages and completions: the test's, not the machine's.
    let share = dir.path().join("share");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = run(std::process::Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/run.sh"),
    )
    .env("PATH", path)
    .env("CARGO_TARGET_DIR", &target)
    .env("FSBENCH_SHARE_DIR", &share)
    .args(["list", "--limit", "1"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "fsbench from CARGO_TARGET_DIR: list --limit 1\n"
    );
    assert!(share.join("bash-completion/completions/fsbench").exists());
}

/// Runs `args` with stderr (and with `stdout_too`, stdout) a pipe whose reader has gone, as
/// in `fsbench … 2>&1 | head -0`.
fn with_closed_stderr(state: &Path, args: &[&str], stdout_too: bool) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut command = fsbench(state);
    command.args(args).stderr(writer.try_clone().unwrap());
    if stdout_too {
        command.stdout(writer);
    } else {
        command.stdout(std::process::Stdio::piped());
    }
    let child = command.spawn().unwrap();
    wait_drained_within(child, limit())
}

#[test]
fn a_closed_stderr_never_panics() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let args = [
        "--db",
        db.to_str().unwrap(),
        "run",
        "-w",
        "tree:dirs=2,files=2,size=1,levels=1",
        "--runs",
        "2",
        "--dir",
        dir.path().to_str().unwrap(),
    ];
    // Both closed: the run goes on, and ends by SIGPIPE as it writes its tables.
    let out = with_closed_stderr(state.path(), &args, true);
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
    // Only stderr: the tables still come, and the run is saved.
    let out = with_closed_stderr(state.path(), &args, false);
    assert!(out.status.success(), "{:?}", out.status);
    assert!(
        text(&out.stdout).contains("Phase times"),
        "{}",
        text(&out.stdout)
    );
    // An error says nothing where nothing can be said, and keeps its exit code.
    let out = with_closed_stderr(state.path(), &["run", "--runs", "0", "--dir", "."], false);
    assert_eq!(out.status.code(), Some(2), "{:?}", out.status);
    assert_empty(dir.path());
}

#[test]
fn misspelt_workloads_and_presets_get_did_you_mean() {
    for (workload, hint) in [
        ("tre", "unknown workload `tre` (did you mean `tree`?)"),
        ("mdtest-esy", "(did you mean `mdtest-easy`?)"),
        (
            "tree:quik",
            "unknown tree preset `quik` (did you mean `quick`?)",
        ),
        ("xattr:blok", "(did you mean `block`?)"),
        ("tree:dirz=3", "(did you mean `dirs`?)"),
    ] {
        fails_with(&["run", "--dir", ".", "-w", workload], 2, hint);
    }
    // Nothing near: the list alone, no guess.
    fails_with(
        &["run", "--dir", ".", "-w", "tree:huge"],
        2,
        "unknown tree preset `huge`: choose one of",
    );
}

#[test]
fn only_the_commands_that_use_the_database_take_and_list_db() {
    let state = tempdir();
    let help = |command: &str| {
        let out = run(fsbench(state.path()).args([command, "--help"]));
        assert!(out.status.success());
        text(&out.stdout)
    };
    for command in ["capture", "fdtree", "clean"] {
        assert!(
            !help(command).contains("--db"),
            "{command}: {}",
            help(command)
        );
    }
    for command in ["run", "show", "list", "compare", "rank", "export", "report"] {
        assert!(help(command).contains("--db <PATH>"), "{command}");
    }
    fails_with(
        &["capture", "--db", "x.db", "-o", "t", "--", "true"],
        2,
        "--db",
    );
    fails_with(
        &["--db", "x.db", "capture", "-o", "t", "--", "true"],
        2,
        "stores nothing",
    );
}

#[test]
fn compare_takes_the_baseline_by_its_label() {
    use crate::verdicts::{exact_sample, phase, saved_suite};
    let dir = tempdir();
    let db = dir.path().join("results.db");
    let config = |seed, secs| {
        let times = exact_sample(seed, 3, secs, 1.0);
        times
            .iter()
            .map(|&t| vec![phase("dir-create", t, Vec::new())])
            .collect::<Vec<_>>()
    };
    saved_suite(&db, &[config(1, 10.0), config(2, 5.0)]);
    saved_suite(&db, &[config(3, 10.0), config(4, 5.0)]);
    let compare = |args: &[&str]| {
        run(fsbench(dir.path())
            .arg("--db")
            .arg(&db)
            .arg("compare")
            .args(args))
    };
    let out = compare(&["1", "--baseline", "b (existing dir)"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.starts_with("Baseline: b (existing dir)."), "{table}");
    assert!(
        table.contains("a (existing dir) 2.0") && table.contains("slower than b (existing dir)"),
        "{table}"
    );
    // Two suites have the label: which one is asked, by ID:CONFIG.
    let out = compare(&["1", "2", "--baseline", "b (existing dir)"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("name one: 1:b (existing dir), 2:b (existing dir)"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        compare(&["1", "2", "--baseline", "2:b (existing dir)"])
            .status
            .success()
    );
    let out = compare(&["1", "--baseline", "c"]);
    assert!(
        text(&out.stderr).contains("no compared configuration has that label"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_workloads_default_preset_is_the_one_named_default() {
    let state = tempdir();
    let out = run(fsbench(state.path()).args(["run", "--help"]));
    let help = text(&out.stdout);
    // Per workload (a line `KIND:[PRESET,]…`), its presets and the one marked `(default)`.
    let mut kinds: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    for line in help.lines().map(str::trim) {
        if let Some((kind, _)) = line.split_once(":[PRESET,]") {
            kinds.push((kind.to_string(), Vec::new(), Vec::new()));
        } else if let (Some(rest), Some(k)) = (line.strip_prefix("preset "), kinds.last_mut()) {
            let name = rest.split([' ', ':']).next().unwrap().to_string();
            if rest.starts_with(&format!("{name} (default)")) {
                k.2.push(name.clone());
            }
            k.1.push(name);
        }
    }
    assert!(kinds.len() >= 8, "{kinds:?}");
    for (kind, presets, marked) in &kinds {
        assert!(marked.len() <= 1, "{kind}: {marked:?}");
        if presets.iter().any(|p| p == "default") {
            assert_eq!(marked, &["default"], "{kind}");
        }
    }
    assert!(
        kinds
            .iter()
            .any(|(k, _, m)| k == "tree" && m == &["default"])
    );
}

#[test]
fn mount_options_the_kernel_refuses_end_the_suite_before_anything_is_measured() {
    if !can_run("mount options tried first", &["mkfs.ext4", "mkfs.xfs"]) {
        return;
    }
    let images = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    for (fs, reason) in [
        ("ext4:mount=noatme", "ext4: Unknown parameter 'noatme'"),
        ("xfs:mount=logbufs=99", "XFS (loop"),
    ] {
        let out = run(fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args([
                "run",
                "--fs",
                fs,
                "-w",
                "tree:dirs=2,files=2,size=1,levels=1",
            ])
            .args(["--runs", "2", "--purpose", "typo", "--image-dir"])
            .arg(images.path()));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        // The kernel's reason, said once, before any harness ceiling or suite.
        assert!(
            err.contains(&format!(
                "--fs {}: the kernel refused the mount: {reason}",
                fs.replace(":mount=", " -o ")
            )),
            "{err}"
        );
        assert!(err.contains("before the suite started"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains("wrong fs type"), "{err}");
        assert_nothing_left(images.path());
    }
    let list = run(fsbench(state.path()).arg("--db").arg(&db).arg("list"));
    assert_eq!(
        text(&list.stdout)
            .lines()
            .filter(|l| l.contains("typo"))
            .count(),
        0
    );
}

#[test]
fn a_suite_that_measured_nothing_is_not_kept() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args([
            "run",
            "-q",
            "--purpose",
            "fails at once",
            "--runs",
            "2",
            "--dir",
        ])
        .arg(dir.path())
        .args(["--command-phase", "boom=exit 3"]));
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("measured nothing: not kept"), "{err}");
    let list = run(fsbench(state.path()).arg("--db").arg(&db).arg("list"));
    assert!(
        !text(&list.stdout).contains("fails at once"),
        "{}",
        text(&list.stdout)
    );
    assert_empty(dir.path());
}

#[test]
fn rank_weights_phases_by_what_matters_and_says_so() {
    use crate::verdicts::{exact_sample, phase, saved_suite};
    let dir = tempdir();
    let db = dir.path().join("results.db");
    // a creates files twice as fast as b; b removes them twice as fast.
    let config = |seed, create: f64, remove: f64| {
        let (c, r) = (
            exact_sample(seed, 4, create, 1.0),
            exact_sample(seed + 1, 4, remove, 1.0),
        );
        (c.iter().zip(&r))
            .map(|(&c, &r)| {
                vec![
                    phase("file-create", c, Vec::new()),
                    phase("file-remove", r, Vec::new()),
                ]
            })
            .collect::<Vec<_>>()
    };
    saved_suite(&db, &[config(1, 5.0, 10.0), config(3, 10.0, 5.0)]);
    let rank = |extra: &[&str]| {
        let out = run(fsbench(dir.path())
            .arg("--db")
            .arg(&db)
            .args(["rank", "1"])
            .args(extra));
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (_, even, _) = rank(&[]);
    assert!(even.contains("1. a (existing dir) — 3 points"), "{even}");
    assert!(!even.contains("Weighted"), "{even}");
    let (code, weighted, err) = rank(&["--weight", "file-create=3,file-remove=0.5"]);
    assert_eq!(code, Some(0), "{err}");
    let said = weighted.replace('\n', " ");
    assert!(
        said.contains(
            "Weighted (--weight): file-create × 3, file-remove × 0.5; every other phase × 1"
        ),
        "{weighted}"
    );
    // a: 2 × 3 + 1 × 0.5 = 6.5; b: 1 × 3 + 2 × 0.5 = 4.
    assert!(
        weighted.contains("1. a (existing dir) — 6.5 points"),
        "{weighted}"
    );
    assert!(
        weighted.contains("2. b (existing dir) — 4 points"),
        "{weighted}"
    );
    let (code, _, err) = rank(&["--weight", "read=3"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no ranked phase is called `read`"), "{err}");
}

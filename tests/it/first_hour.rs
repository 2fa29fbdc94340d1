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
    let real = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    script(
        &bin.join("cargo"),
        &format!("[ \"$1\" = build ] && exit 0\nexec '{real}' \"$@\""),
    );
    let target = dir.path().join("elsewhere");
    std::fs::create_dir_all(target.join("release")).unwrap();
    script(
        &target.join("release/fsbench"),
        "echo \"fsbench from CARGO_TARGET_DIR: $*\"",
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = run(std::process::Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/run.sh"),
    )
    .env("PATH", path)
    .env("CARGO_TARGET_DIR", &target)
    .args(["list", "--limit", "1"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "fsbench from CARGO_TARGET_DIR: list --limit 1\n"
    );
}

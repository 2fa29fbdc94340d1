//! Every file under `examples/` runs: each suite as it is (one run per configuration), the fio job
//! files with `fsbench fio`, the FFSB profiles with `fsbench ffsb` (the FFSB report's 128 × 1 GiB
//! scaled down to fit a test).

use std::path::{Path, PathBuf};

use crate::common::*;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

/// Runs `fsbench ARGS` with loop images in a temporary directory, and checks it succeeded
/// with every run saved and the phase tables printed.
fn runs_cleanly(test: &str, args: &[&str]) {
    if !can_run(test, &["mkfs.ext4", "mkfs.xfs", "mkfs.btrfs"]) {
        return;
    }
    let images = tempdir();
    let state = tempdir();
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(state.path().join("results.db"))
        .args(args)
        .args(["--runs", "1", "-q", "--image-dir"])
        .arg(images.path()));
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.contains("Phase times"), "{table}");
    assert!(table.contains("0 excluded from the statistics"), "{table}");
    assert_nothing_left(images.path());
}

fn suite_runs(file: &str) {
    let path = example(file);
    runs_cleanly(file, &["run", path.to_str().unwrap()]);
}

#[test]
fn tree_suite() {
    suite_runs("tree.toml");
}

#[test]
fn atomic_suite() {
    suite_runs("atomic.toml");
}

#[test]
fn iozone_suite() {
    suite_runs("iozone.toml");
}

#[test]
fn io_suite() {
    suite_runs("io.toml");
}

#[test]
fn fio_job_file() {
    let path = example("fio/randread-then-write.fio");
    runs_cleanly(
        "fio job file",
        &["fio", path.to_str().unwrap(), "--fs", "ext4"],
    );
}

#[test]
fn surface_scan_job_file() {
    // Its fill takes the whole filesystem: a small one.
    let path = example("fio/surface-scan.fio");
    runs_cleanly(
        "surface-scan job file",
        &[
            "fio",
            path.to_str().unwrap(),
            "--fs",
            "ext4",
            "--image-size",
            "64M",
        ],
    );
}

#[test]
fn ffsb_suite() {
    suite_runs("ffsb.toml");
}

#[test]
fn alloc_suite() {
    suite_runs("alloc.toml");
}

#[test]
fn archive_suite() {
    suite_runs("archive.toml");
}

#[test]
fn command_suite() {
    suite_runs("command.toml");
}

#[test]
fn mixed_ffsb_profile() {
    let path = example("ffsb/mixed.ffsb");
    runs_cleanly(
        "mixed.ffsb",
        &[
            "ffsb",
            path.to_str().unwrap(),
            "--fs",
            "ext4",
            "--time",
            "1",
        ],
    );
}

#[test]
fn seed_ffsb_profile_scaled_down() {
    let seed = std::fs::read_to_string(example("ffsb/large-write.ffsb")).unwrap();
    // 4 threads × 4 MiB instead of 128 × 1 GiB; every other line as the example has it.
    let scaled = seed
        .replace("num_threads = 128", "num_threads = 4")
        .replace("filesize = 1g", "filesize = 4m");
    assert_eq!(
        seed.lines()
            .zip(scaled.lines())
            .filter(|(a, b)| a != b)
            .count(),
        3,
        "the example's threads and sizes are where the test expects them"
    );
    let dir = tempdir();
    let profile = dir.path().join("large-write-scaled.ffsb");
    std::fs::write(&profile, scaled).unwrap();
    runs_cleanly(
        "large-write.ffsb",
        &["ffsb", profile.to_str().unwrap(), "--fs", "ext4"],
    );
}

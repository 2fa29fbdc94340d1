//! Limits on what user input may ask for: buffer memory, files that cannot fit, inputs that
//! are not files (the arithmetic itself is unit-tested).
use crate::common::*;

#[test]
fn buffers_larger_than_memory_are_refused_before_anything_is_made() {
    let (dir, state) = (tempdir(), tempdir());
    // 128 threads × 1 GiB blocks: 128 GiB of buffers, allocated up front until now.
    let out = run(fsbench(state.path())
        .args([
            "run",
            "-q",
            "--runs",
            "1",
            "-w",
            "ffsb-large-write:block=1g",
            "--dir",
        ])
        .arg(dir.path()));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("I/O buffers") && err.contains("128.0 GiB"),
        "{err}"
    );
    assert_nothing_left(dir.path());
}

#[test]
fn a_profile_that_is_not_a_regular_file_is_refused() {
    let state = tempdir();
    // /dev/zero would be read forever; a FIFO would block.
    let out = run(fsbench(state.path()).args(["ffsb", "/dev/zero"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not a regular file"));
}

#[test]
fn a_file_size_fitted_to_the_target_never_exceeds_what_fits() {
    if !can_run(
        "a_file_size_fitted_to_the_target_never_exceeds_what_fits",
        &[],
    ) {
        return;
    }
    let (dir, state) = (tempdir(), tempdir());
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = status(
        std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64m", "tmpfs"])
            .arg(&mnt),
    );
    assert!(mounted.success());
    // 80% of 64 MiB holds two files of 25 MiB, not of one 64 MiB block each: the rounding
    // used to round up to a block (128 MiB) and run into ENOSPC (exit 5).
    let out = run(fsbench(state.path())
        .args(["run", "-q", "--runs", "1"])
        .args(["-w", "ffsb-large-write:threads=2,block=64m", "--dir"])
        .arg(&mnt));
    let _ = status(std::process::Command::new("umount").arg(&mnt));
    let err = text(&out.stderr);
    assert!(err.contains("do not fit in 80%"), "{err}");
    assert_ne!(out.status.code(), Some(5), "{err}");
}

//! fio's `verify` in job files: what a job wrote is read back and checked with each
//! algorithm; a block another job spoils between the write and the check is reported with
//! its file and offset as fio reports it (fio itself run on the same job file where
//! installed), and fails the run.

use crate::common::*;

/// A writer of 64 blocks of 4 KiB at 200 a second, verified once its writes end; with
/// `spoil`, a job beside it overwrites part of block 2 (offset 8192) 100 ms in, after the
/// writer wrote it and before the check.
fn job(verify: &str, spoil: Option<(u64, u64)>) -> String {
    let mut job = format!(
        "[global]\nfilename=data\nbs=4k\nsize=256k\n[writer]\nrw=write\n{verify}\nrate_iops=200\n"
    );
    if let Some((offset, len)) = spoil {
        job += &format!(
            "[spoiler]\nrw=write\noffset={offset}\nsize={len}\nbs={len}\nstartdelay=100ms\n"
        );
    }
    job
}

#[test]
fn every_algorithm_checks_what_was_written() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for verify in [
        "verify=md5",
        "verify=crc32c",
        "verify=crc32c-intel",
        "verify=crc64",
        "verify=crc16",
        "verify=crc7",
        "verify=sha1",
        "verify=sha256",
        "verify=sha512",
        "verify=sha3-256",
        "verify=xxhash",
        "verify=meta",
        "verify_pattern=0xdeadbeef",
        "verify=md5\nverify_interval=512",
    ] {
        let out = fio_job_json(state.path(), dir.path(), &job(verify, None));
        assert!(out.status.success(), "{verify}: {}", text(&out.stderr));
        let doc = json(&out);
        let verified = doc["runs"][0]["phases"][1]["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "verified blocks")
            .and_then(|f| f["value"].as_f64());
        let blocks = if verify.contains("verify_interval") {
            512.0
        } else {
            64.0
        };
        assert_eq!(verified, Some(blocks), "{verify}");
    }
    assert_nothing_left(dir.path());
}

#[test]
fn a_spoiled_block_is_reported_at_its_offset_as_fio_reports_it_and_fails_the_run() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // The whole block overwritten: its header is gone.
    let whole = job("verify=crc32c", Some((8192, 4096)));
    let out = fio_job_json(state.path(), dir.path(), &whole);
    assert!(!out.status.success());
    let ours = text(&out.stderr);
    let wanted = "wanted acca at file data offset 8192, length 4096 (requested block: offset=8192, length=4096)";
    assert!(
        ours.contains("verify: bad magic header") && ours.contains(wanted),
        "{ours}"
    );
    assert!(ours.contains("1 of 64 blocks checked were wrong"), "{ours}");
    // Its data alone overwritten: the header is right, the checksum is not.
    let data = job("verify=sha256", Some((10240, 512)));
    let out = fio_job_json(state.path(), dir.path(), &data);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("sha256: verify failed") && err.contains("offset 8192"),
        "{err}"
    );
    // A pattern: the first byte that differs.
    let out = fio_job_json(
        state.path(),
        dir.path(),
        &job("verify_pattern=0xdeadbeef", Some((8192, 4096))),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("verify: bad pattern block offset 0"),
        "{}",
        text(&out.stderr)
    );
    assert_nothing_left(dir.path());
    if !has_tool("fio") {
        skip("verify's report against fio's: fio is not installed");
        return;
    }
    let fio_dir = tempdir();
    let jobfile = state.path().join("job.fio");
    std::fs::write(&jobfile, &whole).unwrap();
    let out = run(std::process::Command::new("fio")
        .current_dir(fio_dir.path())
        .arg(&jobfile));
    let theirs = text(&out.stdout) + &text(&out.stderr);
    assert!(
        theirs.contains("verify: bad magic header") && theirs.contains(wanted),
        "{theirs}"
    );
}

#[test]
fn verify_that_cannot_check_is_refused_with_its_line() {
    let state = tempdir();
    for (line, needle) in [
        ("rw=read\nverify=md5", "a job that only reads"),
        (
            "rw=write\nverify=md5\nioengine=libaio",
            "with ioengine=libaio is not implemented",
        ),
        (
            "rw=write\nverify=md5\nverify_interval=16",
            "`verify_interval` (16)",
        ),
        ("rw=write\nverify_pattern=0xzz", "hex digits"),
    ] {
        let jobfile = state.path().join("bad.fio");
        std::fs::write(&jobfile, format!("[j]\nsize=1m\n{line}\n")).unwrap();
        let out = run(fsbench(state.path())
            .args(["fio", "-q", "--runs", "1", "--dir", "/nonexistent"])
            .arg(&jobfile));
        assert_eq!(out.status.code(), Some(2), "{line}");
        assert!(
            text(&out.stderr).contains(needle),
            "{line}: {}",
            text(&out.stderr)
        );
    }
}

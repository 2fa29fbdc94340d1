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
            "rw=write\nverify=md5\nioengine=null",
            "ioengine=null writes no data to check",
        ),
        (
            "rw=write\nverify=md5\nioengine=falloc",
            "`ioengine=falloc`: its writes carry no data to verify",
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

/// The `verified blocks` figure of a job file's run.
fn verified(doc: &serde_json::Value) -> Option<f64> {
    doc["runs"][0]["phases"][1]["figures"]
        .as_array()?
        .iter()
        .find(|f| f["name"] == "verified blocks")?["value"]
        .as_f64()
}

#[test]
fn the_queueing_engines_and_mmap_verify_and_backlog_checks_during_the_job() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for engine in [
        "ioengine=libaio\niodepth=8",
        "ioengine=io_uring\niodepth=8",
        "ioengine=posixaio\niodepth=8",
        "ioengine=mmap",
        "ioengine=psync\nverify_backlog=16\nverify_backlog_batch=8",
        "ioengine=psync\nverify_backlog=16",
        "ioengine=libaio\niodepth=8\nverify_backlog=16",
        "ioengine=io_uring\niodepth=8\nverify_backlog=8\nverify_backlog_batch=4",
        "ioengine=posixaio\niodepth=4\nverify_backlog=16",
        "ioengine=psync\nverify_async=2\nexperimental_verify=1",
    ] {
        let job = format!(
            "[w]\nfilename=data\nrw=randwrite\nbs=4k\nsize=256k\nverify=crc32c\n{engine}\n"
        );
        let out = fio_job_json(state.path(), dir.path(), &job);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        // Every block written once (fio's random map), each checked once: in the backlog
        // checks during the job, or at its end.
        assert_eq!(verified(&json(&out)), Some(64.0), "{engine}");
    }
    assert_nothing_left(dir.path());
}

#[test]
fn verify_fatal_stops_the_check_at_the_first_wrong_block() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // Blocks 2 and 4 overwritten: without verify_fatal both are counted, with it the check
    // stops at block 2 (the third checked).
    let mut spoiled = job("verify=crc32c", Some((8192, 4096)));
    spoiled += "[spoiler2]\nrw=write\noffset=16384\nsize=4096\nbs=4096\nstartdelay=100ms\n";
    let out = fio_job_json(state.path(), dir.path(), &spoiled);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("2 of 64 blocks checked were wrong"), "{err}");
    let fatal = spoiled.replace("verify=crc32c\n", "verify=crc32c\nverify_fatal=1\n");
    let out = fio_job_json(state.path(), dir.path(), &fatal);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("offset 8192") && err.contains("1 of 3 blocks checked were wrong"),
        "{err}"
    );
    assert_nothing_left(dir.path());
}

#[test]
fn verify_backlog_checks_each_block_during_the_job_once() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // Block 2 is spoiled 100 ms in: after the backlog check that read it (the 4th write's,
    // 20 ms in), so no later check reads it again, as in fio; the check at the end alone
    // would find it (the test above).
    for engine in ["", "ioengine=libaio\niodepth=4\n"] {
        let verify = format!("verify=crc32c\nverify_backlog=4\n{engine}");
        let out = fio_job_json(state.path(), dir.path(), &job(&verify, Some((8192, 4096))));
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        assert_eq!(verified(&json(&out)), Some(64.0), "{engine}");
    }
    assert_nothing_left(dir.path());
}

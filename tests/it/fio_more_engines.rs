//! fio's example job files' engines and files that move no filesystem data: `cpp_null`
//! (fio's null engine as a C++ plugin), and engines fsbench cannot drive, refused at their
//! line saying what they need.

use crate::common::*;

/// `ioengine=cpp_null` runs as fio's null engine (no files, every I/O done at once), and
/// the job's description says which engine the file named.
#[test]
fn cpp_null_runs_as_the_null_engine_and_says_so() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let job = "[null]\nioengine=cpp_null\nsize=16m\nbs=4k\nrw=randread\nnorandommap\n";
    let out = fio_job_json(state.path(), dir.path(), job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let record = &doc["workload_records"][0];
    let described = record["description"].as_str().unwrap_or_default();
    assert!(
        described.contains("null (fio's cpp_null: its null engine as a C++ plugin)"),
        "{doc}"
    );
    assert_eq!(
        doc["runs"][0]["phases"][1]["ops"], 4096,
        "16 MiB in 4 KiB reads"
    );
    assert_nothing_left(dir.path());
}

/// fio's mtd engine needs a flash device fsbench does not drive: refused at the
/// `ioengine` line, before the options of the engine after it, naming the engine and what
/// it needs.
#[test]
fn the_mtd_engine_is_refused_naming_what_it_needs() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let job = "[global]\nfilename=/dev/mtd0\nioengine=mtd\nskip_bad=1\n[trim]\nrw=trim\n";
    let out = fio_job_json(state.path(), dir.path(), job);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(
            "job.fio:3: `ioengine=mtd`: fio's mtd engine erases and writes a flash (MTD) device"
        ),
        "{err}"
    );
    assert_empty(dir.path());
}

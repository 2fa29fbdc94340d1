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

/// Whether `path` is still the kernel's character device `major:minor`.
fn still_the_device(path: &str, minor: u64) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = std::fs::symlink_metadata(path).unwrap();
    meta.file_type().is_char_device() && meta.rdev() == libc::makedev(1, minor as u32)
}

/// steadystate.fio's files: a job writing `/dev/null`, then one reading `/dev/zero`, run
/// as fio runs them (the kernel's devices opened, nothing laid out, made or removed), the
/// description saying no filesystem is measured; the devices stay what they were.
#[test]
fn dev_null_and_dev_zero_run_as_a_job_s_one_file() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let job = "[global]\ntime_based\nruntime=300ms\nsize=128m\n\
               [w]\nfilename=/dev/null\nrw=write\nbs=128k\n\
               [r]\nstonewall\nfilename=/dev/zero\nrw=randread\nbs=4k\n";
    let out = fio_job_json(state.path(), dir.path(), job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    for (i, device) in ["/dev/null", "/dev/zero"].iter().enumerate() {
        let record = &doc["workload_records"][i];
        let described = record["description"].as_str().unwrap_or_default();
        let said = format!("on the kernel's {device} device");
        assert!(described.contains(&said), "{described}");
        assert!(
            described.contains("no filesystem is measured"),
            "{described}"
        );
    }
    let ops: Vec<u64> = (doc["runs"].as_array().unwrap().iter())
        .map(|r| r["phases"][1]["ops"].as_u64().unwrap())
        .collect();
    assert!(ops.len() == 2 && ops.iter().all(|n| *n > 0), "{ops:?}");
    assert!(still_the_device("/dev/null", 3) && still_the_device("/dev/zero", 5));
    assert_nothing_left(dir.path());
}

/// Only those two names exactly, each a job's one file: another device, a name through
/// them, a longer name and the two together stay refused at their line; a symlink to
/// /dev/null in the directory fsbench was given is not followed (the job's file is a new
/// one in the run's fresh directory).
#[test]
fn other_device_names_stay_refused() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for (name, needle) in [
        ("/dev/sda", "is outside the run's directory"),
        ("/dev/null/../x", "an absolute name with `..`"),
        ("/dev/nullx", "is outside the run's directory"),
        (
            "/dev/null:/dev/zero",
            "as its one file (`filename=/dev/null` alone)",
        ),
    ] {
        let job = format!("[a]\nfilename={name}\nsize=1m\nrw=write\n");
        let out = fio_job_json(state.path(), dir.path(), &job);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{name}: ran");
        assert!(
            err.contains("job.fio:2: ") && err.contains(needle),
            "{name}: {err}"
        );
    }
    assert_empty(dir.path());
    let link = dir.path().join("null");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    let job = format!("[a]\nfilename={}\nsize=1m\nrw=write\n", link.display());
    let out = fio_job_json(state.path(), dir.path(), &job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let described = json(&out)["workload_records"][0]["description"].to_string();
    assert!(!described.contains("kernel's"), "{described}");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        std::path::Path::new("/dev/null")
    );
    assert!(still_the_device("/dev/null", 3));
    std::fs::remove_file(&link).unwrap();
    assert_nothing_left(dir.path());
}

//! fio's `mmap`, `posixaio`, `ftruncate` and `falloc` engines, trims and `exitall` in job
//! files: each runs through `fsbench fio`, and where the calls matter they are the calls
//! fio 3.33 makes on the same job, read by strace.

use std::path::Path;
use std::process::Command;

use crate::common::*;

/// strace of `cmd` (following threads, with paths), the calls in `trace` written to `log`.
pub(crate) fn traced(trace: &str, log: &Path, program: &str) -> Command {
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "-y", "-e", trace, "-o"])
        .arg(log)
        .arg(program);
    c
}

/// The calls in a strace log without their process and descriptor (`ftruncate(FD,
/// 4096) = 0`), those on the file `data` (or every call, for calls that name no file).
fn calls(log: &str, on_data: bool) -> Vec<String> {
    log.lines()
        .filter(|l| !on_data || l.contains("/data>"))
        .filter_map(|l| {
            let call = l.split_once(' ')?.1.trim_start();
            let (name, rest) = call.split_once('(')?;
            let args = rest.split_once("data>").map_or(rest, |(_, a)| a);
            Some(format!("{name}(FD{args}"))
        })
        .collect()
}

/// strace logs of `fsbench fio` and of fio running `job` (each in a tmpfs directory of its
/// own, as its working directory too), and the two directories, for their log files.
pub(crate) fn traced_runs(job: &str, trace: &str) -> [(String, tempfile::TempDir); 2] {
    let state = tempdir();
    let jobfile = state.path().join("job.fio");
    std::fs::write(&jobfile, job).unwrap();
    let (dir, ours_dir) = (tmpfs_tempdir(), tmpfs_tempdir());
    let log = state.path().join("fsbench.strace");
    let out = run(traced(trace, &log, env!("CARGO_BIN_EXE_fsbench"))
        .current_dir(ours_dir.path())
        .env("FSBENCH_STATE_DIR", state.path())
        .env("XDG_DATA_HOME", test_data_home())
        .args(["fio", "-q", "--runs", "1", "--dir"])
        .arg(dir.path())
        .arg(&jobfile));
    assert!(out.status.success(), "{job}: {}", text(&out.stderr));
    let ours = std::fs::read_to_string(&log).unwrap();
    let fio_dir = tmpfs_tempdir();
    let log = state.path().join("fio.strace");
    let out = run(traced(trace, &log, "fio")
        .current_dir(fio_dir.path())
        .arg("--output=/dev/null")
        .arg(&jobfile));
    assert!(out.status.success(), "fio: {job}: {}", text(&out.stderr));
    let theirs = std::fs::read_to_string(&log).unwrap();
    [(ours, ours_dir), (theirs, fio_dir)]
}

/// The strace logs of fsbench and of fio running `job`, traced for `trace`, each in a
/// tmpfs directory of its own.
fn both_logs(job: &str, trace: &str) -> (String, String) {
    let [(ours, _), (theirs, _)] = traced_runs(job, trace);
    (ours, theirs)
}

/// The calls on `data` that fsbench and fio make for `job`.
fn both_calls(job: &str, trace: &str) -> (Vec<String>, Vec<String>) {
    let (ours, theirs) = both_logs(job, trace);
    (calls(&ours, true), calls(&theirs, true))
}

pub(crate) fn fio_traced(test: &str) -> bool {
    if has_tool("fio") && has_tool("strace") {
        return true;
    }
    skip(&format!("{test}: fio or strace is not installed"));
    false
}

#[test]
fn mmap_posixaio_ftruncate_and_falloc_run_a_job_file() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for (engine, rw) in [
        ("mmap", "randrw"),
        ("mmap\ndirect=1\nfsync=4", "randwrite"),
        ("posixaio\niodepth=8", "randrw"),
        ("posixaio\niodepth=4\nfsync=8", "write"),
        ("ftruncate", "write"),
        ("falloc", "randrw"),
    ] {
        let job = format!("[j]\nioengine={engine}\nrw={rw}\nsize=256k\nbs=4k\nnrfiles=2\n");
        let out = fio_job_json(state.path(), dir.path(), &job);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        let doc = json(&out);
        let phases = &doc["runs"][0]["phases"];
        assert_eq!(phases[1]["ops"].as_u64(), Some(64), "{engine}");
        let name = engine.lines().next().unwrap();
        assert_eq!(doc["suite"]["workload"][0]["engine"], name);
    }
    assert_nothing_left(dir.path());
}

#[test]
fn what_an_engine_cannot_do_on_a_file_is_refused_with_fio_s_reason() {
    let state = tempdir();
    for (lines, needle) in [
        ("ioengine=ftruncate\nrw=read", "fails each read with EINVAL"),
        (
            "ioengine=falloc\nrw=write\nend_fsync=1",
            "fails a sync with EINVAL",
        ),
        (
            "ioengine=mmap\nrw=write\nbs=512\nfsync=1",
            "mmap options dictate a minimum block size",
        ),
        ("ioengine=psync\nrw=trim", "ioctl(BLKDISCARD)"),
        ("ioengine=libaio\nrw=randtrim", "ioctl(BLKDISCARD)"),
        ("ioengine=ftruncate\nrw=trim", "fails each trim with EINVAL"),
    ] {
        let jobfile = state.path().join("bad.fio");
        std::fs::write(&jobfile, format!("[j]\nsize=1m\n{lines}\n")).unwrap();
        let out = fio_output(state.path(), Path::new("/nonexistent"), &jobfile, "json");
        assert_eq!(out.status.code(), Some(2), "{lines}");
        let err = text(&out.stderr);
        assert!(
            err.contains("bad.fio:") && err.contains(needle),
            "{lines}: {err}"
        );
    }
}

#[test]
fn ftruncate_and_falloc_make_fio_s_calls() {
    if !fio_traced("ftruncate and falloc calls against fio's") {
        return;
    }
    // The jobs' calls, not the layouts' (fio lays a file out its own way): the ftruncates
    // below the file's size, the fallocates of a block.
    let of_the_job = |calls: Vec<String>| -> Vec<String> {
        (calls.into_iter())
            .filter(|c| c.starts_with("fallocate(") && c.ends_with(", 4096) = 0"))
            .collect()
    };
    let truncates = |calls: Vec<String>| -> Vec<String> {
        (calls.into_iter())
            .filter(|c| c.starts_with("ftruncate(") && !c.contains(", 65536)"))
            .collect()
    };
    let job = "[t]\nfilename=data\nioengine=ftruncate\nrw=write\nbs=4k\nsize=64k\n";
    let (ours, theirs) = both_calls(job, "trace=ftruncate");
    let (ours, theirs) = (truncates(ours), truncates(theirs));
    // fio 3.33 truncates to each write's offset: 0, 4096, … 61440.
    assert_eq!(ours.len(), 16, "{ours:?}");
    assert_eq!(ours[1], "ftruncate(FD, 4096) = 0");
    assert_eq!(ours, theirs);
    for rw in ["write", "read", "trim"] {
        let job = format!("[f]\nfilename=data\nioengine=falloc\nrw={rw}\nbs=4k\nsize=64k\n");
        let (ours, theirs) = both_calls(&job, "trace=fallocate");
        let (ours, theirs) = (of_the_job(ours), of_the_job(theirs));
        assert_eq!(ours.len(), 16, "{rw}: {ours:?}");
        assert_eq!(ours, theirs, "{rw}");
    }
}

#[test]
fn mmap_maps_and_syncs_as_fio_and_posixaio_moves_the_same_bytes() {
    if !fio_traced("mmap and posixaio calls against fio's") {
        return;
    }
    let job = "[m]\nfilename=data\nioengine=mmap\nrw=write\nbs=4k\nsize=64k\nfsync=4\n";
    let (ours, theirs) = both_logs(job, "trace=mmap,msync");
    let count = |log: &str, name: &str, on_data: bool| {
        calls(log, on_data)
            .iter()
            .filter(|c| c.starts_with(name))
            .count()
    };
    // One mapping of the file; fsync=4 over 16 writes: 3 syncs between them (none after
    // the last), each an msync of the mapping (msync names no file).
    assert_eq!(count(&ours, "mmap(", true), 1, "{ours}");
    assert_eq!(count(&ours, "msync(", false), 3, "{ours}");
    for call in ["mmap(", "msync("] {
        let on_data = call == "mmap(";
        assert_eq!(
            count(&ours, call, on_data),
            count(&theirs, call, on_data),
            "{call} {ours}\n{theirs}"
        );
    }
    // glibc's helper threads make the transfers: the same calls, as many.
    let job = "[p]\nfilename=data\nioengine=posixaio\niodepth=4\nrw=randrw\nbs=4k\nsize=64k\n";
    let (ours, theirs) = both_calls(job, "trace=pread64,pwrite64");
    let transfers = |calls: &[String]| {
        (calls.iter())
            .filter(|c| c.starts_with("pread64(") || c.starts_with("pwrite64("))
            .filter(|c| c.ends_with(" = 4096"))
            .count()
    };
    assert_eq!(transfers(&ours), 16, "{ours:?}");
    assert_eq!(
        transfers(&ours),
        transfers(&theirs),
        "{ours:?} / {theirs:?}"
    );
}

#[test]
fn falloc_trims_punch_holes_reported_as_fio_s_trims() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // Paced, so that the job lasts some milliseconds: fio prints no direction that took none.
    let job = "[t]\nioengine=falloc\nrw=randtrim\nbs=4k\nsize=256k\nrate_iops=2000\n";
    let jobfile = state.path().join("trim.fio");
    std::fs::write(&jobfile, job).unwrap();
    let out = fio_output(state.path(), dir.path(), &jobfile, "json");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let j = &doc["jobs"][0];
    assert_eq!(j["trim"]["total_ios"].as_u64(), Some(64), "{j}");
    assert_eq!(j["trim"]["io_bytes"].as_u64(), Some(256 << 10));
    assert_eq!(j["write"]["total_ios"].as_u64(), Some(0));
    assert!(j["trim"]["clat_ns"]["N"].as_u64() == Some(64), "{j}");
    let out = fio_output(state.path(), dir.path(), &jobfile, "normal");
    let normal = text(&out.stdout);
    assert!(normal.contains("  trim: IOPS="), "{normal}");
    assert!(normal.contains("   TRIM: bw="), "{normal}");
    assert!(normal.contains("issued rwts: total=0,0,64,0"), "{normal}");
    // fio's falloc example: a job allocating beside one punching holes in the same file,
    // reported as one group: its writes and its trims apart.
    let beside = "[global]\nioengine=falloc\nfilename=f\nbs=4k\nsize=256k\nrate_iops=2000\ngroup_reporting\n[alloc]\nrw=randwrite\n[punch]\nrw=randtrim\n";
    std::fs::write(&jobfile, beside).unwrap();
    let out = fio_output(state.path(), dir.path(), &jobfile, "json");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let g = &doc["jobs"][0];
    for (d, n) in [("read", 0), ("write", 64), ("trim", 64)] {
        assert_eq!(g[d]["total_ios"].as_u64(), Some(n), "{d}: {g}");
        assert_eq!(g[d]["clat_ns"]["N"].as_u64(), Some(n), "{d}: {g}");
    }
    assert_nothing_left(dir.path());
}

#[test]
fn exitall_stops_the_jobs_beside_the_first_to_end() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobs = "[quick]\nrw=read\nsize=64k\n[long]\nrw=randread\nsize=1m\ntime_based\nruntime=20\n";
    let out = fio_job_json(
        state.path(),
        dir.path(),
        &format!("[global]\nexitall\n{jobs}"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let secs = doc["runs"][0]["phases"][1]["elapsed_ns"].as_f64().unwrap() / 1e9;
    assert!(secs < 5.0, "`long` stops when `quick` ends: {secs} s");
    assert_nothing_left(dir.path());
}

#[test]
fn libaio_and_io_uring_s_io_depths_submits_and_completions_are_fio_s() {
    if !has_tool("fio") {
        skip("libaio's and io_uring's IO depths against fio's: fio is not installed");
        return;
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // io_uring's completions on tmpfs are partly asynchronous: with batches their counts
    // vary from run to run in fio itself (one bucket 72% to 95% over three runs); one
    // completion a reap (fio's default) is the same every run.
    let cases = [
        ("libaio", "iodepth=16"),
        (
            "libaio",
            "iodepth=16\niodepth_batch_submit=4\niodepth_batch_complete_min=2\niodepth_batch_complete_max=8",
        ),
        ("libaio", "iodepth=16\niodepth_low=4"),
        ("io_uring", "iodepth=16"),
    ];
    for (engine, options) in cases {
        let job = format!(
            "[d]\nfilename=data\nioengine={engine}\nrw=randread\nbs=4k\nsize=1m\n{options}\n"
        );
        let jobfile = state.path().join("depth.fio");
        std::fs::write(&jobfile, &job).unwrap();
        let out = fio_output(state.path(), dir.path(), &jobfile, "json");
        assert!(
            out.status.success(),
            "{engine} {options}: {}",
            text(&out.stderr)
        );
        let ours = json(&out)["jobs"][0].clone();
        let fio_dir = tmpfs_tempdir();
        let out = run(Command::new("fio")
            .current_dir(fio_dir.path())
            .args(["--output-format=json"])
            .arg(&jobfile));
        assert!(out.status.success(), "fio: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let theirs: serde_json::Value =
            serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
        let theirs = &theirs["jobs"][0];
        for key in ["iodepth_level", "iodepth_submit", "iodepth_complete"] {
            let (a, b) = (&ours[key], &theirs[key]);
            for (bucket, share) in b.as_object().unwrap() {
                let (x, y) = (a[bucket].as_f64().unwrap(), share.as_f64().unwrap());
                // The same buckets to a point: tmpfs completes buffered AIO in io_submit (and
                // io_uring's reads in io_uring_enter), so
                // the two tools' calls meet the same states.
                assert!(
                    (x - y).abs() <= 1.0,
                    "{engine} {options}: {key} {bucket}: {a} / {b}"
                );
            }
        }
    }
    assert_nothing_left(dir.path());
}

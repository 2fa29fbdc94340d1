//! `fsbench fio` beside fio 3.33 where fio leaves it no choice: the names a job's files
//! take, the "Starting" line, a write job's verify reads in the outputs, a group whose
//! verify fails.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::fio_files::traced_fsbench;

/// Two jobs of two copies of two files each: one named by fio's default, one by a
/// `filename_format` with its keywords in any case (`$clientuid` is empty, fio running it).
const NAMES: &str = "[global]\nrw=write\nbs=4k\nsize=8k\nnumjobs=2\nnrfiles=2\n[alpha]\n[beta]\nfilename_format=f.$CLIENTUID.$JobName.$jobnum.$filenum\n";

/// The names fio 3.33 leaves for [`NAMES`] (`ls` after `fio names.fio`).
const FIO_NAMES: [&str; 8] = [
    "alpha.0.0",
    "alpha.0.1",
    "alpha.1.0",
    "alpha.1.1",
    "f..beta.0.0",
    "f..beta.0.1",
    "f..beta.1.0",
    "f..beta.1.1",
];

/// The files fsbench created (`openat` with `O_CREAT`, its directory named by strace's
/// `-y`, as [`traced_fsbench`] traces) under `dir`, but for its scratch marker.
fn created(log: &Path, dir: &Path) -> BTreeSet<String> {
    let log = std::fs::read_to_string(log).unwrap();
    (log.lines())
        .filter(|l| l.contains("openat(") && l.contains("O_CREAT") && !l.contains("= -1"))
        .filter(|l| l.contains(&format!("<{}/", dir.display())))
        .filter_map(|l| l.split('"').nth(1))
        .filter(|n| !n.rsplit('/').next().unwrap_or(n).starts_with('.'))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_job_file_s_jobs_name_their_files_as_fio_does() {
    let test = "a_job_file_s_jobs_name_their_files_as_fio_does";
    if !has_tool("strace") {
        return skip(&format!("{test}: needs strace"));
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("names.fio");
    std::fs::write(&jobfile, NAMES).unwrap();
    let log = state.path().join("strace.log");
    let mut traced = traced_fsbench("trace=openat", &log, state.path(), dir.path(), &jobfile);
    let out = run(&mut traced);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ours = created(&log, dir.path());
    let want: BTreeSet<String> = FIO_NAMES.iter().map(|n| n.to_string()).collect();
    assert_eq!(ours, want);
    if !has_tool("fio") {
        return skip(&format!("{test}: against fio's own: fio is not installed"));
    }
    let fio_dir = tempdir();
    let out = run(Command::new("fio")
        .arg("--output=/dev/null")
        .arg(&jobfile)
        .current_dir(fio_dir.path()));
    assert!(out.status.success(), "fio: {}", text(&out.stderr));
    let theirs: BTreeSet<String> = (std::fs::read_dir(fio_dir.path()).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(ours, theirs);
}

/// fio would write where a job's name leads (`../out.0.0`); fsbench refuses it before it
/// makes anything.
#[test]
fn a_job_name_leading_out_of_the_run_s_directory_is_refused() {
    let (outer, state) = (tempdir(), tempdir());
    let dir = outer.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    for name in ["../out", "sub/../../out"] {
        let jobfile = state.path().join("out.fio");
        std::fs::write(&jobfile, format!("[{name}]\nrw=write\nsize=8k\n")).unwrap();
        let out = run(fsbench(state.path())
            .args(["fio", "-q", "--runs", "1", "--dir"])
            .arg(&dir)
            .arg(&jobfile));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("out.fio:1:") && err.contains("leaves the run's directory"),
            "{err}"
        );
        assert!(
            err.contains(&format!("job `{name}` has no `filename`")),
            "{err}"
        );
        let left: Vec<_> = std::fs::read_dir(outer.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "only `run` in {}", outer.path().display());
    }
}

/// The "Starting" line of `job` from fsbench, and from fio where it is installed.
fn starting(state: &Path, job: &str) -> (String, Option<String>) {
    let dir = tmpfs_tempdir();
    let jobfile = state.join("start.fio");
    std::fs::write(&jobfile, job).unwrap();
    let line = |out: &str| {
        (out.lines())
            .find(|l| l.starts_with("Starting "))
            .map(str::to_string)
            .unwrap_or_default()
    };
    let ours = fio_output(state, dir.path(), &jobfile, "normal");
    assert!(ours.status.success(), "{}", text(&ours.stderr));
    let theirs = has_tool("fio").then(|| {
        let fio_dir = tempdir();
        let out = run(Command::new("fio")
            .arg(&jobfile)
            .current_dir(fio_dir.path()));
        assert!(out.status.success(), "fio: {}", text(&out.stderr));
        line(&text(&out.stdout))
    });
    (line(&text(&ours.stdout)), theirs)
}

#[test]
fn the_starting_line_counts_threads_and_processes_as_fio_does() {
    let state = tempdir();
    let jobs = [
        ("[p]\nsize=64k\n", "Starting 1 process"),
        ("[p]\nsize=64k\nnumjobs=2\n", "Starting 2 processes"),
        ("[t]\nthread\nsize=64k\n", "Starting 1 thread"),
        (
            "[global]\nsize=64k\n[p]\n[t]\nstonewall\nthread\nnumjobs=2\n",
            "Starting 2 threads and 1 process",
        ),
    ];
    let mut fio_checked = false;
    for (job, want) in jobs {
        let (ours, theirs) = starting(state.path(), job);
        assert_eq!(ours, want, "{job}");
        if let Some(theirs) = theirs {
            assert_eq!(ours, theirs, "fio on {job}");
            fio_checked = true;
        }
    }
    if !fio_checked {
        skip("the Starting line against fio's own: fio is not installed");
    }
}

/// A write job that verifies its writes: fio's verify phase reads them back.
const WRITE_VERIFY: &str = "[wv]\nrw=write\nbs=4k\nsize=256k\nverify=crc32c\n";

/// A job's reads and writes in fio's JSON: total I/Os, bytes, and whether the runtime,
/// bandwidth, IOPS and completion latency are not zero.
fn directions(doc: &serde_json::Value) -> Vec<(u64, u64, [bool; 4])> {
    let job = &doc["jobs"][0];
    ["read", "write"]
        .iter()
        .map(|d| {
            let j = &job[d];
            let some = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0) > 0.0;
            (
                j["total_ios"].as_u64().unwrap(),
                j["io_bytes"].as_u64().unwrap(),
                [
                    some(&j["runtime"]),
                    some(&j["bw"]),
                    some(&j["iops"]),
                    some(&j["clat_ns"]["mean"]),
                ],
            )
        })
        .collect()
}

/// fio 3.33 on `jobfile` in `dir`, its output in `format`.
fn fio_in(dir: &Path, jobfile: &Path, format: &str) -> std::process::Output {
    run(Command::new("fio")
        .arg(format!("--output-format={format}"))
        .arg(jobfile)
        .current_dir(dir))
}

#[test]
fn a_write_job_s_verify_reads_are_its_reads_as_fio_counts_them() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("wv.fio");
    std::fs::write(&jobfile, WRITE_VERIFY).unwrap();
    let normal = fio_output(state.path(), dir.path(), &jobfile, "normal");
    assert!(normal.status.success(), "{}", text(&normal.stderr));
    let normal = text(&normal.stdout);
    for line in [
        "\n  read: IOPS=",
        "\n  write: IOPS=",
        "issued rwts: total=64,64,0,0 ",
        "\n   READ: bw=",
        "\n  WRITE: bw=",
    ] {
        assert!(normal.contains(line), "{line}: {normal}");
    }
    let json = fio_output(state.path(), dir.path(), &jobfile, "json");
    let ours: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let all = [true; 4];
    assert_eq!(
        directions(&ours),
        [(64, 256 << 10, all), (64, 256 << 10, all)]
    );
    let terse = fio_output(state.path(), dir.path(), &jobfile, "terse");
    let fields: Vec<String> = text(&terse.stdout)
        .trim()
        .split(';')
        .map(String::from)
        .collect();
    // terse v3: the read's KiB at field 6, the write's at 47.
    assert_eq!((fields[5].as_str(), fields[46].as_str()), ("256", "256"));
    if !has_tool("fio") {
        return skip("a write job's verify reads against fio's own: fio is not installed");
    }
    let fio_dir = tempdir();
    let fio = |format: &str| {
        let out = fio_in(fio_dir.path(), &jobfile, format);
        assert!(out.status.success(), "fio: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let theirs: serde_json::Value = serde_json::from_str(&fio("json")).unwrap();
    assert_eq!(directions(&ours), directions(&theirs));
    let issued = |out: &str| {
        out.lines()
            .find(|l| l.contains("issued rwts"))
            .map(String::from)
    };
    let theirs = fio("normal");
    assert_eq!(issued(&normal), issued(&theirs));
    assert_eq!(
        theirs.contains("\n   READ: bw="),
        normal.contains("\n   READ: bw=")
    );
}

/// Group 0 writes a file with checksums, group 1 overwrites its third block with other
/// data, group 2 reads it back and checks: its third read fails its verify.
const VERIFY_FAILS: &str = "[global]\nfilename=vf.dat\nsize=64k\nbs=4k\nioengine=psync\n\
[w]\nrw=write\nverify=crc32c\ndo_verify=0\n\
[o]\nstonewall\nrw=write\noffset=8k\nsize=4k\nverify=0\nbuffer_pattern=0x5a\n\
[r]\nstonewall\nrw=read\nverify=crc32c\n";

/// The failing job's header as fio 3.33 prints it (`fio VERIFY_FAILS`), but for its pid.
const FAILED_HEADER: &str = "r: (groupid=2, jobs=1): err=84 (file:io_u.c:2152, func=io_u_sync_complete, error=Invalid or incomplete multibyte or wide character): pid=";

/// The reads of job `r` in a JSON output: its error and its reads (the failing one counted).
fn failed_reads(doc: &serde_json::Value) -> (i64, u64, u64) {
    let r = (doc["jobs"].as_array().unwrap().iter())
        .find(|j| j["jobname"] == "r")
        .expect("job r");
    let read = &r["read"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    (
        r["error"].as_i64().unwrap(),
        n(&read["total_ios"]),
        n(&read["io_bytes"]),
    )
}

#[test]
fn a_group_whose_verify_fails_is_printed_with_its_error_as_fio_prints_it() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("vf.fio");
    std::fs::write(&jobfile, VERIFY_FAILS).unwrap();
    let normal = fio_output(state.path(), dir.path(), &jobfile, "normal");
    assert!(!normal.status.success(), "the run must fail");
    assert!(text(&normal.stderr).contains("verify: bad magic header 5a5a"));
    let normal = text(&normal.stdout);
    assert!(normal.contains(FAILED_HEADER), "{normal}");
    let group = &normal[normal.find(FAILED_HEADER).unwrap()..];
    assert!(group.contains("issued rwts: total=3,0,0,0 "), "{group}");
    let json = fio_output(state.path(), dir.path(), &jobfile, "json");
    assert!(!json.status.success());
    let ours: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(failed_reads(&ours), (84, 3, 12 << 10));
    let terse = fio_output(state.path(), dir.path(), &jobfile, "terse");
    let r = text(&terse.stdout);
    let r = r
        .lines()
        .find(|l| l.contains(";r;2;"))
        .expect("job r's line");
    assert!(r.contains(";r;2;84;12;"), "{r}");
    // fsbench's own document: the run failed, its io phase kept with the job's figures.
    let doc: serde_json::Value =
        serde_json::from_slice(&fio_job_json(state.path(), dir.path(), VERIFY_FAILS).stdout)
            .unwrap();
    let failed = (doc["runs"].as_array().unwrap().iter())
        .find(|r| r["workload"] == "io:r")
        .expect("the run of group 2");
    assert_eq!(failed["status"], "failed");
    let io = (failed["phases"].as_array().unwrap().iter())
        .find(|p| p["name"] == "io")
        .expect("its io phase");
    assert_eq!(io["jobs"][0]["error"], 84);
    assert_eq!(io["jobs"][0]["ios"][0], 3);
    if !has_tool("fio") {
        return skip("a failed verify against fio's own: fio is not installed");
    }
    let fio_dir = tempdir();
    let fio = |format: &str| {
        let out = fio_in(fio_dir.path(), &jobfile, format);
        assert!(!out.status.success(), "fio fails too");
        let _ = std::fs::remove_file(fio_dir.path().join("vf.dat"));
        text(&out.stdout)
    };
    assert!(fio("normal").contains(FAILED_HEADER));
    // fio's JSON follows its error line on stdout.
    let theirs = fio("json");
    let theirs: serde_json::Value =
        serde_json::from_str(&theirs[theirs.find('{').unwrap()..]).unwrap();
    assert_eq!(failed_reads(&theirs), failed_reads(&ours));
}

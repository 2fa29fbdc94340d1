//! fio job files' own files and engines: `filename` and `directory` name the files fio
//! names (and the synchronous engines make fio's calls on them, read by strace), the other
//! engines run, names outside the run's directory are refused with their line.

use std::path::Path;
use std::process::Command;

use crate::common::*;

/// Two jobs' copies sharing two named files in a directory, read with `sync`.
const SHARED: &str = "[global]\ndirectory=sub\nfilename=shared.dat:two.dat\nioengine=sync\nrw=read\nbs=4k\nsize=64k\nnumjobs=2\n[reader]\n";

/// Per traced call (`openat`, `lseek`, `read`) on the files below `sub/`: how many.
fn calls_on_files(log: &Path) -> [usize; 3] {
    let log = std::fs::read_to_string(log).unwrap();
    let mut counts = [0; 3];
    // A call another thread interrupted is split (`<unfinished ...>`, then `resumed`): its
    // first half names the file and the call.
    for line in log.lines().filter(|l| l.contains("sub/")) {
        let call = line.split_whitespace().nth(1).unwrap_or("");
        for (i, name) in ["openat(", "lseek(", "read("].iter().enumerate() {
            // Only the reads and seeks of a data file, not the layout's opens for writing.
            if call.starts_with(name) && !line.contains("O_WRONLY") {
                counts[i] += 1;
            }
        }
    }
    counts
}

fn strace(log: &Path) -> Command {
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "-y", "-e", "trace=openat,lseek,read", "-o"])
        .arg(log);
    c
}

#[test]
fn filename_and_directory_name_fio_s_files_and_sync_makes_fio_s_calls() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("shared.fio");
    std::fs::write(&jobfile, SHARED).unwrap();
    let out = run(fsbench(state.path())
        .args([
            "fio",
            "-q",
            "--runs",
            "1",
            "--output-format",
            "json",
            "--dir",
        ])
        .arg(dir.path())
        .arg(&jobfile));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let phases = &doc["runs"][0]["phases"];
    assert_eq!(
        phases[0]["ops"].as_u64(),
        Some(2),
        "two files, laid out once"
    );
    assert_eq!(
        phases[0]["bytes"].as_u64(),
        Some(64 << 10),
        "size split over them"
    );
    assert_eq!(
        phases[1]["ops"].as_u64(),
        Some(32),
        "each copy reads 64 KiB"
    );
    assert_nothing_left(dir.path());
    if !has_tool("fio") || !has_tool("strace") {
        skip("filename/directory calls against fio's: fio or strace is not installed");
        return;
    }
    let ours = state.path().join("fsbench.strace");
    let out = run(strace(&ours)
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .env("FSBENCH_STATE_DIR", state.path())
        .env("XDG_DATA_HOME", test_data_home())
        .args(["fio", "-q", "--runs", "1", "--dir"])
        .arg(dir.path())
        .arg(&jobfile));
    assert!(out.status.success(), "{}", text(&out.stderr));
    // fio wants the directory made; it runs in its own.
    let fio_dir = tempdir();
    std::fs::create_dir(fio_dir.path().join("sub")).unwrap();
    let theirs = state.path().join("fio.strace");
    let out = run(strace(&theirs)
        .current_dir(fio_dir.path())
        .args(["fio", "--output=/dev/null"])
        .arg(&jobfile));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fio_sizes: Vec<u64> = ["shared.dat", "two.dat"]
        .iter()
        .map(|f| {
            std::fs::metadata(fio_dir.path().join("sub").join(f))
                .unwrap()
                .len()
        })
        .collect();
    assert_eq!(fio_sizes, [32 << 10, 32 << 10]);
    // Four opens (two copies × two files), 32 reads, and no seek: each file is read where
    // the last read ended.
    assert_eq!(calls_on_files(&ours), calls_on_files(&theirs));
    assert_eq!(calls_on_files(&ours), [4, 0, 32]);
}

#[test]
fn every_synchronous_engine_and_null_run_a_job_file() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for engine in ["sync", "vsync", "pvsync", "pvsync2", "psync", "null"] {
        let jobfile = state.path().join("engine.fio");
        let job = format!(
            "[global]\nioengine={engine}\nsize=256k\nbs=4k\n[mixed]\nrw=randrw\nnrfiles=2\nfsync=4\n"
        );
        std::fs::write(&jobfile, job).unwrap();
        let out = run(fsbench(state.path())
            .args([
                "fio",
                "-q",
                "--runs",
                "1",
                "--output-format",
                "json",
                "--dir",
            ])
            .arg(dir.path())
            .arg(&jobfile));
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        let doc = json(&out);
        let phases = &doc["runs"][0]["phases"];
        assert_eq!(phases[1]["ops"].as_u64(), Some(64), "{engine}");
        let files = if engine == "null" { 0 } else { 2 };
        assert_eq!(
            phases[0]["ops"].as_u64(),
            Some(files),
            "{engine}: files made"
        );
        assert_eq!(doc["suite"]["workload"][0]["engine"], engine);
    }
    assert_nothing_left(dir.path());
}

#[test]
fn a_file_outside_the_run_s_directory_is_refused_with_its_line() {
    let state = tempdir();
    for (line, needle) in [
        (
            "filename=/tmp/data",
            "`filename=/tmp/data` is outside the run's directory",
        ),
        (
            "filename=a:../b",
            "`filename=../b` leaves the run's directory",
        ),
        (
            "directory=/scratch",
            "`directory=/scratch` is outside the run's directory",
        ),
        ("cpus_allowed=0", "does not pin jobs to CPUs"),
    ] {
        let jobfile = state.path().join("outside.fio");
        std::fs::write(&jobfile, format!("[j]\nsize=1m\n{line}\n")).unwrap();
        let out = run(fsbench(state.path())
            .args(["fio", "-q", "--runs", "1", "--dir", "/nonexistent"])
            .arg(&jobfile));
        assert_eq!(out.status.code(), Some(2), "{line}");
        let err = text(&out.stderr);
        assert!(
            err.contains("outside.fio:3:") && err.contains(needle),
            "{line}: {err}"
        );
    }
}

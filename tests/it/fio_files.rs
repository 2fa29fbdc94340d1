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

/// strace following threads, the calls in `trace` written to `log`, with paths (`-y`).
fn strace(trace: &str, log: &Path) -> Command {
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "-y", "-e", trace, "-o"]).arg(log);
    c
}

/// `fsbench fio JOBFILE` in `dir` under [`strace`].
pub(crate) fn traced_fsbench(
    trace: &str,
    log: &Path,
    state: &Path,
    dir: &Path,
    jobfile: &Path,
) -> Command {
    let mut c = strace(trace, log);
    c.arg(env!("CARGO_BIN_EXE_fsbench"))
        .env("FSBENCH_STATE_DIR", state)
        .env("XDG_DATA_HOME", test_data_home())
        .args(["fio", "-q", "--runs", "1", "--dir"])
        .arg(dir)
        .arg(jobfile);
    c
}

/// fio on JOBFILE in `dir` under [`strace`].
pub(crate) fn traced_fio(trace: &str, log: &Path, dir: &Path, jobfile: &Path) -> Command {
    let mut c = strace(trace, log);
    c.current_dir(dir)
        .args(["fio", "--output=/dev/null", "--ioengine=psync"])
        .arg(jobfile);
    c
}

const OPEN_SEEK_READ: &str = "trace=openat,lseek,read";

#[test]
fn filename_and_directory_name_fio_s_files_and_sync_makes_fio_s_calls() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("shared.fio");
    std::fs::write(&jobfile, SHARED).unwrap();
    let out = fio_job_json(state.path(), dir.path(), SHARED);
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
    let out = run(&mut traced_fsbench(
        OPEN_SEEK_READ,
        &ours,
        state.path(),
        dir.path(),
        &jobfile,
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    // fio wants the directory made; it runs in its own.
    let fio_dir = tempdir();
    std::fs::create_dir(fio_dir.path().join("sub")).unwrap();
    let theirs = state.path().join("fio.strace");
    // The job file's `ioengine=sync` wins over the command line's psync.
    let out = run(&mut traced_fio(
        OPEN_SEEK_READ,
        &theirs,
        fio_dir.path(),
        &jobfile,
    ));
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
    // 32 reads and no seek, as fio: each file is read where the last read ended. fio opens
    // a shared file a varying number of times (its jobs race to check it); fsbench's
    // copies open each file once.
    let (ours, theirs) = (calls_on_files(&ours), calls_on_files(&theirs));
    assert_eq!(ours[1..], theirs[1..]);
    assert_eq!(ours, [4, 0, 32]);
    assert!(theirs[0] >= 4, "{theirs:?}");
}

#[test]
fn every_synchronous_engine_and_null_run_a_job_file() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for engine in ["sync", "vsync", "pvsync", "pvsync2", "psync", "null"] {
        let job = format!(
            "[global]\nioengine={engine}\nsize=256k\nbs=4k\n[mixed]\nrw=randrw\nnrfiles=2\nfsync=4\n"
        );
        let out = fio_job_json(state.path(), dir.path(), &job);
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
        ("cpus_allowed=4096", "CPU 4096 too large"),
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

#[test]
fn file_and_directory_engines_time_one_operation_per_file() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for engine in [
        "filecreate",
        "filestat",
        "filedelete",
        "dircreate",
        "dirstat",
        "dirdelete",
    ] {
        let job = format!("[global]\nioengine={engine}\nfilesize=4k\nnrfiles=20\n[a]\n[b]\n");
        let out = fio_job_json(state.path(), dir.path(), &job);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        let doc = json(&out);
        let phases = &doc["runs"][0]["phases"];
        // Each of the two jobs' 20 files, once, timed as a read (fio's default rw=read).
        assert_eq!(phases[1]["ops"].as_u64(), Some(40), "{engine}");
        assert_eq!(
            phases[1]["bytes"].as_u64(),
            Some(0),
            "{engine}: no data I/O"
        );
        let clat = &phases[1]["latency"]["read clat"];
        assert_eq!(clat["count"].as_u64(), Some(40), "{engine}: {clat}");
        let made = if engine.ends_with("create") { 0 } else { 40 };
        assert_eq!(phases[0]["ops"].as_u64(), Some(made), "{engine}: laid out");
    }
    // filedelete deletes what the layout made: a second delete fails, naming the call.
    let job = "[global]\nioengine=filedelete\nfilesize=4k\nnrfiles=2\nfilename=x:y\n[a]\n[b]\n";
    let out = fio_job_json(state.path(), dir.path(), job);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("filedelete"),
        "{}",
        text(&out.stderr)
    );
    assert_nothing_left(dir.path());
}

#[test]
fn startdelay_starts_a_job_later_and_ratemin_fails_a_slow_one() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let paced = "[global]\nsize=1m\nrw=randread\nrate_iops=100\ntime_based\nruntime=1\n";
    let out = fio_job_json(
        state.path(),
        dir.path(),
        &format!("{paced}[a]\n[b]\nstartdelay=1\n"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let io = &doc["runs"][0]["phases"][1];
    let secs = io["elapsed_ns"].as_f64().unwrap() / 1e9;
    assert!(
        (1.9..3.0).contains(&secs),
        "b starts a second after a: {secs} s"
    );
    // Each job's own rate counts from its start: b's is no lower than a's.
    for job in ["a: read clat", "b: read clat"] {
        let n = io["latency"][job]["count"].as_u64().unwrap_or(0);
        assert!((90..=105).contains(&n), "{job}: {n}");
    }
    let out = fio_job_json(
        state.path(),
        dir.path(),
        &format!("{paced}[a]\nratemin=1m\n"),
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("below its ratemin of 1048576"), "{err}");
    assert_nothing_left(dir.path());
}

#[test]
fn fallocate_allocates_written_files_as_fio_s_option_says() {
    if !has_tool("strace") {
        skip("fallocate calls: strace is not installed");
        return;
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for (how, wanted) in [
        ("native", "fallocate(FD, 0, 0, 1048576)"),
        ("keep", "fallocate(FD, FALLOC_FL_KEEP_SIZE, 0, 1048576)"),
        ("none", ""),
    ] {
        let jobfile = state.path().join("alloc.fio");
        let job = format!("[w]\nrw=write\nsize=1m\nfallocate={how}\n");
        std::fs::write(&jobfile, job).unwrap();
        let log = state.path().join("alloc.strace");
        let out = run(&mut traced_fsbench(
            "trace=fallocate",
            &log,
            state.path(),
            dir.path(),
            &jobfile,
        ));
        assert!(out.status.success(), "{how}: {}", text(&out.stderr));
        let log = std::fs::read_to_string(&log).unwrap();
        // `PID fallocate(5</path>, 0, 0, 1048576) = 0`, its descriptor left out.
        let calls: Vec<String> = log
            .lines()
            .filter_map(|l| l.split_once(' ').map(|(_, call)| call.trim_start()))
            .filter(|call| call.starts_with("fallocate("))
            .map(|call| {
                let (_, args) = call.split_once(", ").unwrap();
                format!("fallocate(FD, {}", args.split(')').next().unwrap()) + ")"
            })
            .collect();
        let wanted: Vec<&str> = [wanted].into_iter().filter(|w| !w.is_empty()).collect();
        assert_eq!(calls, wanted, "{how}: {log}");
    }
}

/// The offsets of the 4 KiB `pread64` calls on the file `data` of one traced command.
fn read_offsets(cmd: &mut Command, log: &Path) -> Vec<u64> {
    let out = run(cmd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(log).unwrap();
    log.lines()
        .filter(|l| l.contains("/data>") && l.ends_with("= 4096"))
        .filter_map(|l| l.rsplit_once(", ")?.1.split(')').next()?.parse().ok())
        .collect()
}

#[test]
fn rw_modifiers_gap_and_go_backwards_at_fio_s_offsets() {
    if !has_tool("fio") || !has_tool("strace") {
        skip("rw=read:GAP offsets against fio's: fio or strace is not installed");
        return;
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for rw in ["read:-8k", "read:4k", "read:12k"] {
        let jobfile = state.path().join("gap.fio");
        let job = format!("[gap]\nfilename=data\nrw={rw}\nbs=4k\nsize=32k\nloops=2\n");
        std::fs::write(&jobfile, job).unwrap();
        let log = state.path().join("gap.strace");
        let trace = "trace=pread64";
        let ours = read_offsets(
            &mut traced_fsbench(trace, &log, state.path(), dir.path(), &jobfile),
            &log,
        );
        let fio_dir = tempdir();
        let theirs = read_offsets(&mut traced_fio(trace, &log, fio_dir.path(), &jobfile), &log);
        assert_eq!(ours.len(), 16, "{rw}: {ours:?}");
        assert_eq!(ours, theirs, "{rw}");
    }
    assert_nothing_left(dir.path());
}

//! A job opens each file as its file service first picks it, in its time, as fio's; with
//! `openfiles` below `nrfiles` it keeps at most that many open, closing each when its range
//! is done, so that a job of more files than the open-file limit runs; beside fio 3.33, the
//! same bytes per file and the same opens (read by strace).

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use crate::common::*;
use crate::fio_files::{traced_fio, traced_fsbench};

/// Per job file (`j.0.N`, by the path strace's `-y` shows): the opens that succeeded and
/// the bytes `pwrite64` moved.
fn per_file(log: &Path) -> BTreeMap<String, (u32, u64)> {
    let log = std::fs::read_to_string(log).unwrap();
    let mut files: BTreeMap<String, (u32, u64)> = BTreeMap::new();
    for line in log.lines().filter(|l| !l.contains("= -1")) {
        let call = line.split_whitespace().nth(1).unwrap_or("");
        let Some(name) = line
            .split('"')
            .nth(1)
            .filter(|_| call.starts_with("openat("))
        else {
            if let Some(rest) = call.strip_prefix("pwrite64(") {
                let file = rest.split('>').next().unwrap_or("");
                let name = file.rsplit('/').next().unwrap_or(file);
                let moved: u64 = line.rsplit("= ").next().unwrap().trim().parse().unwrap();
                if name.starts_with("j.0.") {
                    files.entry(name.to_string()).or_default().1 += moved;
                }
            }
            continue;
        };
        if name.starts_with("j.0.") {
            files.entry(name.to_string()).or_default().0 += 1;
        }
    }
    files
}

/// Runs `command` with its open-file limit (and its children's) at `limit`.
fn with_nofile(command: &mut std::process::Command, limit: u64) -> &mut std::process::Command {
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            let nofile = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &nofile) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        })
    }
}

#[test]
fn fio_a_job_of_more_files_than_the_open_file_limit_runs_with_openfiles() {
    let test = "fio_a_job_of_more_files_than_the_open_file_limit_runs_with_openfiles";
    if !has_tool("strace") {
        return skip(&format!("{test}: needs strace"));
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let job =
        |open: u32| format!("[j]\nrw=write\nbs=4k\nfilesize=8k\nnrfiles=200\nopenfiles={open}\n");
    let (jobfile, log) = (state.path().join("j.fio"), state.path().join("strace.log"));
    std::fs::write(&jobfile, job(8)).unwrap();
    let mut traced = traced_fsbench(
        "trace=openat,pwrite64",
        &log,
        state.path(),
        dir.path(),
        &jobfile,
    );
    let out = run(with_nofile(&mut traced, 64));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let files = per_file(&log);
    assert_eq!(files.len(), 200);
    // Each file laid out (one open), then opened once by the job and written whole.
    assert!(files.values().all(|f| *f == (2, 8192)), "{files:?}");
    // Every file held open at once is more than the limit allows: EMFILE, named.
    std::fs::write(&jobfile, job(0)).unwrap();
    let out = run(with_nofile(
        fsbench(state.path())
            .args(["fio", "-q", "--runs", "1", "--dir"])
            .arg(dir.path())
            .arg(&jobfile),
        64,
    ));
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("EMFILE") && err.contains("set openfiles"),
        "{err}"
    );
}

#[test]
fn fio_openfiles_opens_and_writes_each_file_as_fio_does() {
    let test = "fio_openfiles_opens_and_writes_each_file_as_fio_does";
    if !has_tool("strace") || !has_tool("fio") {
        return skip(&format!("{test}: needs strace and fio 3.33"));
    }
    for (rw, service) in [
        ("write", "sequential"),
        ("randwrite", "sequential"),
        ("write", "random"),
        ("randwrite", "random"),
        ("write", "roundrobin"),
    ] {
        let job = format!(
            "[j]\nrw={rw}\nbs=4k\nfilesize=64k\nnrfiles=10\nopenfiles=2\nloops=2\nfile_service_type={service}\n"
        );
        let (_state, ours, theirs) = traced_both(&job, "trace=openat,pwrite64");
        let (ours, theirs) = (per_file(&ours), per_file(&theirs));
        assert_eq!(ours.len(), 10, "{job}: {ours:?}");
        // The layout's open, then one a loop: 2 loops of 64 KiB.
        assert!(
            ours.values().all(|f| *f == (3, 128 << 10)),
            "{job}: {ours:?}"
        );
        assert_eq!(ours, theirs, "{job}");
    }
}

/// `job` run by fsbench and by fio 3.33, each in a tmpfs directory of its own under strace
/// `-e TRACE`: the test's state directory and the two logs, fsbench's first.
fn traced_both(job: &str, trace: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let state = tempdir();
    let jobfile = state.path().join("j.fio");
    std::fs::write(&jobfile, job).unwrap();
    let (ours, theirs) = (state.path().join("ours.log"), state.path().join("fio.log"));
    let (dir, fio_dir) = (tmpfs_tempdir(), tmpfs_tempdir());
    let out = run(&mut traced_fsbench(
        trace,
        &ours,
        state.path(),
        dir.path(),
        &jobfile,
    ));
    assert!(out.status.success(), "{job}: {}", text(&out.stderr));
    let out = run(&mut traced_fio(trace, &theirs, fio_dir.path(), &jobfile));
    assert!(out.status.success(), "fio on {job}: {}", text(&out.stderr));
    (state, ours, theirs)
}

/// The job's opens (read-only, of its files `j.0.N`) and reads, in the order made.
fn opens_and_reads(log: &Path) -> Vec<String> {
    let log = std::fs::read_to_string(log).unwrap();
    let file = |s: &str| {
        s.split(['"', '>'])
            .find(|p| p.contains("/j.0.") || p.starts_with("j.0."))
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
    };
    (log.lines().filter(|l| !l.contains("= -1")))
        .filter_map(|line| {
            let call = line.split_whitespace().nth(1)?;
            match call {
                c if c.starts_with("openat(") && line.contains("O_RDONLY") => {
                    Some(format!("open {}", file(line)?))
                }
                c if c.starts_with("pread64(") => Some(format!("read {}", file(line)?)),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn fio_a_job_opens_each_file_at_its_first_io_as_fio_does() {
    let test = "fio_a_job_opens_each_file_at_its_first_io_as_fio_does";
    if !has_tool("strace") || !has_tool("fio") {
        return skip(&format!("{test}: needs strace and fio 3.33"));
    }
    // No `openfiles`: fio opens a file when its file service first picks it, in the job's
    // time, not all of them before the job.
    let job = "[j]\nrw=read\nbs=4k\nfilesize=8k\nnrfiles=4\n";
    let (_state, ours, theirs) = traced_both(job, "trace=openat,pread64");
    let (ours, theirs) = (opens_and_reads(&ours), opens_and_reads(&theirs));
    // Round robin: each file opened just before its first read, then the second blocks.
    let first: Vec<String> = (0..4)
        .flat_map(|f| [format!("open j.0.{f}"), format!("read j.0.{f}")])
        .collect();
    assert_eq!(ours[..8], first[..], "{ours:?}");
    assert_eq!(ours.len(), 12, "{ours:?}");
    assert_eq!(ours, theirs);
}

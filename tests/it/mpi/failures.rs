//! A phase that fails on one rank is kept as without MPI: the failed run stored with its
//! earlier phases and the failed phase's figures of every rank (the failed rank's up to its
//! failure), its error naming the rank, the exit status of the same failure without MPI.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::mpi::*;
use crate::common::*;

/// One job per rank writing 64 blocks of 4 KiB at 100 a second to `data`, verified at its
/// end (as `fio_verify.rs`'s writer, slower: block 2 is written 20 ms in, checked 640 ms in).
const VERIFIED: &str = "io:rw=write,bs=4k,size=256k,filename=data,verify=crc32c,rate_iops=100";

/// Zeroes block 2 (offset 8192) of the file `tail` in the run's directory under `target`
/// (`fsbench.PID/runN/TAIL`) once the writer has written it, before the job's check reads
/// it: its header is gone. Looks until `done`; whether it spoiled the block.
fn spoiler(target: PathBuf, tail: &'static str, done: Arc<AtomicBool>) -> JoinHandle<bool> {
    std::thread::spawn(move || {
        let deadline = Instant::now() + LIMIT;
        while !done.load(Ordering::Relaxed) && Instant::now() < deadline {
            for file in run_files(&target, tail) {
                let mut block = [0u8; 4096];
                let written = file.read_exact_at(&mut block, 8192).is_ok();
                if written && block.iter().any(|&b| b != 0) {
                    // The writer's pwrite of the block is over well before this.
                    std::thread::sleep(Duration::from_millis(20));
                    file.write_all_at(&[0u8; 4096], 8192).unwrap();
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    })
}

/// The files `tail` of the runs' directories under `target`, open to read and write.
fn run_files(target: &Path, tail: &str) -> Vec<std::fs::File> {
    let dirs = |d: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .map(|r| r.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    (dirs(target).iter().flat_map(|d| dirs(d)))
        .filter_map(|run| {
            (std::fs::OpenOptions::new().read(true).write(true))
                .open(run.join(tail))
                .ok()
        })
        .collect()
}

/// `cmd`'s output, with block 2 of the file `tail` under `target` spoiled while it runs.
fn spoiled_run(cmd: &mut std::process::Command, target: &Path, tail: &'static str) -> Output {
    let done = Arc::new(AtomicBool::new(false));
    let spoiling = spoiler(target.to_path_buf(), tail, done.clone());
    let out = output_within(cmd, LIMIT);
    done.store(true, Ordering::Relaxed);
    assert!(
        spoiling.join().unwrap(),
        "{tail}: its block 2 was never written: {}",
        text(&out.stderr)
    );
    out
}

#[test]
fn a_verify_that_fails_on_one_rank_keeps_every_ranks_figures_in_the_failed_run() {
    let Some(_one) = mpi_test(
        "a_verify_that_fails_on_one_rank_keeps_every_ranks_figures",
        &[],
    ) else {
        return;
    };
    // Without MPI: the failure's exit status.
    let (alone, alone_state) = (tmpfs_tempdir(), tempdir());
    let mut cmd = json_run(alone_state.path());
    cmd.args(["--runs", "1", "--no-drop-caches", "-w", VERIFIED, "--dir"])
        .arg(alone.path());
    let without = spoiled_run(&mut cmd, alone.path(), "data");
    assert!(!without.status.success(), "{}", text(&without.stderr));
    // Under MPI, rank 1's file spoiled, rank 0's not.
    let (state, target) = (tempdir(), Target::new());
    let mut cmd = mpirun(2, state.path(), &target, "", &["-w", VERIFIED]);
    let out = spoiled_run(&mut cmd, &target.dir, "rank.1/data");
    assert_eq!(out.status.code(), without.status.code());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("rank 1 on ")
            && stderr.contains("verify: bad magic header")
            && stderr.contains("offset 8192"),
        "{stderr}"
    );
    assert!(!stderr.contains("rank 0 on "), "{stderr}");
    // Said once, by rank 0, naming the rank: not again by the failed rank.
    assert_eq!(stderr.matches("fsbench: error: ").count(), 1, "{stderr}");
    assert!(stderr.contains("fsbench: error: rank 1 on "), "{stderr}");
    // What the ranks made is removed, said once before, as without MPI.
    let cleaning = "cleaning up: removing what the run made in ";
    assert_eq!(text(&without.stderr).matches(cleaning).count(), 1);
    assert_eq!(stderr.matches(cleaning).count(), 1, "{stderr}");
    assert!(
        stderr.contains("(each of the 2 ranks its own rank.<r>) …"),
        "{stderr}"
    );
    let printed = json(&out);
    // Stored as printed: rank 0 kept the failed run.
    let export = run(fsbench(state.path())
        .arg("--db")
        .arg(target.dir.join("results.db"))
        .args(["export", "1", "--format", "json"]));
    assert!(export.status.success(), "{}", text(&export.stderr));
    for doc in [printed, json(&export)] {
        let run = &doc["runs"][0];
        assert_eq!(run["status"], "failed");
        assert!(run["error"].as_str().unwrap().contains("rank 1 on "));
        let phases = run["phases"].as_array().unwrap();
        let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["layout", "io"], "the layout before it kept too");
        // Both ranks wrote all their blocks before the check: every byte counted.
        let io = &phases[1];
        assert_eq!(io["bytes"].as_u64(), Some(2 * 256 * 1024));
        for r in 0..2 {
            assert_eq!(figure(io, "rank-items", Some(r)), 64.0, "rank {r}");
        }
        let notes = io["notes"].to_string();
        assert!(notes.contains("the phase failed on rank 1 on "), "{notes}");
        assert!(
            notes.contains("rank 1: the phase failed: io: verify"),
            "{notes}"
        );
    }
    // fio's output of the stored run: both ranks' jobs, the failure's errno (EILSEQ).
    let fio = run(fsbench(state.path())
        .arg("--db")
        .arg(target.dir.join("results.db"))
        .args(["export", "1", "--format", "fio"]));
    let fio = text(&fio.stdout);
    assert!(fio.contains("jobs=2): err=84"), "{fio}");
    // Its header counts every rank's copy, as the job's stat below does.
    assert!(fio.contains("\nStarting 2 processes\n"), "{fio}");
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

/// Sets rank 1's file size limit to 64 KiB once its job has made `rank.1/data` (the writer
/// creates it as it opens it): its next writes past it fail (EFBIG, SIGXFSZ being ignored),
/// so its job ends with an error and no record. Rank 1's pid is in `pids/pid.1`. Looks until
/// `done`; whether it set the limit.
fn limiter(target: PathBuf, pids: PathBuf, done: Arc<AtomicBool>) -> JoinHandle<bool> {
    std::thread::spawn(move || {
        let deadline = Instant::now() + LIMIT;
        while !done.load(Ordering::Relaxed) && Instant::now() < deadline {
            if !run_files(&target, "rank.1/data").is_empty() {
                let pid = std::fs::read_to_string(pids.join("pid.1")).unwrap();
                let mut prlimit = std::process::Command::new("prlimit");
                prlimit.args(["--pid", pid.trim(), "--fsize=65536"]);
                return status(&mut prlimit).success();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    })
}

#[test]
fn a_phase_one_rank_fails_with_a_record_and_another_without_is_kept_naming_both() {
    let Some(_one) = mpi_test(
        "a_phase_one_rank_fails_with_a_record_and_another_without_is_kept",
        &["prlimit"],
    ) else {
        return;
    };
    let (state, target, pids) = (tempdir(), Target::new(), tempdir());
    // The jobs' opens create the files (none laid out before), so rank 1's writes grow its
    // file past the limit set once it exists.
    let workload = format!("{VERIFIED},create-on-open");
    let wrapper = format!(
        "trap '' XFSZ; echo $$ > {}/pid.$OMPI_COMM_WORLD_RANK; exec \"$@\"",
        pids.path().display()
    );
    let mut cmd = mpirun(2, state.path(), &target, &wrapper, &["-w", &workload]);
    let done = Arc::new(AtomicBool::new(false));
    let limiting = limiter(target.dir.clone(), pids.path().to_path_buf(), done.clone());
    // Rank 0's verify fails after all its writes: a record of them, with its error.
    let out = spoiled_run(&mut cmd, &target.dir, "rank.0/data");
    done.store(true, Ordering::Relaxed);
    let stderr = text(&out.stderr);
    assert!(limiting.join().unwrap(), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches("fsbench: error: ").count(), 1, "{stderr}");
    for said in [
        "rank 0 on ",
        "verify: bad magic header",
        "rank 1 on ",
        "File too large",
    ] {
        assert!(stderr.contains(said), "{said}: {stderr}");
    }
    let doc = json(&out);
    let run = &doc["runs"][0];
    assert_eq!(run["status"], "failed");
    let phases = run["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["layout", "io"], "the failed io phase kept");
    let io = &phases[1];
    assert_eq!(figure(io, "rank-items", Some(0)), 64.0);
    assert_eq!(io["bytes"].as_u64(), Some(256 * 1024), "rank 0's alone");
    let of_rank_1 = (io["figures"].as_array().unwrap().iter())
        .filter(|f| f["dims"][0]["name"] == "rank" && f["dims"][0]["count"] == 1);
    assert_eq!(of_rank_1.count(), 0, "rank 1 has no figures");
    let notes = io["notes"].to_string();
    assert!(notes.contains("2 MPI ranks on 1 node(s)"), "{notes}");
    assert!(notes.contains("the phase failed on rank 0 on "), "{notes}");
    assert!(
        notes.contains("rank 0: the phase failed: io: verify: bad magic header"),
        "{notes}"
    );
    assert!(
        notes.contains(" without a record of what it did: none of its figures; its error: io: write: File too large"),
        "{notes}"
    );
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

/// A full disk on any rank ends the run as without MPI: exit status 5 and what to do about
/// it for the target, said once and naming the rank.
#[test]
fn a_full_disk_under_mpi_exits_as_without_it_with_the_targets_remedy() {
    let Some(_one) = mpi_test("a_full_disk_under_mpi_exits_as_without_it", &["fallocate"]) else {
        return;
    };
    // Each rank's job grows its file (no layout, no fallocate) for 3 seconds; once rank 1's exists, a
    // ballast takes the target's free space, which no estimate before the run foresees.
    const GROWS: &str =
        "io:rw=write,bs=64k,size=4m,filename=data,rate_iops=20,create-on-open,fallocate=none";
    let (state, target) = (tempdir(), Target::sized("64M"));
    let t = target.dir.display();
    let wrapper = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then (for i in $(seq 1000); do \
         [ -e {t}/*/*/rank.1/data ] && break; sleep 0.01; done; \
         free=$(stat -f -c '%a*%S' {t}); fallocate -l $(( $free )) {t}/ballast) \
         >/dev/null 2>&1 & fi; exec \"$@\""
    );
    let out = output_within(
        &mut mpirun(2, state.path(), &target, &wrapper, &["-w", GROWS]),
        LIMIT,
    );
    let stderr = text(&out.stderr);
    assert!(target.dir.join("ballast").exists(), "no ballast: {stderr}");
    std::fs::remove_file(target.dir.join("ballast")).unwrap();
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert_eq!(stderr.matches("fsbench: error: ").count(), 1, "{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("fsbench: error: "))
        .unwrap();
    assert!(
        error.starts_with("fsbench: error: rank ")
            && error.contains("filesystem full (ENOSPC) after ")
            && error.contains("free space in the --dir filesystem, use a --dir with more room"),
        "{stderr}"
    );
    assert_eq!(json(&out)["runs"][0]["status"], "failed");
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

/// Ranks failing the same step each say their error: in one line by rank 0, ranks with the
/// same error named together, the exit status that of the error without MPI.
#[test]
fn every_rank_that_fails_a_step_is_named_in_the_one_error() {
    let Some(_one) = mpi_test("every_rank_that_fails_a_step_is_named", &[]) else {
        return;
    };
    // Every rank's setup refuses it: tmpfs has no device that polls.
    const POLLS: &str = "io:rw=randread,bs=4k,size=64k,ioengine=io_uring,direct=1,hipri";
    let (alone, alone_state) = (Target::new(), tempdir());
    let without = output_within(
        json_run(alone_state.path())
            .args(["--runs", "1", "--no-drop-caches", "-w", POLLS, "--dir"])
            .arg(&alone.dir),
        LIMIT,
    );
    let said = text(&without.stderr);
    let alone_error = (said.lines())
        .find_map(|l| l.strip_prefix("fsbench: error: "))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(alone_error.contains("needs a device that polls"), "{said}");
    let (state, target) = (tempdir(), Target::new());
    let out = output_within(
        &mut mpirun(2, state.path(), &target, "", &["-w", POLLS]),
        LIMIT,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), without.status.code(), "{stderr}");
    assert_eq!(stderr.matches("fsbench: error: ").count(), 1, "{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("fsbench: error: "))
        .unwrap();
    // Both ranks named before the one error they share, said once.
    let ranks = error
        .strip_suffix(alone_error)
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(ranks.starts_with("fsbench: error: rank 0 on "), "{stderr}");
    assert!(ranks.contains(", rank 1 on "), "{stderr}");
    assert_eq!(
        error.matches("needs a device that polls").count(),
        1,
        "{stderr}"
    );
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

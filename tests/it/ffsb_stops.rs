//! FFSB ends when it should: `op_delay` is range-checked, a time-limited run phase ends within
//! a second of its limit whatever the delay, and SIGTERM wakes threads asleep in the delay.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// A profile of two threads reading four small files, pausing `op_delay` ms after each read;
/// `limit` is `time=N` or `num_ops=N` in the group.
fn delay_profile(dir: &Path, op_delay: u64, limit: &str) -> std::path::PathBuf {
    let (time, ops) = match limit.strip_prefix("num_ops=") {
        Some(_) => ("", limit),
        None => (limit, ""),
    };
    let text = format!(
        "{time}\n[filesystem0]\n\tnum_files=4\n\tnum_dirs=1\n\tmin_filesize=4096\n\
         \tmax_filesize=4096\n[end0]\n[threadgroup0]\n\tnum_threads=2\n\tread_weight=1\n\
         \tread_size=4096\n\tread_blocksize=4096\n\top_delay={op_delay}\n\t{ops}\n[end0]\n"
    );
    let path = dir.join("delay.ffsb");
    std::fs::write(&path, text).unwrap();
    path
}

fn ffsb(state: &Path, profile: &Path, work: &Path) -> Command {
    let mut c = fsbench(state);
    c.arg("--db")
        .arg(state.join("results.db"))
        .arg("ffsb")
        .arg(profile)
        .args(["--runs", "1", "-q", "--output-format", "json", "--dir"])
        .arg(work);
    c
}

#[test]
fn an_op_delay_of_49_days_is_refused() {
    let (dir, state) = (tempdir(), tempdir());
    let profile = delay_profile(dir.path(), u64::from(u32::MAX), "time=1");
    let out = output_within(
        &mut ffsb(state.path(), &profile, dir.path()),
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("op_delay=4294967295 ms is more than a minute"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_timed_run_ends_within_a_second_of_its_limit_whatever_the_delay() {
    let (dir, state) = (tempdir(), tempdir());
    // The longest delay allowed: before, each thread slept it out after its first read.
    let profile = delay_profile(dir.path(), 60_000, "time=10");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let started = Instant::now();
    let out = output_within(
        ffsb(state.path(), &profile, &work).args(["--time", "1"]),
        Duration::from_secs(120),
    );
    let took = started.elapsed();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let run = doc["runs"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "run")
        .unwrap()
        .clone();
    let secs = run["elapsed_ns"].as_f64().unwrap() / 1e9;
    assert!((1.0..2.0).contains(&secs), "the run phase took {secs:.2} s");
    // Setup, the file set's removal and the database around it take well under this.
    assert!(took < Duration::from_secs(20), "the command took {took:?}");
}

#[test]
fn sigterm_wakes_threads_asleep_in_op_delay() {
    let (dir, state) = (tempdir(), tempdir());
    // No time limit: only the operation count, which the delay makes take hours.
    let profile = delay_profile(dir.path(), 60_000, "num_ops=1000");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let child = ffsb(state.path(), &profile, &work)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run phase starts once the four files of the set exist; each thread then reads once
    // and sleeps.
    let deadline = Instant::now() + Duration::from_secs(60);
    while count_files(&work) < 4 {
        assert!(Instant::now() < deadline, "the file set never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let signalled = Instant::now();
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let out = wait_drained_within(child, Duration::from_secs(30));
    let took = signalled.elapsed();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        took < Duration::from_secs(3),
        "exit took {took:?} after SIGTERM"
    );
    assert_nothing_left(&work);
}

fn count_files(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => n += 1,
                Err(_) => {}
            }
        }
    }
    n
}

/// As root: runs `test` with the FFSB profile `profile` written to a file and a tmpfs of
/// 256 MiB and `inodes` inodes mounted on a fresh directory, unmounted afterwards whatever
/// happens; `test` gets the mount point, a state directory and the profile's path. Afterwards
/// the tmpfs must be empty: the run's directory and the scratch directory are gone.
fn on_small_tmpfs(name: &str, inodes: u64, profile: &str, test: impl FnOnce(&Path, &Path, &Path)) {
    if !can_run(name, &[]) {
        return;
    }
    let (dir, state) = (tempdir(), tempdir());
    let path = state.path().join("profile.ffsb");
    std::fs::write(&path, profile).unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let options = format!("size=256m,nr_inodes={inodes}");
    assert!(
        status(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
                .arg(&mnt)
        )
        .success()
    );
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        test(&mnt, state.path(), &path);
        assert_empty(&mnt);
    }));
    status(Command::new("umount").arg(&mnt));
    outcome.unwrap_or_else(|e| std::panic::resume_unwind(e));
}

#[test]
fn a_file_set_with_more_entries_than_free_inodes_is_refused_at_once() {
    // The profile: a hundred million directories on a 256 MiB tmpfs made three
    // million of them until ENOSPC, then took 79 s to remove them.
    let profile = "time=1\n[filesystem0]\n\tnum_files=1000\n\tnum_dirs=100000000\n\
                   \tmin_filesize=4096\n\tmax_filesize=4096\n[end0]\n[threadgroup0]\n\
                   \tnum_threads=2\n\tread_weight=1\n\tread_size=4096\n\tread_blocksize=4096\n[end0]\n";
    let name = "a_file_set_with_more_entries_than_free_inodes_is_refused_at_once";
    on_small_tmpfs(name, 3_000_000, profile, |mnt, state, profile| {
        let started = Instant::now();
        let out = output_within(&mut ffsb(state, profile, mnt), Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("free inodes but the workloads need about 100,002,024"),
            "{}",
            text(&out.stderr)
        );
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "{took:?}");
    });
}

#[test]
fn enospc_after_many_entries_says_it_cleans_up_and_does_so_quickly() {
    // Directories made in the timed run until the tmpfs has no inode left: no estimate
    // foresees that, so the run hits ENOSPC with 200,000 entries to remove.
    let profile = "time=600\n[filesystem0]\n\tnum_files=10\n\tmin_filesize=4096\n\
                   \tmax_filesize=4096\n[end0]\n[threadgroup0]\n\tnum_threads=2\n\
                   \tcreatedir_weight=1\n[end0]\n";
    let name = "enospc_after_many_entries_says_it_cleans_up_and_does_so_quickly";
    on_small_tmpfs(name, 200_000, profile, |mnt, state, profile| {
        let child = ffsb(state, profile, mnt)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let out = wait_drained_within(child, Duration::from_secs(300));
        // Making the entries and removing them take a few seconds each here.
        let took = started.elapsed();
        assert!(took < Duration::from_secs(60), "took {took:?}");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{stderr}");
        let cleaning = stderr
            .lines()
            .position(|l| l.contains("cleaning up: removing what the run made in"))
            .unwrap_or_else(|| panic!("no word of the cleanup: {stderr}"));
        let failed = stderr
            .lines()
            .position(|l| l.contains("error: filesystem full (ENOSPC)"))
            .unwrap();
        assert!(cleaning < failed, "{stderr}");
    });
}

//! Any trace, bounded memory, no panic: hostile traces — descriptors of any number, a line
//! of gigabytes, ten thousand threads, sizes that overflow 64 bits, a pause of days — each
//! replayed by the binary under a 256 MiB address-space limit, end with a clear error or
//! finish; a stop ends a pause at once, and a replay that cannot fit is refused before it
//! makes anything.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::traces::{TraceText, bounded, ended, limited, rle_trace, within_bound};

/// `capture --replay trace -C dir` under the memory limit.
fn replay(trace: &Path, dir: &Path) -> Output {
    std::fs::create_dir_all(dir).unwrap();
    let state = tempdir();
    bounded(
        fsbench(state.path())
            .args(["capture", "--replay"])
            .arg(trace)
            .arg("-C")
            .arg(dir),
    )
}

fn show(trace: &Path) -> Output {
    let state = tempdir();
    bounded(fsbench(state.path()).args(["capture", "--show"]).arg(trace))
}

#[test]
fn descriptors_of_any_number_are_mapped() {
    let work = tempdir();
    let trace = work.path().join("fds.trace");
    let mut t = TraceText::new(&["f\tf\t8192"]);
    for (i, call) in [
        // Never opened: opened by its path, whatever its number.
        "read\t4096\t0\t2147483647\t-1\t4096\t0\tf\t-",
        "dup\t5\t0\t2147483647\t2147483646\t0\t-1\tf\t-",
        "read\t4096\t0\t2147483646\t-1\t4096\t0\tf\t-",
        "close\t0\t0\t2147483647\t-1\t0\t-1\tf\t-",
        // No descriptor at all: EBADF here, as the kernel would say.
        "read\t-1\t9\t-5\t-1\t4096\t0\tf\t-",
        "write\t-1\t9\t-2147483648\t-1\t4096\t-1\tf\t-",
        "fsync\t-1\t9\t-1\t-1\t0\t-1\tf\t-",
        "copy\t-1\t9\t2147483647\t-9\t4096\t-1\tf\tf",
        "close\t-1\t9\t-100\t-1\t0\t-1\tf\t-",
    ]
    .iter()
    .enumerate()
    {
        t.call(1, i as u64, call);
    }
    t.write(&trace);
    let dir = work.path().join("run");
    let out = replay(&trace, &dir);
    ended(&out, 0);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("replayed 9 calls"), "{stdout}");
    assert!(stdout.contains("read"), "{stdout}");
    assert_eq!(tree(&dir)["f"], ('f', 8192, 1));
}

#[test]
fn a_line_of_gigabytes_is_refused_by_its_number() {
    let work = tempdir();
    let trace = work.path().join("long.trace");
    // 16,384 blocks of 128 KiB: a 2 GiB line, in a 64 KiB file.
    rle_trace(&trace, "fsbench-trace 1\nroot\t/x\ncalls\n", b'a', 16384);
    assert!(std::fs::metadata(&trace).unwrap().len() < 100 << 10);
    let started = Instant::now();
    let err = ended(&show(&trace), 2);
    assert!(
        err.contains("damaged trace at line 4: a line longer than 65,536 bytes"),
        "{err}"
    );
    let dir = work.path().join("run");
    let err = ended(&replay(&trace, &dir), 2);
    assert!(err.contains("at line 4: a line longer than"), "{err}");
    assert_empty(&dir);
    // Read up to the limit, not to the end of the line.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn ten_thousand_threads_share_a_bounded_pool() {
    let work = tempdir();
    let trace = work.path().join("threads.trace");
    let mut t = TraceText::new(&["d\td"]);
    for tid in 0..10_000 {
        t.call(tid, u64::from(tid), "stat\t0\t0\t-1\t-1\t1\t-1\td\t-");
    }
    t.write(&trace);
    let out = replay(&trace, &work.path().join("run"));
    ended(&out, 0);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("replayed 10,000 calls"), "{stdout}");
    let shown = show(&trace);
    ended(&shown, 0);
    let shown = text(&shown.stdout);
    assert!(shown.contains("10,000 threads"), "{shown}");
}

#[test]
fn sizes_beyond_64_bits_are_refused_before_anything_is_made() {
    let work = tempdir();
    let trace = work.path().join("huge.trace");
    let dir = work.path().join("run");
    let half = 1u64 << 63;
    // Two files of 2^63 bytes: their sum wraps to 0 in 64 bits.
    let (a, b) = (format!("f\ta\t{half}"), format!("f\tb\t{half}"));
    TraceText::new(&[&a, &b]).write(&trace);
    for out in [show(&trace), replay(&trace, &dir)] {
        let err = ended(&out, 2);
        assert!(err.contains("add up to more than 16 EiB"), "{err}");
    }
    assert_empty(&dir);
    // A write of 2^63 bytes, and a file of 2^62: more than any directory here has.
    let mut t = TraceText::new(&[&format!("f\ta\t{}", 1u64 << 62)]);
    t.call(1, 0, &format!("write\t0\t0\t3\t-1\t{half}\t0\ta\t-"));
    t.write(&trace);
    let show = show(&trace);
    ended(&show, 0);
    assert!(
        text(&show.stdout).contains("4.0 EiB"),
        "{}",
        text(&show.stdout)
    );
    let err = ended(&replay(&trace, &dir), 2);
    assert!(err.contains("free but the workloads need about"), "{err}");
    assert_empty(&dir);
    let state = tempdir();
    let workload = format!("replay:trace={}", trace.display());
    let out = bounded(
        json_run(state.path())
            .args(["--runs", "1", "-w", &workload, "--dir"])
            .arg(&dir),
    );
    let err = ended(&out, 2);
    assert!(err.contains("free but the workloads need about"), "{err}");
    assert_empty(&dir);
}

#[test]
fn a_pause_of_days_ends_at_the_first_ctrl_c() {
    let work = tempdir();
    let trace = work.path().join("pause.trace");
    let mut t = TraceText::new(&[]);
    // The replay's first call makes `begun`; its second is 10^12 µs (eleven days) later.
    t.call(1, 0, "open\t3\t0\t-1\t3\t65\t420\tbegun\t-");
    t.call(1, 1_000_000_000_000, "close\t0\t0\t3\t-1\t0\t-1\tbegun\t-");
    t.write(&trace);
    let dir = work.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let state = tempdir();
    let workload = format!("replay:trace={},mode=think", trace.display());
    let child = limited(&mut json_run(state.path()))
        .env("MALLOC_ARENA_MAX", "2")
        .args(["--runs", "1", "-w", &workload, "--dir"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit();
    while !found_below(&dir, "begun") {
        assert!(Instant::now() < deadline, "the replay never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let stopped = Instant::now();
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = wait_drained_within(child, Duration::from_secs(60));
    ended(&out, 130);
    assert!(
        stopped.elapsed() < Duration::from_secs(10),
        "{:?} after Ctrl-C",
        stopped.elapsed()
    );
    assert_empty(&dir);
}

/// Whether a file `name` exists at any depth below `dir`.
fn found_below(dir: &Path, name: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let path = e.path();
            path.file_name().is_some_and(|n| n == name)
                || (path.is_dir() && !path.is_symlink() && found_below(&path, name))
        })
}

#[test]
fn paths_beyond_the_limit_are_refused_by_their_line() {
    let work = tempdir();
    let trace = work.path().join("paths.trace");
    // 30,000-byte names, two a call: past 32 MiB of paths at call 560.
    let name = "n".repeat(30_000);
    let mut t = TraceText::new(&[]);
    for i in 0..600 {
        t.call(
            1,
            i,
            &format!("rename\t-1\t2\t-1\t-1\t0\t-1\t{name}\t{name}"),
        );
    }
    t.write(&trace);
    for out in [show(&trace), replay(&trace, &work.path().join("run"))] {
        let err = ended(&out, 2);
        assert!(err.contains("too large to replay at line 563"), "{err}");
    }
}

/// The largest trace a replay takes — its most entries and calls, nearly its most bytes of
/// paths, calls of several kinds from 64 threads — replays within the bound.
#[test]
fn the_largest_trace_replays_within_the_bound() {
    let work = tempdir();
    let trace = work.path().join("largest.trace");
    let kinds = [
        "stat\t-1\t2\t-1\t-1\t1\t-1",
        "chmod\t-1\t2\t-1\t-1\t420\t-1",
        "mkdir\t-1\t2\t-1\t-1\t493\t-1",
        "readlink\t-1\t2\t-1\t-1\t64\t-1",
        "utimens\t-1\t2\t-1\t-1\t1\t-1",
        "getxattr\t-1\t2\t-1\t-1\t64\t1",
    ];
    let mut t = TraceText::new(&[]);
    let records = 1u32 << 19;
    let long = "x".repeat(40);
    for i in 0..records {
        let kind = kinds[i as usize % kinds.len()];
        // Every path another, under a directory that is not there: each call fails fast.
        let call = format!("{kind}\td{}/{long}{i:09}\tuser.k", i % 1000);
        t.call(i % 64, u64::from(i), &call);
    }
    t.write(&trace);
    let out = replay(&trace, &work.path().join("run"));
    ended(&out, 0);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("replayed 524,288 calls"), "{stdout}");
    // One more is one too many.
    t.call(0, u64::from(records), "stat\t0\t0\t-1\t-1\t1\t-1\t.\t-");
    t.write(&trace);
    let err = ended(&show(&trace), 2);
    assert!(err.contains("too large to replay at line 524292"), "{err}");
}

/// With fewer threads allowed than the replay starts (RLIMIT_NPROC, which binds a user that
/// is not root), the replay ends with an error that says so, not a panic.
#[test]
fn a_thread_that_cannot_start_is_an_error() {
    if !is_root() {
        skip("a_thread_that_cannot_start_is_an_error: needs root (to run as nobody)");
        return;
    }
    let work = tempdir();
    std::fs::set_permissions(work.path(), PermissionsExt::from_mode(0o755)).unwrap();
    let trace = work.path().join("threads.trace");
    let mut t = TraceText::new(&[]);
    for tid in 0..8 {
        t.call(tid, u64::from(tid), "stat\t0\t0\t-1\t-1\t1\t-1\t.\t-");
    }
    t.write(&trace);
    std::fs::set_permissions(&trace, PermissionsExt::from_mode(0o644)).unwrap();
    let dir = work.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    const NOBODY: u32 = 65534;
    std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
    // Three threads of the user's besides those it runs already: fsbench's own, and a few
    // of the replay's.
    let threads = nobody_threads() + 3;
    let state = tempdir();
    let mut cmd = fsbench(state.path());
    cmd.args(["capture", "--replay"])
        .arg(&trace)
        .arg("-C")
        .arg(&dir);
    // SAFETY: setrlimit, setgroups, setgid and setuid are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: threads,
                rlim_max: threads,
            };
            if libc::setrlimit(libc::RLIMIT_NPROC, &limit) != 0
                || libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(NOBODY) != 0
                || libc::setuid(NOBODY) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let err = ended(&run(&mut cmd), 1);
    assert!(err.contains("cannot start replay thread"), "{err}");
}

/// Threads that run as nobody now.
fn nobody_threads() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter_map(|e| std::fs::read_dir(e.path().join("task")).ok())
        .flat_map(|tasks| tasks.flatten())
        .filter(|task| task.metadata().is_ok_and(|m| m.uid() == 65534))
        .count() as u64
}

/// An initial state of more entries than a trace once held in all (524,288 entries and
/// calls), and the tree left as many: made, replayed and compared entry by entry, as
/// streams, within a resident memory that does not grow with them.
#[test]
fn an_initial_state_of_any_size_is_made_and_compared_as_a_stream() {
    const FILES: usize = 530_000;
    const DIRS: usize = 100;
    let work = tmpfs_tempdir();
    let trace = work.path().join("state.trace");
    let dirs: Vec<String> = (0..DIRS).map(|d| format!("d{d}")).collect();
    let mut files: Vec<Vec<String>> = vec![Vec::new(); DIRS];
    for i in 0..FILES {
        files[i % DIRS].push(format!("d{}/f{i}", i % DIRS));
    }
    let mut body = String::from("fsbench-trace 2\nroot\t/nowhere\n");
    for (dir, files) in dirs.iter().zip(&files) {
        body.push_str(&format!("d\t{dir}\t755\n"));
        for f in files {
            body.push_str(&format!("f\t{f}\t0\t644\n"));
        }
    }
    body.push_str("calls\n");
    // The tree left as capture lists it: the directories' names sorted, then each one's
    // files sorted; one file a byte longer than the replay leaves it.
    let mut order: Vec<usize> = (0..DIRS).collect();
    order.sort_by_key(|&d| dirs[d].clone());
    for &d in &order {
        body.push_str(&format!("final\td\t{}\t755\n", dirs[d]));
    }
    for &d in &order {
        let mut names = files[d].clone();
        names.sort();
        for (k, f) in names.iter().enumerate() {
            let size = u32::from(d == 7 && k == 0);
            body.push_str(&format!("final\tf\t{f}\t{size}\t644\t1\n"));
        }
    }
    body.push_str("end\t0\t0\n");
    std::fs::write(&trace, zstd::encode_all(body.as_bytes(), 3).unwrap()).unwrap();
    drop((body, files));

    let target = work.path().join("run");
    std::fs::create_dir(&target).unwrap();
    let state = tempdir();
    let (out, peak) = within_bound(
        fsbench(state.path())
            .args(["capture", "--replay"])
            .arg(&trace)
            .arg("-C")
            .arg(&target),
    );
    ended(&out, 0);
    let stdout = text(&out.stdout);
    let entries = fsbench_model::units::group_thousands((FILES + DIRS) as u64);
    assert!(
        stdout.contains(&format!(
            "differs from what the program left in 1 of {entries} entries"
        )) && stdout.contains("d7/f"),
        "{stdout}"
    );
    let made = std::fs::read_dir(target.join("d7")).unwrap().count();
    assert_eq!(made, FILES / DIRS);
    assert!(peak < 64 << 20, "{peak} bytes resident at the peak");
}

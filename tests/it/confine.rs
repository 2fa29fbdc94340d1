//! A replayed call reaches nothing outside the run's directory, whatever races with it: for
//! every kind of call that takes a path, thousands of calls on names that other threads
//! keep swapping — a file with a symlink to a file outside (rename-exchange), a symlink
//! retargeted between a directory inside and one outside, a directory with a symlink to one
//! outside — and the files outside keep everything: names, types, modes, owners, times,
//! sizes, contents, xattrs and link counts. Calls that only look (stat, readlink, getxattr,
//! listxattr) ask for names that exist only outside: reaching one would succeed where the
//! capture failed, a difference the replay counts.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, Timespec, Timestamps, XattrFlags};

use crate::common::*;
use crate::traces::{TraceText, seen};
use fsbench_measure::measure::{PhaseRecorder, Progress};
use fsbench_workloads::replay::{ReplayReport, replay_into};

/// Rounds of each kind's calls against the racing threads.
const ROUNDS: usize = 2000;

/// The files outside the run that a breach would change: `out/canary`, and `out/dir` with
/// what the replayed names would reach there (`x`, `z`, `zl`, the empty directory `n`...),
/// each with an xattr and old times.
fn outside(work: &Path) -> PathBuf {
    let out = work.join("out");
    let dir = out.join("dir");
    std::fs::create_dir_all(dir.join("n")).unwrap();
    std::fs::create_dir_all(dir.join("w")).unwrap();
    for name in ["canary", "dir/x", "dir/z", "dir/w/x", "dir/w/z"] {
        std::fs::write(out.join(name), b"keep").unwrap();
    }
    std::os::unix::fs::symlink("z", dir.join("zl")).unwrap();
    let old = Timespec {
        tv_sec: 1_000_000_000,
        tv_nsec: 0,
    };
    for name in ["canary", "dir", "dir/x", "dir/z", "dir/n", "dir/w/x"] {
        let path = out.join(name);
        rustix::fs::setxattr(&path, "user.k", b"v", XattrFlags::empty()).unwrap();
        let mode = if name.starts_with("dir/n") {
            0o755
        } else {
            0o640
        };
        rustix::fs::chmod(&path, Mode::from_raw_mode(mode)).unwrap();
        let times = Timestamps {
            last_access: old,
            last_modification: old,
        };
        rustix::fs::utimensat(rustix::fs::CWD, &path, &times, AtFlags::empty()).unwrap();
    }
    out
}

/// The run's directory in its hostile state: `d/x` a file, `d/y` a symlink to the canary,
/// `d/w` one to the directory outside, `d/v` an empty directory, `s` a symlink to `d`, `q`
/// one to the directory outside.
fn hostile_run(work: &Path, out: &Path) -> PathBuf {
    let run = work.join("run");
    std::fs::create_dir_all(run.join("d/v")).unwrap();
    std::fs::write(run.join("d/x"), b"in").unwrap();
    std::os::unix::fs::symlink(out.join("canary"), run.join("d/y")).unwrap();
    std::os::unix::fs::symlink(out.join("dir"), run.join("d/w")).unwrap();
    std::os::unix::fs::symlink("d", run.join("s")).unwrap();
    std::os::unix::fs::symlink(out.join("dir"), run.join("q")).unwrap();
    run
}

/// Threads that swap the run's names in tight loops until stopped. Each works on
/// descriptors of the run's real directories and single names in them, so that nothing
/// of theirs leaves the run either.
struct Racers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<u64>>,
}

fn dir_fd(path: &Path) -> OwnedFd {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::open(path, flags, Mode::empty()).unwrap()
}

impl Racers {
    fn start(run: &Path, out: &Path) -> Racers {
        let stop = Arc::new(AtomicBool::new(false));
        let (d, run_fd) = (dir_fd(&run.join("d")), dir_fd(run));
        let outside_dir = out.join("dir");
        let exchange = RenameFlags::EXCHANGE;
        let mut threads = Vec::new();
        let spawn = |work: Box<dyn Fn() + Send>| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut rounds = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    work();
                    rounds += 1;
                }
                rounds
            })
        };
        // A file and a symlink to the canary; a symlink to the directory outside and an
        // empty directory.
        threads.push(spawn(Box::new(move || {
            let _ = rustix::fs::renameat_with(&d, "x", &d, "y", exchange);
            let _ = rustix::fs::renameat_with(&d, "w", &d, "v", exchange);
        })));
        // `s` retargeted: `d`, then the directory outside.
        let fd = run_fd.try_clone().unwrap();
        threads.push(spawn(Box::new(move || {
            for target in [outside_dir.as_path(), Path::new("d")] {
                let _ = rustix::fs::symlinkat(target, &fd, "s.new");
                let _ = rustix::fs::renameat(&fd, "s.new", &fd, "s");
            }
        })));
        // The directory `d` and the symlink `q` to the directory outside.
        threads.push(spawn(Box::new(move || {
            let _ = rustix::fs::renameat_with(&run_fd, "d", &run_fd, "q", exchange);
        })));
        Racers { stop, threads }
    }

    /// Stops them; the swaps they made.
    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.into_iter().map(|t| t.join().unwrap()).sum()
    }
}

/// The names a round's calls use: a file or what a swap put there, and a directory.
const FILES: [&str; 4] = ["d/x", "s/x", "d/w/x", "d/y"];
const DIRS: [&str; 4] = ["d", "s", "d/w", "q"];
/// ENOENT, the capture's outcome of the calls that only look.
const ENOENT: i32 = 2;

/// Round `i` of `kind`: its calls (KIND RESULT ERRNO FD FD2 A B PATH PATH2).
fn round(kind: &str, i: usize) -> Vec<String> {
    let (p, d) = (FILES[i % 4], DIRS[i / 4 % 4]);
    let one = |call: String| vec![call];
    match kind {
        "chmod" => one(format!("chmod\t0\t0\t-1\t-1\t511\t-1\t{p}\t-")),
        // fchmodat2's AT_SYMLINK_NOFOLLOW (B 0): on the last name in its directory.
        "lchmod" => one(format!("chmod\t0\t0\t-1\t-1\t511\t0\t{p}\t-")),
        "chown" | "lchown" => {
            let follow = u8::from(kind == "chown");
            one(format!("chown\t0\t0\t-1\t-1\t{follow}\t-1\t{p}\t-"))
        }
        "utimens" | "lutimens" => {
            let follow = u8::from(kind == "utimens");
            one(format!("utimens\t0\t0\t-1\t-1\t{follow}\t-1\t{p}\t-"))
        }
        "truncate" => one(format!("truncate\t0\t0\t-1\t-1\t0\t-1\t{p}\t-")),
        // O_CREAT|O_WRONLY, then a write and a close; O_TRUNC|O_WRONLY; O_CREAT|O_EXCL.
        "open-create" => vec![
            format!("open\t3\t0\t-1\t3\t65\t420\t{p}\t-"),
            format!("write\t4\t0\t3\t-1\t4\t-1\t{p}\t-"),
            format!("close\t0\t0\t3\t-1\t0\t-1\t{p}\t-"),
        ],
        "open-truncate" => vec![
            format!("open\t3\t0\t-1\t3\t513\t0\t{p}\t-"),
            format!("close\t0\t0\t3\t-1\t0\t-1\t{p}\t-"),
        ],
        "open-exclusive" => vec![
            format!("open\t3\t0\t-1\t3\t193\t420\t{d}/new{i}\t-"),
            format!("close\t0\t0\t3\t-1\t0\t-1\t{d}/new{i}\t-"),
        ],
        // A descriptor the thread never opened: opened by its path, then written.
        "reopen" => vec![
            format!("write\t4\t0\t9\t-1\t4\t0\t{p}\t-"),
            format!("close\t0\t0\t9\t-1\t0\t-1\t{p}\t-"),
        ],
        "unlink" => vec![
            format!("open\t3\t0\t-1\t3\t65\t420\t{p}\t-"),
            format!("close\t0\t0\t3\t-1\t0\t-1\t{p}\t-"),
            format!("unlink\t0\t0\t-1\t-1\t0\t-1\t{p}\t-"),
        ],
        "rmdir" => vec![
            format!("mkdir\t0\t0\t-1\t-1\t493\t-1\t{d}/n\t-"),
            format!("rmdir\t0\t0\t-1\t-1\t0\t-1\t{d}/n\t-"),
        ],
        "mkdir" => one(format!("mkdir\t0\t0\t-1\t-1\t493\t-1\t{d}/m{i}\t-")),
        "rename" => vec![
            format!("rename\t0\t0\t-1\t-1\t0\t-1\t{p}\t{d}/r"),
            format!("rename\t0\t0\t-1\t-1\t0\t-1\t{d}/r\t{p}"),
        ],
        // RENAME_EXCHANGE
        "rename-exchange" => one(format!("rename\t0\t0\t-1\t-1\t2\t-1\t{p}\t{d}/x")),
        "link" => one(format!("link\t0\t0\t-1\t-1\t0\t-1\t{p}\t{d}/l{i}")),
        "symlink" => one(format!("symlink\t0\t0\t-1\t-1\t0\t-1\t{d}/sl{i}\t../x")),
        "readlink" => one(format!("readlink\t-1\t{ENOENT}\t-1\t-1\t64\t-1\t{d}/zl\t-")),
        "stat" | "lstat" => {
            let follow = u8::from(kind == "stat");
            one(format!(
                "stat\t-1\t{ENOENT}\t-1\t-1\t{follow}\t-1\t{d}/z\t-"
            ))
        }
        "getxattr" | "lgetxattr" => {
            let follow = u8::from(kind == "getxattr");
            let call = format!("getxattr\t-1\t{ENOENT}\t-1\t-1\t64\t{follow}\t{d}/z\tuser.k");
            one(call)
        }
        "listxattr" | "llistxattr" => {
            let follow = u8::from(kind == "listxattr");
            one(format!(
                "listxattr\t-1\t{ENOENT}\t-1\t-1\t256\t{follow}\t{d}/z\t-"
            ))
        }
        "setxattr" | "lsetxattr" => {
            let follow = u8::from(kind == "setxattr");
            one(format!("setxattr\t0\t0\t-1\t0\t4\t{follow}\t{p}\tuser.new"))
        }
        "removexattr" => one(format!("removexattr\t0\t0\t-1\t-1\t0\t1\t{p}\tuser.k")),
        _ => panic!("no such kind {kind}"),
    }
}

/// Replays `ROUNDS` rounds of `kind` into the hostile run while the racers swap its names;
/// asserts that nothing outside changed.
fn races(kind: &str) -> ReplayReport {
    let work = tempdir();
    let out = outside(work.path());
    let before = seen(&out);
    let run = hostile_run(work.path(), &out);
    let mut trace = TraceText::new(&[]);
    let mut made = 0;
    for i in 0..ROUNDS {
        for call in round(kind, i) {
            trace.call(1, made, &call);
            made += 1;
        }
    }
    let file = work.path().join("trace");
    trace.write(&file);
    let racers = Racers::start(&run, &out);
    let target = std::fs::File::open(&run).unwrap();
    let mut rec = PhaseRecorder::start("replay", Arc::new(Progress::default()));
    let outcome = replay_into(&file, target.as_fd(), Default::default(), &mut rec);
    let swaps = racers.stop();
    let report = outcome.unwrap_or_else(|e| panic!("{kind}: {e}"));
    assert_eq!(
        seen(&out),
        before,
        "{kind} changed something outside the run"
    );
    let mut names: Vec<_> = std::fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["out", "run", "trace"], "{kind}");
    assert_eq!(report.calls.values().sum::<u64>(), made, "{kind}");
    assert!(swaps > 100, "{kind}: the racers swapped only {swaps} times");
    // The swaps put names outside under the calls: they were refused.
    assert!(report.refused > 0, "{kind}: {report:?}");
    report
}

/// A kind that only looks: nothing outside may be reached, so no call succeeds where the
/// capture failed.
fn looks(kind: &str) {
    let report = races(kind);
    assert_eq!(report.mismatched, 0, "{kind}: {:?}", report.notes);
}

macro_rules! race_tests {
    ($($test:ident: $check:ident($kind:literal);)*) => {
        $(
            #[test]
            fn $test() {
                $check($kind);
            }
        )*
    };
}

fn changes(kind: &str) {
    races(kind);
}

race_tests! {
    chmod_stays_beneath: changes("chmod");
    lchmod_stays_beneath: changes("lchmod");
    chown_stays_beneath: changes("chown");
    lchown_stays_beneath: changes("lchown");
    utimens_stays_beneath: changes("utimens");
    lutimens_stays_beneath: changes("lutimens");
    truncate_stays_beneath: changes("truncate");
    open_create_stays_beneath: changes("open-create");
    open_truncate_stays_beneath: changes("open-truncate");
    open_exclusive_stays_beneath: changes("open-exclusive");
    reopened_descriptor_stays_beneath: changes("reopen");
    unlink_stays_beneath: changes("unlink");
    rmdir_stays_beneath: changes("rmdir");
    mkdir_stays_beneath: changes("mkdir");
    rename_stays_beneath: changes("rename");
    rename_exchange_stays_beneath: changes("rename-exchange");
    link_stays_beneath: changes("link");
    symlink_stays_beneath: changes("symlink");
    setxattr_stays_beneath: changes("setxattr");
    lsetxattr_stays_beneath: changes("lsetxattr");
    removexattr_stays_beneath: changes("removexattr");
    readlink_stays_beneath: looks("readlink");
    stat_stays_beneath: looks("stat");
    lstat_stays_beneath: looks("lstat");
    getxattr_stays_beneath: looks("getxattr");
    lgetxattr_stays_beneath: looks("lgetxattr");
    listxattr_stays_beneath: looks("listxattr");
    llistxattr_stays_beneath: looks("llistxattr");
}

/// The attack as it was found: chmod of `d/x` in one thread, rename-exchange of `s/x` and
/// `s/y` (`s` → `d`, `d/y` → a file outside) in another, through the command line.
#[test]
fn a_shared_trace_cannot_chmod_a_file_outside() {
    let work = tempdir();
    let canary = work.path().join("canary");
    std::fs::write(&canary, b"keep").unwrap();
    std::fs::set_permissions(&canary, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let before = seen(&canary);
    let link = format!("l\td/y\t{}", canary.display());
    let mut trace = TraceText::new(&["d\td", "f\td/x\t4", &link, "l\ts\td"]);
    for i in 0..ROUNDS as u64 {
        trace.call(1, 2 * i, "chmod\t0\t0\t-1\t-1\t511\t-1\td/x\t-");
        trace.call(2, 2 * i + 1, "rename\t0\t0\t-1\t-1\t2\t-1\ts/x\ts/y");
    }
    let file = work.path().join("chmod.trace");
    trace.write(&file);
    let state = tempdir();
    for round in 0..3 {
        let dir = work.path().join(format!("replay{round}"));
        std::fs::create_dir(&dir).unwrap();
        let out = run(fsbench(state.path())
            .args(["capture", "--replay"])
            .arg(&file)
            .arg("-C")
            .arg(&dir));
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(seen(&canary), before, "round {round}");
    }
    let dir = work.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let workload = format!("replay:trace={}", file.display());
    let out = run(json_run(state.path())
        .args(["--runs", "3", "-w", &workload, "--dir"])
        .arg(&dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(seen(&canary), before);
    if can_run("the chmod race on a loop ext4", &["mkfs.ext4"]) {
        let images = tempdir();
        let (out, _) = image_run_json(
            images.path(),
            state.path(),
            &["--fs", "ext4", "--runs", "1", "-w", &workload],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(seen(&canary), before);
        assert_nothing_left(images.path());
    }
}

/// The `openat2` calls of `fsbench capture --replay TRACE -C DIR`, counted by strace.
fn openat2_calls(trace: &Path, dir: &Path) -> u64 {
    let work = tempdir();
    let (state, counts) = (work.path().join("state"), work.path().join("counts"));
    let out = run(std::process::Command::new("strace")
        .args(["-f", "-c", "-e", "trace=openat2", "-o"])
        .arg(&counts)
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .env("FSBENCH_STATE_DIR", &state)
        .env("XDG_DATA_HOME", &state)
        .args(["capture", "--replay"])
        .arg(trace)
        .arg("-C")
        .arg(dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let counts = std::fs::read_to_string(&counts).unwrap();
    let row = counts.lines().find(|l| l.ends_with(" openat2"));
    let row = row.unwrap_or_else(|| panic!("no openat2 row: {counts}"));
    row.split_whitespace().nth(3).unwrap().parse().unwrap()
}

/// Directories are kept open between calls only where no other user's process can move one
/// out of the run's directory: 300 lstats of `a/b` open `a` once, unless `a` or the run's
/// directory is writable by others without the sticky bit (from the initial state, a
/// trace's chmod, or the directory given), where each call opens `a` again.
#[test]
fn directories_are_kept_open_only_where_no_other_user_can_move_them() {
    if !can_run("directories kept open", &["strace"]) {
        return;
    }
    let work = tempdir();
    let lstats = |entries: &[&str], chmod: bool| {
        let mut t = TraceText::new(entries);
        if chmod {
            t.call(1, 0, "chmod\t0\t0\t-1\t-1\t511\t-1\ta\t-");
        }
        for i in 0..300 {
            t.call(1, 1 + i, "stat\t0\t0\t-1\t-1\t0\t-1\ta/b\t-");
        }
        t
    };
    let cases = [
        ("private", lstats(&["d\ta", "d\ta/b"], false), 0o755, true),
        (
            "sticky",
            lstats(&["d\ta\t1777", "d\ta/b"], false),
            0o755,
            true,
        ),
        (
            "open state",
            lstats(&["d\ta\t777", "d\ta/b"], false),
            0o755,
            false,
        ),
        ("chmod", lstats(&["d\ta", "d\ta/b"], true), 0o755, false),
        ("open run", lstats(&["d\ta", "d\ta/b"], false), 0o777, false),
    ];
    for (name, trace, run_mode, kept) in cases {
        let file = work.path().join(format!("{name}.trace"));
        trace.write(&file);
        let dir = work.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::from_mode(run_mode);
        std::fs::set_permissions(&dir, mode).unwrap();
        let opens = openat2_calls(&file, &dir);
        if kept {
            assert!(opens < 100, "{name}: {opens} openat2 calls");
        } else {
            assert!(opens >= 300, "{name}: {opens} openat2 calls");
        }
    }
}

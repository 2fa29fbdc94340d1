//! Helpers shared by the integration tests: the binary, skip rules, leak checks.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod capture;
mod devices;
pub mod fio;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod seccomp;
pub mod tarball;

pub use devices::{Ext4, LoopDevice};
pub use fio::*;

/// The fsbench binary with a private state directory, so `fsbench clean` in one test never
/// touches another's suites, and a results database in this build's target directory rather
/// than the user's home (tests that look at the database pass --db): builds of other
/// checkouts, whose schema may differ, test beside it with databases of their own.
pub fn fsbench(state: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fsbench"));
    c.env("FSBENCH_STATE_DIR", state);
    c.env("XDG_DATA_HOME", test_data_home());
    c
}

/// `fsbench run`, quiet, with its results as one JSON document on stdout: what most tests
/// start from (they add `--runs`, `--dir` or `--fs`, `-w` and `--db` as they need).
pub fn json_run(state: &Path) -> Command {
    let mut c = fsbench(state);
    c.args(["run", "-q", "--output-format", "json"]);
    c
}

/// The `XDG_DATA_HOME` of every fsbench the tests start: the default results database lives
/// there, never in the user's home.
pub fn test_data_home() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("fsbench-tests-data")
}

/// Held by a test that changes what the whole machine shares (the one zfs-fuse daemon, the
/// backing disk's scheduler, a background load, MPI's ranks): the tests of every file run in
/// one binary, so such tests would otherwise overlap.
pub fn machine_wide() -> std::sync::MutexGuard<'static, ()> {
    static MACHINE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

pub fn has_tool(name: &str) -> bool {
    fsbench_measure::tools::find(name).is_some()
}

/// Says that a test is skipped and why, on the real stderr: libtest captures `println!` and
/// `eprintln!` of a passing test, and a skip must be seen (`scripts/test.sh` fails on one in
/// CI, where everything is installed).
pub fn skip(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {what}");
}

/// True when the test can run; otherwise says why it is skipped.
pub fn can_run(test: &str, tools: &[&str]) -> bool {
    if !is_root() {
        skip(&format!("{test}: needs root (mkfs, mount, loop devices)"));
        return false;
    }
    for t in tools {
        if !has_tool(t) {
            skip(&format!(
                "{test}: {t} is not installed (scripts/test.sh installs it)"
            ));
            return false;
        }
    }
    true
}

pub fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// How long one spawned process of a test may take before the test fails instead of hanging
/// (`FSBENCH_TEST_TIMEOUT` seconds; the slowest test's run takes about a minute here).
pub fn limit() -> std::time::Duration {
    let secs = std::env::var("FSBENCH_TEST_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    std::time::Duration::from_secs(secs)
}

/// Runs and returns the output, printing stderr for the test log; fails the test after
/// [`limit`].
pub fn run(cmd: &mut Command) -> Output {
    output_within(cmd, limit())
}

/// Runs a helper tool (losetup, mkfs, mount...) with stdout and stderr drained and the same
/// time limit; its exit status.
pub fn status(cmd: &mut Command) -> std::process::ExitStatus {
    output_within(cmd, limit()).status
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet: dead all the same).
pub fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z')),
    }
}

/// The cgroup v2 directory process `pid` is in.
pub fn cgroup_of(pid: i32) -> Option<PathBuf> {
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?.to_string();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mounts.lines().find_map(|l| {
        let (fields, tail) = l.split_once(" - ")?;
        tail.starts_with("cgroup2 ")
            .then(|| fields.split_whitespace().nth(4).map(str::to_string))?
    })?;
    Some(Path::new(&mount).join(path.trim_start_matches('/')))
}

/// The pid a command wrote into `file`, waited for up to [`limit`]; 0 if it never did.
pub fn pid_written(file: &Path) -> i32 {
    let deadline = std::time::Instant::now() + limit();
    loop {
        let pid = std::fs::read_to_string(file).unwrap_or_default();
        if let Ok(pid) = pid.trim().parse() {
            return pid;
        }
        if std::time::Instant::now() > deadline {
            return 0;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Mount points at or below `dir`.
pub fn mounts_below(dir: &Path) -> Vec<PathBuf> {
    fsbench_testbed::testbed::mounts::mounts_below(dir)
}

/// Loop devices whose backing file is at or below `dir`.
pub fn loops_below(dir: &Path) -> Vec<PathBuf> {
    fsbench_testbed::testbed::scratch::loop_devices()
        .into_iter()
        .filter(|(_, backing)| backing.starts_with(dir))
        .map(|(dev, _)| dev)
        .collect()
}

/// Waits, up to the test's [`limit`], until `reached()` says the running `child` got to
/// `what`. A child that ends first fails the test at once with what it said on stderr (a run
/// refused, say for want of space for its image, must not be waited for until the limit).
pub fn wait_running_until(child: &mut std::process::Child, what: &str, reached: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + limit();
    while !reached() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the run ended ({status}) before {what}: {}",
                unread_stderr(child)
            );
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not happen within {} s",
            limit().as_secs()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// What an ended child left in its stderr pipe, read without blocking: a process it started
/// may still hold the pipe open.
fn unread_stderr(child: &mut std::process::Child) -> String {
    use std::io::Read;
    let Some(mut pipe) = child.stderr.take() else {
        return String::new();
    };
    let flags = rustix::fs::fcntl_getfl(&pipe).unwrap();
    rustix::fs::fcntl_setfl(&pipe, flags | rustix::fs::OFlags::NONBLOCK).unwrap();
    let mut bytes = Vec::new();
    let _ = pipe.read_to_end(&mut bytes);
    text(&bytes)
}

/// Asserts fsbench left nothing mounted, attached or created below `dir`.
pub fn assert_nothing_left(dir: &Path) {
    assert!(
        mounts_below(dir).is_empty(),
        "left mounted: {:?}",
        mounts_below(dir)
    );
    assert!(
        loops_below(dir).is_empty(),
        "left attached: {:?}",
        loops_below(dir)
    );
    assert_empty(dir);
}

/// The pids of running zfs-fuse daemons (a zfs test asserts fsbench left none).
pub fn zfs_daemons() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim_end() == "zfs-fuse")
        })
        .collect()
}

pub fn assert_no_zfs_daemon() {
    let left = zfs_daemons();
    assert!(left.is_empty(), "zfs-fuse left running: {left:?}");
}

/// Whether a zfs test can run (the machine-wide lock, held for the test): its tools, and no
/// zfs-fuse daemon of someone else's, which
/// fsbench refuses to share (in CI, where nothing else runs one, the test must run).
pub fn can_run_zfs(test: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    if !can_run(test, &["zfs-fuse", "zpool", "zfs"]) {
        return None;
    }
    let guard = machine_wide();
    let running = zfs_daemons();
    if !running.is_empty() && std::env::var_os("CI").is_none() {
        skip(&format!(
            "{test}: a zfs-fuse daemon already runs (pid {running:?})"
        ));
        return None;
    }
    Some(guard)
}

/// Asserts `dir` holds nothing.
pub fn assert_empty(dir: &Path) {
    let entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(entries.is_empty(), "left behind: {entries:?}");
}

/// Asserts no suite's state is left in the state directory `state` (the harness-ceiling
/// cache, kept on purpose, aside).
pub fn assert_no_state_left(state: &Path) {
    let entries: Vec<_> = std::fs::read_dir(state)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_none_or(|n| n != "cache"))
        .collect();
    assert!(entries.is_empty(), "state left behind: {entries:?}");
}

/// A scratch directory on the machine's disk (not tmpfs), removed at the end of the test.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("fsbench-test.")
        .tempdir_in("/var/tmp")
        .unwrap()
}

/// A scratch directory for big trees: on tmpfs when there is one, else [`tempdir`]'s.
pub fn tmpfs_tempdir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::Builder::new()
            .prefix("fsbench-test.")
            .tempdir_in(shm)
            .unwrap()
    } else {
        tempdir()
    }
}

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}",
            text(&out.stdout)
        )
    })
}

/// Waits for `child` at most `limit` while draining its piped stdout and stderr (so a full
/// pipe never blocks it); kills it and panics when the time is up. Prints stderr for the log.
pub fn wait_drained_within(child: std::process::Child, limit: std::time::Duration) -> Output {
    wait_drained_with_usage(child, limit).0
}

/// [`wait_drained_within`], also returning the child's resource usage (its peak RSS).
pub fn wait_drained_with_usage(
    mut child: std::process::Child,
    limit: std::time::Duration,
) -> (Output, libc::rusage) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = std::time::Instant::now() + limit;
    let pid = child.id() as libc::pid_t;
    // wait4 reaps the child and reports its own resource usage.
    let (mut raw, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    loop {
        let waited = unsafe { libc::wait4(pid, &mut raw, libc::WNOHANG, &mut usage) };
        assert!(waited >= 0, "wait4: {}", std::io::Error::last_os_error());
        if waited == pid {
            break;
        }
        if std::time::Instant::now() > deadline {
            // SIGTERM first, so that fsbench undoes its mounts; then SIGKILL.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            for _ in 0..500 {
                if unsafe { libc::wait4(pid, &mut raw, libc::WNOHANG, &mut usage) } == pid {
                    panic!("the child did not end within {limit:?} (ended by SIGTERM)");
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child did not end within {limit:?} (killed)");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = Output {
        status: std::process::ExitStatus::from_raw(raw),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    eprintln!("stderr:\n{}", text(&out.stderr));
    (out, usage)
}

/// Runs `cmd` with its output drained, killing it and failing the test after `limit`.
pub fn output_within(cmd: &mut Command, limit: std::time::Duration) -> Output {
    use std::process::Stdio;
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    wait_drained_within(child, limit)
}

/// The throughput-matrix cells of a JSON document's first run, rebuilt from its figures with
/// dimensions: one object per cell, in measured order, with `test`, `file_size`,
/// `record_size` and each figure's value under its name (`throughput`, `bytes`, `thread min`...).
pub fn matrix_cells(doc: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut cells: Vec<serde_json::Value> = Vec::new();
    for f in doc["runs"][0]["phases"][0]["figures"].as_array().unwrap() {
        let Some(dims) = f["dims"].as_array() else {
            continue;
        };
        let at = |name: &str| dims.iter().find(|d| d["name"] == name).unwrap().clone();
        let place = serde_json::json!({
            "test": at("test")["text"],
            "file_size": at("file size")["bytes"],
            "record_size": at("record size")["bytes"],
        });
        let same = |c: &serde_json::Value| {
            c["test"] == place["test"]
                && c["file_size"] == place["file_size"]
                && c["record_size"] == place["record_size"]
        };
        // A cell's figures need not be together (its harness % comes after every cell).
        let at = match cells.iter().position(same) {
            Some(i) => i,
            None => {
                cells.push(place);
                cells.len() - 1
            }
        };
        let name = f["name"].as_str().unwrap().to_string();
        cells[at][name] = f["value"].clone();
    }
    cells
}

/// Runs fsbench with `args` and checks that it fails with exit `code`, says `needle` on
/// stderr and prints nothing on stdout.
pub fn fails_with(args: &[&str], code: i32, needle: &str) {
    let state = tempdir();
    let out = run(fsbench(state.path()).args(args));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: expected `{needle}` in:\n{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "{args:?}: an error printed data on stdout"
    );
}

/// `fsbench run` on loop images in `dir`, JSON out: the output and the document.
pub fn image_run_json(
    dir: &Path,
    state: &Path,
    args: &[&str],
) -> (std::process::Output, serde_json::Value) {
    let out = run(json_run(state).args(["--image-dir"]).arg(dir).args(args));
    let doc = json(&out);
    (out, doc)
}

/// Every entry below `root`: path → (type, size, link count).
pub fn tree(root: &Path) -> std::collections::BTreeMap<String, (char, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            let kind = if m.is_dir() {
                'd'
            } else if m.file_type().is_symlink() {
                'l'
            } else {
                'f'
            };
            let size = if m.is_dir() { 0 } else { m.len() };
            out.insert(
                e.path().strip_prefix(root).unwrap().display().to_string(),
                (kind, size, m.nlink()),
            );
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

/// `fsbench run` of one configuration (`FS:KEY=VALUE...`) and `workload` on `--device dev`
/// (forced), one run, JSON out.
pub fn device_run(state: &Path, dev: &str, fs: &str, workload: &str) -> Output {
    let args = [
        "--device", dev, "--force", "--fs", fs, "--runs", "1", "-w", workload,
    ];
    run(json_run(state).args(args))
}

/// Suite `id` of the database at `db` as `fsbench show` reads it: the stored records, what
/// they say worked out.
pub fn load_suite(db: &Path, id: i64) -> fsbench_model::results::SuiteResult {
    let store = fsbench_store::Store::open(db).unwrap();
    let mut result = store.load(id, fsbench_workloads::Params::label_of).unwrap();
    fsbench_engine::runner::summarize(&mut result).unwrap();
    result
}

/// Asserts that nothing a run made is left below `dir` and no suite's state in `state`.
pub fn assert_all_undone(dir: &Path, state: &Path) {
    assert_nothing_left(dir);
    assert_no_state_left(state);
}

/// Runs `fsbench clean` with state directory `state` and asserts that it succeeds and leaves
/// nothing below `dir` and no state.
pub fn assert_clean_undoes_all(state: &Path, dir: &Path) {
    let out = run(fsbench(state).arg("clean"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_all_undone(dir, state);
}

/// A cgroup of a test's own for the fsbench it kills: the fsbench processes of other tests
/// (which sweep the cgroups killed runs leave beside their own) never see what it leaves, so
/// what the next fsbench or `clean` does is theirs.
pub struct Isolated {
    dir: std::path::PathBuf,
    procs: std::ffi::CString,
}

impl Isolated {
    pub fn new() -> Option<Isolated> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static COUNT: AtomicU32 = AtomicU32::new(0);
        let parent = cgroup_of(std::process::id() as i32)?;
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(format!("fsbench-test-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let procs = dir
            .join("cgroup.procs")
            .into_os_string()
            .into_encoded_bytes();
        let procs = std::ffi::CString::new(procs).ok()?;
        Some(Isolated { dir, procs })
    }

    /// Makes `command` start in this cgroup.
    pub fn enter(&self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let procs = self.procs.clone();
        // SAFETY: between fork and exec only open, write and close, on memory made before.
        unsafe {
            command.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(fd);
                Ok(())
            });
        }
    }
}

impl Drop for Isolated {
    fn drop(&mut self) {
        // Empty once its processes are reaped.
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

//! External tools (mkfs, fsck, mount, losetup, blkid): finding them and running them once per
//! lifecycle step. Hot loops never start a process.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::error::FsbenchError;

/// Finds `name` in `PATH`, then in the sbin directories a non-root `PATH` often lacks.
pub fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Finds `name` or explains which package provides it.
pub fn require(name: &str, package: &str) -> Result<PathBuf, FsbenchError> {
    find(name).ok_or_else(|| FsbenchError::ToolMissing {
        tool: name.to_string(),
        package: package.to_string(),
    })
}

/// What a finished tool printed, how it exited and how long it took.
#[derive(Debug)]
pub struct ToolRun {
    pub success: bool,
    pub code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    pub output: String,
    pub elapsed: Duration,
}

/// How long a tool may run before it is killed and its step fails: mkfs and fsck of a large
/// device take minutes, none takes this long.
pub const TOOL_LIMIT: Duration = Duration::from_secs(3600);

/// How long `mount`, `umount` and a FUSE driver's mount command may take.
pub const MOUNT_LIMIT: Duration = Duration::from_secs(300);

/// How long a tool's output may stay open once it has exited (held by a process it left
/// running): what came until then is kept.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Runs `program args...` to completion (at most [`TOOL_LIMIT`]) with stdin closed,
/// capturing stdout and stderr together.
pub fn run(program: &Path, args: &[String]) -> anyhow::Result<ToolRun> {
    run_limited(program, args, None, TOOL_LIMIT)
}

/// [`run`] with `dir` as the working directory: mkfs and mount run in an empty directory,
/// so that no relative path in their options reaches anything.
pub fn run_in(program: &Path, args: &[String], dir: &Path) -> anyhow::Result<ToolRun> {
    run_limited(program, args, Some(dir), TOOL_LIMIT)
}

/// [`run_in`] with a limit of its own.
pub fn run_in_within(
    program: &Path,
    args: &[String],
    dir: &Path,
    limit: Duration,
) -> anyhow::Result<ToolRun> {
    run_limited(program, args, Some(dir), limit)
}

fn tool_run(status: std::process::ExitStatus, output: String, elapsed: Duration) -> ToolRun {
    ToolRun {
        success: status.success(),
        code: status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        output,
        elapsed,
    }
}

/// [`run`] for a tool that may wait on a device (blkid probing every device): killed, and an
/// error, after `limit`.
pub fn run_within(program: &Path, args: &[String], limit: Duration) -> anyhow::Result<ToolRun> {
    run_limited(program, args, None, limit)
}

/// Runs the tool in `dir`, its output drained as it comes; killed, and an error, after
/// `limit`. In fsbench's process group, so that Ctrl-C reaches it as it reaches fsbench.
fn run_limited(
    program: &Path,
    args: &[String],
    dir: Option<&Path>,
    limit: Duration,
) -> anyhow::Result<ToolRun> {
    use std::io::Read;
    let start = Instant::now();
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))?;
    // Each stream is kept as it comes, so that what came is there even when a process the
    // tool left running holds the pipe open past its end.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (ended, end) = std::sync::mpsc::channel::<()>();
        let into = kept.clone();
        std::thread::spawn(move || {
            let mut pipe = pipe;
            let mut buf = [0u8; 8192];
            while let Some(read) = pipe.as_mut().map(|p| p.read(&mut buf)) {
                match read {
                    Ok(n) if n > 0 => into
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    _ => break,
                }
            }
            drop(ended);
        });
        (kept, end)
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let Some(status) = wait_until(&mut child, start + limit)? else {
        let _ = child.kill();
        let _ = child.wait();
        anyhow::bail!(
            "`{} {}` did not finish within {} s and was killed",
            program.display(),
            args.join(" "),
            limit.as_secs()
        );
    };
    let elapsed = start.elapsed();
    // A drain still blocked (a process the tool left running holds the pipe) is left to
    // end with that process.
    let grace = Instant::now() + DRAIN_GRACE;
    let mut output = String::new();
    for (kept, end) in [stdout, stderr] {
        let _ = end.recv_timeout(grace.saturating_duration_since(Instant::now()));
        let bytes = kept.lock().unwrap_or_else(|e| e.into_inner());
        output.push_str(&String::from_utf8_lossy(&bytes));
    }
    Ok(tool_run(status, output, elapsed))
}

/// Waits for `child` to end until `deadline`: woken by its pidfd the moment it ends (a timed
/// step is not rounded up to a polling interval).
fn wait_until(
    child: &mut std::process::Child,
    deadline: Instant,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    use std::os::fd::AsRawFd;
    let pid = rustix::process::Pid::from_child(child);
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        let Some(fd) = &pidfd else {
            std::thread::sleep(left.min(Duration::from_millis(10)));
            continue;
        };
        let mut entry = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = left.as_millis().clamp(1, 1000) as i32;
        // SAFETY: one pollfd, valid for the call; an EINTR is looked at again above.
        unsafe { libc::poll(&mut entry, 1, millis) };
    }
}

/// Whether a tool's end says it was interrupted with fsbench (Ctrl-C reaches the whole
/// process group): ended by SIGINT, SIGTERM or SIGHUP, or a shell's exit status for one.
pub fn was_interrupted(run: &ToolRun) -> bool {
    let signals = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    run.signal.is_some_and(|s| signals.contains(&s))
        || run
            .code
            .is_some_and(|c| signals.iter().any(|s| c == 128 + s))
}

/// Like [`run`], but a non-zero exit is an error carrying the command line and its output. A
/// tool ended by SIGINT, SIGTERM or SIGHUP was interrupted with fsbench (Ctrl-C reaches the
/// whole process group): that is an interruption, not a failure of the tool.
pub fn run_ok(program: &Path, args: &[String]) -> anyhow::Result<ToolRun> {
    checked(program, args, run(program, args)?)
}

/// [`run_ok`] with `dir` as the working directory (see [`run_in`]).
pub fn run_ok_in(program: &Path, args: &[String], dir: &Path) -> anyhow::Result<ToolRun> {
    checked(program, args, run_in(program, args, dir)?)
}

/// [`run_ok_in`] with a limit of its own.
pub fn run_ok_in_within(
    program: &Path,
    args: &[String],
    dir: &Path,
    limit: Duration,
) -> anyhow::Result<ToolRun> {
    checked(program, args, run_in_within(program, args, dir, limit)?)
}

fn checked(program: &Path, args: &[String], result: ToolRun) -> anyhow::Result<ToolRun> {
    if was_interrupted(&result) {
        return Err(crate::error::FsbenchError::Interrupted.into());
    }
    if !result.success {
        anyhow::bail!(
            "`{} {}` failed ({}):\n{}",
            program.display(),
            args.join(" "),
            result
                .code
                .map_or("killed by a signal".to_string(), |c| format!("exit {c}")),
            result.output.trim_end()
        );
    }
    Ok(result)
}

/// The first line a tool prints for its version flag, e.g. `mke2fs 1.47.0 (5-Feb-2023)`.
pub fn version_line(program: &Path, flag: &str) -> Option<String> {
    let result = run(program, &[flag.to_string()]).ok()?;
    result
        .output
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// Whether the process runs with root's privileges.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> (PathBuf, Vec<String>) {
        (PathBuf::from("/bin/sh"), vec!["-c".into(), script.into()])
    }

    #[test]
    fn a_tool_past_its_limit_is_killed_and_an_error() {
        let (program, args) = sh("sleep 5");
        let start = Instant::now();
        let err = run_within(&program, &args, Duration::from_millis(200)).unwrap_err();
        assert!(err.to_string().contains("did not finish within"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(4));
    }

    #[test]
    fn output_a_left_process_holds_does_not_hold_the_caller() {
        let (program, args) = sh("sleep 4 & echo done");
        let start = Instant::now();
        let run = run(&program, &args).unwrap();
        assert!(run.success && run.output.contains("done"), "{run:?}");
        assert!(start.elapsed() < Duration::from_secs(4), "{run:?}");
    }

    #[test]
    fn a_tool_ended_by_an_interrupting_signal_was_interrupted() {
        for (script, interrupted) in [
            ("kill -INT $$", true),
            ("kill -TERM $$", true),
            ("exit 130", true),
            ("exit 1", false),
            ("kill -KILL $$", false),
        ] {
            let (program, args) = sh(script);
            let run = run(&program, &args).unwrap();
            assert_eq!(was_interrupted(&run), interrupted, "{script}: {run:?}");
        }
        let (program, args) = sh("kill -INT $$");
        let err = run_ok(&program, &args).unwrap_err();
        assert!(matches!(
            err.downcast_ref(),
            Some(crate::error::FsbenchError::Interrupted)
        ));
    }
}

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

/// Runs `program args...` to completion with stdin closed, capturing stdout and stderr together.
pub fn run(program: &Path, args: &[String]) -> anyhow::Result<ToolRun> {
    run_with(program, args, None)
}

/// [`run`] with `dir` as the working directory: mkfs and mount run in an empty directory,
/// so that no relative path in their options reaches anything.
pub fn run_in(program: &Path, args: &[String], dir: &Path) -> anyhow::Result<ToolRun> {
    run_with(program, args, Some(dir))
}

fn run_with(program: &Path, args: &[String], dir: Option<&Path>) -> anyhow::Result<ToolRun> {
    let start = Instant::now();
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::null());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let out = command
        .output()
        .with_context(|| format!("cannot start {}", program.display()))?;
    Ok(tool_run(&out, start.elapsed()))
}

fn tool_run(out: &std::process::Output, elapsed: Duration) -> ToolRun {
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    ToolRun {
        success: out.status.success(),
        code: out.status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&out.status),
        output,
        elapsed,
    }
}

/// [`run`] for a tool that may wait on a device (blkid probing every device): killed, and an
/// error, after `limit`.
pub fn run_within(program: &Path, args: &[String], limit: Duration) -> anyhow::Result<ToolRun> {
    use std::io::Read;
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!(
                "`{} {}` did not finish within {} s",
                program.display(),
                args.join(" "),
                limit.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    Ok(tool_run(&out, start.elapsed()))
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

fn checked(program: &Path, args: &[String], result: ToolRun) -> anyhow::Result<ToolRun> {
    if result
        .signal
        .is_some_and(|s| [libc::SIGINT, libc::SIGTERM, libc::SIGHUP].contains(&s))
    {
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

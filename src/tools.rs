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
    let start = Instant::now();
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot start {}", program.display()))?;
    let elapsed = start.elapsed();
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(ToolRun {
        success: out.status.success(),
        code: out.status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&out.status),
        output,
        elapsed,
    })
}

/// Like [`run`], but a non-zero exit is an error carrying the command line and its output. A
/// tool ended by SIGINT, SIGTERM or SIGHUP was interrupted with fsbench (Ctrl-C reaches the
/// whole process group): that is an interruption, not a failure of the tool.
pub fn run_ok(program: &Path, args: &[String]) -> anyhow::Result<ToolRun> {
    let result = run(program, args)?;
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

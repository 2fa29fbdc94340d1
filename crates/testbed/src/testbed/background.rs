//! Background load as a configuration dimension (`--background none,cpu:2,io:1`, `FS:bg=cpu:2`):
//! stress-ng, started once the run's filesystem is ready and stopped after its phases, so
//! that "with the desktop running" (as the alloc-perf articles measured) is a configuration,
//! not noise. Its own CPU time is recorded with the run. It runs in a session of its own and
//! dies with fsbench (`PR_SET_PDEATHSIG`), so nothing outlives a killed run.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use fsbench_model::testbed::BackgroundRecord;

use crate::define::Load;
use fsbench_measure::tools;

/// How long stress-ng has to stop its workers after SIGTERM before they are killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// stress-ng's arguments for `load`; the disk workers' files go to `dir`. A free function,
/// not a method: `Load` is a record, and records are the model's.
fn stress_args(load: &Load, dir: &Path) -> Vec<String> {
    let mut args = Vec::new();
    if load.cpu > 0 {
        args.extend(["--cpu".into(), load.cpu.to_string()]);
    }
    if load.io > 0 {
        args.extend(["--hdd".into(), load.io.to_string()]);
        args.extend(["--hdd-bytes".into(), "128m".into()]);
        args.extend(["--temp-path".into(), dir.display().to_string()]);
    }
    args.extend(["--timeout".into(), "86400".into(), "--quiet".into()]);
    args
}

/// A running background load; dropped without [`BackgroundLoad::stop`], it is killed.
pub(crate) struct BackgroundLoad {
    child: Option<Child>,
    program: PathBuf,
    command: String,
    started: Instant,
    log: PathBuf,
}

impl BackgroundLoad {
    /// Starts `load`, its files and log in `dir` (made here; it must not be on the measured
    /// filesystem).
    pub(crate) fn start(load: &Load, dir: &Path) -> anyhow::Result<BackgroundLoad> {
        let stress = tools::require("stress-ng", "stress-ng")?;
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot make {} for the background load", dir.display()))?;
        let args = stress_args(load, dir);
        let log = dir.join("stress-ng.log");
        let stderr = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let mut command = Command::new(&stress);
        command
            .args(&args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        // SAFETY: setsid and prctl are async-signal-safe and touch only the new process.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", stress.display()))?;
        Ok(BackgroundLoad {
            child: Some(child),
            command: format!("{} {}", stress.display(), args.join(" ")),
            program: stress,
            started: Instant::now(),
            log,
        })
    }

    /// Stops the load and says what it cost; an error if it had stopped on its own (the
    /// run's figures were then not taken under the load it names).
    // Reaped with wait4, which gives its resource use; Child::wait would not.
    #[allow(clippy::zombie_processes)]
    pub(crate) fn stop(mut self) -> anyhow::Result<BackgroundRecord> {
        let child = self.child.take().expect("running until stopped");
        let pid = child.id() as libc::pid_t;
        let secs = self.started.elapsed().as_secs_f64();
        if let Some((status, _)) = reap(pid, false) {
            let mut said = String::new();
            let _ = std::fs::File::open(&self.log).and_then(|mut f| f.read_to_string(&mut said));
            let tail: Vec<&str> = said.lines().rev().take(5).collect();
            anyhow::bail!(
                "the background load stopped during the run ({}) after {secs:.1} s: {}{}",
                describe(status),
                self.command,
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; it said: {}",
                        tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
                    )
                }
            );
        }
        // SAFETY: the load leads its own process group (setsid), which holds nothing else.
        unsafe { libc::kill(-pid, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_GRACE;
        let usage = loop {
            if let Some((_, usage)) = reap(pid, false) {
                break usage;
            }
            if Instant::now() >= deadline {
                // SAFETY: as above.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                break reap(pid, true).map(|(_, u)| u).unwrap_or_else(zero_usage);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Workers that outlived their parent's SIGTERM go with the group.
        // SAFETY: as above.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Ok(BackgroundRecord {
            command: self.command.clone(),
            version: tools::version_line(&self.program, "--version"),
            secs,
            cpu_user_secs: seconds(usage.ru_utime),
            cpu_system_secs: seconds(usage.ru_stime),
        })
    }
}

impl Drop for BackgroundLoad {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            let pid = child.id() as libc::pid_t;
            // SAFETY: the load leads its own process group (setsid).
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = reap(pid, true);
        }
    }
}

/// The load's exit status and resource use (its reaped workers' included) once it has
/// exited; waits for that when `block`.
fn reap(pid: libc::pid_t, block: bool) -> Option<(libc::c_int, libc::rusage)> {
    let mut status = 0;
    let mut usage = zero_usage();
    let flags = if block { 0 } else { libc::WNOHANG };
    // SAFETY: plain out-parameters; `pid` is this process's own child.
    let got = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
    (got == pid).then_some((status, usage))
}

fn zero_usage() -> libc::rusage {
    // SAFETY: rusage is plain data, valid when zeroed.
    unsafe { std::mem::zeroed() }
}

/// `exit status 1`, `killed by signal 9`.
fn describe(status: libc::c_int) -> String {
    if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("exit status {}", libc::WEXITSTATUS(status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_parse_and_bad_ones_say_what_is_expected() {
        assert_eq!(Load::parse("none"), Ok(None));
        assert_eq!(Load::parse("cpu:2"), Ok(Some(Load { cpu: 2, io: 0 })));
        assert_eq!(Load::parse("cpu:2+io:1"), Ok(Some(Load { cpu: 2, io: 1 })));
        assert!(Load::parse("cpu").unwrap_err().contains("expected none"));
        assert!(Load::parse("cpu:0").unwrap_err().contains("1 to 1024"));
        assert!(Load::parse("gpu:1").unwrap_err().contains("cpu and io"));
        let args = stress_args(&Load { cpu: 1, io: 2 }, Path::new("/x"));
        assert_eq!(
            args[..6],
            ["--cpu", "1", "--hdd", "2", "--hdd-bytes", "128m"]
        );
        assert!(args.contains(&"/x".to_string()));
    }
}

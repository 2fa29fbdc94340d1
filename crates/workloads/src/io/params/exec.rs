//! fio's exec engine's options (`program`, `arguments`, `grace_time`, `std_redirect`): a
//! job that moves no data and runs a program beside the jobs that do I/O, as fio's
//! engines/exec.c.

use serde::{Deserialize, Serialize};

use super::{Engine, IoParams};
use crate::options::Parsed;
use fsbench_measure::error::invalid;

/// What an exec job runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecSpec {
    /// The program (fio's `program`), found on `PATH` when it has no `/`, as `execvp`.
    pub program: String,
    /// fio's `arguments`: `%r` is the job's runtime in seconds, `%n` its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// Seconds between the SIGTERM at the end of the job's time and the SIGKILL.
    pub grace_s: u64,
    /// The program's stdout and stderr in `NAME.stdout` and `NAME.stderr`, in the run's
    /// directory (fio's `std_redirect`, on by default).
    pub std_redirect: bool,
}

/// An exec job's program; `None` for any other engine, which takes none of its options
/// (fio knows them only with the engine).
pub(super) fn exec_spec(p: &Parsed, engine: Engine) -> anyhow::Result<Option<ExecSpec>> {
    const OPTIONS: [&str; 4] = ["program", "arguments", "grace-time", "std-redirect"];
    if engine != Engine::Exec {
        return match p.first_explicit(&OPTIONS) {
            Some(o) => Err(invalid(format!("io: `{o}` is an option of ioengine=exec"))),
            None => Ok(None),
        };
    }
    let Some(program) = p.text("program").filter(|t| !t.trim().is_empty()) else {
        return Err(invalid(
            "io: `ioengine=exec` needs `program` (fio: no program is defined, it is mandatory to define one)",
        ));
    };
    Ok(Some(ExecSpec {
        program: program.to_string(),
        arguments: p.text("arguments").map(str::to_string),
        grace_s: p.num("grace-time").expect("has a default"),
        std_redirect: p.flag("std-redirect"),
    }))
}

impl ExecSpec {
    /// The command line as fio's engine makes it: `%r` and `%n` replaced in the arguments,
    /// then the program and its arguments split on spaces.
    pub(crate) fn argv(&self, runtime_s: u64, name: &str) -> Vec<String> {
        let arguments = (self.arguments.as_deref())
            .map(|a| a.replace("%r", &runtime_s.to_string()).replace("%n", name));
        let line = match arguments {
            Some(a) => format!("{} {a}", self.program),
            None => self.program.clone(),
        };
        line.split(' ')
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// Where `execvp` would find `program`: itself when it has a `/`, else the first
/// executable file of that name on `PATH`; `Err` says why there is none.
fn executable(program: &str) -> Result<std::path::PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let runs = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = std::path::PathBuf::from(program);
        return match std::fs::metadata(&path) {
            Err(e) => Err(format!("{e}")),
            Ok(_) if runs(&path) => Ok(path),
            Ok(_) => Err("not an executable file".into()),
        };
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    (std::env::split_paths(&search))
        .map(|dir| dir.join(program))
        .find(|p| runs(p))
        .ok_or_else(|| "not found on PATH".into())
}

impl IoParams {
    /// Whether the job does I/O: not a cpuio job (CPU burned) nor an exec job (a program
    /// run), which are left out of the I/O figures.
    pub fn does_io(&self) -> bool {
        self.cpu_burn.is_none() && self.exec.is_none()
    }

    /// An exec job runs its program for its `runtime` (fio's would run it until stopped
    /// without one), and moves nothing: options about data are not taken with it; its
    /// program is one that can be run.
    pub(super) fn validate_exec(&self) -> anyhow::Result<()> {
        let Some(exec) = &self.exec else {
            return Ok(());
        };
        let no = |msg: &str| Err(invalid(format!("io: `ioengine=exec`: {msg}")));
        if self.runtime_ms == 0 {
            return no(
                "give `runtime`: the program runs until the job's time is up (fio's runs until stopped)",
            );
        }
        if self.verify.is_some() || self.fsync > 0 || self.fdatasync > 0 || self.end_fsync {
            return no("the job moves no data: `verify` and syncs are not taken");
        }
        if self.latency_target.is_some() || self.rate > 0 || self.rate_iops > 0 {
            return no("the job runs a program: no `rate` or `latency_target`");
        }
        let argv = exec.argv(self.runtime_ms / 1000, "");
        let first = argv.first().map_or("", String::as_str);
        if let Err(why) = executable(first) {
            return Err(invalid(format!(
                "io: `program={}`: `{first}` cannot be run: {why}",
                exec.program
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::ExecSpec;

    #[test]
    fn arguments_are_expanded_and_split_as_fio_s() {
        let spec = ExecSpec {
            program: "/bin/echo".into(),
            arguments: Some("  %n ran  %r s;%r ".into()),
            grace_s: 1,
            std_redirect: true,
        };
        assert_eq!(
            spec.argv(30, "mon"),
            ["/bin/echo", "mon", "ran", "30", "s;30"]
        );
        let bare = ExecSpec {
            arguments: None,
            ..spec
        };
        assert_eq!(bare.argv(30, "mon"), ["/bin/echo"]);
    }
}

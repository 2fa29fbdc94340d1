//! fio's exec engine (engines/exec.c): a job that moves no data and runs a program for its
//! time, beside the jobs that do I/O. The program starts with the job, its output in
//! `NAME.stdout` and `NAME.stderr` in the run's directory (its working directory too);
//! every 50 ms the job looks whether its time is up, then sends SIGTERM, waits
//! `grace_time` seconds and sends SIGKILL to what is left, as fio's. Beyond fio: the
//! program runs in a process group of its own, which is what is signalled (whatever it
//! started goes too), and dies with the worker that started it (`PR_SET_PDEATHSIG`); what
//! it started is in a cgroup of its own, killed with it, or by the next fsbench or `fsbench
//! clean` where fsbench was killed.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::fs::{Mode, OFlags};
use rustix::process::{Pid, Signal};

use super::Io;
use super::cpuio::stopped;
use super::job::Job;
use crate::command::cgroup::Cgroup;
use crate::command::process::enter;
use fsbench_measure::error::FsbenchError;

/// How often the job looks whether its time is up (fio's 50 ms thinktime).
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// How often the grace time looks whether the program has ended.
const GRACE_LOOK: Duration = Duration::from_millis(10);

/// The job's program, run until its time is up or another job or Ctrl-C stops it; how it
/// ended goes back in the job's output.
pub(crate) fn run(job: &mut Job<'_>) -> Result<(), FsbenchError> {
    let spec = job
        .params
        .exec
        .as_ref()
        .expect("an exec job has its program");
    let name = job_name(job.params);
    let argv = spec.argv(job.params.runtime_ms / 1000, &name);
    let (stdout, stderr) = if spec.std_redirect {
        (output(job, &name, "stdout")?, output(job, &name, "stderr")?)
    } else {
        // fsbench's stdout is its data: the program's output goes to fsbench's stderr.
        let failed = |e: std::io::Error| FsbenchError::Failed(format!("exec: stderr: {e}"));
        let err = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map_err(failed)?;
        (err.try_clone().map_err(failed)?, err)
    };
    let mut program = Program::start(&argv, job.dir.as_raw_fd(), stdout, stderr)?;
    job.out.exec_ended = program.unjoined.take();
    let mut ended = None;
    while !(stopped(job) || job.span.limit.is_some_and(|l| job.start.elapsed() >= l)) {
        if ended.is_none() {
            ended = program
                .ended()?
                .map(|s| describe(s, "before the job's time was up"));
        }
        std::thread::sleep(LOOK_EVERY);
    }
    if ended.is_none() {
        ended = program
            .ended()?
            .map(|s| describe(s, "before the job's time was up"));
    }
    let ended = match ended {
        Some(ended) => ended,
        None => program.stop(Duration::from_secs(spec.grace_s))?,
    };
    job.out.exec_ended = Some(match job.out.exec_ended.take() {
        Some(why) => format!("{ended} ({why})"),
        None => ended,
    });
    Ok(())
}

/// The job's name, as fio's `%n` and output files have it.
fn job_name(params: &super::IoParams) -> String {
    params.job.clone().unwrap_or_else(|| "exec".into())
}

/// `NAME.WHAT` made anew in the run's directory, for the program's output.
fn output(job: &Job<'_>, name: &str, what: &str) -> Result<OwnedFd, FsbenchError> {
    let file = format!("{name}.{what}");
    let flags = OFlags::CREATE | OFlags::WRONLY | OFlags::TRUNC | OFlags::CLOEXEC;
    let fd: OwnedFd = rustix::fs::openat(job.dir, file.as_str(), flags, Mode::from(0o644))
        .map_err(|e| FsbenchError::Failed(format!("exec: cannot open {file}: {e}")))?;
    Ok(fd)
}

/// How the program ended, in words (`when`: what it ended before, for an exit of its own).
fn describe(status: ExitStatus, when: &str) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code} {when}"),
        (_, Some(libc::SIGTERM)) => format!("was stopped by SIGTERM {when}"),
        (_, Some(libc::SIGKILL)) => format!("was killed by SIGKILL {when}"),
        (_, Some(signal)) => format!("was killed by signal {signal} {when}"),
        _ => format!("ended ({status}) {when}"),
    }
}

/// How the program ended once sent SIGTERM at the end of the job's time.
fn stopped_by(status: ExitStatus) -> String {
    match status.signal() {
        Some(libc::SIGTERM) => "was stopped by SIGTERM at the end of the job's time".into(),
        _ => describe(status, "after SIGTERM at the end of the job's time"),
    }
}

/// The running program: its process group (and its cgroup) killed and the program reaped
/// whatever ends the job (an error, a panic).
struct Program {
    child: Child,
    reaped: bool,
    /// The cgroup everything the program starts lands in, however it forks or detaches (as
    /// a command workload's): what a SIGKILL of fsbench leaves there, the next fsbench or
    /// `fsbench clean` kills. None where cgroups cannot be made here.
    cgroup: Option<Cgroup>,
    /// Why there is no cgroup, for the job's note.
    unjoined: Option<String>,
}

impl Program {
    /// `argv` started in a process group of its own, in the directory `dir` (a descriptor),
    /// dying with the thread that started it.
    fn start(
        argv: &[String],
        dir: i32,
        out: OwnedFd,
        err: OwnedFd,
    ) -> Result<Program, FsbenchError> {
        let (mut cgroup, mut unjoined) = match Cgroup::create() {
            Ok((cgroup, _)) => (Some(cgroup), None),
            Err(why) => (None, Some(why)),
        };
        let failed = |e: std::io::Error| {
            FsbenchError::Failed(format!("exec: cannot run `{}`: {e}", argv.join(" ")))
        };
        loop {
            let join = cgroup.as_ref().map(|c| c.procs_path().to_owned());
            let mut command = Command::new(&argv[0]);
            command
                .args(&argv[1..])
                .stdin(Stdio::null())
                .stdout(out.try_clone().map_err(failed)?)
                .stderr(err.try_clone().map_err(failed)?)
                .process_group(0);
            // SAFETY: between fork and exec the closure makes only system calls (open,
            // write, close, prctl, fchdir) on memory allocated and a descriptor held open
            // before the fork.
            unsafe {
                command.pre_exec(move || {
                    enter(join.as_ref())?;
                    if libc::fchdir(dir) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            match command.spawn() {
                Ok(child) => {
                    return Ok(Program {
                        child,
                        reaped: false,
                        cgroup,
                        unjoined: unjoined.map(|why| format!("it had no cgroup of its own: {why}")),
                    });
                }
                // A cgroup fsbench may make but not move a process into (delegation rules).
                Err(e) if cgroup.is_some() => {
                    unjoined = Some(format!("cannot move the program into its cgroup: {e}"));
                    cgroup = None;
                }
                Err(e) => return Err(failed(e)),
            }
        }
    }

    /// How the program ended, if it has.
    fn ended(&mut self) -> Result<Option<ExitStatus>, FsbenchError> {
        let status = (self.child.try_wait())
            .map_err(|e| FsbenchError::Failed(format!("exec: cannot wait for the program: {e}")))?;
        self.reaped |= status.is_some();
        Ok(status)
    }

    /// SIGTERM to the program's group, `grace` to end, then SIGKILL; how it ended.
    fn stop(&mut self, grace: Duration) -> Result<String, FsbenchError> {
        self.signal(Signal::TERM);
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Some(status) = self.ended()? {
                return Ok(stopped_by(status));
            }
            std::thread::sleep(GRACE_LOOK);
        }
        self.signal(Signal::KILL);
        let status = (self.child.wait())
            .map_err(|e| FsbenchError::Failed(format!("exec: cannot wait for the program: {e}")))?;
        self.reaped = true;
        Ok(match status.signal() {
            Some(libc::SIGKILL) => format!(
                "was killed by SIGKILL {} s after SIGTERM at the end of the job's time",
                grace.as_secs()
            ),
            _ => stopped_by(status),
        })
    }

    fn signal(&self, signal: Signal) {
        let pid = Pid::from_raw(self.child.id() as i32).expect("a child's pid is positive");
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

impl Drop for Program {
    /// What the program started is killed too, as fio's cleanup kills the program.
    fn drop(&mut self) {
        self.signal(Signal::KILL);
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all(Duration::from_secs(5));
        }
        if !self.reaped {
            let _ = self.child.wait();
        }
    }
}

impl Io {
    /// What each exec job's program did, in the run's notes (the console says them on
    /// stderr; the results keep them): the command line, where its output went, how it
    /// ended. A program that failed does not fail the run, as in fio (its job's err=0).
    pub(super) fn note_programs(&mut self, programs: &[(usize, u32, String)]) {
        let mut notes = Vec::new();
        for (job, copy, ended) in programs {
            let Some(p) = self.params.jobs().nth(*job) else {
                continue;
            };
            let Some(spec) = &p.exec else { continue };
            let name = job_name(p);
            let argv = spec.argv(p.runtime_ms / 1000, &name).join(" ");
            let output = match spec.std_redirect {
                true => {
                    format!("its output in {name}.stdout and {name}.stderr in the run's directory")
                }
                false => "its output on fsbench's stderr".into(),
            };
            notes.push(format!(
                "exec: `{name}` (copy {copy}) ran `{argv}` ({output}): it {ended}; the job moves no data and is left out of the I/O figures"
            ));
        }
        self.notes.extend(notes);
    }
}

//! `fsbench capture`: runs a command under strace and writes its file-system calls beneath a
//! root, with the root's state before it ran, as a trace for the replay workload; `--show`
//! summarizes a trace.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;

use super::output::write_stdout;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::{PhaseRecorder, Progress};
use fsbench_model::units::{format_bytes, group_thousands};
use fsbench_workloads::command::process::{self, Exit, Step};
use fsbench_workloads::replay::strace::{Parser, STRACE_ARGS};
use fsbench_workloads::replay::trace::{Call, TraceWriter};
use fsbench_workloads::replay::{Summary, replay_into, snapshot};

#[derive(Debug, Args)]
pub(super) struct CaptureArgs {
    /// The trace file to write (zstd-compressed; outside the root)
    #[arg(
        short = 'o',
        long,
        value_name = "TRACE",
        required_unless_present_any = ["show", "replay"]
    )]
    output: Option<PathBuf>,
    /// The directory whose calls are recorded [default: the working directory]
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Seconds the command may run before its whole process tree is killed
    #[arg(long, default_value_t = 3600, value_name = "SECS")]
    timeout: u64,
    /// Summarize a trace instead: calls per kind, bytes, threads, files
    #[arg(long, value_name = "TRACE", conflicts_with_all = ["output", "root", "replay"])]
    show: Option<PathBuf>,
    /// Replay a trace into the empty directory -C DIR instead (as the replay workload's
    /// run does), leaving what it made there: calls per kind and differences printed
    #[arg(long, value_name = "TRACE", requires = "dir", conflicts_with_all = ["output", "root"])]
    replay: Option<PathBuf>,
    /// The directory --replay replays into
    #[arg(short = 'C', long, value_name = "DIR", requires = "replay")]
    dir: Option<PathBuf>,
    /// The command and its arguments (after `--`)
    #[arg(last = true, required_unless_present_any = ["show", "replay"], value_name = "CMD")]
    command: Vec<String>,
}

pub(super) fn run(args: &CaptureArgs, progress: Arc<Progress>) -> anyhow::Result<()> {
    if let Some(trace) = &args.show {
        return show(trace);
    }
    if let (Some(trace), Some(dir)) = (&args.replay, &args.dir) {
        return replay(trace, dir, progress);
    }
    let output = args.output.as_deref().expect("clap requires -o");
    let cwd = std::env::current_dir().context("the working directory")?;
    let root = args.root.clone().unwrap_or_else(|| cwd.clone());
    let root = root
        .canonicalize()
        .map_err(|e| invalid(format!("--root {}: {e}", root.display())))?;
    if !root.is_dir() {
        return Err(invalid(format!(
            "--root {}: not a directory",
            root.display()
        )));
    }
    let out_dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => cwd.clone(),
    };
    let out_dir = out_dir
        .canonicalize()
        .map_err(|e| invalid(format!("-o {}: {e}", output.display())))?;
    if out_dir.starts_with(&root) {
        return Err(invalid(format!(
            "-o {}: the trace must be written outside the root {} (it would change what is \
             captured)",
            output.display(),
            root.display()
        )));
    }
    let strace = fsbench_measure::tools::require("strace", "strace")?;
    find_command(&args.command[0])?;
    let name = output.file_name().unwrap_or_default().to_string_lossy();
    let partial = out_dir.join(format!(".{name}.partial-{}", std::process::id()));
    let raw = out_dir.join(format!(".{name}.strace-{}", std::process::id()));
    let outcome = capture(args, &strace, &root, &cwd, &partial, &raw, &progress);
    let _ = std::fs::remove_file(&raw);
    match outcome {
        Ok(summary) => {
            std::fs::rename(&partial, output)
                .with_context(|| format!("cannot write {}", output.display()))?;
            write_stdout(&format!("{summary}\n"))?;
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

/// A command that does not exist is told apart from one that fails under capture.
fn find_command(cmd: &str) -> anyhow::Result<()> {
    let found = if cmd.contains('/') {
        Path::new(cmd).is_file()
    } else {
        fsbench_measure::tools::find(cmd).is_some()
    };
    if found {
        Ok(())
    } else {
        Err(invalid(format!("command not found: `{cmd}`")))
    }
}

fn capture(
    args: &CaptureArgs,
    strace: &Path,
    root: &Path,
    cwd: &Path,
    partial: &Path,
    raw: &Path,
    progress: &Progress,
) -> anyhow::Result<String> {
    let file = std::fs::File::create(partial)
        .with_context(|| format!("cannot create {}", partial.display()))?;
    let mut writer = TraceWriter::new(std::io::BufWriter::new(file), root)?;
    let entries = snapshot(root, &mut writer)?;
    let wall = run_traced(args, strace, cwd, raw, progress)?;
    let input = std::fs::File::open(raw).with_context(|| format!("reading {}", raw.display()))?;
    let mut input = BufReader::with_capacity(1 << 20, input);
    let mut parser = Parser::new(root, cwd);
    let (mut line, mut call) = (Vec::with_capacity(4096), Call::default());
    while input.read_until(b'\n', &mut line)? > 0 {
        let text = String::from_utf8_lossy(&line);
        if parser
            .line(text.trim_end_matches('\n'), &mut call)
            .is_some()
        {
            writer.call(&call)?;
        }
        line.clear();
    }
    let calls = writer.calls;
    writer.finish(parser.dropped)?.into_inner()?.sync_all()?;
    Ok(format!(
        "captured {} calls beneath {} ({} entries there before), {} outside it not \
         recorded; the command took {:.3} s under capture",
        group_thousands(calls),
        root.display(),
        group_thousands(entries),
        group_thousands(parser.dropped),
        wall.as_secs_f64()
    ))
}

/// The command under strace, its trace written to `raw`; how long it took. As the command
/// workload runs its commands: `sh -c` in a process group and a cgroup of its own, output
/// drained into tails, the whole tree killed on timeout, Ctrl-C or error (and by the next
/// fsbench that runs commands, if this one is SIGKILLed). A command that fails is an error
/// with its last lines of stderr.
fn run_traced(
    args: &CaptureArgs,
    strace: &Path,
    cwd: &Path,
    raw: &Path,
    progress: &Progress,
) -> anyhow::Result<Duration> {
    let words = [strace.as_os_str().to_string_lossy().into_owned()]
        .into_iter()
        .chain(STRACE_ARGS.iter().map(|a| a.to_string()))
        .chain(["-o".into(), raw.to_string_lossy().into_owned(), "--".into()])
        .chain(args.command.iter().cloned());
    let words: Vec<String> = words.collect();
    let line = shlex::try_join(words.iter().map(String::as_str))
        .map_err(|e| invalid(format!("the command cannot be quoted for sh: {e}")))?;
    let started = Instant::now();
    let finished = process::run(&Step {
        command: &format!("exec {line}"),
        dir: cwd,
        run: 0,
        timeout: Duration::from_secs(args.timeout),
        cancel: &progress.cancel,
    })?;
    let wall = started.elapsed();
    let how = match finished.exit {
        Exit::Code(0) => return Ok(wall),
        Exit::Code(code) => format!("failed (exit status: {code})"),
        Exit::Signal(sig) => format!("was killed by signal {sig}"),
        Exit::TimedOut => format!("ran past --timeout {}s and was killed", args.timeout),
    };
    let stderr = finished.stderr.last_lines(20);
    Err(FsbenchError::Failed(format!(
        "`{}` {how} under capture: no trace written{}{}",
        args.command.join(" "),
        if stderr.is_empty() {
            ""
        } else {
            "; its last lines of stderr:\n"
        },
        stderr
    ))
    .into())
}

/// `capture --show`: what a trace holds.
fn show(trace: &Path) -> anyhow::Result<()> {
    use std::fmt::Write as _;
    let s = Summary::of(Some(trace))?;
    let mut out = String::new();
    let calls: u64 = s.calls.values().sum();
    let _ = writeln!(out, "trace     {}", trace.display());
    let _ = writeln!(out, "root      {}", s.root.display());
    let _ = writeln!(
        out,
        "before    {} entries, {}",
        group_thousands(s.initial_entries),
        format_bytes(s.initial_bytes)
    );
    let _ = writeln!(
        out,
        "calls     {} ({} failed), {} threads, {} files, over {:.3} s",
        group_thousands(calls),
        group_thousands(s.errors),
        s.threads,
        group_thousands(s.files as u64),
        s.duration_us as f64 / 1e6
    );
    let _ = writeln!(
        out,
        "bytes     {} read, {} written",
        format_bytes(s.read),
        format_bytes(s.written)
    );
    let _ = writeln!(
        out,
        "dropped   {} calls outside the root",
        group_thousands(s.dropped)
    );
    for (kind, n) in &s.calls {
        let note = if kind.replayed() {
            ""
        } else {
            "  (recorded, not replayed)"
        };
        let _ = writeln!(
            out,
            "  {:<12}{:>12}{note}",
            kind.name(),
            group_thousands(*n)
        );
    }
    write_stdout(&out)
}

/// `capture --replay TRACE -C DIR`: one replay outside a suite, its tree left in DIR.
fn replay(trace: &Path, dir: &Path, progress: Arc<Progress>) -> anyhow::Result<()> {
    use std::fmt::Write as _;
    let empty = std::fs::read_dir(dir)
        .map_err(|e| invalid(format!("-C {}: {e}", dir.display())))?
        .next()
        .is_none();
    if !empty {
        return Err(invalid(format!(
            "-C {}: not empty; the replay recreates the trace's initial state in an empty \
             directory",
            dir.display()
        )));
    }
    let target = std::fs::File::open(dir).with_context(|| format!("opening {}", dir.display()))?;
    let mut rec = PhaseRecorder::start("replay", progress);
    let report = replay_into(trace, std::os::fd::AsFd::as_fd(&target), &mut rec)?;
    let m = rec.finish();
    let mut out = format!(
        "replayed {} calls in {:.3} s into {}\n",
        group_thousands(m.ops),
        m.elapsed_secs(),
        dir.display()
    );
    for (kind, n) in &report.calls {
        let captured = report.captured.get(kind).copied().unwrap_or(0);
        let mark = if captured == *n { "" } else { "  (differs)" };
        let _ = writeln!(out, "  {kind:<12}{n:>12}  captured {captured:>12}{mark}");
    }
    for note in &report.notes {
        let _ = writeln!(out, "note: {note}");
    }
    write_stdout(&out)
}

//! `fsbench capture`: runs a command under a tracer (eBPF where it can run, strace
//! otherwise) and writes its file-system calls beneath a root, with the root's state before
//! it ran, as a trace for the replay workload; `--show` summarizes a trace.

use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

mod bpf;
mod calibrate;
mod strace;

use super::output::write_stdout;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::{PhaseRecorder, Progress};
use fsbench_model::units::{format_bytes, group_thousands};
use fsbench_testbed::testbed::check_dir_space;
use fsbench_testbed::testbed::scratch::Scratch;
use fsbench_workloads::command::process::{self, Exit};
use fsbench_workloads::replay::strace::{Parser, Skip};
use fsbench_workloads::replay::trace::{Call, Entry, Program, TraceWriter, Tracer, call_line};
use fsbench_workloads::replay::{Summary, each_left_at, replay_into, snapshot};

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
    /// What records the calls: bpf (eBPF: the program is never stopped) or strace
    /// [default: bpf where it can run, else strace]
    #[arg(long, value_enum, value_name = "TRACER", conflicts_with_all = ["show", "replay"])]
    tracer: Option<TracerArg>,
    /// The bpf tracer's ring buffer, in MiB (a power of two)
    #[arg(long, value_name = "MIB", default_value_t = fsbench_capture_bpf::BUFFER_DEFAULT_MIB)]
    bpf_buffer: u32,
    /// Write the trace even when the bpf tracer lost records (its buffer full); the trace
    /// counts them
    #[arg(long)]
    accept_lost: bool,
    /// The command and its arguments (after `--`)
    #[arg(last = true, required_unless_present_any = ["show", "replay"], value_name = "CMD")]
    command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum TracerArg {
    Bpf,
    Strace,
}

/// The tracer that will record the calls.
enum Chosen {
    Bpf(fsbench_capture_bpf::Loaded),
    /// strace, at its path; why, when bpf was not asked against but cannot run.
    Strace(PathBuf, Option<String>),
}

/// The tracer `--tracer` asks for, or the best that can run here.
fn choose(args: &CaptureArgs) -> anyhow::Result<Chosen> {
    fsbench_capture_bpf::check_buffer(args.bpf_buffer).map_err(invalid)?;
    let strace = |why: Option<String>| -> anyhow::Result<Chosen> {
        let path = fsbench_measure::tools::require("strace", "strace").map_err(|e| match &why {
            Some(why) => {
                anyhow::Error::from(e).context(format!("the bpf tracer cannot run here ({why})"))
            }
            None => e.into(),
        })?;
        Ok(Chosen::Strace(path, why))
    };
    match args.tracer {
        Some(TracerArg::Strace) => strace(None),
        Some(TracerArg::Bpf) => fsbench_capture_bpf::load(args.bpf_buffer)
            .map(Chosen::Bpf)
            .map_err(|why| invalid(format!("--tracer bpf: it cannot run here: {why}"))),
        None => match fsbench_capture_bpf::load(args.bpf_buffer) {
            Ok(loaded) => Ok(Chosen::Bpf(loaded)),
            Err(why) => strace(Some(why)),
        },
    }
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
    find_command(&args.command[0])?;
    let tracer = choose(args)?;
    // The trace is written, and the tracer writes what it recorded, in a scratch directory
    // beside the trace that a state file names (with the cgroup the command runs in):
    // `fsbench clean` removes both after a SIGKILL, and kills what the command left running.
    let mut scratch = Scratch::create(&out_dir)?;
    scratch.note_made_by(format!(
        "what `fsbench capture -o {0}` had made when it was killed: its partial trace and \
         what the tracer recorded; {0} was not written",
        output.display()
    ))?;
    let partial = scratch.path().join("trace.partial");
    let summary = capture(args, tracer, &root, &cwd, &partial, &progress)?;
    std::fs::rename(&partial, output)
        .with_context(|| format!("cannot write {}", output.display()))?;
    drop(scratch);
    write_stdout(&format!("{summary}\n"))?;
    Ok(())
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

/// Where the command starts: the root, its working directory, and the root's symlinks
/// before it (which the parser follows).
struct Start<'a> {
    root: &'a Path,
    cwd: &'a Path,
    before: &'a [Entry],
}

/// What a tracer made of the command: the parser (what it skipped, the sources it found),
/// the calls it wrote, the program's figures, and how the tracer ran, for the summary.
struct Traced {
    parser: Parser,
    calls: u64,
    program: Program,
    /// Calls the tracer lost, by reason (the user accepted them).
    lost: Vec<(String, u64)>,
    how: String,
}

/// Captures the command: the root's state before, the command under the tracer, the calls
/// parsed, the trace written to `partial`; what it captured, in one line.
fn capture(
    args: &CaptureArgs,
    tracer: Chosen,
    root: &Path,
    cwd: &Path,
    partial: &Path,
    progress: &Progress,
) -> anyhow::Result<String> {
    // The initial state to a file of its own as the root is walked, then the calls to
    // another: the header before them needs the program's figures, and what the initial
    // state must hold besides the root's (files the program took from outside) is known
    // once the calls are read.
    let beside = |suffix: &str| {
        let mut file = partial.as_os_str().to_owned();
        file.push(suffix);
        PathBuf::from(file)
    };
    let (state_file, calls_file) = (beside(".state"), beside(".calls"));
    let outcome = snapshot(root, &state_file).and_then(|state| {
        let start = Start {
            root,
            cwd,
            before: &state.symlinks,
        };
        let traced = run_traced(args, tracer, &start, &calls_file, progress)?;
        let parts = Parts {
            entries: state.entries,
            state_file: &state_file,
            calls_file: &calls_file,
        };
        write_trace(root, parts, traced, partial)
    });
    let _ = std::fs::remove_file(&state_file);
    let _ = std::fs::remove_file(&calls_file);
    outcome
}

/// The command run under `tracer` (or strace, where bpf could not start and was not asked
/// for), its calls written to `calls_file`.
fn run_traced(
    args: &CaptureArgs,
    tracer: Chosen,
    start: &Start<'_>,
    calls_file: &Path,
    progress: &Progress,
) -> anyhow::Result<Traced> {
    let scratch = calls_file.parent().unwrap_or(Path::new("."));
    match tracer {
        Chosen::Bpf(loaded) => {
            match bpf::traced(args, loaded, start, scratch, calls_file, progress)? {
                Ok(traced) => Ok(traced),
                // Nothing ran: strace can.
                Err(why) if args.tracer.is_none() => {
                    let strace =
                        fsbench_measure::tools::require("strace", "strace").map_err(|e| {
                            anyhow::Error::from(e)
                                .context(format!("the bpf tracer could not start ({why})"))
                        })?;
                    note_fallback(&why);
                    strace::traced(args, &strace, start, scratch, calls_file, progress)
                }
                Err(why) => Err(FsbenchError::Failed(format!(
                    "--tracer bpf: the bpf tracer could not start: {why}"
                ))
                .into()),
            }
        }
        Chosen::Strace(strace, why) => {
            if let Some(why) = &why {
                note_fallback(why);
            }
            strace::traced(args, &strace, start, scratch, calls_file, progress)
        }
    }
}

/// Says on stderr why strace records the calls though bpf was not refused.
fn note_fallback(why: &str) {
    eprintln!("note: strace records the calls: the bpf tracer cannot run here: {why}");
}

/// The parts of the trace written before its header: the initial state (its entries
/// counted) and the calls.
struct Parts<'a> {
    entries: u64,
    state_file: &'a Path,
    calls_file: &'a Path,
}

/// Writes the trace to `partial`: the initial state (from `state_file`), the calls (from
/// `calls_file`), what was not recorded, the tasks and the tree left, walked as it is
/// written; what it captured, in one line.
fn write_trace(
    root: &Path,
    parts: Parts<'_>,
    traced: Traced,
    partial: &Path,
) -> anyhow::Result<String> {
    let Traced {
        parser,
        calls,
        program,
        lost,
        how,
    } = traced;
    let file = std::fs::File::create(partial)
        .with_context(|| format!("cannot create {}", partial.display()))?;
    let mut writer = TraceWriter::new(std::io::BufWriter::new(file), root, &program)?;
    let sources = parser.sources();
    let mut input = BufReader::new(std::fs::File::open(parts.state_file)?);
    writer.copy_initial(&mut input)?;
    for e in &sources {
        writer.entry(e)?;
    }
    let mut input = BufReader::new(std::fs::File::open(parts.calls_file)?);
    writer.copy_calls(&mut input, calls)?;
    for (why, (n, example)) in &parser.skipped {
        writer.skipped(why.reason(), *n, example)?;
        // Calls not recorded for what they are, not where: said now, not only by replays.
        if let Skip::Named(reason) = why {
            eprintln!("note: not recorded: {} calls {reason}", group_thousands(*n));
        }
    }
    for (why, n) in &lost {
        writer.skipped(why, *n, b"")?;
    }
    for (tid, process) in parser.tasks() {
        writer.task(tid, process)?;
    }
    each_left_at(root, &mut |e| Ok(writer.left(e)?))?;
    let dropped = parser.dropped() + lost.iter().map(|(_, n)| n).sum::<u64>();
    writer.finish(dropped)?.into_inner()?.sync_all()?;
    Ok(format!(
        "captured {} calls beneath {} ({} entries there before, {} taken from outside), {} \
         not recorded (outside it, pipes...); the command took {:.3} s under capture, {how}",
        group_thousands(calls),
        root.display(),
        group_thousands(parts.entries),
        group_thousands(
            sources
                .iter()
                .filter(|e| !matches!(e, Entry::Dir(..)))
                .count() as u64
        ),
        group_thousands(dropped),
        program.wall_us as f64 / 1e6,
    ))
}

/// Why the command under capture wrote no trace, if it failed.
fn check_exit(args: &CaptureArgs, finished: &process::Finished) -> anyhow::Result<()> {
    let what = args.command.join(" ");
    let failed = |how: String| {
        let stderr = finished.stderr.last_lines(20);
        Err(FsbenchError::Failed(format!(
            "`{what}` {how} under capture: no trace written{}{}",
            if stderr.is_empty() {
                ""
            } else {
                "; its last lines of stderr:\n"
            },
            stderr
        ))
        .into())
    };
    match finished.exit {
        Exit::Code(0) => Ok(()),
        Exit::Code(code) => failed(format!("failed (exit status: {code})")),
        Exit::Signal(sig) => failed(format!("was killed by signal {sig}")),
        Exit::TimedOut => failed(format!(
            "ran past --timeout {}s and was killed",
            args.timeout
        )),
    }
}

/// The calls file being written: one line per recorded call.
struct CallsOut {
    output: BufWriter<std::fs::File>,
    text: Vec<u8>,
    calls: u64,
}

impl CallsOut {
    fn create(out: &Path) -> anyhow::Result<CallsOut> {
        let output = std::fs::File::create(out)
            .with_context(|| format!("cannot create {}", out.display()))?;
        Ok(CallsOut {
            output: BufWriter::with_capacity(1 << 20, output),
            text: Vec::new(),
            calls: 0,
        })
    }

    fn push(&mut self, call: &Call) -> anyhow::Result<()> {
        self.text.clear();
        call_line(call, &mut self.text)?;
        self.text.push(b'\n');
        self.output.write_all(&self.text)?;
        self.calls += 1;
        Ok(())
    }

    /// The number of calls written.
    fn finish(mut self) -> anyhow::Result<u64> {
        self.output.flush()?;
        Ok(self.calls)
    }
}

/// This process's umask, which the command inherits.
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|m| u32::from_str_radix(m.trim(), 8).ok())
        .unwrap_or(0o022)
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
        "before    {} entries, {}, {} extended attributes",
        group_thousands(s.initial_entries),
        format_bytes(s.initial_bytes),
        group_thousands(s.initial_xattrs)
    );
    let _ = writeln!(
        out,
        "calls     {} ({} failed), {}, {} files, over {:.3} s",
        group_thousands(calls),
        group_thousands(s.errors),
        s.tasks(),
        group_thousands(s.files as u64),
        s.duration_us as f64 / 1e6
    );
    if let Some(p) = &s.program {
        let _ = writeln!(
            out,
            "program   own {:.3} s, under capture {:.3} s, its calls here {:.3} s{}",
            p.own_us as f64 / 1e6,
            p.wall_us as f64 / 1e6,
            p.calls_us as f64 / 1e6,
            match p.tracer {
                Tracer::Strace => format!(", strace {:.1} µs a call", p.strace_ns as f64 / 1e3),
                Tracer::Bpf => String::new(),
            }
        );
        let _ = writeln!(out, "tracer    {}", p.tracer.name());
    }
    let _ = writeln!(
        out,
        "bytes     {} read, {} written",
        format_bytes(s.read),
        format_bytes(s.written)
    );
    let _ = writeln!(
        out,
        "dropped   {} calls not recorded",
        group_thousands(s.dropped)
    );
    for (reason, n, _) in &s.skipped {
        let _ = writeln!(out, "  {:>12} {reason}", group_thousands(*n));
    }
    for (kind, n) in &s.calls {
        let _ = writeln!(out, "  {:<12}{:>12}", kind.name(), group_thousands(*n));
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
    // As `run --dir` does: a replay that cannot fit is refused before it makes anything.
    let need = Summary::of(Some(trace))?.space_needed().ok_or_else(|| {
        invalid(format!(
            "{}: the space its replay needs is beyond 16 EiB",
            trace.display()
        ))
    })?;
    check_dir_space(dir, need).map_err(|e| invalid(format!("-C {e:#}")))?;
    let target = std::fs::File::open(dir).with_context(|| format!("opening {}", dir.display()))?;
    let mut rec = PhaseRecorder::start("replay", progress);
    let report = replay_into(
        trace,
        std::os::fd::AsFd::as_fd(&target),
        Default::default(),
        &mut rec,
    )?;
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

//! Capture with strace: the command run under strace, its text parsed into calls; strace's
//! cost per call estimated from the capture's own intervals (or calibrated) and taken out of
//! the program's time.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::{CallsOut, CaptureArgs, Start, Traced, calibrate, check_exit, umask};
use fsbench_measure::error::invalid;
use fsbench_measure::measure::Progress;
use fsbench_workloads::command::process::{self, Step};
use fsbench_workloads::replay::strace::{Parser, STRACE_ARGS, StopCost};
use fsbench_workloads::replay::trace::{Call, Program, Tracer};

/// strace's command line before `-o`, with TZ set: where it is not, glibc stats
/// /etc/localtime twice for each line strace prints (two system calls of strace's for each
/// of the program's). The command gets the TZ it had (`-E`), or none.
fn strace_words(strace: &Path) -> Vec<String> {
    let tz_for_command = match std::env::var_os("TZ") {
        Some(tz) => format!("TZ={}", tz.to_string_lossy()),
        None => "TZ".to_string(),
    };
    ["env".to_string(), "TZ=UTC".to_string()]
        .into_iter()
        .chain([strace.as_os_str().to_string_lossy().into_owned()])
        .chain(STRACE_ARGS.iter().map(|a| a.to_string()))
        .chain(["-E".to_string(), tz_for_command])
        .collect()
}

/// The command run under strace and its output parsed into `calls_file`.
pub(super) fn traced(
    args: &CaptureArgs,
    strace: &Path,
    start: &Start<'_>,
    scratch: &Path,
    calls_file: &Path,
    progress: &Progress,
) -> anyhow::Result<Traced> {
    let raw = scratch.join("strace.txt");
    let strace_words = strace_words(strace);
    let cost = calibrate::calibrate(&strace_words, scratch, &progress.cancel)?;
    let wall = run_traced(args, &strace_words, &raw, start.cwd, progress)?;
    // strace's cost per call as the capture's own intervals show it, at the load it ran
    // under; `dd`'s where the program made too few calls to tell.
    let per_call_ns = stop_cost(&raw)?.unwrap_or(cost.per_call_ns);
    let (parser, calls) = parse(&raw, start, per_call_ns, calls_file)?;
    let wall_us = wall.as_micros() as u64;
    let strace_us = (parser.program_stops() * per_call_ns / 1000) + cost.fixed_us;
    let program = Program {
        wall_us,
        own_us: wall_us.saturating_sub(strace_us),
        calls_us: parser.calls_us,
        strace_ns: per_call_ns,
        umask: umask(),
        traced: parser.stops_total(),
        tracer: Tracer::Strace,
    };
    let how = format!(
        "about {:.3} s on its own (strace: {:.1} µs a call)",
        program.own_us as f64 / 1e6,
        per_call_ns as f64 / 1e3
    );
    Ok(Traced {
        parser,
        calls,
        program,
        lost: Vec::new(),
        how,
    })
}

/// Runs the command under strace (`strace`: its words before `-o`), its output to `raw`:
/// its wall time, or why it wrote no trace.
fn run_traced(
    args: &CaptureArgs,
    strace: &[String],
    raw: &Path,
    cwd: &Path,
    progress: &Progress,
) -> anyhow::Result<Duration> {
    // As the command workload runs its commands: `sh -c` in a process group and a cgroup of
    // its own, output drained into tails, the whole tree killed on timeout, Ctrl-C or error
    // (and by the next fsbench that runs commands, if this one is SIGKILLed).
    let words = strace
        .iter()
        .cloned()
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
    check_exit(args, &finished)?;
    Ok(wall)
}

/// strace's cost per call read from its output `raw` ([`StopCost`]), if it holds enough
/// calls to tell.
fn stop_cost(raw: &Path) -> anyhow::Result<Option<u64>> {
    let input = std::fs::File::open(raw).with_context(|| format!("reading {}", raw.display()))?;
    let mut input = BufReader::with_capacity(1 << 20, input);
    let (mut cost, mut line) = (StopCost::default(), Vec::with_capacity(4096));
    while input.read_until(b'\n', &mut line)? > 0 {
        cost.line(&line);
        line.clear();
    }
    Ok(cost.per_call_ns())
}

/// Parses strace's output `raw` into call lines in `out`: the parser (what it skipped,
/// the sources it found) and the number of calls.
fn parse(
    raw: &Path,
    start: &Start<'_>,
    strace_ns: u64,
    out: &Path,
) -> anyhow::Result<(Parser, u64)> {
    let input = std::fs::File::open(raw).with_context(|| format!("reading {}", raw.display()))?;
    let mut input = BufReader::with_capacity(1 << 20, input);
    let mut output = CallsOut::create(out)?;
    let mut parser = Parser::new(start.root, start.cwd, strace_ns);
    parser.symlinks_before(start.before);
    let (mut line, mut call) = (Vec::with_capacity(4096), Call::default());
    while input.read_until(b'\n', &mut line)? > 0 {
        if parser.line(&line, &mut call).is_some() {
            output.push(&call)?;
        }
        line.clear();
    }
    parser.finish();
    Ok((parser, output.finish()?))
}

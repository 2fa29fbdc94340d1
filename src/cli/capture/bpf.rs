//! Capture with the bpf tracer: the command's shell is held until the BPF programs record
//! its cgroup, then execs the command; the records are parsed into calls once it ended.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::{CallsOut, CaptureArgs, Start, Traced, check_exit, umask};
use fsbench_capture_bpf::{Event, Finished, Loaded, Running};
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::Progress;
use fsbench_model::units::group_thousands;
use fsbench_workloads::command::process::{self, Step};
use fsbench_workloads::replay::strace::Parser;
use fsbench_workloads::replay::trace::{Call, Program, Tracer};

/// Runs the command with the bpf tracer recording its cgroup, and parses the records into
/// `calls_file`; `Ok(Err(why))` when the tracer could not start (the command did not run).
pub(super) fn traced(
    args: &CaptureArgs,
    loaded: Loaded,
    start: &Start<'_>,
    scratch: &Path,
    calls_file: &Path,
    progress: &Progress,
) -> anyhow::Result<Result<Traced, String>> {
    let records = scratch.join("bpf.records");
    let line = shlex::try_join(args.command.iter().map(String::as_str))
        .map_err(|e| invalid(format!("the command cannot be quoted for sh: {e}")))?;
    // The shell waits for its line; its own calls before the exec are not the program's
    // (the BPF program starts recording at the first exec that succeeds).
    let command = format!("IFS= read -r _ || exit 1; exec {line} </dev/null");
    let (mut loaded, mut running, mut started) = (Some(loaded), None::<Running>, None);
    let finished = process::run_held(
        &Step {
            command: &command,
            dir: start.cwd,
            run: 0,
            timeout: Duration::from_secs(args.timeout),
            cancel: &progress.cancel,
        },
        &mut |cgroup| {
            let cgroup = cgroup.ok_or("the command has no cgroup of its own to record")?;
            let id = std::fs::metadata(cgroup)
                .map_err(|e| format!("{}: {e}", cgroup.display()))?
                .ino();
            let loaded = loaded.take().ok_or("released twice")?;
            running = Some(loaded.attach(id, &records)?);
            started = Some(Instant::now());
            Ok(())
        },
    )?;
    let finished = match finished {
        Ok(finished) => finished,
        Err(why) => return Ok(Err(why)),
    };
    let wall = started.map(|s| s.elapsed()).unwrap_or_default();
    // Detached while the records are parsed: the kernel's wait for it overlaps the parsing.
    let (stats, _detaching) = (running.take())
        .ok_or_else(|| FsbenchError::Failed("the bpf tracer was never attached".into()))?
        .finish()
        .map_err(|why| FsbenchError::Failed(format!("the bpf tracer failed: {why}")))?;
    check_exit(args, &finished)?;
    let lost = lost_records(args, &stats)?;
    let (parser, calls) = parse(&records, start, calls_file)?;
    let wall_us = wall.as_micros() as u64;
    // Nothing stopped the program; what the BPF programs cost it at its calls is not its own.
    let program = Program {
        wall_us,
        own_us: wall_us.saturating_sub(parser.program_cost_us()),
        calls_us: parser.calls_us,
        strace_ns: 0,
        umask: umask(),
        traced: parser.stops_total(),
        tracer: Tracer::Bpf,
    };
    let how = format!(
        "about {:.3} s on its own (bpf: {} records, the program never stopped; its BPF \
         programs cost it {:.3} s)",
        program.own_us as f64 / 1e6,
        group_thousands(stats.records),
        parser.program_cost_us() as f64 / 1e6
    );
    Ok(Ok(Traced {
        parser,
        calls,
        program,
        lost,
        how,
    }))
}

/// What the bpf tracer lost, by why, with how many; an error when it lost any and the user
/// did not accept it (no trace is then written).
fn lost_records(args: &CaptureArgs, stats: &Finished) -> anyhow::Result<Vec<(String, u64)>> {
    let lost = [
        (
            stats.lost_full,
            "lost by the bpf tracer: its ring buffer was full",
        ),
        (
            stats.lost_unstarted,
            "lost by the bpf tracer: more tasks were in calls at once than it could hold",
        ),
    ];
    let lost: Vec<(String, u64)> = (lost.into_iter())
        .filter(|(n, _)| *n > 0)
        .map(|(n, why)| (why.to_string(), n))
        .collect();
    let lost_total: u64 = lost.iter().map(|(_, n)| n).sum();
    if lost_total > 0 && !args.accept_lost {
        return Err(FsbenchError::Failed(format!(
            "the bpf tracer lost {} of the command's calls ({}): no trace written; capture \
             again with a larger --bpf-buffer (now {} MiB), or with --accept-lost to keep a \
             trace that counts them",
            group_thousands(lost_total),
            lost.iter()
                .map(|(why, n)| format!("{} {why}", group_thousands(*n)))
                .collect::<Vec<_>>()
                .join(", "),
            args.bpf_buffer
        ))
        .into());
    }
    Ok(lost)
}

/// Parses the records file into call lines in `out`: the parser and the number of calls.
fn parse(records: &Path, start: &Start<'_>, out: &Path) -> anyhow::Result<(Parser, u64)> {
    let mut input = fsbench_capture_bpf::records(records)
        .with_context(|| format!("reading {}", records.display()))?;
    let mut output = CallsOut::create(out)?;
    let mut parser = Parser::for_kernel(start.root, start.cwd);
    parser.symlinks_before(start.before);
    let mut call = Call::default();
    while let Some(event) = input.next_event()? {
        match event {
            Event::Syscall(record) => {
                if parser.kernel_call(&record, &mut call).is_some() {
                    output.push(&call)?;
                }
            }
            Event::Fork {
                parent,
                child,
                flags,
                ..
            } => parser.kernel_fork(parent, child, flags),
            Event::Closing { tid, fd } => parser.kernel_closing(tid, fd),
            Event::Unknown(nr) => {
                return Err(FsbenchError::Failed(format!(
                    "{}: a record of system call {nr}, which the bpf tracer does not record",
                    records.display()
                ))
                .into());
            }
        }
    }
    parser.finish();
    Ok((parser, output.finish()?))
}

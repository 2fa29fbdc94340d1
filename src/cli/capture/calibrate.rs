//! What strace adds to a program's time: calibrated before each capture, with the capture's
//! own strace options, on `dd` copying byte by byte between /dev/zero and /dev/null (two
//! traced calls a byte), as the difference between a short and a long run, traced and not.

use std::path::Path;
use std::time::{Duration, Instant};

use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_workloads::command::process::{self, Exit, Step};

/// The bytes `dd` copies in the short and the long runs.
const SHORT: u64 = 200;
const LONG: u64 = 2200;
/// Runs of each, the fastest taken.
const TRIES: usize = 2;

/// What strace costs a program: per call it stops, and once (its start and end).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Cost {
    pub per_call_ns: u64,
    pub fixed_us: u64,
}

/// Calibrates `strace` run with `words` (its options, `-o` and a file in `scratch`).
pub(super) fn calibrate(
    strace: &[String],
    scratch: &Path,
    cancel: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<Cost> {
    let out = scratch.join(format!(".fsbench-calibrate-{}", std::process::id()));
    let quoted = shlex::try_join(strace.iter().map(String::as_str))
        .map_err(|e| invalid(format!("strace cannot be quoted for sh: {e}")))?;
    let traced = format!(
        "{quoted} -o {} --",
        shlex::try_quote(&out.to_string_lossy())?
    );
    let time = |prefix: &str, bytes: u64| -> anyhow::Result<f64> {
        let mut best = f64::INFINITY;
        for _ in 0..TRIES {
            let command = format!("exec {prefix} dd if=/dev/zero of=/dev/null bs=1 count={bytes}");
            let started = Instant::now();
            let finished = process::run(&Step {
                command: &command,
                dir: scratch,
                run: 0,
                timeout: Duration::from_secs(60),
                cancel,
            })?;
            if finished.exit != Exit::Code(0) {
                return Err(FsbenchError::Failed(format!(
                    "calibrating strace's cost: `{command}` failed: {}",
                    finished.stderr.last_lines(5)
                ))
                .into());
            }
            best = best.min(started.elapsed().as_secs_f64());
        }
        Ok(best)
    };
    let outcome = (|| {
        let (plain_short, plain_long) = (time("", SHORT)?, time("", LONG)?);
        let (traced_short, traced_long) = (time(&traced, SHORT)?, time(&traced, LONG)?);
        let calls = 2.0 * (LONG - SHORT) as f64;
        let per_call = ((traced_long - traced_short) - (plain_long - plain_short)) / calls;
        let per_call = per_call.max(0.0);
        let fixed = (traced_short - plain_short) - per_call * 2.0 * SHORT as f64;
        Ok(Cost {
            per_call_ns: (per_call * 1e9) as u64,
            fixed_us: (fixed.max(0.0) * 1e6) as u64,
        })
    })();
    let _ = std::fs::remove_file(&out);
    outcome
}

//! The workload's processes: forked before the timed part (the crew's worker processes,
//! [`Brood`]: each in the crew's process group, killed if fsbench dies or fails), each
//! running its threads and handing their counts back over its pipe when the run ends.

use std::time::{Duration, Instant};

use super::plan::Shared;
use super::stats::ThreadReport;
use super::worker::Worker;
use crate::parallel::fork::Brood;
use fsbench_measure::measure::CpuTimes;

/// How long the processes may take to hand their counts back and end once told to stop.
const WIND_DOWN: Duration = Duration::from_secs(60);

/// The forked processes, killed and reaped when dropped if they have not ended.
pub(super) struct Crew {
    brood: Brood,
}

/// Forks one process per process instance of the plan, each running its threads (which
/// wait at the start barrier); `seed` varies the draws between runs.
pub(super) fn fork_all(sh: &Shared<'_>, seed: u64) -> Result<Crew, String> {
    let mut crew = Crew {
        brood: Brood::new(),
    };
    for (n, threads) in sh.plan.processes.iter().enumerate() {
        let threads = threads.clone();
        let body = || child(sh, threads, seed ^ (n as u64) << 32);
        (crew.brood.fork(&[sh.dir], body))
            .map_err(|e| format!("cannot start a worker process: {e}"))?;
    }
    Ok(crew)
}

/// A worker process: its threads' run, and their reports for its pipe.
fn child(sh: &Shared<'_>, threads: std::ops::Range<usize>, seed: u64) -> Vec<u8> {
    // SAFETY: plain calls on this process.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
    let nice = sh.model.processes[sh.plan.threads[threads.start].process].nice;
    if nice != 0 {
        // SAFETY: plain call on this process.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    }
    let reports = run_threads(sh, threads, seed);
    serde_json::to_vec(&reports).unwrap_or_default()
}

fn run_threads(sh: &Shared<'_>, threads: std::ops::Range<usize>, seed: u64) -> Vec<ThreadReport> {
    std::thread::scope(|s| {
        let handles: Vec<_> = threads
            .map(|n| {
                let place = sh.plan.threads[n];
                let handle = s.spawn(move || match Worker::new(sh, n, place, seed ^ n as u64) {
                    Ok(mut w) => w.run(),
                    Err(e) => {
                        sh.control.stop(super::control::Stop::Abort);
                        ThreadReport {
                            thread: n,
                            error: Some(e),
                            ..ThreadReport::default()
                        }
                    }
                });
                (n, handle)
            })
            .collect();
        (handles.into_iter())
            .map(|(n, h)| {
                h.join().unwrap_or_else(|_| {
                    sh.control.stop(super::control::Stop::Abort);
                    ThreadReport {
                        thread: n,
                        error: Some("a worker thread panicked".into()),
                        ..ThreadReport::default()
                    }
                })
            })
            .collect()
    })
}

impl Crew {
    /// Whether a process ended badly (a crash, a kill) before it was told to stop; one
    /// whose threads are all done ends cleanly, its report read from its pipe.
    pub(super) fn lost(&mut self) -> Option<String> {
        self.brood.watch(Duration::ZERO);
        let (n, how) = self.brood.failed()?;
        Some(format!(
            "a worker process (pid {}) ended during the run: {how}",
            self.brood.pid(n)
        ))
    }

    /// After the stop: every process's reports (drained from the pipes) and their CPU time;
    /// an error naming a process that ended without its reports.
    pub(super) fn collect(mut self) -> Result<(Vec<ThreadReport>, CpuTimes), String> {
        let end = Instant::now() + WIND_DOWN;
        while !self.brood.all_ended() {
            if Instant::now() > end {
                return Err(format!(
                    "the worker processes did not end within {} s of the stop",
                    WIND_DOWN.as_secs()
                ));
            }
            self.brood.watch(Duration::from_millis(2));
        }
        let mut reports = Vec::new();
        for n in 0..self.brood.len() {
            match serde_json::from_slice::<Vec<ThreadReport>>(self.brood.report(n)) {
                Ok(r) => reports.extend(r),
                Err(_) => {
                    return Err(format!(
                        "a worker process (pid {}) ended without its figures: {}",
                        self.brood.pid(n),
                        self.brood.how_ended(n).unwrap_or_default()
                    ));
                }
            }
        }
        Ok((reports, self.brood.cpu()))
    }
}

//! filebench's personalities and workload files (issue: "applications without a capture"):
//! the built-in personalities as `-w personality:NAME`, and `fsbench filebench FILE.f`.
//! Phases: `prealloc` (the file sets, as filebench makes them before its run; untimed) and
//! `run` (the processes and threads, for the run's seconds or until they are done).
//!
//! Run as filebench runs it, with what filebench lacks done right: a flowop that finds no
//! file waits for one (counted) instead of ending the run, and a run where every thread
//! waits fails saying so; deletes skipped because the file is open elsewhere are counted;
//! processes are forked before the run with the shared state at one address in all (no
//! dependence on ASLR); a file costs two bits and a 16-bit count of shared memory, and the
//! tree one row per directory, so there is no limit of a million files.

mod aio;
mod control;
mod dump;
mod files;
mod layout;
pub mod model;
mod ops;
mod params;
mod parse;
mod personalities;
mod plan;
mod procs;
mod stats;
mod today;
mod wml;
mod worker;

use std::borrow::Cow;
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use rustix::fs::{Mode, OFlags};

use super::{PhaseInfo, PhaseOutput, Workload, WorkloadParams};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::{OpKind, PhaseRecorder};
use fsbench_model::measurement::Figure;
use layout::Layout;
use plan::{Plan, Shared};
use stats::Totals;

pub use params::FilebenchParams;

const PREALLOC: usize = 0;
const RUN: usize = 1;
/// filebench's block for pre-allocation writes.
const ALLOC_BLOCK: u64 = 1 << 20;
/// Threads making files at once for a `paralloc` set, as filebench's limit.
const PARALLOC_THREADS: u64 = 32;

pub struct Filebench {
    params: FilebenchParams,
    round: u32,
    layouts: Vec<Layout>,
    /// Which files and leaf directories the pre-allocation made, per set (a bit each).
    made: Vec<(Vec<u64>, Vec<u64>)>,
    totals: Option<(Totals, f64)>,
}

impl Filebench {
    pub fn new(params: FilebenchParams) -> Filebench {
        Filebench {
            params,
            round: 0,
            layouts: Vec::new(),
            made: Vec::new(),
            totals: None,
        }
    }

    fn seed(&self, n: u64) -> u64 {
        u64::from(self.round).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ n
    }

    /// Makes every set's directories and its pre-allocated files (`prealloc` percent of
    /// them, drawn at random), each written in 1 MiB writes, as filebench does.
    fn prealloc(
        &mut self,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        let model = &self.params.model;
        let inodes: u64 = model.filesets.iter().map(|s| s.entries).sum();
        let free = fsbench_measure::calls::free_inodes(dir);
        if inodes > free {
            return Err(FsbenchError::InvalidInput(format!(
                "personality {}: its {inodes} files need more inodes than the {free} free",
                self.params.name
            )));
        }
        self.layouts.clear();
        self.made.clear();
        for (si, set) in model.filesets.iter().enumerate() {
            let layout = Layout::new(set, self.seed(si as u64))
                .map_err(|e| FsbenchError::InvalidInput(format!("fileset {}: {e}", set.name)))?;
            for path in layout.dir_paths() {
                // A directory of files and one of leaf directories may share a name, as in
                // filebench: the second is already there.
                let made = match rustix::fs::mkdirat(dir, path.as_slice(), Mode::from(0o755)) {
                    Err(rustix::io::Errno::EXIST) => Ok(()),
                    other => other,
                };
                if rec.record(OpKind::Mkdir, made)?.is_none() {
                    return Err(FsbenchError::Failed(format!(
                        "fileset {}: cannot make {}",
                        set.name,
                        String::from_utf8_lossy(&path)
                    )));
                }
            }
            let mut rng = crate::io::Rng::new(self.seed(si as u64 + 1000));
            let mut made = vec![0u64; set.entries.div_ceil(64) as usize];
            for i in 0..set.entries {
                if set.prealloc == 100 || rng.unit() * 100.0 < f64::from(set.prealloc) {
                    made[(i / 64) as usize] |= 1 << (i % 64);
                }
            }
            let threads = if set.paralloc { PARALLOC_THREADS } else { 1 };
            make_files(dir, &layout, &made, threads, rec)?;
            // Leaf directories, made in the same proportion.
            let mut made_dirs = vec![0u64; set.leafdirs.div_ceil(64) as usize];
            let mut path = [0u8; 4096];
            for i in 0..set.leafdirs {
                if set.prealloc == 100 || rng.unit() * 100.0 < f64::from(set.prealloc) {
                    let name = layout.leafdir_path(i, &mut path);
                    let made = rustix::fs::mkdirat(dir, name, Mode::from(0o755));
                    if rec.record(OpKind::Mkdir, made)?.is_none() {
                        return Err(FsbenchError::Failed(format!(
                            "cannot make {}",
                            name.to_string_lossy()
                        )));
                    }
                    made_dirs[(i / 64) as usize] |= 1 << (i % 64);
                }
            }
            self.layouts.push(layout);
            self.made.push((made, made_dirs));
        }
        Ok(())
    }

    /// The run: processes forked, started together, stopped at the time or when done.
    fn run(&mut self, dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let model = &self.params.model;
        let plan = Plan::new(model);
        let region = crate::parallel::shm::Region::new(Shared::room(model, &plan))?;
        let shared = Shared::new(&region, model, &plan, &self.layouts, dir);
        for (state, (files, dirs)) in shared.sets.iter().zip(&self.made) {
            for (entries, made) in [(&state.files, files), (&state.leafdirs, dirs)] {
                for (w, bits) in made.iter().enumerate() {
                    let mut b = *bits;
                    while b != 0 {
                        entries.set_exists(w as u64 * 64 + u64::from(b.trailing_zeros()), true);
                        b &= b - 1;
                    }
                }
            }
        }
        let failed =
            |e: String| FsbenchError::Failed(format!("personality {}: {e}", self.params.name));
        let mut crew = procs::fork_all(&shared, self.seed(7)).map_err(failed)?;
        let control = &shared.control;
        if !control.all_arrived(plan.threads.len() as u64, Duration::from_secs(120)) {
            control.stop(control::Stop::Abort);
            let why = match crew.collect() {
                Ok((reports, _)) => reports.into_iter().find_map(|r| r.error),
                Err(e) => Some(e),
            };
            return Err(failed(why.unwrap_or_else(|| {
                "the threads did not start within 120 s".into()
            })));
        }
        control.start();
        let started = Instant::now();
        let cancel = rec.progress().cancel.clone();
        let stopped = std::thread::scope(|s| {
            if model.eventrate > 0 {
                s.spawn(|| control.generate_events(model.eventrate));
            }
            let outcome = watch(&shared, &mut crew, started, &cancel);
            control.stop(match outcome {
                Ok(()) => control::Stop::Done,
                Err(_) => control::Stop::Abort,
            });
            outcome
        });
        let secs = started.elapsed().as_secs_f64();
        let (reports, cpu) = crew.collect().map_err(failed)?;
        if let Err(e) = stopped {
            return Err(e.map_or(FsbenchError::Interrupted, failed));
        }
        if let Some(e) = reports.iter().find_map(|r| r.error.clone()) {
            return Err(failed(e));
        }
        rec.add_cpu(cpu.user, cpu.system);
        let mut totals = Totals::new(model);
        for r in &reports {
            totals.add(model, plan.threads[r.thread], r);
        }
        for (name, h) in &totals.latency {
            rec.add_latency(name, h);
        }
        totals.files_left = (model.filesets.iter().zip(&shared.sets))
            .map(|(set, state)| (set.name.clone(), state.existing()))
            .collect();
        let summary = totals.summary();
        rec.units_done(summary.count, summary.bytes)?;
        self.totals = Some((totals, secs));
        Ok(())
    }
}

/// Until the run should stop: its time is up, its mode's threads are done, a thread failed
/// or a process died (an error: its message, or `None` for an interrupt).
fn watch(
    sh: &Shared<'_>,
    crew: &mut procs::Crew,
    started: Instant,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<(), Option<String>> {
    use std::sync::atomic::Ordering::Relaxed;
    let model = sh.model;
    let threads = sh.plan.threads.len() as u64;
    let limit = (model.runtime > 0).then(|| Duration::from_secs(model.runtime));
    loop {
        std::thread::sleep(Duration::from_millis(5));
        if cancel.load(Relaxed) {
            return Err(None);
        }
        if sh.control.aborted() {
            // The failing thread's report says why.
            return Ok(());
        }
        let finished = sh.control.finished.load(Relaxed);
        let done = match model.mode {
            model::Mode::Firstdone => finished > 0,
            _ => finished >= threads,
        };
        if done || limit.is_some_and(|l| started.elapsed() >= l) {
            return Ok(());
        }
        if let Some(lost) = crew.lost() {
            return Err(Some(lost));
        }
    }
}

/// Makes the files of `made` (a bit per file) in `layout`, on `threads` threads at once.
fn make_files(
    dir: BorrowedFd<'_>,
    layout: &Layout,
    made: &[u64],
    threads: u64,
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    let entries = layout.entries();
    let is_made = |i: u64| made[(i / 64) as usize] & (1 << (i % 64)) != 0;
    let make = |first: u64, rec: &mut PhaseRecorder| -> Result<(), FsbenchError> {
        let mut buf = fsbench_measure::calls::Aligned::new(ALLOC_BLOCK as usize);
        let mut path = [0u8; 4096];
        let mut i = first;
        while i < entries {
            if is_made(i) {
                make_file(dir, layout, i, &mut buf, &mut path, rec)?;
            }
            i += threads;
        }
        Ok(())
    };
    if threads == 1 {
        return make(0, rec);
    }
    let outcomes: Vec<Result<PhaseRecorder, FsbenchError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let progress = rec.worker_progress();
                let parent = &*rec;
                let make = &make;
                s.spawn(move || {
                    let mut own = parent.worker(progress);
                    make(t, &mut own).map(|()| own)
                })
            })
            .collect();
        (handles.into_iter())
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(FsbenchError::Failed(
                        "a pre-allocation thread panicked".into(),
                    ))
                })
            })
            .collect()
    });
    for outcome in outcomes {
        rec.absorb(outcome?);
    }
    Ok(())
}

/// One pre-allocated file: created, written in 1 MiB writes, closed.
fn make_file(
    dir: BorrowedFd<'_>,
    layout: &Layout,
    i: u64,
    buf: &mut fsbench_measure::calls::Aligned,
    path: &mut [u8; 4096],
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    let name = layout.file_path(i, path);
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC;
    let opened = rustix::fs::openat(dir, name, flags, Mode::from(0o644));
    let Some(file) = rec.record(OpKind::Create, opened)? else {
        rec.note_failure(|| name.to_string_lossy().into_owned());
        return Err(FsbenchError::Failed(format!(
            "cannot make {}",
            name.to_string_lossy()
        )));
    };
    let size = layout.size(i);
    let mut left = size;
    while left > 0 {
        let n = left.min(ALLOC_BLOCK) as usize;
        let written = rustix::io::write(&file, &buf.buf()[..n]);
        match rec.record(OpKind::Write, written)? {
            Some(w) if w > 0 => left -= w as u64,
            _ => {
                return Err(FsbenchError::Failed(format!(
                    "cannot write {}",
                    name.to_string_lossy()
                )));
            }
        }
    }
    drop(file);
    rec.record(OpKind::Close, Ok(()))?;
    rec.unit_done(size)
}

impl Workload for Filebench {
    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        self.params.phases()
    }

    fn expected_units(&self, phase: usize) -> u64 {
        match phase {
            PREALLOC => (self.params.model.filesets.iter())
                .map(|s| s.entries * u64::from(s.prealloc) / 100)
                .sum(),
            _ => 0,
        }
    }

    fn setup(
        &mut self,
        _dir: BorrowedFd<'_>,
        round: u32,
        _cancel: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<(), FsbenchError> {
        self.round = round;
        Ok(())
    }

    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        match phase {
            PREALLOC => self.prealloc(dir, rec),
            RUN => self.run(dir, rec),
            _ => unreachable!("two phases"),
        }
    }

    fn after_phase(
        &mut self,
        phase: usize,
        _dir: BorrowedFd<'_>,
    ) -> Result<PhaseOutput, FsbenchError> {
        let mut out = PhaseOutput::default();
        if phase == PREALLOC {
            out.notes.extend(self.params.notes.iter().cloned());
            let dirs: usize = self.layouts.iter().map(Layout::dir_count).sum();
            let bytes: usize = self.layouts.iter().map(Layout::bytes).sum();
            out.notes.push(format!(
                "memory: 2 bits and a 16-bit count of shared memory a file, and {dirs} directory rows ({bytes} bytes)"
            ));
            return Ok(out);
        }
        let Some((totals, secs)) = self.totals.take() else {
            return Ok(out);
        };
        out.figures = totals.figures(secs);
        out.figures.push(Figure::new("run", "s", false, secs));
        out.notes.extend(totals.notes());
        Ok(out)
    }
}

//! fio's data path: `numjobs` jobs, each a worker (a process, as fio's jobs are, or a thread
//! with a descriptor table of its own: `workers`) with files of its own, issuing I/O as fio's options say (rw patterns, block sizes,
//! psync/pvsync2/io_uring at a queue depth, syncs, runtime, open-loop rates). The files are
//! laid out in the untimed phase `layout` (recorded and shown, never compared) before the
//! timed phase, `io`; its figures are fio's: IOPS, bandwidth, submission and completion
//! latency percentiles per direction.

use std::os::fd::BorrowedFd;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::parallel::Crew;
use super::{PhaseInfo, PhaseOutput, Workload};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::{PhaseRecorder, Progress};
use fsbench_model::measurement::{Dim, DimValue, Figure};
use fsbench_model::workload::WorkerMode;

mod cmdprio;
mod contents;
mod cpuio;
mod e4defrag;
mod exec;
mod fileops;
mod files;
mod flow;
mod gather;
mod job;
pub mod jobfile;
mod latency;
mod layout;
mod libaio;
mod mmap;
mod params;
mod pattern;
mod placement;
mod pmem;
mod posixaio;
mod preflight;
/// The workloads' small fast generator (filebench's draws use it too).
pub(crate) use pattern::Rng;
mod steady;
mod table;
mod think;
mod uring;
mod verify;

use gather::{Direction, Gathered};
use job::{Job, Span};
pub use params::{
    CmdPrio, Distribution, Engine, ExecSpec, Fallocate, FileService, IoParams, MemPolicy,
    Placement, PrioShares, Rw, Strided, SyncIo, Zones, allow_raw_target,
};
use pattern::Pattern;
pub(crate) use table::KIND;

/// fio's directions as the jobs record them: its name, its place in a job's outputs, and
/// whose outputs count in it (every job's, or those of the jobs that trim or not: a trim
/// job's trims are kept where writes are).
const DIRECTIONS: [(&str, usize, Option<bool>); 3] = [
    ("read", 0, None),
    ("write", 1, Some(false)),
    ("trim", 1, Some(true)),
];

pub const PHASES: &[PhaseInfo] = &[
    PhaseInfo::untimed("layout", "files", true),
    PhaseInfo::fixed("io", "ios", true),
];
/// The index of the layout phase in [`PHASES`]; the timed `io` phase follows it.
const LAYOUT: usize = 0;

/// The completion latency percentiles fio prints.
pub const PERCENTILES: &[f64] = &[
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

pub struct Io {
    params: IoParams,
    /// Each thread's offsets, kept from the ramp to the timed phase, in [`Io::threads`]'s
    /// order.
    patterns: Vec<Pattern>,
    figures: Vec<Figure>,
    notes: Vec<String>,
    /// The run's round and Ctrl-C flag, for the ramp between the phases.
    round: u32,
    cancel: Arc<AtomicBool>,
    /// Where a crash-recorded run notes what each fsync covered.
    oracle: Option<crate::oracle::Oracle>,
}

impl Io {
    pub fn new(params: IoParams) -> Io {
        Io {
            params,
            patterns: Vec::new(),
            figures: Vec::new(),
            notes: Vec::new(),
            round: 0,
            cancel: Arc::default(),
            oracle: None,
        }
    }

    /// Everything that would make a job's I/O fail, refused before any of it.
    fn check(&self, dir: BorrowedFd<'_>) -> Result<(), FsbenchError> {
        self.params
            .jobs()
            .try_for_each(|p| preflight::check_job(p, dir))
    }

    /// Every thread of every job: its job's parameters, the job's place and the copy's
    /// number (of `numjobs`).
    fn threads(&self) -> Vec<(&IoParams, usize, u32)> {
        (self.params.jobs().enumerate())
            .flat_map(|(j, p)| (0..p.numjobs).map(move |c| (p, j, c)))
            .collect()
    }

    /// The offsets of each job for this round, then the untimed ramp (`ramp_time`) on the
    /// laid-out files.
    fn prepare_jobs(&mut self, dir: BorrowedFd<'_>) -> Result<(), FsbenchError> {
        let round = self.round;
        let patterns = (self.threads().into_iter())
            .map(|(p, job, copy)| {
                let seed = if p.randrepeat {
                    p.randseed
                } else {
                    p.randseed ^ u64::from(round) ^ fsbench_measure::measure::lap_clock().raw()
                };
                // Each copy its own offsets; a job beside others its own too.
                let n = u64::from(copy) + ((job as u64) << 32);
                Pattern::new(p, copy, seed.wrapping_add(n.wrapping_mul(0x9e37_79b9)))
            })
            .collect();
        self.patterns = patterns;
        if self.params.jobs().any(|p| p.ramp_ms > 0) {
            let progress = Arc::new(Progress {
                cancel: self.cancel.clone(),
                ..Progress::default()
            });
            let mut ramp = PhaseRecorder::start("ramp", progress);
            self.run_jobs(dir, &mut ramp, false)?;
        }
        Ok(())
    }

    /// Runs every job's copies at once, each a worker (a process or a thread, `workers`; the
    /// timed part when `measured`, else each job's ramp): their recorders summed, the phase's
    /// time from their common start to the last one's end, their figures in
    /// [`Io::threads`]'s order, folded as they arrive.
    fn run_jobs(
        &mut self,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
        measured: bool,
    ) -> Result<Gathered, FsbenchError> {
        let threads: Vec<(IoParams, usize, u32)> = (self.threads().into_iter())
            .map(|(p, job, copy)| (p.clone(), job, copy))
            .collect();
        let oracle = &self.oracle;
        // A crash-recorded run's promises are noted in fsbench's memory: its jobs are threads.
        let mode = match oracle {
            Some(_) => WorkerMode::Threads,
            None => self.params.workers,
        };
        // fio's `flow` counts, shared by the workers: made before they are.
        let jobs: Vec<&IoParams> = threads.iter().map(|(p, _, _)| p).collect();
        let region = flow::region(&jobs)?;
        let flows = region.as_ref().map(|r| flow::Flows::new(r, &jobs));
        // fio's steady state checks of a group reporting as one, in memory shared too.
        let steady_region = steady::region(&jobs)?;
        let shares = (steady_region.as_ref()).map(|r| steady::shares(r, &jobs));
        // The cpuio jobs' count of the jobs doing I/O beside them, shared too.
        let io_region = cpuio::region(&jobs)?;
        let io_left = io_region.as_ref().map(|r| cpuio::io_jobs(r, &jobs));
        let keep = [dir];
        let crew = Crew::new(mode, &keep).with_timelines();
        // Each job's pattern goes to its worker and comes back with its figures.
        let patterns = std::mem::take(&mut self.patterns);
        let mut back: Vec<Option<Pattern>> = patterns.iter().map(|_| None).collect();
        let mut gathered = Gathered::new(self.params.jobs(), !self.params.beside.is_empty());
        let fold = |index: usize, (out, pattern)| {
            let (p, job, copy) = &threads[index];
            gathered.add((p, *job, *copy), out);
            back[index] = Some(pattern);
        };
        let work = |w: &mut crate::parallel::Worker<'_>, mut pattern: Pattern| {
            let (params, job, copy) = &threads[w.index()];
            // Before anything of the job is made, as fio places its threads.
            placement::apply(params, *copy)?;
            // Moved where the job runs, so that what it writes at every I/O is on no other
            // job's cache line.
            pattern.move_here();
            let span = Span::of(params, measured);
            let files = (*job, *copy);
            let worker = w.take_rec();
            let mut job = Job::open(params, dir, files, &mut pattern, worker, w.halt(), span)?;
            job.oracle = oracle.clone();
            job.flow = flows.as_ref().and_then(|f| f.gate(params));
            job.io_jobs_left = io_left;
            let share = shares.as_ref().and_then(|s| s[w.index()]);
            job.steady = (params.steady)
                .filter(|_| measured)
                .map(|spec| steady::Steady::new(spec, share));
            w.start()?;
            let ran = job.run(Instant::now(), issue_loop(params));
            if let (true, Some(left)) = (params.does_io(), io_left) {
                left.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            }
            let (worker, out) = ran?;
            w.give_back(worker);
            Ok((out, pattern))
        };
        let ran = crew.run_folding(rec, patterns, work, fold)?;
        if measured {
            rec.ran(ran.from, ran.to);
        }
        ran.values()?;
        self.patterns = back.into_iter().flatten().collect();
        Ok(gathered)
    }

    /// fio's figures from every job's: per direction, IOPS and bandwidth over the longest
    /// job's time, completion latency percentiles, total latency, submission latency.
    fn figures(&mut self, all: &Gathered) {
        self.note_cpu_burns(all);
        self.note_programs(&all.programs);
        let secs = all.longest.as_secs_f64().max(1e-9);
        for ((dir, _, _), sums) in DIRECTIONS.iter().zip(&all.directions) {
            self.figures.extend(direction_figures(sums, dir, secs));
        }
        if !all.lag.is_empty() {
            for (name, ns) in [
                ("p50", all.lag.value_at_percentile(50.0)),
                ("p99", all.lag.value_at_percentile(99.0)),
            ] {
                let at = [Dim::new("percentile", DimValue::Text(name.into()))];
                self.figures
                    .push(Figure::new("issue lag", "µs", false, ns as f64 / 1000.0).at(&at));
            }
        }
        self.per_job_figures(all);
        if all.verified > 0 {
            // Read back after the timed writes, as fio's verify phase: not in the IOPS.
            self.figures.push(Figure::new(
                "verified blocks",
                "blocks",
                true,
                all.verified as f64,
            ));
        }
        let p = &self.params;
        if p.beside.is_empty() && (p.rate_iops > 0 || p.rate > 0) {
            let jobs = f64::from(p.numjobs);
            let achieved = if p.rate_iops > 0 {
                format!(
                    "{:.0} of {:.0} IO/s",
                    all.ios as f64 / secs,
                    p.rate_iops as f64 * jobs
                )
            } else {
                let kib = |b: f64| b / 1024.0;
                format!(
                    "{:.0} of {:.0} KiB/s",
                    kib(all.bytes as f64 / secs),
                    kib(p.rate as f64 * jobs)
                )
            };
            self.notes.push(format!(
                "open loop: `read from schedule` and `write from schedule` count each I/O's latency from its scheduled time, so a stall is not hidden by the I/Os it delayed; `read` and `write` count from its submission, as fio's lat; `issue lag` is how late I/Os were issued (a late wake-up of the job counts too); achieved {achieved}"
            ));
        }
    }
}

impl Io {
    /// Each job that ran beside others (a job file's jobs without `stonewall` between them)
    /// and did I/O, with its name, its directions' names and its copies' sums; none for a
    /// job alone.
    fn by_job<'g>(
        &self,
        all: &'g Gathered,
    ) -> Vec<(String, [&'static str; 2], &'g gather::JobSums)> {
        if self.params.beside.is_empty() {
            return Vec::new();
        }
        (self.params.jobs().zip(&all.jobs).enumerate())
            .filter(|(_, (p, _))| p.does_io())
            .map(|(j, (p, sums))| {
                // A trim job's second direction is its trims.
                let dirs = ["read", if p.rw.trims() { "trim" } else { "write" }];
                let name = p.job.clone().unwrap_or_else(|| format!("job{j}"));
                (name, dirs, sums)
            })
            .collect()
    }

    /// Each job's own IOPS and bandwidth per direction (over its longest copy's time),
    /// where jobs ran beside each other.
    fn per_job_figures(&mut self, all: &Gathered) {
        for (name, dirs, sums) in self.by_job(all) {
            let secs = sums.longest.as_secs_f64().max(1e-9);
            for (d, dir) in dirs.into_iter().enumerate() {
                let ios = sums.ios[d];
                if ios == 0 {
                    continue;
                }
                let at = [
                    Dim::new("job", DimValue::Text(name.clone())),
                    Dim::new("direction", DimValue::Text(dir.into())),
                ];
                self.figures
                    .push(Figure::new("iops", "IO/s", true, ios as f64 / secs).at(&at));
                let kib = sums.bytes[d] as f64 / 1024.0 / secs;
                self.figures
                    .push(Figure::new("bw", "KiB/s", true, kib).at(&at));
            }
        }
    }

    /// The phase's latency histograms: per direction, every job's together; and each job's,
    /// `JOB: read clat`, where jobs ran beside each other.
    fn record_latency(&self, all: &Gathered, rec: &mut PhaseRecorder) {
        for ((name, _, _), sums) in DIRECTIONS.iter().zip(&all.directions) {
            for (kind, h) in [
                ("clat", &sums.clat),
                ("slat", &sums.slat),
                ("from schedule", &sums.from_schedule),
            ] {
                if !h.is_empty() {
                    rec.add_latency(&format!("{name} {kind}"), h);
                }
            }
        }
        for (name, dirs, sums) in self.by_job(all) {
            let Some([clat, slat]) = &sums.latency else {
                continue;
            };
            for (d, dir) in dirs.into_iter().enumerate() {
                if !clat[d].is_empty() {
                    rec.add_latency(&format!("{name}: {dir} clat"), &clat[d]);
                }
                if !slat[d].is_empty() {
                    rec.add_latency(&format!("{name}: {dir} slat"), &slat[d]);
                }
            }
        }
    }
}

/// The loop of a job's engine where it is not job.rs's own: the asynchronous engines', and
/// those that issue no reads or writes.
fn issue_loop(params: &IoParams) -> Option<job::IssueLoop> {
    match params.engine {
        _ if params.verify_only => Some(job::verify_only),
        Engine::IoUring => Some(uring::run),
        Engine::Libaio => Some(libaio::run),
        Engine::Posixaio => Some(posixaio::run),
        Engine::Cpuio => Some(cpuio::run),
        Engine::Exec => Some(exec::run),
        e if e.file_op() => Some(fileops::run),
        _ => None,
    }
}

/// A direction's figures: IOPS and bandwidth over `secs`, completion latency percentiles
/// and its maximum, submission latency where measured.
fn direction_figures(sums: &Direction, dir: &str, secs: f64) -> Vec<Figure> {
    if sums.ios == 0 {
        return Vec::new();
    }
    let direction = Dim::new("direction", DimValue::Text(dir.into()));
    let at = [direction.clone()];
    let mut figures = vec![
        Figure::new("iops", "IO/s", true, sums.ios as f64 / secs).at(&at),
        Figure::new("bw", "KiB/s", true, sums.bytes as f64 / 1024.0 / secs).at(&at),
    ];
    let (clat, slat) = (&sums.clat, &sums.slat);
    let mut points: Vec<(&str, String, u64)> = (PERCENTILES.iter())
        .map(|q| ("clat", format!("p{q}"), clat.value_at_percentile(*q)))
        .collect();
    points.push(("clat", "max".into(), clat.max()));
    if !slat.is_empty() {
        points.push(("slat", "p50".into(), slat.value_at_percentile(50.0)));
        points.push(("slat", "p99".into(), slat.value_at_percentile(99.0)));
    }
    for (figure, percentile, ns) in points {
        let at = [
            direction.clone(),
            Dim::new("percentile", DimValue::Text(percentile)),
        ];
        figures.push(Figure::new(figure, "µs", false, ns as f64 / 1000.0).at(&at));
    }
    figures
}

impl Workload for Io {
    fn phases(&self) -> std::borrow::Cow<'static, [PhaseInfo]> {
        std::borrow::Cow::Borrowed(PHASES)
    }

    fn expected_units(&self, phase: usize) -> u64 {
        let jobs = self.params.jobs();
        if phase == LAYOUT {
            return self.layout_files().len() as u64;
        }
        jobs.map(|p| {
            let per_job = if p.time_based || !p.does_io() {
                0
            } else {
                p.size / p.max_bs().max(1) * u64::from(p.loops)
            };
            let per_job = match p.number_ios {
                0 => per_job,
                n => per_job.min(n),
            };
            per_job * u64::from(p.numjobs)
        })
        .sum()
    }

    /// The checks, before any file is made.
    fn setup(
        &mut self,
        dir: BorrowedFd<'_>,
        round: u32,
        cancel: &Arc<AtomicBool>,
    ) -> Result<(), FsbenchError> {
        self.round = round;
        self.cancel = cancel.clone();
        self.check(dir)
    }

    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        if phase == LAYOUT {
            return self.layout(dir, rec);
        }
        for pattern in &mut self.patterns {
            pattern.new_pass();
        }
        let all = self.run_jobs(dir, rec, true)?;
        // A job whose read failed its verify: every job's figures recorded, then the error.
        let failed = all.verify_failed.clone();
        if failed.is_none() {
            self.unlink_files(dir)?;
        }
        self.record_latency(&all, rec);
        self.figures(&all);
        self.figures.extend(self.filled(&all));
        all.record_threads(rec);
        failed.map_or(Ok(()), |message| Err(FsbenchError::Failed(message)))
    }

    /// After the layout (and its sync), the jobs' offsets and the ramp: untimed.
    fn after_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
    ) -> Result<PhaseOutput, FsbenchError> {
        if phase == LAYOUT {
            self.prepare_jobs(dir)?;
            let idle = (self.params.create_on_open)
                .then(|| "create-on-open: the jobs' opens create the files, timed".to_string());
            return Ok(PhaseOutput {
                idle,
                ..PhaseOutput::default()
            });
        }
        Ok(PhaseOutput {
            figures: std::mem::take(&mut self.figures),
            notes: std::mem::take(&mut self.notes),
            ..Default::default()
        })
    }

    fn record_durability(&mut self, oracle: crate::oracle::Oracle) {
        self.oracle = Some(oracle);
    }
}

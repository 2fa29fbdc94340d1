//! fio's thread_stat and group_run_stats made from a stored suite: per configuration, one
//! stat per job thread (or per group, with `group_reporting`), its runs pooled as if one run
//! (their I/Os, bytes, times and CPU added, latencies and rate samples merged), and per group
//! the figures of its "Run status group" lines.

use fsbench_model::fio::FioJob;
use fsbench_model::measurement::{
    FioSteadyState, JobThread, LatencySearch, LatencySummary, SampleStats,
};

use fsbench_measure::fio::FioLatency;
use fsbench_model::results::{PhaseRecord, RunRecord, RunStatus, SuiteResult};
use fsbench_workloads::io::IoParams;

/// One job of the suite's io workloads, as its job lines print it.
pub(super) struct JobInfo {
    pub name: String,
    pub params: IoParams,
    pub fio: FioJob,
    /// fio never starts it (`exit_what=all` ended every job before it): listed, no I/O.
    pub never_started: bool,
    /// Its copies that ran: its `numjobs`, on every MPI rank (the most threads of it a run
    /// recorded, at least `numjobs`), as its stats count them (`jobs=`).
    pub copies: u32,
}

/// One stat as fio prints it: a thread, or a group with `group_reporting`.
/// Per direction, fio's read, write and trim: a job that trims records its trims where
/// writes go, and they are reported as fio's trims.
pub(super) struct ThreadStat {
    pub name: String,
    pub groupid: u32,
    /// Its first thread's process or thread id (fio's: "first pid in group, not very
    /// useful").
    pub pid: u32,
    /// Threads in it (fio's `jobs=`).
    pub members: u32,
    pub description: Option<String>,
    /// Its job's options as written.
    pub options: Vec<(String, String)>,
    pub iodepth: u32,
    /// I/Os issued (fio's `total_io_u`: those that failed and were gone past too).
    pub ios: [u64; 3],
    pub bytes: [u64; 3],
    /// Milliseconds, per direction with I/O.
    pub runtime_ms: [u64; 3],
    pub slat: [Option<FioLatency>; 3],
    pub clat: [Option<FioLatency>; 3],
    /// fio's per-priority completion latency (reads, writes): each priority's, in fio's
    /// order (the job's own first, then its `cmdprio_*` options').
    pub clat_prio: [Vec<(u16, FioLatency)>; 2],
    pub lat: [Option<FioLatency>; 3],
    pub sync: Option<FioLatency>,
    pub syncs: u64,
    pub bw: [SampleStats; 3],
    pub iops: [SampleStats; 3],
    /// CPU time against the members' run time added up (fio's `total_run_time`).
    pub usr_ns: u64,
    pub sys_ns: u64,
    pub run_ns: u64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    pub depth: [u64; 7],
    pub submit: [u64; 7],
    pub complete: [u64; 7],
    /// fio's `continue_on_error` was given: its error counts are printed.
    pub continue_on_error: bool,
    /// Errors gone past; as fio sums a group, the last thread's first error, and the first
    /// thread's with one as the stat's `error`.
    pub total_err: u64,
    pub first_error: i32,
    pub error: i32,
    /// Where fio 3.33 notes a job's first error (its `verror`, printed with `err=`).
    pub error_site: &'static str,
    /// fio's steady state check, of the thread that made it (the first run's).
    pub steadystate: Option<FioSteadyState>,
    /// fio's latency target search, as the last thread ended it (fio's stat takes each
    /// thread's in turn).
    pub latency_search: Option<LatencySearch>,
}

/// One group's "Run status group" figures per direction (bytes/s, milliseconds).
#[derive(Default)]
pub(super) struct GroupStat {
    pub groupid: u32,
    pub iobytes: [u64; 3],
    pub agg: [u64; 3],
    pub min_bw: [u64; 3],
    pub max_bw: [u64; 3],
    pub min_run: [u64; 3],
    pub max_run: [u64; 3],
}

/// Everything fio's outputs print of one configuration.
pub(super) struct ConfigStats<'a> {
    pub config: &'a str,
    /// Successful runs pooled.
    pub runs: usize,
    pub stats: Vec<ThreadStat>,
    pub groups: Vec<GroupStat>,
}

/// A job of the suite: its workload's label, its place among that workload's jobs, what it is.
pub(super) type PlacedJob = (String, u32, JobInfo);

/// Every job of the suite's io workloads, in order, with its place: (workload, job index).
pub(super) fn jobs(r: &SuiteResult) -> Vec<PlacedJob> {
    let mut out = Vec::new();
    let mut next_thread = 1;
    for (w, (label, p)) in crate::typed_workloads(r).into_iter().enumerate() {
        let Some(p) = p.get::<IoParams>() else {
            continue;
        };
        let never = p.never_started.iter().map(|j| (j, true));
        for (i, (job, never_started)) in p.jobs().map(|j| (j, false)).chain(never).enumerate() {
            let mut fio = job.fio.as_deref().cloned().unwrap_or_default();
            if job.fio.is_none() {
                // An io workload of `fsbench run`: a group of its own, as a stonewalled job.
                (fio.groupid, fio.first_thread) = (w as u32, next_thread);
            }
            next_thread = fio.first_thread + job.numjobs;
            let name = job.job.clone().unwrap_or_else(|| label.clone());
            let params = IoParams {
                beside: Vec::new(),
                never_started: Vec::new(),
                ..job.clone()
            };
            let copies = copies_ran(r, &label, i as u32).max(params.numjobs);
            let info = JobInfo {
                name,
                params,
                fio,
                never_started,
                copies,
            };
            out.push((label.clone(), i as u32, info));
        }
    }
    out
}

/// The most threads of job `index` of workload `label` that a printed run recorded: under MPI,
/// every rank's.
fn copies_ran(r: &SuiteResult, label: &str, index: u32) -> u32 {
    (r.runs.iter())
        .filter(|run| run.workload == label && printed(run))
        .filter_map(|run| run.phases.iter().find(|p| p.name == "io"))
        .map(|p| {
            (p.measurement.jobs.iter())
                .filter(|t| t.index == index)
                .count() as u32
        })
        .max()
        .unwrap_or(0)
}

/// A stat's threads before they are summed, run by run.
type Parts<'a> = Vec<Vec<&'a JobThread>>;

/// Each configuration's stats, pooled over its successful runs.
pub(super) fn configs<'a>(r: &'a SuiteResult, jobs: &[PlacedJob]) -> Vec<ConfigStats<'a>> {
    let mut out = Vec::new();
    for c in &r.configurations {
        let config = c.config.label.as_str();
        let mut stats = Vec::new();
        let mut runs_seen = 0;
        let labels = jobs.iter().map(|(l, _, _)| l.as_str());
        let mut labels: Vec<&str> = labels.collect();
        labels.dedup();
        for label in labels {
            let mine: Vec<&PlacedJob> = jobs.iter().filter(|j| j.0 == label).collect();
            let runs: Vec<&RunRecord> = (r.runs.iter())
                .filter(|run| run.config == config && run.workload == label && printed(run))
                .collect();
            runs_seen = runs_seen.max(runs.len());
            let records: Vec<Vec<JobThread>> =
                runs.iter().map(|run| threads_of(run, &mine)).collect();
            stats.extend(stats_of(&mine, &records));
            // Jobs fio never started: a stat of their own with nothing in it, as fio's.
            let never = mine.iter().filter(|j| j.2.never_started);
            let none = |_: &JobThread| false;
            stats.extend(never.map(|(_, _, job)| pooled(job, &Vec::new(), none, none)));
        }
        if stats.is_empty() {
            continue;
        }
        let groups = groups(&stats);
        out.push(ConfigStats {
            config,
            runs: runs_seen,
            stats,
            groups,
        });
    }
    out
}

/// Whether `run` is printed: it ran to its end, or it failed with its jobs' records kept (a
/// read failed its verify: fio prints the group, the job with its error).
fn printed(run: &RunRecord) -> bool {
    let kept_jobs =
        || (run.phases.iter()).any(|p| p.name == "io" && !p.measurement.jobs.is_empty());
    run.status == RunStatus::Ok || (run.status == RunStatus::Failed && kept_jobs())
}

/// A run's thread records; for a run stored before they were, what its phase kept (each
/// job's latencies and I/Os, over the phase's time).
fn threads_of(run: &RunRecord, jobs: &[&PlacedJob]) -> Vec<JobThread> {
    let Some(io) = run.phases.iter().find(|p| p.name == "io") else {
        return Vec::new();
    };
    if !io.measurement.jobs.is_empty() {
        return io.measurement.jobs.clone();
    }
    jobs.iter()
        .map(|(_, index, job)| older_record(io, *index, job, jobs.len() > 1))
        .collect()
}

fn older_record(io: &PhaseRecord, index: u32, job: &JobInfo, named: bool) -> JobThread {
    let mut t = JobThread {
        job: job.name.clone(),
        index,
        runtime_ns: io.measurement.elapsed_ns,
        ..JobThread::default()
    };
    let bs = job.params.bssplit.first().map_or(0, |b| b.0);
    for (d, dir) in ["read", "write"].into_iter().enumerate() {
        for kind in ["slat", "clat"] {
            let key = if named {
                format!("{}: {dir} {kind}", job.name)
            } else {
                format!("{dir} {kind}")
            };
            if let Some(l) = io.measurement.latency.get(&key) {
                t.latency.insert(format!("{dir} {kind}"), l.clone());
            }
        }
        t.ios[d] = t.latency.get(&format!("{dir} clat")).map_or(0, |l| l.count);
        t.bytes[d] = t.ios[d] * bs;
    }
    t
}

/// The stats of one workload's jobs over `runs` (each run's thread records).
fn stats_of(jobs: &[&PlacedJob], runs: &[Vec<JobThread>]) -> Vec<ThreadStat> {
    // Keys in order: (job index, copy), or (group, u32::MAX) for a group reported as one.
    let mut keys: Vec<(u32, u32)> = Vec::new();
    let mut parts: Vec<Parts> = Vec::new();
    for (r, threads) in runs.iter().enumerate() {
        for t in threads {
            let Some((_, _, job)) = jobs.iter().find(|j| j.1 == t.index) else {
                continue;
            };
            let key = if job.fio.group_reporting {
                (job.fio.groupid, u32::MAX)
            } else {
                (t.index, t.copy)
            };
            let at = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key);
                parts.push(vec![Vec::new(); runs.len()]);
                keys.len() - 1
            });
            parts[at][r].push(t);
        }
    }
    (parts.iter())
        .map(|p| {
            let first = p.iter().flatten().next().expect("a stat has a thread");
            let (_, _, job) = jobs.iter().find(|j| j.1 == first.index).expect("its job");
            // A thread's second direction: its writes, or a trim job's trims.
            let trims =
                |t: &JobThread| (jobs.iter()).any(|j| j.1 == t.index && j.2.params.rw.trims());
            let burns = |t: &JobThread| {
                (jobs.iter()).any(|j| j.1 == t.index && j.2.params.cpu_burn.is_some())
            };
            pooled(job, p, trims, burns)
        })
        .collect()
}

/// A thread's job-level figures added to `s`: syncs, errors, steady state, the latency
/// target's depth, CPU, context switches and faults, IO depths.
fn add_thread_totals(s: &mut ThreadStat, t: &JobThread) {
    s.syncs += t.syncs;
    (s.total_err, s.first_error) = (s.total_err + t.total_err, t.first_error);
    if s.error == 0 {
        s.error = t.first_error;
    }
    if s.steadystate.is_none() {
        s.steadystate = t.steadystate.clone();
    }
    s.latency_search = t.latency_search.or(s.latency_search);
    s.usr_ns += t.usr_ns;
    s.sys_ns += t.sys_ns;
    s.run_ns += t.runtime_ns + t.verify_ns;
    (s.ctx, s.majf, s.minf) = (s.ctx + t.ctx, s.majf + t.majf, s.minf + t.minf);
    for i in 0..7 {
        s.depth[i] += t.depth[i];
        s.submit[i] += t.submit[i];
        s.complete[i] += t.complete[i];
    }
}

/// Thread `t`'s time in direction `from` (read, write), in ms: a job that verifies its
/// writes reads in its verify phase, which fio's `update_runtime` adds to its reads' time
/// (rounded up), after the job's own time where it read before it.
fn runtime_ms(t: &JobThread, from: usize) -> u64 {
    if from == 1 || t.verify_reads == 0 {
        return t.runtime_ns / 1_000_000;
    }
    let before = if t.ios[0] + t.failed[0] > t.verify_reads {
        t.runtime_ns / 1_000_000
    } else {
        0
    };
    before + t.verify_ns.div_ceil(1_000_000)
}

/// One stat: each run's threads side by side (as fio's group reporting sums them), the runs
/// one after another. A thread that `burns` CPU (fio's cpuio) has no run time in its
/// directions, as fio gives none where no byte moved.
fn pooled(
    job: &JobInfo,
    p: &Parts,
    trims: impl Fn(&JobThread) -> bool,
    burns: impl Fn(&JobThread) -> bool,
) -> ThreadStat {
    let members = p.iter().map(Vec::len).max().unwrap_or(0) as u32;
    let mut s = empty_stat(job, members);
    // The first run's first member, as fio names one run's.
    s.pid = p.iter().flatten().next().map_or(0, |t| t.pid);
    for run in p.iter().filter(|r| !r.is_empty()) {
        let mut bw: [SampleStats; 3] = Default::default();
        let mut iops: [SampleStats; 3] = Default::default();
        let mut runtime = [0u64; 3];
        for t in run {
            let second = if trims(t) { 2 } else { 1 };
            for (from, d) in [(0, 0), (1, second)] {
                // fio counts the I/Os issued, those that failed and were gone past too.
                let issued = t.ios[from] + t.failed[from];
                s.ios[d] += issued;
                s.bytes[d] += t.bytes[from];
                if issued > 0 && !burns(t) {
                    runtime[d] = runtime[d].max(runtime_ms(t, from));
                }
                bw[d].add_up(&t.bw[from]);
                iops[d].add_up(&t.iops[from]);
            }
            // A trimwrite thread's trims, beside its writes.
            if !t.trims.is_empty() {
                s.ios[2] += t.trims.ios;
                s.bytes[2] += t.trims.bytes;
                runtime[2] = runtime[2].max(t.runtime_ns / 1_000_000);
                bw[2].add_up(&t.trims.bw);
                iops[2].add_up(&t.trims.iops);
            }
            add_thread_totals(&mut s, t);
            if t.error != 0 {
                (s.error, s.error_site) =
                    (t.error, error_site(job.params.engine.queues(), t.error));
            }
        }
        for d in 0..3 {
            s.runtime_ms[d] += runtime[d];
            s.bw[d].merge(&bw[d]);
            s.iops[d].merge(&iops[d]);
        }
    }
    let all: Vec<&JobThread> = p.iter().flatten().copied().collect();
    // The threads' latencies under `key`, of those that trim or not (`None`: every one's).
    let parts = |key: &str, trimming: Option<bool>| -> Vec<&LatencySummary> {
        (all.iter())
            .filter(|t| trimming.is_none_or(|x| trims(t) == x))
            .filter_map(|t| t.latency.get(key))
            .collect()
    };
    for (d, trimming) in [(0, None), (1, Some(false)), (2, Some(true))] {
        let dir = if d == 0 { "read" } else { "write" };
        // The trims: a trim job's (where writes go) and a trimwrite job's own.
        let latency = |kind: &str| {
            let mut of = parts(&format!("{dir} {kind}"), trimming);
            if d == 2 {
                of.extend(parts(&format!("trim {kind}"), None));
            }
            FioLatency::merged(of)
        };
        s.slat[d] = latency("slat");
        s.clat[d] = latency("clat");
        s.lat[d] = latency("lat").or_else(|| s.clat[d].clone());
        if d < 2 {
            s.clat_prio[d] = (prio_order(&job.params, d).into_iter())
                .filter_map(|prio| {
                    let key = fsbench_measure::fio::prio_key(dir, prio);
                    Some((prio, FioLatency::merged(parts(&key, trimming))?))
                })
                .collect();
        }
    }
    s.sync = FioLatency::merged(parts("sync", None));
    s
}

/// fio's order of a job's priorities in direction `d` (its `clat_prio` indexes): the job's
/// own (`prio`, `prioclass`; 0 without), then those of its `cmdprio_*` options as they
/// come, each once.
fn prio_order(params: &IoParams, d: usize) -> Vec<u16> {
    let placement = &params.placement;
    let mut order = vec![placement.ioprio.unwrap_or(0)];
    let cmdprio = placement.cmdprio.iter().flat_map(|c| &c.split[d]);
    for (_, prio) in cmdprio.flat_map(|(_, shares)| shares) {
        if !order.contains(prio) {
            order.push(*prio);
        }
    }
    order
}

/// A job's stat before its threads are added: its name, group, options and the error site
/// fio names for its engine.
fn empty_stat(job: &JobInfo, members: u32) -> ThreadStat {
    ThreadStat {
        name: job.name.clone(),
        groupid: job.fio.groupid,
        pid: 0,
        members,
        description: job.fio.description.clone(),
        options: job.fio.options.clone(),
        iodepth: job.params.iodepth,
        ios: [0; 3],
        bytes: [0; 3],
        runtime_ms: [0; 3],
        slat: Default::default(),
        clat: Default::default(),
        clat_prio: Default::default(),
        lat: Default::default(),
        sync: None,
        syncs: 0,
        bw: Default::default(),
        iops: Default::default(),
        usr_ns: 0,
        sys_ns: 0,
        run_ns: 0,
        ctx: 0,
        majf: 0,
        minf: 0,
        depth: [0; 7],
        submit: [0; 7],
        complete: [0; 7],
        continue_on_error: job.params.errors.continues_any(),
        total_err: 0,
        first_error: 0,
        error: 0,
        error_site: error_site(job.params.engine.queues(), 0),
        steadystate: None,
        latency_search: None,
    }
}

/// Where fio's job failed with `errno`, as its header line says: a read that failed its
/// verify (EILSEQ) where it completed; another error at a queued I/O's completion, or the
/// synchronous engines' transfer.
fn error_site(queues: bool, errno: i32) -> &'static str {
    match (errno == libc::EILSEQ, queues) {
        (true, true) => "file:io_u.c:2190, func=io_u_queued_complete",
        (true, false) => "file:io_u.c:2152, func=io_u_sync_complete",
        (false, true) => "file:io_u.c:1876, func=io_u error",
        (false, false) => "file:engines/sync.c:126, func=xfer",
    }
}

/// fio's group_run_stats from the stats of each group.
fn groups(stats: &[ThreadStat]) -> Vec<GroupStat> {
    let mut out: Vec<GroupStat> = Vec::new();
    for s in stats {
        let at = match out.iter().position(|g| g.groupid == s.groupid) {
            Some(at) => at,
            None => {
                out.push(GroupStat {
                    groupid: s.groupid,
                    min_bw: [u64::MAX; 3],
                    ..GroupStat::default()
                });
                out.len() - 1
            }
        };
        let g = &mut out[at];
        for d in 0..3 {
            let run = s.runtime_ms[d];
            if run == 0 {
                continue;
            }
            if g.min_run[d] == 0 || run < g.min_run[d] {
                g.min_run[d] = run;
            }
            g.max_run[d] = g.max_run[d].max(run);
            let bw = s.bytes[d] * 1000 / run;
            g.min_bw[d] = g.min_bw[d].min(bw);
            g.max_bw[d] = g.max_bw[d].max(bw);
            g.iobytes[d] += s.bytes[d];
        }
    }
    for g in &mut out {
        for d in 0..3 {
            match (g.iobytes[d] * 1000).checked_div(g.max_run[d]) {
                Some(agg) => g.agg[d] = agg,
                None => g.min_bw[d] = 0,
            }
        }
    }
    out.sort_by_key(|g| g.groupid);
    out
}

#[cfg(test)]
mod tests {
    use super::error_site;

    #[test]
    fn a_failed_verify_is_at_fio_s_completion_site_for_its_engine() {
        // fio 3.33's header lines: psync, and io_uring or libaio.
        assert_eq!(
            error_site(false, libc::EILSEQ),
            "file:io_u.c:2152, func=io_u_sync_complete"
        );
        assert_eq!(
            error_site(true, libc::EILSEQ),
            "file:io_u.c:2190, func=io_u_queued_complete"
        );
        assert_eq!(
            error_site(false, libc::EIO),
            "file:engines/sync.c:126, func=xfer"
        );
    }
}

//! The io workload's parameters: fio's job options, one table, and what they imply.

use serde::{Deserialize, Serialize};

use std::borrow::Cow;

use crate::options::{Parsed, WorkloadKind};
use crate::{Need, PhaseInfo, RankShare, SpaceNeed, Workload, WorkloadParams};
use fsbench_model::filesystem::Capability;
use fsbench_model::workload::WorkerMode;

mod checks;
mod choices;
mod contents;
pub(crate) use contents::Contents;
mod cpu;
mod describe;
pub(crate) use cpu::CpuBurn;
mod engines;
mod exec;
pub use exec::ExecSpec;
mod errors;
pub(crate) use errors::ErrorPolicy;
pub(crate) use errors::{ErrorKind, kind_of};
mod fio;
mod latency;
pub(crate) use latency::LatencyTarget;
mod mpi;
mod names;
mod pacing;
mod pmem;
pub(crate) use pacing::Pacing;
mod cmdprio;
mod placement;
mod space;
pub use cmdprio::{CmdPrio, PrioShares};
pub(crate) use placement::list as kernel_list;
#[cfg(test)]
pub(crate) use placement::online_nodes;
pub use placement::{MemPolicy, Placement};
mod steady;
use mpi::shared_file_share;
pub(crate) use names::KERNEL_DEVICES;
pub use names::allow_raw_target;
pub(crate) use pacing::poisson_gap_ns;
pub(crate) use steady::SteadySpec;
mod values;
mod verifying;
mod zones;
pub use zones::Strided;

pub use choices::{Distribution, Engine, Fallocate, FileService, Rw, SyncIo, Zones};
pub(crate) use values::UNBOUNDED;
pub(super) use values::parse_time;
use values::{block_sizes, files, rates, rw_modifier, sizes, thinktime, time_range};
use verifying::verify_options;
pub(crate) use verifying::{Algorithm, HEADER};

/// One job description; `numjobs` copies of it run at once, each on files of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The job's name in a fio job file (`[name]`), which names it in labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    pub rw: Rw,
    /// `rw=read:GAP`: bytes skipped after each sequential I/O (negative: backwards).
    #[serde(default)]
    pub seq_gap: i64,
    /// `rw=randread:N`: I/Os at each random offset and after it, in sequence (0 or 1: one).
    #[serde(default)]
    pub seq_nr: u32,
    pub rwmixread: u32,
    /// Block sizes and their percentages (`bs` alone: one at 100%).
    pub bssplit: Vec<(u64, u32)>,
    /// The writes' block size where it differs from `bssplit`'s (fio's `bs=READ,WRITE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bs: Option<u64>,
    /// Bytes of I/O per job and pass, over its files; [`UNBOUNDED`] (stored as null) for a
    /// fill job with no set size.
    #[serde(with = "values::unbounded_as_null")]
    pub size: u64,
    /// Each file's size (as `size`, null where unbounded).
    #[serde(with = "values::unbounded_as_null")]
    pub filesize: u64,
    pub nrfiles: u32,
    /// fio's `filename`: the job's files by name, relative to the run's directory, shared
    /// by every copy and every job that names them (none: fsbench names them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filename: Vec<String>,
    /// fio's pmemblk engine: each `filename`'s pool block size and size in bytes, as its
    /// name gives them (`PATH,BSIZE,FSIZEMiB`; 0, 0 where it gives none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<(u64, u64)>,
    /// fio's `directory`: where the job's files are, under the run's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<String>,
    /// At most this many files open at once (0: all); fsbench takes only all.
    #[serde(default)]
    pub openfiles: u32,
    /// fio's `fallocate`: how the layout allocates files that are only written.
    #[serde(default)]
    pub fallocate: Fallocate,
    /// The job's files removed when it ends, untimed.
    #[serde(default)]
    pub unlink: bool,
    /// How long after the others the job starts: fio's `startdelay`, a range drawn from.
    #[serde(default)]
    pub startdelay_ms: (u64, u64),
    /// Bytes per second below which the job fails (fio's `ratemin`, over its whole time).
    #[serde(default)]
    pub ratemin: u64,
    /// fio's `exitall`: the first job of those running together to end stops the others.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exitall: bool,
    /// fio's `continue_on_error` and `ignore_error`: the failed I/Os the job counts and
    /// goes past.
    #[serde(default, skip_serializing_if = "ErrorPolicy::is_default")]
    pub errors: ErrorPolicy,
    /// fio's `verify`: how written blocks are stamped and checked once the writes end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Algorithm>,
    /// fio's `do_verify`: the check itself (off: the blocks are stamped only).
    #[serde(default)]
    pub do_verify: bool,
    /// Bytes per header (fio's `verify_interval`; 0: the smallest block size).
    #[serde(default)]
    pub verify_interval: u64,
    /// fio's `verify_pattern` (with `verify=pattern`) or `buffer_pattern`: what written
    /// blocks hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pattern: Vec<u8>,
    /// fio's `verify_fatal`: the check stops at the first wrong block.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify_fatal: bool,
    /// fio's `verify_backlog`: after every N writes the blocks written since the last check
    /// are checked, during the job (0: all at the end).
    #[serde(default)]
    pub verify_backlog: u64,
    /// fio's `verify_backlog_batch`: how many of them each such check reads (0: all).
    #[serde(default)]
    pub verify_backlog_batch: u64,
    /// fio's `verify_dump`: each wrong block written to files in the working directory.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify_dump: bool,
    /// fio's `fill_device`: the job writes until the filesystem is full (its size at most
    /// the filesystem's), and that ends it without an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fill_device: bool,
    /// fio's e4defrag engine: its donor file (`donorname`), allocated at each move with
    /// `inplace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub donorname: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inplace: bool,
    pub numjobs: u32,
    /// Whether the jobs run as processes (fio's default) or threads (fio's `thread`).
    #[serde(default, skip_serializing_if = "crate::parallel::is_default_mode")]
    pub workers: WorkerMode,
    /// Where I/O starts in each file.
    pub offset: u64,
    /// No layout: each job's open creates its files, in the timed phase (fio's
    /// `create_on_open`, IOR's create).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub create_on_open: bool,
    pub direct: bool,
    pub invalidate: bool,
    pub engine: Engine,
    /// Where a job file set `ioengine` (`FILE:LINE`), for what only the run can refuse
    /// (libpmem's file not on persistent memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_at: Option<String>,
    pub iodepth: u32,
    pub iodepth_batch_submit: u32,
    pub iodepth_batch_complete_min: u32,
    /// Completions reaped at most a call (0: `iodepth`).
    #[serde(default)]
    pub iodepth_batch_complete_max: u32,
    /// A full queue is reaped down to this depth before it is filled again (0: `iodepth`).
    #[serde(default)]
    pub iodepth_low: u32,
    pub sqpoll: bool,
    pub hipri: bool,
    pub fixedbufs: bool,
    pub registerfiles: bool,
    pub fsync: u32,
    pub fdatasync: u32,
    pub end_fsync: bool,
    pub fsync_on_close: bool,
    /// fio's `sync`: the files opened `O_SYNC` or `O_DSYNC`.
    #[serde(default, skip_serializing_if = "SyncIo::is_none")]
    pub sync_io: SyncIo,
    pub runtime_ms: u64,
    pub time_based: bool,
    pub ramp_ms: u64,
    pub number_ios: u64,
    pub loops: u32,
    pub rate_iops: u64,
    /// Bytes per second.
    pub rate: u64,
    /// fio's `rate_process`, `io_submit_mode` and `flow`.
    #[serde(default, skip_serializing_if = "Pacing::is_default")]
    pub pacing: Pacing,
    /// fio's steady state (`ss`, `ss_dur`, `ss_ramp`): the job stops once it is attained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadySpec>,
    /// fio's `latency_target`: the job searches for the deepest queue whose I/Os meet it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<LatencyTarget>,
    /// fio's cpuio engine: the share of a CPU the job burns (no I/O, no files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_burn: Option<CpuBurn>,
    /// An exec job's program (fio's exec engine): no I/O, a program run beside the jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecSpec>,
    pub randrepeat: bool,
    pub randseed: u64,
    pub distribution: Distribution,
    pub norandommap: bool,
    /// fio's `thinktime`: microseconds idle after every `thinktime_blocks` I/Os, the first
    /// `thinktime_spin` of them spinning.
    #[serde(default)]
    pub thinktime_us: u64,
    #[serde(default)]
    pub thinktime_spin_us: u64,
    #[serde(default)]
    pub thinktime_blocks: u32,
    /// fio's `filename_format`: the files' names from `$jobname`, `$jobnum` and `$filenum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename_format: Option<String>,
    /// Random offsets are multiples of this (fio's `blockalign`; 0: the smallest block).
    #[serde(default)]
    pub blockalign: u64,
    /// Of a random pattern's I/Os, the percentage at a random offset; the others follow the
    /// I/O before (fio's `percentage_random`).
    #[serde(default = "all_random")]
    pub percentage_random: u32,
    /// fio's `file_service_type`: which file the next I/O goes to.
    #[serde(default)]
    pub file_service: FileService,
    /// The writes' block sizes where they differ from `bssplit`'s (fio's `bssplit=READ,WRITE`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_bssplit: Vec<(u64, u32)>,
    /// How much further each copy (of `numjobs`) starts than the one before (fio's
    /// `offset_increment`).
    #[serde(default)]
    pub offset_increment: u64,
    /// fio's `pre_read`: the job's files read before it starts, untimed.
    #[serde(default)]
    pub pre_read: bool,
    /// fio's `unlink_each_loop`: the files removed after each loop and made anew.
    #[serde(default)]
    pub unlink_each_loop: bool,
    /// The job's one file is the block device `fsbench fio --target-device` was given,
    /// read and written raw, never laid out nor removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub raw_device: bool,
    /// What written blocks hold (fio's buffer options).
    #[serde(default)]
    pub contents: Contents,
    /// fio's strided zones (`zonemode=strided`, `zonesize`, `zonerange`, `zoneskip`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zones: Option<Strided>,
    /// Where the job's threads run and at what priority (fio's `cpus_allowed`, `numa_*`,
    /// `nice`, `prio`, `prioclass`, `cmdprio_*`).
    #[serde(default, skip_serializing_if = "Placement::is_default")]
    pub placement: Placement,
    /// The jobs of a fio job file that run at the same time as this one (no `stonewall`
    /// between them, fio's default), each on files of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beside: Vec<IoParams>,
    /// The jobs after it that fio never starts (`exit_what=all`): reported, never run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub never_started: Vec<IoParams>,
    /// fio's `verify_only` in a job that writes: its writes are run through without I/O,
    /// and the blocks they would cover (in files a group before it wrote) read back and
    /// checked, timed as its reads.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify_only: bool,
    /// The groups before this one in its job file whose files it uses (the same names), in
    /// order: fio keeps a job file's files from group to group, so they run again, untimed,
    /// in the run's fresh directory before its files are laid out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_groups: Vec<IoParams>,
    /// The job's files are those a group before it made: laid out only where smaller than
    /// it needs (as fio's); a job that only reads may `verify` them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub existing_files: bool,
    /// A job without `size` on such files: its size is theirs (at most `size`), found when
    /// they are laid out, as fio takes an existing file's size.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub size_of_files: bool,
    /// What its job file said of it for fio's outputs: options as written, groups, logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fio: Option<Box<fsbench_model::fio::FioJob>>,
}

fn all_random() -> u32 {
    100
}

/// The job's parameters from its options: one line per option into its field (one piece:
/// the struct's literal, a line a field; splitting it would split the struct).
pub(super) fn build(p: &Parsed) -> anyhow::Result<IoParams> {
    let (filename, directory, nrfiles) = files(p)?;
    let engine = Engine::parse(p.text("ioengine").expect("ioengine has a default"));
    let (filename, pools) = pmem::pool_names(engine, filename)?;
    let bssplit = block_sizes(p)?;
    let write_bssplit = match p.text("write-bssplit") {
        Some(text) => values::parse_bssplit(text)?,
        None => Vec::new(),
    };
    let smallest = (bssplit.iter().chain(&write_bssplit).map(|b| b.0))
        .chain(p.num("write-bs"))
        .min()
        .unwrap_or(1);
    let (size, filesize, offset) = sizes(p, nrfiles, smallest)?;
    let time = |key| p.text(key).map_or(Ok(0), |t| parse_time(key, t));
    let rw = Rw::parse(p.text("rw").expect("rw has a default"));
    let (verify, pattern) = verify_options(p)?;
    let (seq_gap, seq_nr) = match p.text("rw-modifier") {
        None => (0, 0),
        Some(m) => rw_modifier(rw, m)?,
    };
    let custom = p.first_explicit(&["rw", "bs", "bssplit", "size"]);
    let iodepth = p.small("iodepth").expect("iodepth has a default");
    let read_percent = rw.read_percent(p.small("rwmixread").expect("has a default"));
    let (rate, rate_iops) = rates(p, read_percent)?;
    let (thinktime_us, thinktime_spin_us) = thinktime(p)?;
    Ok(IoParams {
        preset: custom.is_none().then(|| p.preset.name.to_string()),
        job: None,
        rw,
        seq_gap,
        seq_nr,
        rwmixread: p.small("rwmixread").expect("has a default"),
        bssplit,
        write_bs: p.num("write-bs"),
        size,
        filesize,
        nrfiles,
        filename,
        pools,
        directory,
        openfiles: p.small("openfiles").expect("has a default"),
        fallocate: Fallocate::parse(p.text("fallocate").expect("has a default")),
        unlink: p.flag("unlink"),
        startdelay_ms: p
            .text("startdelay")
            .map_or(Ok((0, 0)), |t| time_range("startdelay", t))?,
        ratemin: p.num("ratemin").expect("has a default"),
        exitall: false,
        errors: errors::error_policy(p)?,
        verify,
        do_verify: p.flag("do-verify"),
        verify_interval: p.num("verify-interval").unwrap_or(0),
        pattern,
        verify_fatal: p.flag("verify-fatal"),
        verify_backlog: p.num("verify-backlog").expect("has a default"),
        verify_backlog_batch: p.num("verify-backlog-batch").expect("has a default"),
        verify_dump: p.flag("verify-dump"),
        fill_device: p.flag("fill-device"),
        donorname: p.text("donorname").map(str::to_string),
        inplace: p.flag("inplace"),
        numjobs: p.small("numjobs").expect("has a default"),
        workers: crate::parallel::workers_of(p),
        offset,
        create_on_open: p.flag("create-on-open"),
        direct: p.flag("direct"),
        // As fio: reading the files into the cache and dropping them would be pointless.
        invalidate: p.flag("invalidate") && !p.flag("pre-read"),
        pre_read: p.flag("pre-read"),
        unlink_each_loop: p.flag("unlink-each-loop"),
        raw_device: false,
        engine,
        engine_at: None,
        iodepth,
        iodepth_batch_submit: p.small("iodepth-batch-submit").unwrap_or(1),
        iodepth_batch_complete_min: p.small("iodepth-batch-complete-min").expect("default"),
        iodepth_batch_complete_max: p.small("iodepth-batch-complete-max").expect("default"),
        iodepth_low: p.small("iodepth-low").expect("default"),
        sqpoll: p.flag("sqpoll"),
        hipri: p.flag("hipri"),
        fixedbufs: p.flag("fixedbufs"),
        registerfiles: p.flag("registerfiles"),
        fsync: p.small("fsync").expect("default"),
        fdatasync: p.small("fdatasync").expect("default"),
        end_fsync: p.flag("end-fsync"),
        fsync_on_close: p.flag("fsync-on-close"),
        sync_io: SyncIo::parse(p.text("sync").expect("default")),
        runtime_ms: time("runtime")?,
        time_based: p.flag("time-based"),
        ramp_ms: time("ramp-time")?,
        number_ios: p.num("number-ios").expect("default"),
        loops: p.small("loops").expect("default"),
        rate_iops,
        rate,
        pacing: pacing::pacing(p),
        steady: steady::steady(p)?,
        latency_target: latency::latency_target(p)?,
        cpu_burn: cpu::cpu_burn(p, engine)?,
        exec: exec::exec_spec(p, engine)?,
        randrepeat: p.flag("randrepeat"),
        randseed: p.num("randseed").expect("default"),
        distribution: Distribution::parse(p.text("random-distribution").expect("default"))?,
        // fio's `lfsr` visits every block once a pass, map or not: fsbench's map does.
        norandommap: p.flag("norandommap") && p.text("random-generator") != Some("lfsr"),
        thinktime_us,
        thinktime_spin_us,
        thinktime_blocks: p.small("thinktime-blocks").expect("default"),
        filename_format: p.text("filename-format").map(str::to_string),
        blockalign: p.num("blockalign").unwrap_or(0),
        percentage_random: p.small("percentage-random").expect("default"),
        file_service: FileService::parse(p.text("file-service-type").expect("default"))?,
        write_bssplit,
        offset_increment: p.num("offset-increment").expect("default"),
        contents: Contents::of(p),
        placement: placement::placement(p, engine)?,
        zones: zones::strided(p, nrfiles, rw.random())?,
        beside: Vec::new(),
        never_started: Vec::new(),
        verify_only: false,
        earlier_groups: Vec::new(),
        existing_files: false,
        size_of_files: false,
        fio: None,
    })
}

impl IoParams {
    #[cfg(test)]
    pub(crate) fn parse(args: &str) -> anyhow::Result<IoParams> {
        build(&super::KIND.parse_cli(args)?)
    }

    /// This job and the jobs beside it, in the job file's order.
    pub fn jobs(&self) -> impl Iterator<Item = &IoParams> {
        std::iter::once(self).chain(&self.beside)
    }

    /// Every block size the job may use: `bssplit`'s and the writes' own.
    pub fn block_sizes(&self) -> impl Iterator<Item = u64> + '_ {
        (self.bssplit.iter().chain(&self.write_bssplit))
            .map(|b| b.0)
            .chain(self.write_bs)
    }

    pub fn max_bs(&self) -> u64 {
        self.block_sizes().max().unwrap_or(0)
    }

    pub fn min_bs(&self) -> u64 {
        self.block_sizes().min().unwrap_or(0)
    }

    /// I/Os in flight per job: the engine's depth (the synchronous ones have one).
    pub fn depth(&self) -> u32 {
        if self.engine.queues() {
            self.iodepth
        } else {
            1
        }
    }

    /// How fio reaps (its `wait_for_completions`): at least this many completions, at most
    /// this many a call, and, once the queue was full, down to this depth.
    pub(crate) fn reaping(&self) -> (usize, usize, usize) {
        let depth = self.depth() as usize;
        let or_depth = |n: u32| match n as usize {
            0 => depth,
            n => n.min(depth),
        };
        let min = self.iodepth_batch_complete_min as usize;
        // fio's default maximum is the minimum: one completion a call.
        let max = (self.iodepth_batch_complete_max as usize).clamp(min, depth.max(min));
        (min, max, or_depth(self.iodepth_low))
    }

    /// The bytes one file's I/O covers: from `offset` to its end.
    pub(crate) fn region(&self) -> u64 {
        self.filesize.saturating_sub(self.offset)
    }
}

// Under MPI each rank has files of its own (in its own directory), aggregated as IOR does:
// no refusal.
impl IoParams {
    /// One job's I/O buffers: one block per slot in flight, aligned, for each of its copies.
    fn job_buffer_bytes(&self) -> u64 {
        (self.max_bs() + 4096)
            .saturating_mul(u64::from(self.depth()))
            .saturating_mul(u64::from(self.numjobs))
    }
}

impl WorkloadParams for IoParams {
    const KIND: &'static WorkloadKind = &super::KIND;
    const REPORTS: &'static [&'static str] = &["fio", "fio-json", "fio-json+", "fio-terse"];

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    fn name(&self) -> String {
        self.label()
    }

    fn validate(&self) -> anyhow::Result<()> {
        self.check()
    }

    fn describe(&self) -> String {
        self.description()
    }

    /// Every job's I/O buffers, of the jobs that run at the same time too.
    fn buffer_bytes(&self) -> u64 {
        self.jobs().map(IoParams::job_buffer_bytes).sum()
    }

    fn space_needed(&self) -> Option<SpaceNeed> {
        space::needed(self)
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        Cow::Borrowed(super::PHASES)
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(super::Io::new(self.clone()))
    }

    fn threads(&self) -> u32 {
        self.jobs().map(|j| j.numjobs).sum()
    }

    fn worker_mode(&self) -> Option<WorkerMode> {
        Some(self.workers)
    }

    /// Under `--shared-dir` the ranks' jobs share their files (IOR without `-F`); not the
    /// groups a group runs again first, which every rank would make at once.
    fn mpi_shares_directory(&self) -> bool {
        self.earlier_groups.is_empty()
    }

    fn rank_instance(&self, rank: &RankShare<'_>) -> Box<dyn Workload> {
        match rank.shared_dir {
            Some(_) => Box::new(super::Io::new(shared_file_share(self, rank.rank))),
            None => self.instantiate(),
        }
    }

    fn needs(&self) -> Option<Need> {
        // PMDK's engines open no file `O_DIRECT`.
        self.jobs()
            .any(|j| j.direct && !j.engine.pmem())
            .then_some(Need {
                capability: Capability::Direct,
                option: "`direct`",
            })
    }
}

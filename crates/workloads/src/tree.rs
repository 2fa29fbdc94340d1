//! The fdtree metadata tree (Layton's Linux Magazine article): directory create, file create, file
//! remove, directory remove, over exactly fdtree.bash's tree, names and order.
//!
//! fdtree.bash names a directory `L<level>D<n>` and a file `L<level>F<n>`, where the level counts
//! down from `levels` at the root to 0 at the leaves and `n` counts down from `dirs` (or
//! `files`) to 1. Directory create makes a directory's children, then recurses into each
//! that has children of its own (fdtree.bash also cds into the leaves; that only costs calls);
//! directory remove recurses first, then removes the children; file create and remove visit a
//! directory's files, then recurse. The root `LEVEL0.<host>.<pid>` is made in the directory
//! create phase and removed in the directory remove phase, as fdtree times it.
//!
//! Every operation is one system call relative to its parent's descriptor; the recursion holds
//! one descriptor per level, so memory is independent of the tree's size.

use std::borrow::Cow;
use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::{AtFlags, Mode};
use serde::{Deserialize, Serialize};

use super::options::{Parsed, WorkloadKind};
use super::{PhaseInfo, PhaseOutput, RankShare, SpaceNeed, Workload, WorkloadParams};
use crate::oracle::Oracle;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::{OpKind, PhaseRecorder};
use fsbench_model::units::group_thousands;
use fsbench_model::workload::WorkerMode;
pub use phase::{PHASES, Phase};
pub use threads::Share;

/// fdtree's block: file sizes are given in 4 KiB blocks.
pub const BLOCK: usize = 4096;
/// Deeper trees would need more descriptors than a default `ulimit -n` allows.
pub(crate) const MAX_LEVELS: u32 = 100;

/// The tree workload's option table.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "tree",
    summary: "fdtree: create and remove a tree of directories and files",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "default",
    more_work: &["dirs", "files", "levels"],
    aliases: &[
        ("mdtest-easy", "mdtest-easy"),
        ("mdtest-hard", "mdtest-hard"),
    ],
};

fn build(p: &Parsed) -> anyhow::Result<TreeParams> {
    let n = |name| p.small(name).expect("tree options have preset values");
    let params = TreeParams {
        stat: p.flag("stat"),
        read: p.flag("read"),
        threads: p.small("threads").expect("threads has a default"),
        workers: crate::parallel::workers_of(p),
        shared: p.flag("shared"),
        fsync: p.flag("fsync"),
        bytes: p.small("bytes"),
        ..TreeParams::new(n("dirs"), n("files"), n("size"), n("levels"))
    };
    Ok(params.named())
}

/// fdtree's four parameters (`-d -f -s -l`) and the preset they came from, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "serde_json::Map<String, serde_json::Value>")]
pub struct TreeParams {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Subdirectories per directory (`-d`).
    pub dirs: u32,
    /// Files per directory (`-f`).
    pub files: u32,
    /// File size in 4 KiB blocks (`-s`).
    pub size: u32,
    /// Levels below the root (`-l`).
    pub levels: u32,
    /// mdtest's file stat phase.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stat: bool,
    /// mdtest's file read phase.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read: bool,
    /// Workers, each on a tree of its own (the totals are all workers').
    #[serde(skip_serializing_if = "is_one")]
    pub threads: u32,
    /// Whether the workers are processes or threads.
    #[serde(default, skip_serializing_if = "crate::parallel::is_default_mode")]
    pub workers: WorkerMode,
    /// The threads share one tree (mdtest without -u).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
    /// File size in bytes, instead of `size` blocks (mdtest's `-w`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u32>,
    /// Each file fsync'ed once written, each directory once its files are made.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fsync: bool,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// The suite-file form: a preset, explicit numbers, or a preset with some numbers overridden.
impl TryFrom<serde_json::Map<String, serde_json::Value>> for TreeParams {
    type Error = anyhow::Error;

    fn try_from(map: serde_json::Map<String, serde_json::Value>) -> anyhow::Result<TreeParams> {
        build(&KIND.parse_map(&map)?)
    }
}

impl TreeParams {
    pub fn new(dirs: u32, files: u32, size: u32, levels: u32) -> TreeParams {
        TreeParams {
            preset: None,
            dirs,
            files,
            size,
            levels,
            stat: false,
            read: false,
            threads: 1,
            workers: WorkerMode::default(),
            shared: false,
            bytes: None,
            fsync: false,
        }
        .named()
    }

    /// Attaches the preset name whose values these are, if one matches: its numbers and
    /// byte size, and the flags it lists (`small-shallow,stat` is the preset with a flag).
    fn named(mut self) -> TreeParams {
        self.preset = PRESETS
            .iter()
            .find(|preset| {
                let listed = |key: &str| preset.values.iter().any(|(k, _)| *k == key);
                let numbers = ["dirs", "files", "size", "levels", "bytes"];
                preset.matches(&numbers, |key| self.value_of(key))
                    && ["stat", "read"]
                        .iter()
                        .all(|key| !listed(key) || self.value_of(key).is_some())
            })
            .map(|preset| preset.name.to_string());
        self
    }

    /// An option's value as a preset spells it; `None` when unset (or a flag off).
    fn value_of(&self, key: &str) -> Option<String> {
        match key {
            "dirs" => Some(self.dirs.to_string()),
            "files" => Some(self.files.to_string()),
            "size" => Some(self.size.to_string()),
            "levels" => Some(self.levels.to_string()),
            "bytes" => self.bytes.map(|b| b.to_string()),
            "stat" => self.stat.then(|| "true".to_string()),
            "read" => self.read.then(|| "true".to_string()),
            _ => None,
        }
    }

    /// Bytes in each file: `bytes`, or `size` blocks.
    pub(crate) fn file_bytes(&self) -> u64 {
        self.bytes
            .map_or(u64::from(self.size) * BLOCK as u64, u64::from)
    }

    /// Parses the part after `tree:`: a preset and/or `dirs=N,files=N,size=N,levels=N`
    /// (fdtree's letters d, f, s, l work too; unnamed values come from the preset, by default
    /// `default`, the default run's).
    pub fn parse(args: &str) -> anyhow::Result<TreeParams> {
        build(&KIND.parse_cli(args)?)
    }

    /// (directories, files, KiB), or `None` on overflow.
    fn checked_totals(&self) -> Option<(u64, u64, u64)> {
        // fdtree: ndtot = 1 + d * ndtot, once per level and once for the root.
        let mut one_tree: u64 = 0;
        for _ in 0..=self.levels {
            one_tree = (self.dirs as u64).checked_mul(one_tree)?.checked_add(1)?;
        }
        let threads = self.threads.max(1) as u64;
        let dirs = one_tree.checked_mul(if self.shared { 1 } else { threads })?;
        let files = one_tree
            .checked_mul(threads)?
            .checked_mul(self.files as u64)?;
        let kib = files.checked_mul(self.file_bytes())?.div_ceil(1024);
        // Beyond a billion entries no filesystem test here is meaningful.
        (dirs.checked_add(files)? <= 1_000_000_000).then_some((dirs, files, kib))
    }

    /// Directories in the tree, the root included: Σ d^i for i = 0..=l.
    pub fn total_dirs(&self) -> u64 {
        self.checked_totals().map_or(u64::MAX, |t| t.0)
    }

    pub fn total_files(&self) -> u64 {
        self.checked_totals().map_or(u64::MAX, |t| t.1)
    }

    pub fn total_kib(&self) -> u64 {
        self.checked_totals().map_or(u64::MAX, |t| t.2)
    }
}

impl TreeParams {
    /// The phases run, in order.
    fn phase_list(&self) -> Vec<Phase> {
        let mut phases = vec![Phase::DirCreate, Phase::FileCreate];
        phases.extend(self.stat.then_some(Phase::FileStat));
        phases.extend(self.read.then_some(Phase::FileRead));
        phases.extend([Phase::FileRemove, Phase::DirRemove]);
        phases
    }
}

impl WorkloadParams for TreeParams {
    const KIND: &'static WorkloadKind = &KIND;

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    /// The preset's name, or fdtree's flags for a custom tree.
    fn name(&self) -> String {
        let mut name = self.preset.clone().unwrap_or_else(|| {
            format!(
                "d{}-f{}-s{}-l{}",
                self.dirs, self.files, self.size, self.levels
            )
        });
        let preset = PRESETS
            .iter()
            .find(|p| Some(p.name) == self.preset.as_deref());
        let in_preset = |key: &str| preset.is_some_and(|p| p.values.iter().any(|(k, _)| *k == key));
        for (flag, on) in [("stat", self.stat), ("read", self.read)] {
            if on && !in_preset(flag) {
                name.push_str(&format!(",{flag}"));
            }
        }
        if let Some(bytes) = self.bytes.filter(|_| !in_preset("bytes")) {
            name.push_str(&format!(",bytes={bytes}"));
        }
        if self.threads > 1 {
            name.push_str(&format!(",threads={}", self.threads));
            if self.workers != WorkerMode::default() {
                name.push_str(&format!(",workers={}", self.workers.name()));
            }
        }
        if self.shared {
            name.push_str(",shared");
        }
        if self.fsync {
            name.push_str(",fsync");
        }
        name
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.dirs == 0 {
            return Err(invalid(
                "tree: directories per level (-d) must be at least 1",
            ));
        }
        if self.files == 0 {
            return Err(invalid("tree: files per directory (-f) must be at least 1"));
        }
        if self.shared && self.threads < 2 {
            return Err(invalid(
                "tree: shared is the threads' sharing of one tree: give threads=N (N ≥ 2); \
                 under MPI, --shared-dir shares it between ranks",
            ));
        }
        if self.levels > MAX_LEVELS {
            return Err(invalid(format!(
                "tree: {} levels is more than the {MAX_LEVELS} fsbench supports",
                self.levels
            )));
        }
        self.checked_totals().ok_or_else(|| {
            invalid(format!(
                "tree: -d {} -l {} -f {} -s {} is absurdly large ({}^{} directories)",
                self.dirs, self.levels, self.files, self.size, self.dirs, self.levels
            ))
        })?;
        Ok(())
    }

    fn describe(&self) -> String {
        let extra = match (self.stat, self.read) {
            (true, true) => "; every file stat'ed, then read (mdtest -T -E)",
            (true, false) => "; every file stat'ed (mdtest -T)",
            (false, true) => "; every file read (mdtest -E)",
            (false, false) => "",
        };
        let extra = match self.bytes {
            Some(b) => format!("; files of {b} bytes{extra}"),
            None => extra.to_string(),
        };
        let workers = self.workers.name();
        let extra = match (self.threads, self.shared) {
            (0 | 1, _) => extra,
            (n, false) => format!("{extra}; {n} {workers}, each on a tree of its own"),
            (n, true) => format!("{extra}; {n} {workers} sharing one tree, each its own files"),
        };
        let extra = match self.fsync {
            true => format!("{extra}; every file and directory fsync'ed once made"),
            false => extra,
        };
        format!(
            "fdtree -d {} -f {} -s {} -l {}: {} dirs, {} files, {} KiB{extra}",
            self.dirs,
            self.files,
            self.size,
            self.levels,
            group_thousands(self.total_dirs()),
            group_thousands(self.total_files()),
            group_thousands(self.total_kib())
        )
    }

    /// `None` when the totals overflow.
    fn space_needed(&self) -> Option<SpaceNeed> {
        let (dirs, files, kib) = self.checked_totals()?;
        let inodes = dirs.checked_add(files)?;
        // Data, a block per directory, a KiB per file for its inode and entry (btrfs keeps
        // four items of it twice over; a block per file refused 10^7 that fit).
        let (dir_bytes, file_bytes) = (dirs.checked_mul(BLOCK as u64)?, files.checked_mul(1024)?);
        let bytes = (kib.checked_mul(1024)?.checked_add(dir_bytes)?).checked_add(file_bytes)?;
        Some(SpaceNeed::exactly(bytes, inodes))
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        if !self.stat && !self.read {
            return Cow::Borrowed(PHASES);
        }
        Cow::Owned(self.phase_list().into_iter().map(Phase::info).collect())
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(Tree::new(self.clone(), default_base_name()))
    }

    fn threads(&self) -> u32 {
        self.threads
    }

    fn worker_mode(&self) -> Option<WorkerMode> {
        Some(self.workers)
    }

    fn mpi_shares_directory(&self) -> bool {
        true
    }

    fn stonewall_phase(&self) -> Result<&'static str, &'static str> {
        match self.threads {
            0 | 1 => Ok("file-create"),
            _ => Err(
                "a rank's threads would have to stop and agree among themselves as well; give \
                 the threads as ranks (mpirun -np) instead",
            ),
        }
    }

    /// Stat, read and remove act on another rank's files; in a shared tree not dir-remove,
    /// which rank 0 alone does.
    fn shifted_phases(&self, shared_dir: bool) -> &'static [&'static str] {
        match shared_dir {
            true => &["file-stat", "file-read", "file-remove"],
            false => &["file-stat", "file-read", "file-remove", "dir-remove"],
        }
    }

    /// A tree of the rank's own (`tree.r<rank>`, distinct so that shifted ranks find each
    /// other's), or its share of the one shared tree, its files named with its rank.
    fn rank_instance(&self, rank: &RankShare<'_>) -> Box<dyn Workload> {
        let mut tree = match rank.shared_dir {
            Some(shared) => Tree::new(self.clone(), shared.into()).shared(Share {
                makes_dirs: rank.rank == 0,
                rank: Some(rank.rank as u32),
                thread: None,
            }),
            None => Tree::new(self.clone(), format!("tree.r{}", rank.rank)),
        };
        if let Some(s) = rank.stonewall {
            tree = tree.with_stonewall(s.clone());
        }
        Box::new(tree)
    }
}

/// `LEVEL0.<short hostname>.<pid>`, fdtree's root name.
pub fn default_base_name() -> String {
    let uname = rustix::system::uname();
    let host = uname.nodename().to_string_lossy();
    let short = host.split('.').next().unwrap_or("localhost");
    format!("LEVEL0.{short}.{}", std::process::id())
}

/// The tree workload: its parameters, the root directory's name, and who this one is when
/// several processes or threads share the tree.
pub struct Tree {
    params: TreeParams,
    /// Which phase each index runs.
    phases: Vec<Phase>,
    base: CString,
    /// One block: zeros to write, the buffer to read into.
    block: Vec<u8>,
    /// One of several sharing the tree; `None`: the tree is this one's alone.
    share: Option<Share>,
    /// mdtest's `-W` on file create (MPI), and the count the ranks agreed on.
    stonewall: Option<Stonewall>,
    /// A file phase's place in the walk order: files visited, and the count it stops at.
    visited: u64,
    limit: u64,
    /// Armed while a stonewalled file create runs.
    deadline: Option<stonewall::Deadline>,
    /// Where a crash-recorded run notes what each fsync covered.
    oracle: Option<Oracle>,
}

impl Tree {
    pub fn new(params: TreeParams, base: String) -> Tree {
        // Zeros would read back the same from a block that never reached the disk.
        let fill = if params.fsync { 0xa5 } else { 0 };
        Tree {
            phases: params.phase_list(),
            params,
            base: CString::new(base).expect("base name has no NUL"),
            block: vec![fill; BLOCK],
            share: None,
            stonewall: None,
            visited: 0,
            limit: u64::MAX,
            deadline: None,
            oracle: None,
        }
    }

    /// This tree, shared with others; `share` says who this one is.
    pub fn shared(self, share: Share) -> Tree {
        Tree {
            share: Some(share),
            ..self
        }
    }

    /// This tree with mdtest's stonewall on its file create.
    pub fn with_stonewall(self, stonewall: Stonewall) -> Tree {
        Tree {
            stonewall: Some(stonewall),
            ..self
        }
    }

    pub fn base_name(&self) -> &str {
        self.base.to_str().expect("base name is UTF-8")
    }

    /// Whether this one does the directory phases: its own tree's, or as the sharers' maker.
    fn makes_dirs(&self) -> bool {
        self.share.is_none_or(|s| s.makes_dirs)
    }

    /// Shared with other threads or processes (by the option, or as a sharer).
    fn is_shared(&self) -> bool {
        self.params.shared || self.share.is_some()
    }

    /// Files the phases after file create visit: as many as the stonewall agreed, or all.
    fn files_made(&self) -> Option<u64> {
        Some(self.stonewall.as_ref()?.agreed.get()?.items)
    }
}

impl Workload for Tree {
    fn phases(&self) -> std::borrow::Cow<'static, [PhaseInfo]> {
        self.params.phases()
    }

    fn expected_units(&self, phase: usize) -> u64 {
        match self.phases[phase] {
            p if p.on_dirs() && !self.makes_dirs() => 0,
            Phase::DirCreate | Phase::DirRemove => self.params.total_dirs(),
            Phase::FileCreate => self.params.total_files(),
            Phase::FileStat | Phase::FileRead | Phase::FileRemove => {
                self.files_made().unwrap_or(self.params.total_files())
            }
        }
    }

    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        if self.params.threads > 1 {
            return threads::run_phase(self, phase, dir, rec);
        }
        let levels = self.params.levels;
        if let (Some(oracle), Phase::FileRemove | Phase::DirRemove) =
            (&self.oracle, self.phases[phase])
        {
            oracle.void();
        }
        self.visited = 0;
        self.limit = u64::MAX;
        match self.phases[phase] {
            // mdtest without -u: rank 0 alone makes and removes the shared tree.
            p if p.on_dirs() && !self.makes_dirs() => Ok(()),
            Phase::DirCreate => {
                let made = rustix::fs::mkdirat(dir, &self.base, Mode::from(0o755));
                let failure = made.err();
                if rec.record(OpKind::Mkdir, made)?.is_none() {
                    return Err(FsbenchError::Failed(format!(
                        "cannot create tree root `{}`: {}",
                        self.base_name(),
                        failure.map_or_else(String::new, |e| e.to_string())
                    )));
                }
                rec.unit_done(0)?;
                let base = self.open_base(dir, rec)?;
                self.create_dirs(base.as_fd(), levels, rec)
            }
            Phase::FileCreate if self.stonewall.is_some() => {
                let base = self.open_base(dir, rec)?;
                stonewall::create_files(self, base.as_fd(), rec)
            }
            Phase::FileCreate => {
                let base = self.open_base(dir, rec)?;
                self.walk_files(base.as_fd(), levels, rec, FileStep::Create)
            }
            file_phase @ (Phase::FileStat | Phase::FileRead | Phase::FileRemove) => {
                let step = match file_phase {
                    Phase::FileStat => FileStep::Stat,
                    Phase::FileRead => FileStep::Read,
                    _ => FileStep::Remove,
                };
                // After a stonewall, the files made: the first ones in the walk order.
                self.limit = self.files_made().unwrap_or(u64::MAX);
                let base = self.open_base(dir, rec)?;
                self.walk_files(base.as_fd(), levels, rec, step)
            }
            Phase::DirRemove => {
                let base = self.open_base(dir, rec)?;
                self.remove_dirs(base.as_fd(), levels, rec)?;
                drop(base);
                let removed = rustix::fs::unlinkat(dir, &self.base, AtFlags::REMOVEDIR);
                if rec.record(OpKind::Rmdir, removed)?.is_some() {
                    rec.unit_done(0)?;
                }
                Ok(())
            }
        }
    }

    fn after_phase(
        &mut self,
        phase: usize,
        _dir: BorrowedFd<'_>,
    ) -> Result<PhaseOutput, FsbenchError> {
        let dirs = self.phases[phase].on_dirs();
        if !(dirs && self.is_shared() && self.makes_dirs()) {
            return Ok(PhaseOutput::default());
        }
        Ok(PhaseOutput {
            notes: vec![
                "one shared tree (mdtest without -u): one process alone (MPI rank 0's thread 0) \
                 makes and removes its directories; the others do no items here and add only \
                 their own files"
                    .into(),
            ],
            ..PhaseOutput::default()
        })
    }

    fn record_durability(&mut self, oracle: Oracle) {
        self.oracle = Some(oracle);
    }
}

mod phase;
mod presets;
mod stonewall;
mod threads;
mod walk;
use presets::{OPTIONS, PRESETS};
#[cfg(feature = "mpi")]
pub use stonewall::Agreed;
pub use stonewall::Stonewall;
use walk::FileStep;

#[cfg(test)]
mod tests;

//! FFSB (the large-file write report's benchmark): thread groups, each with a thread count and
//! weighted operations, run on a file set made before the timed part; time-based (`time`) or a
//! fixed number of operations per thread. Phases: `setup` (the file set), `run` (the thread
//! groups, then unmount and fsck with the files in place: FFSB's e2fsck time), `remove` (`rm -rf`
//! of the file set).
//!
//! As FFSB does it, each thread picks its next operation by cumulative weight from a random
//! number below the total weight, and picks files at random from the shared file set. The
//! threads run as processes or threads (`workers=`, processes by default, as the other
//! workloads'): the file set they share is in memory shared by processes for the run. Each
//! transaction is one operation on one file (a whole create, a whole read of `read_size`).

pub mod aging;
pub mod profile;
mod worker;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;

use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};

use super::options::{OptKind, OptionDef, Parsed, Preset, WorkloadKind};
use super::{Boundary, Need, PhaseInfo, PhaseOutput, SpaceNeed, Workload, WorkloadParams};
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::extents::Mapper;
use fsbench_measure::measure::{CpuTimes, OpKind, PhaseRecorder};
use fsbench_measure::rmtree;
use fsbench_model::aging::AgeProfile;
use fsbench_model::filesystem::Capability;
use fsbench_model::measurement::Figure;
use fsbench_model::units::{compact_size, format_bytes, group_thousands};
use worker::{FileTable, RunTotals};

mod params;
pub use params::*;

mod parts;
pub use parts::*;

const SETUP_PHASE: PhaseInfo = PhaseInfo::fixed("setup", "files", true);
const REMOVE_PHASE: PhaseInfo = PhaseInfo::fixed("remove", "entries", false);
pub const PHASES: &[PhaseInfo] = &[
    SETUP_PHASE,
    // Operations run, one per weighted choice: FFSB's "transactions" count blocks, and its
    // `transactions/s` figure keeps that name and meaning.
    PhaseInfo::fixed("run", "operations", true),
    REMOVE_PHASE,
];
/// `time=0` without `num_ops`: FFSB only builds the file set ("Setup complete, exiting").
const SETUP_ONLY_PHASES: &[PhaseInfo] = &[SETUP_PHASE, REMOVE_PHASE];
const SETUP: usize = 0;
const RUN: usize = 1;
const REMOVE: usize = 2;

pub struct Ffsb {
    params: FfsbParams,
    /// File sizes in use (min, max): the parameters, or shrunk to fit.
    sizes: Option<(u64, u64)>,
    files: FileTable,
    totals: Option<RunTotals>,
    cpu: Option<CpuTimes>,
    notes: Vec<String>,
    mapper: Mapper,
}

impl Ffsb {
    pub fn new(params: FfsbParams) -> Ffsb {
        Ffsb {
            notes: params.notes.clone(),
            params,
            sizes: None,
            files: FileTable::default(),
            totals: None,
            cpu: None,
            mapper: Mapper::new(),
        }
    }

    /// The sizes files get on this target, shrunk (and said so) when the preset asks.
    fn sizes_for(&mut self, dir: BorrowedFd<'_>) -> Result<(u64, u64), FsbenchError> {
        if let Some(s) = self.sizes {
            return Ok(s);
        }
        let fs = &self.params.fileset;
        let (mut min, mut max) = (fs.min_filesize, fs.max_filesize);
        if fs.fit {
            let files = (self.params.created_files() + u64::from(fs.num_files)).max(1);
            let block = self
                .params
                .groups
                .iter()
                .map(|g| g.write_blocksize)
                .max()
                .unwrap_or(4096)
                .max(4096);
            if let (fitted, Some(free)) = fsbench_measure::calls::fit_size(dir, max, files, block)?
            {
                max = fitted;
                min = min.min(max);
                self.notes.push(format!(
                    "files of {} (the {} asked for do not fit {} files in the {} free)",
                    format_bytes(max),
                    format_bytes(fs.max_filesize),
                    files,
                    format_bytes(free)
                ));
            }
        }
        self.sizes = Some((min, max));
        Ok((min, max))
    }

    /// Makes `data/` (with its `dirN`), `meta/` and the file set, as FFSB does before timing.
    fn setup(&mut self, dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let sizes = self.sizes_for(dir)?;
        // A set that can never fit is refused before any of it is made: millions of
        // directories made until ENOSPC would take as long again to remove.
        let fileset = &self.params.fileset;
        let inodes = u64::from(fileset.num_dirs) + u64::from(fileset.num_files) + 2;
        let free = fsbench_measure::calls::free_inodes(dir);
        if inodes > free {
            return Err(FsbenchError::InvalidInput(format!(
                "ffsb: the file set's {} directories and files need more inodes than the {} free: use smaller num_dirs and num_files, or a filesystem with more inodes",
                group_thousands(inodes),
                group_thousands(free)
            )));
        }
        for name in ["data", "meta"] {
            let made = rustix::fs::mkdirat(dir, name, Mode::from(0o755));
            if rec.record(OpKind::Mkdir, made)?.is_none() {
                return Err(FsbenchError::Failed(format!("ffsb: cannot make {name}/")));
            }
        }
        let data = open_dir(dir, "data")?;
        let mut names = worker::Names::default();
        for d in 0..self.params.fileset.num_dirs {
            let made = rustix::fs::mkdirat(&data, names.dir(d), Mode::from(0o755));
            if rec.record(OpKind::Mkdir, made)?.is_none() {
                return Err(FsbenchError::Failed(format!(
                    "ffsb: cannot make datadir{d}"
                )));
            }
        }
        worker::make_file_set(
            &data,
            &self.params,
            sizes,
            self.params.fileset.create_block(),
            &mut self.files,
            rec,
        )
    }
}

fn ram_bytes() -> Option<u64> {
    let info = rustix::system::sysinfo();
    (info.totalram as u64).checked_mul(u64::from(info.mem_unit))
}

fn open_dir(dir: BorrowedFd<'_>, name: &str) -> Result<rustix::fd::OwnedFd, FsbenchError> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| FsbenchError::Failed(format!("ffsb: cannot open {name}/: {e}")))
}

impl Ffsb {
    /// Which of SETUP, RUN, REMOVE the phase at `index` is (a setup-only profile has no RUN).
    fn kind(&self, index: usize) -> usize {
        if self.params.setup_only() && index >= RUN {
            index + 1
        } else {
            index
        }
    }
}

impl Workload for Ffsb {
    fn filesystem_lacks(&mut self, lacks: &[Capability]) {
        self.mapper
            .declare_fiemap(!lacks.contains(&fsbench_model::filesystem::Capability::Fiemap));
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        self.params.phases()
    }

    fn expected_units(&self, phase: usize) -> u64 {
        match self.kind(phase) {
            SETUP => u64::from(self.params.fileset.num_files),
            // A time-based run has no known end in transactions.
            RUN if self.params.run_time().is_none() => self
                .params
                .groups
                .iter()
                .map(|g| g.ops_per_thread.unwrap_or(0) * u64::from(g.num_threads))
                .sum(),
            RUN => 0,
            _ => self.files.live() as u64,
        }
    }

    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        match self.kind(phase) {
            SETUP => self.setup(dir, rec),
            RUN => {
                let data = open_dir(dir, "data")?;
                let meta = open_dir(dir, "meta")?;
                let sizes = self.sizes_for(dir)?;
                let (totals, cpu) =
                    worker::run_groups(&self.params, (&data, &meta), sizes, &mut self.files, rec)?;
                self.totals = Some(totals);
                self.cpu = Some(cpu);
                Ok(())
            }
            REMOVE => {
                for name in [b"data".as_slice(), b"meta"] {
                    rmtree::remove(dir, name, rec)?;
                }
                Ok(())
            }
            _ => unreachable!("ffsb has three phases"),
        }
    }

    fn after_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
    ) -> Result<PhaseOutput, FsbenchError> {
        let mut out = PhaseOutput::default();
        let phase = self.kind(phase);
        if phase == SETUP {
            out.notes.append(&mut self.notes);
            // large-write's files are made by its run: there is no set to build.
            if self.params.fileset.num_files == 0 {
                out.idle = Some("no files: the file set is empty".into());
            }
        }
        if phase != RUN {
            return Ok(out);
        }
        let Some(totals) = self.totals.take() else {
            return Ok(out);
        };
        let cpu = self.cpu.take().expect("set with the totals");
        out.figures = totals.figures(&cpu);
        if self.params.fileset.fit {
            let (_, max) = self.sizes.unwrap_or_default();
            out.figures.push(Figure::new(
                "file size",
                "MiB",
                true,
                max as f64 / f64::from(1 << 20),
            ));
        }
        out.notes.append(&mut self.notes);
        out.notes.extend(totals.notes());
        if let Some(ram) = ram_bytes()
            && totals.written() > 0
            && totals.written() < ram
        {
            out.notes.push(format!(
                "the {} written fit in the {} of RAM: write throughput is largely the page cache's; sync-after and time+unmount show when the data reached the disk",
                format_bytes(totals.written()),
                format_bytes(ram)
            ));
        }
        // Fragmentation of every file left, after the sync that followed the phase.
        let data = open_dir(dir, "data")?;
        let dirs = self.params.fileset.num_dirs;
        match worker::count_extents(&data, &self.files, dirs, &mut self.mapper) {
            Ok(Some((avg, max))) => {
                out.figures
                    .push(Figure::new("extents avg", "per file", false, avg));
                out.figures
                    .push(Figure::new("extents max", "per file", false, max as f64));
            }
            Ok(None) => {}
            Err(e) => out.notes.push(fsbench_measure::extents::not_counted(e)),
        }
        Ok(out)
    }

    fn boundary_after(&self, phase: usize) -> Boundary {
        if self.kind(phase) == RUN {
            Boundary::Remount
        } else {
            Boundary::Keep
        }
    }
}

#[cfg(test)]
mod tests;

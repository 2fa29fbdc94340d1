//! A group's files as the groups before it in its job file left them: fio runs the groups
//! one after the other in one directory, fsbench each on a fresh one, so the groups whose
//! files a group uses run again first, untimed, in its run's directory. Its layout then
//! leaves a file that is already as large as a job needs as it is (fio's rule: a smaller one
//! is made anew), and a job without `size` takes its files' size.

use std::os::fd::BorrowedFd;
use std::sync::Arc;

use rustix::fs::AtFlags;

use super::super::{Io, IoParams};
use super::file_name;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::{PhaseRecorder, Progress};

impl Io {
    /// The groups before this one whose files it uses, each run as in a run of its own (its
    /// checks, its layout, its ramp, its jobs, its `unlink`), nothing of it recorded; a note
    /// saying so for the run's figures.
    pub(super) fn run_earlier_groups(&mut self, dir: BorrowedFd<'_>) -> Result<(), FsbenchError> {
        let groups = std::mem::take(&mut self.params.earlier_groups);
        let ran = groups.iter().try_for_each(|group| {
            let mut before = Io::new(group.clone());
            before.round = self.round;
            before.cancel = self.cancel.clone();
            before.check(dir)?;
            let progress = Arc::new(Progress {
                cancel: self.cancel.clone(),
                ..Progress::default()
            });
            let mut rec = PhaseRecorder::start("earlier group", progress);
            before.layout(dir, &mut rec)?;
            before.prepare_jobs(dir)?;
            for pattern in &mut before.patterns {
                pattern.new_pass();
            }
            before.run_jobs(dir, &mut rec, true)?;
            before.unlink_files(dir)
        });
        let names: Vec<&str> = (groups.iter())
            .map(|g| g.job.as_deref().unwrap_or("io"))
            .collect();
        if ran.is_ok() && !names.is_empty() {
            self.notes.push(format!(
                "files of the groups before it: {} ran again first, untimed, in the layout phase (fio keeps a job file's files from group to group; fsbench runs each group on fresh ones)",
                names.join(", ")
            ));
        }
        self.params.earlier_groups = groups;
        ran
    }

    /// Each job without `size` on files a group before it made: its size theirs (in whole
    /// blocks after its offset; at most the cap's), as fio's.
    pub(super) fn fit_to_files(&mut self, dir: BorrowedFd<'_>) -> Result<(), FsbenchError> {
        let regions = (self.params.jobs().enumerate())
            .map(|(j, p)| {
                p.size_of_files
                    .then(|| existing_region(p, j, dir))
                    .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        fit(&mut self.params, regions[0]);
        for (p, region) in self.params.beside.iter_mut().zip(&regions[1..]) {
            fit(p, *region);
        }
        Ok(())
    }
}

/// Job `p` on files whose smallest leaves `region` bytes after its offset (if it takes its
/// files' size).
pub(in crate::io) fn fit(p: &mut IoParams, region: Option<u64>) {
    if let Some(region) = region {
        p.filesize = p.filesize.min(p.offset + region);
        p.size = p.size.min(region.saturating_mul(u64::from(p.nrfiles)));
    }
}

/// The smallest region job `p`'s files (it the `j`-th of its group) leave after each copy's
/// offset, in whole blocks (fio reads no block past a file's end).
fn existing_region(p: &IoParams, j: usize, dir: BorrowedFd<'_>) -> Result<u64, FsbenchError> {
    let name = p.job.as_deref().unwrap_or("io");
    let mut region = u64::MAX;
    for copy in 0..p.numjobs {
        for f in 0..p.nrfiles as usize {
            let file = file_name(p, j, copy, f);
            let size = existing_size(dir, &file)?.ok_or_else(|| {
                FsbenchError::InvalidInput(format!(
                    "io: job `{name}` has no `size` and its file {file} no longer exists (fio: \"you need to specify size=\")"
                ))
            })?;
            region = region.min(size.saturating_sub(p.copy_offset(copy)));
        }
    }
    let bs = p.max_bs().max(1);
    match region / bs * bs {
        0 => Err(FsbenchError::InvalidInput(format!(
            "io: job `{name}` has no `size`, and its files leave less than a block ({bs} bytes) after its offset (fio: \"blocksize is larger than data set range\")"
        ))),
        whole => Ok(whole),
    }
}

/// The size of file `name` under `dir`, `None` where there is none.
pub(super) fn existing_size(dir: BorrowedFd<'_>, name: &str) -> Result<Option<u64>, FsbenchError> {
    match rustix::fs::statat(dir, name, AtFlags::empty()) {
        Ok(st) => Ok(Some(st.st_size as u64)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(FsbenchError::Failed(format!("io: stat {name}: {e}"))),
    }
}

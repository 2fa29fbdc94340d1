//! fio's log files (`write_lat_log`, `write_bw_log`, `write_iops_log`, `write_hist_log`)
//! written as each run ends, where fio writes them: relative to the working directory, or
//! where the job file's absolute prefix says. A suite of one configuration and one run
//! writes fio's very names; otherwise each run's files go to a directory of their own beside
//! them, `CONFIG.runN/`, so that no run overwrites another's.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use fsbench_model::fio::LogOptions;
use fsbench_model::measurement::LogFile;

use fsbench_engine::runner::observer::{Observer, SuitePlan};
use fsbench_model::results::{PhaseRecord, RunRecord};
use fsbench_workloads::io::IoParams;

/// Writes each run's logs as it ends.
#[derive(Default)]
pub(super) struct LogWriter {
    /// More than one run or configuration: a directory per run.
    several: bool,
    pending: Vec<LogFile>,
}

impl Observer for LogWriter {
    fn suite_started(&mut self, plan: &SuitePlan) -> anyhow::Result<()> {
        self.several = plan.configurations > 1 || plan.runs > 1;
        Ok(())
    }

    fn run_started(&mut self, _label: &str, _run: &RunRecord) {
        self.pending.clear();
    }

    fn phase_finished(&mut self, _label: &str, phase: Option<&PhaseRecord>) {
        if let Some(p) = phase {
            self.pending.extend(p.measurement.logs.take());
        }
    }

    fn run_finished(&mut self, run: &RunRecord, _: Option<&str>) -> anyhow::Result<()> {
        let files = std::mem::take(&mut self.pending);
        let tag = self.several.then(|| run_directory(&run.config, run.run));
        let mut written: Vec<PathBuf> = Vec::new();
        for file in files {
            let path = placed(&file.path, tag.as_deref());
            if let (Some(tag), Some(parent)) = (&tag, path.parent()) {
                std::fs::create_dir_all(parent).with_context(|| {
                    format!("cannot make {} for the fio logs of {tag}", parent.display())
                })?;
            }
            // Without `per_job_logs` every thread of the run appends to one file.
            let append = written.contains(&path);
            let mut out = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(append)
                .truncate(!append)
                .open(&path)
                .with_context(|| format!("cannot write the fio log {}", path.display()))?;
            out.write_all(file.text.as_bytes())
                .with_context(|| format!("cannot write the fio log {}", path.display()))?;
            written.push(path);
        }
        Ok(())
    }
}

/// A run's directory name: its configuration's label (characters a path would misread
/// replaced) and its round.
fn run_directory(config: &str, run: u32) -> String {
    let safe: String = (config.chars())
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.run{run}")
}

/// Where a log goes: fio's path, in the run's directory beside it when there is one.
fn placed(path: &Path, tag: Option<&str>) -> PathBuf {
    match (tag, path.file_name()) {
        (Some(tag), Some(name)) => path.with_file_name(tag).join(name),
        _ => path.to_path_buf(),
    }
}

/// Refuses, before anything runs, logs whose directory does not exist or cannot be
/// written (fio fails on them too, only later).
pub(super) fn check(jobs: &[IoParams]) -> anyhow::Result<()> {
    for job in jobs.iter().flat_map(IoParams::jobs) {
        let Some(fio) = &job.fio else { continue };
        let LogOptions {
            lat,
            bw,
            iops,
            hist,
            ..
        } = &fio.logs;
        for prefix in [lat, bw, iops, hist].into_iter().flatten() {
            let dir = match Path::new(prefix).parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let ok = std::fs::metadata(&dir).is_ok_and(|m| m.is_dir())
                && rustix::fs::access(&dir, rustix::fs::Access::WRITE_OK).is_ok();
            if !ok {
                return Err(fsbench_measure::error::invalid(format!(
                    "job `{}`: the directory of its log files `{prefix}` is not a writable directory ({})",
                    job.job.as_deref().unwrap_or_default(),
                    dir.display()
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_s_logs_go_beside_fio_s_names() {
        let tag = run_directory("ext4:mkfs=-O ^has_journal", 2);
        assert_eq!(tag, "ext4_mkfs_-O__has_journal.run2");
        assert_eq!(
            placed(Path::new("a_lat.1.log"), Some("x.run1")),
            Path::new("x.run1/a_lat.1.log")
        );
        assert_eq!(
            placed(Path::new("/logs/a_bw.2.log"), Some("x.run1")),
            Path::new("/logs/x.run1/a_bw.2.log")
        );
        assert_eq!(
            placed(Path::new("a_lat.1.log"), None),
            Path::new("a_lat.1.log")
        );
    }
}

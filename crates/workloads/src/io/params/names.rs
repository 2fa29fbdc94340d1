//! The names a job opens, checked however its parameters arrived, the one block device
//! a job may name, and the workload's label.

use super::{Engine, IoParams, values};
use fsbench_measure::error::invalid;
use fsbench_model::units::compact_size;
use fsbench_model::workload::WorkerMode;

/// The kernel's devices a job file's job may name as its one file, as fio opens them: they
/// move no data through a filesystem, and fsbench makes, truncates and removes nothing there.
pub(crate) const KERNEL_DEVICES: [&str; 2] = ["/dev/null", "/dev/zero"];

/// The block device `fsbench fio --target-device` was given, once checked, in this process.
static RAW_TARGET: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Lets a job name `device` alone and read and write it raw: `fsbench fio` calls it once it
/// has checked the device it was given (a block device, unmounted, unused). A suite file or
/// a stored suite cannot: nothing else sets it.
pub fn allow_raw_target(device: &std::path::Path) {
    let _ = RAW_TARGET.set(device.to_path_buf());
}

impl IoParams {
    /// Every file the job opens is inside the run's directory, however its parameters came
    /// (options, a suite file's table of fields, a stored suite): each name it makes is
    /// checked as an option's would be. The one exception is the block device `fsbench fio
    /// --target-device` was given in this process, named alone.
    pub(super) fn validate_names(&self) -> anyhow::Result<()> {
        if self.raw_device {
            return match (&self.filename[..], RAW_TARGET.get()) {
                ([_], _) if self.on_kernel_device() => Ok(()),
                ([name], Some(given)) if std::path::Path::new(name) == given => Ok(()),
                _ => Err(invalid(format!(
                    "io: `filename={}` is read and written raw only under `fsbench fio --target-device` naming that device",
                    self.filename.join(":")
                ))),
            };
        }
        // fio names a job's files after it: a job name must not lead out either.
        let by_job_name = self.filename.is_empty() && self.filename_format.is_none();
        for file in 0..self.nrfiles as usize {
            let name = super::super::layout::file_name(self, 0, 0, file);
            values::inside_name("filename", &name).map_err(|e| match (&self.job, by_job_name) {
                (Some(job), true) => invalid(format!(
                    "{e}: job `{job}` has no `filename`, and fio names its files after it (JOBNAME.JOBNUM.FILENUM); give it a name without `/` and `..`, or a `filename`"
                )),
                _ => e,
            })?;
        }
        if self.engine == Engine::E4defrag && self.donorname.is_some() {
            let donor = crate::io::e4defrag::donor_name(self);
            values::inside_name("donorname", &donor)?;
        }
        Ok(())
    }

    /// Whether the job's one file is the kernel's `/dev/null` or `/dev/zero` (a job file's
    /// `filename=` naming it alone): no filesystem is measured.
    pub fn on_kernel_device(&self) -> bool {
        self.raw_device
            && matches!(&self.filename[..], [name] if KERNEL_DEVICES.contains(&name.as_str()))
    }

    /// The workload's label: the job's name (or preset, or its pattern, block sizes and
    /// size), then what sets it apart from a plain psync job.
    pub(crate) fn label(&self) -> String {
        let mut name = self
            .job
            .clone()
            .or_else(|| self.preset.clone())
            .unwrap_or_else(|| {
                let bs = if self.bssplit.len() == 1 {
                    compact_size(self.bssplit[0].0)
                } else {
                    let parts: Vec<String> = self
                        .bssplit
                        .iter()
                        .map(|(s, p)| format!("{}/{p}", compact_size(*s)))
                        .collect();
                    parts.join(":")
                };
                format!(
                    "{},bs={bs},size={}",
                    self.rw.name(),
                    compact_size(self.size)
                )
            });
        if self.engine != Engine::Psync {
            name.push_str(&format!(",{}", self.engine.name()));
        }
        if self.depth() > 1 {
            name.push_str(&format!(",iodepth={}", self.iodepth));
        }
        if self.direct {
            name.push_str(",direct");
        }
        if self.create_on_open {
            name.push_str(",create_on_open");
        }
        if self.numjobs > 1 {
            name.push_str(&format!(",numjobs={}", self.numjobs));
            if self.workers != WorkerMode::default() {
                name.push_str(&format!(",workers={}", self.workers.name()));
            }
        }
        if self.rate_iops > 0 {
            name.push_str(&format!(",rate_iops={}", self.rate_iops));
        }
        if self.rate > 0 {
            name.push_str(&format!(",rate={}", compact_size(self.rate)));
        }
        if self.time_based {
            name.push_str(&format!(",runtime={}ms", self.runtime_ms));
        }
        if !self.beside.is_empty() {
            name.push_str(&format!("+{} beside", self.beside.len()));
        }
        name
    }
}

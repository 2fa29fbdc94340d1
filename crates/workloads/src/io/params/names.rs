//! The names a job opens, checked however its parameters arrived, and the one block device
//! a job may name.

use super::{IoParams, values};
use fsbench_measure::error::invalid;

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
                ([name], Some(given)) if std::path::Path::new(name) == given => Ok(()),
                _ => Err(invalid(format!(
                    "io: `filename={}` is read and written raw only under `fsbench fio --target-device` naming that device",
                    self.filename.join(":")
                ))),
            };
        }
        for file in 0..self.nrfiles as usize {
            let name = super::super::layout::file_name(self, 0, 0, file);
            values::inside_name("filename", &name)?;
        }
        Ok(())
    }
}

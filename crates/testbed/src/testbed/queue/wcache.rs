//! A device's write cache as a configuration's dimension (`ext4:wcache=off`; the Linux Magazine
//! filesystem tests turned the disks' caches off): sysfs `queue/write_cache`, which decides
//! whether the kernel sends the device flushes (`write back`) or not (`write through`); the
//! device's own cache is not changed (that is `hdparm -W`).

use std::path::Path;

use anyhow::Context;

use super::Setting;
use crate::testbed::state::QueueRecord;
use fsbench_measure::error::invalid;

/// What `queue/write_cache` shows and takes.
pub(super) const VALUES: [&str; 2] = ["write back", "write through"];

/// `wcache=on|off` as the value written to `queue/write_cache`.
pub(super) fn value(on: bool) -> &'static str {
    if on { VALUES[0] } else { VALUES[1] }
}

/// Sets `device`'s write cache on or off, having `note` record what to put back (for
/// `fsbench clean`) first. A queue that does not take the change is an error naming what
/// it shows.
pub fn set(
    device: &Path,
    on: bool,
    note: impl FnOnce(QueueRecord) -> anyhow::Result<()>,
) -> anyhow::Result<Setting> {
    let file = super::queue_file(device, "write_cache")?;
    let claim = super::claim::take(&file, device, "write cache")?;
    let previous = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?
        .trim()
        .to_string();
    let wanted = value(on);
    note(QueueRecord {
        file: file.clone(),
        previous: previous.clone(),
        loop_device: None,
    })?;
    let written = std::fs::write(&file, wanted);
    let now = std::fs::read_to_string(&file).unwrap_or_default();
    if written.is_err() || now.trim() != wanted {
        let _ = std::fs::write(&file, &previous);
        let why = written
            .err()
            .map_or(format!("it shows `{}`", now.trim()), |e| e.to_string());
        return Err(invalid(format!(
            "the write cache of {} cannot be set to `{wanted}` ({why}); its queue/write_cache was `{previous}`",
            device.display()
        )));
    }
    Ok(Setting {
        description: format!("{wanted} on {} (was {previous})", device.display()),
        file,
        previous: Some(previous),
        _claim: claim,
    })
}

impl crate::testbed::Target {
    /// Sets the device's write cache to `on` and back at once, so that a change the device
    /// refuses is an error before any run.
    pub fn try_write_cache(&mut self, on: bool) -> anyhow::Result<()> {
        let device = match (&self.spec, self.device_kind) {
            (
                fsbench_model::testbed::TargetSpec::Device { path, .. },
                Some(crate::testbed::DeviceKind::Block),
            ) => path.clone(),
            _ => anyhow::bail!("wcache= needs --device naming a block device"),
        };
        set(&device, on, |r| self.scratch.note_queue(r))?.restore()
    }
}

/// Why a loop image takes no `wcache=`: the loop device's flag changes nothing below it.
pub fn loop_refusal(image_dir: &Path) -> String {
    let backing = crate::testbed::stack::backing_chain(image_dir)
        .and_then(|b| b.devices.into_iter().find(|d| d.write_cache.is_some()))
        .map_or("unknown".to_string(), |d| {
            format!("{}'s, `{}`", d.name, d.write_cache.unwrap_or_default())
        });
    format!(
        "wcache= needs --device: a loop device has no write cache of its own; the backing disk's is {backing} (fsbench does not change it)"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn on_is_write_back_and_off_write_through() {
        assert_eq!(super::value(true), "write back");
        assert_eq!(super::value(false), "write through");
    }
}

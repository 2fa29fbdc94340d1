//! A block device's I/O scheduler as a configuration's dimension (`ext4:sched=bfq`, the FFSB
//! report's CFQ comparison): set on the device's queue for a run and put back as it was after
//! it — before a loop device is detached, so a recycled one is never touched.
//!
//! A queue setting is one run's at a time: the run holds an exclusive `flock` on the
//! setting's sysfs file from before it records the value to put back until it has put it
//! back, so a second run that wants the same queue is refused, naming the first, and no run's
//! phases run under a setting another run made.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::state::QueueRecord;
use fsbench_measure::error::invalid;

mod claim;
mod wcache;
pub use wcache::{loop_refusal, set as set_write_cache};

/// The `queue/scheduler` file of `device`'s queue: its own, or its disk's for a partition.
fn scheduler_file(device: &Path) -> anyhow::Result<PathBuf> {
    queue_file(device, "scheduler")
}

/// The `queue/NAME` file of `device`'s queue: its own, or its disk's for a partition.
fn queue_file(device: &Path, setting: &str) -> anyhow::Result<PathBuf> {
    let real = std::fs::canonicalize(device)
        .with_context(|| format!("cannot resolve {}", device.display()))?;
    let name = real.file_name().unwrap_or_default();
    let class = std::fs::canonicalize(Path::new("/sys/class/block").join(name))
        .with_context(|| format!("{} is not a block device in sysfs", device.display()))?;
    let file = Path::new("queue").join(setting);
    [class.join(&file), class.join("..").join(&file)]
        .into_iter()
        .find(|p| p.exists())
        .with_context(|| format!("{} has no {} in sysfs", device.display(), file.display()))
}

/// The schedulers a queue offers and the one in use: `none [mq-deadline] kyber bfq`.
pub fn parse(text: &str) -> (Vec<String>, Option<String>) {
    let mut offered = Vec::new();
    let mut current = None;
    for word in text.split_whitespace() {
        let name = word.trim_start_matches('[').trim_end_matches(']');
        if word.starts_with('[') {
            current = Some(name.to_string());
        }
        offered.push(name.to_string());
    }
    (offered, current)
}

/// A queue setting (its scheduler, its write cache) changed for a run; [`Setting::restore`]
/// (or dropping it) puts the previous back.
#[derive(Debug)]
pub struct Setting {
    file: PathBuf,
    previous: Option<String>,
    /// `bfq on loop3 (was mq-deadline)`, for the run's record.
    pub description: String,
    /// The run's claim on the setting, let go once it is put back.
    _claim: OwnedFd,
}

impl Setting {
    /// Sets `wanted` on the queue whose `scheduler` file is `file` (of `device`), claimed. An
    /// unknown name is refused naming those the queue offers (writing one the kernel has as a
    /// module loads it, so bfq and kyber work even when not yet listed).
    fn set_file(
        file: PathBuf,
        device: &Path,
        wanted: &str,
        claim: OwnedFd,
    ) -> anyhow::Result<Setting> {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let (offered, previous) = parse(&text);
        if let Err(e) = std::fs::write(&file, wanted) {
            return Err(invalid(format!(
                "I/O scheduler `{wanted}` cannot be set on {} ({e}); its queue offers: {}",
                device.display(),
                offered.join(", ")
            )));
        }
        let now = std::fs::read_to_string(&file).unwrap_or_default();
        if parse(&now).1.as_deref() != Some(wanted) {
            let _ = previous.as_ref().map(|p| std::fs::write(&file, p));
            return Err(invalid(format!(
                "I/O scheduler `{wanted}` did not take on {}: its queue shows `{}`",
                device.display(),
                now.trim()
            )));
        }
        let was = previous.as_deref().unwrap_or("unknown");
        Ok(Setting {
            description: format!("{wanted} on {} (was {was})", device.display()),
            file,
            previous,
            _claim: claim,
        })
    }

    /// Puts the previous scheduler back; safe to call more than once.
    pub(crate) fn restore(&mut self) -> anyhow::Result<()> {
        if let Some(previous) = self.previous.take() {
            std::fs::write(&self.file, &previous).with_context(|| {
                format!("cannot put `{previous}` back in {}", self.file.display())
            })?;
        }
        Ok(())
    }
}

impl Drop for Setting {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            fsbench_measure::diag::say(&format!("fsbench: {e:#}"));
        }
    }
}

/// The whole disk holding loop device `device`'s backing file (`/dev/vda` for an image on
/// `/dev/vda1`), found through sysfs: `loop/backing_file`, its filesystem's device number,
/// and a partition's parent.
pub(crate) fn backing_disk(device: &Path) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let name = device.file_name().unwrap_or_default();
    let sys = Path::new("/sys/class/block").join(name);
    let file = std::fs::read_to_string(sys.join("loop/backing_file"))
        .with_context(|| format!("{} is not a loop device", device.display()))?;
    let file = Path::new(file.trim_end());
    let dev = std::fs::metadata(file)
        .with_context(|| format!("cannot stat {}", file.display()))?
        .dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let mut node = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}"))
        .with_context(|| {
            format!(
                "{} is on no block device (device {major}:{minor}: tmpfs, overlay?); it has no backing disk queue",
                file.display()
            )
        })?;
    if node.join("partition").exists() {
        node.pop();
    }
    let disk = node.file_name().context("a sysfs block node has a name")?;
    Ok(Path::new("/dev").join(disk))
}

/// The backing disk's scheduler set alongside loop device `device`'s (`--sched-backing`):
/// it affects the whole machine, so fsbench does it only when asked, and has `note` record
/// the scheduler to put back (for `fsbench clean`) before it changes anything.
pub(crate) fn set_backing(
    device: &Path,
    wanted: &str,
    note: impl FnOnce(QueueRecord) -> anyhow::Result<()>,
) -> anyhow::Result<Setting> {
    let disk = backing_disk(device)?;
    set_noted(&disk, wanted, None, note).with_context(|| {
        format!(
            "--sched-backing: {} holds {}",
            disk.display(),
            device.display()
        )
    })
}

/// Claims `device`'s queue and sets `wanted` on it, having `note` record the scheduler to
/// put back first, for `fsbench clean` (`loop_device`: the run's own loop device it is).
pub(crate) fn set_noted(
    device: &Path,
    wanted: &str,
    loop_device: Option<&Path>,
    note: impl FnOnce(QueueRecord) -> anyhow::Result<()>,
) -> anyhow::Result<Setting> {
    let file = scheduler_file(device)?;
    let claim = claim::take(&file, device, "I/O scheduler")?;
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    if let Some(previous) = parse(&text).1 {
        note(QueueRecord {
            file: file.clone(),
            previous,
            loop_device: loop_device.map(Path::to_path_buf),
        })?;
    }
    Setting::set_file(file, device, wanted, claim)
}

/// The backing disk a run left alone without `--sched-backing`: `/dev/vda keeps mq-deadline`.
pub(crate) fn backing_untouched(device: &Path) -> String {
    let Ok(disk) = backing_disk(device) else {
        return "no backing disk queue found".into();
    };
    let current = scheduler_file(&disk)
        .ok()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| parse(&t).1)
        .unwrap_or_else(|| "unknown".into());
    format!("{} keeps {current}", disk.display())
}

/// `fsbench clean`'s undo of queue settings a crashed suite left: each recorded queue gets
/// its previous scheduler or write cache back. Only a sysfs `queue/scheduler` or
/// `queue/write_cache` file and a value it offers are written, whatever the state file says;
/// a loop device's only while `still_ours` says it is the run's; a queue another run holds
/// now is left (its value is that run's until it ends).
pub(super) fn undo(
    records: &[QueueRecord],
    still_ours: impl Fn(&Path) -> bool,
    undone: &mut super::state::Undone,
) {
    for r in records {
        if r.loop_device.as_deref().is_some_and(|d| !still_ours(d)) {
            continue;
        }
        let text = std::fs::read_to_string(&r.file).unwrap_or_default();
        let (sane, offered, current) = if r.file.ends_with("queue/write_cache") {
            let offered = wcache::VALUES.map(String::from).to_vec();
            (true, offered, Some(text.trim().to_string()))
        } else {
            let (offered, current) = parse(&text);
            (r.file.ends_with("queue/scheduler"), offered, current)
        };
        let sane = sane && r.file.starts_with("/sys/");
        if !sane || !offered.contains(&r.previous) {
            undone.left.push(format!(
                "`{}` not put back in {}: not a queue setting offering it",
                r.previous,
                r.file.display()
            ));
            continue;
        }
        if current.as_ref() == Some(&r.previous) {
            continue;
        }
        let _claim = match claim::take(&r.file, &r.file, "setting") {
            Ok(claim) => claim,
            Err(e) => {
                undone.left.push(format!(
                    "`{}` not put back in {}: {e:#}; run `fsbench clean` again once that run ends",
                    r.previous,
                    r.file.display()
                ));
                continue;
            }
        };
        match std::fs::write(&r.file, &r.previous) {
            Ok(()) => {
                (undone.done).push(format!("put `{}` back in {}", r.previous, r.file.display()))
            }
            Err(e) => undone.left.push(format!(
                "cannot put `{}` back in {}: {e}",
                r.previous,
                r.file.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_scheduler_is_the_bracketed_one() {
        let (offered, current) = parse("none [mq-deadline] kyber bfq\n");
        assert_eq!(offered, ["none", "mq-deadline", "kyber", "bfq"]);
        assert_eq!(current.as_deref(), Some("mq-deadline"));
        assert_eq!(parse("[none] \n").1.as_deref(), Some("none"));
        assert_eq!(parse("").1, None);
    }

    #[test]
    fn clean_writes_only_a_sysfs_queue_offering_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("queue/scheduler");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "none [bfq]\n").unwrap();
        let record = QueueRecord {
            file: file.clone(),
            previous: "none".into(),
            loop_device: None,
        };
        let mut undone = crate::testbed::state::Undone::default();
        undo(&[record], |_| true, &mut undone);
        assert!(undone.done.is_empty());
        assert!(
            undone.left[0].contains("not a queue setting offering it"),
            "{:?}",
            undone.left
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "none [bfq]\n");
    }
}

//! A block device's I/O scheduler as a configuration's dimension (`ext4:sched=bfq`, seed
//! 001's CFQ comparison): set on the device's queue for a run and put back as it was after
//! it — before a loop device is detached, so a recycled one is never touched.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::error::invalid;

/// The `queue/scheduler` file of `device`'s queue: its own, or its disk's for a partition.
fn scheduler_file(device: &Path) -> anyhow::Result<PathBuf> {
    let real = std::fs::canonicalize(device)
        .with_context(|| format!("cannot resolve {}", device.display()))?;
    let name = real.file_name().unwrap_or_default();
    let class = std::fs::canonicalize(Path::new("/sys/class/block").join(name))
        .with_context(|| format!("{} is not a block device in sysfs", device.display()))?;
    [
        class.join("queue/scheduler"),
        class.join("../queue/scheduler"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .with_context(|| format!("{} has no I/O scheduler in sysfs", device.display()))
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

/// A scheduler set on a queue; [`Scheduler::restore`] (or dropping it) puts the previous back.
#[derive(Debug)]
pub struct Scheduler {
    file: PathBuf,
    previous: Option<String>,
    /// `bfq on loop3 (was mq-deadline)`, for the run's record.
    pub description: String,
}

impl Scheduler {
    /// Sets `wanted` on `device`'s queue. An unknown name is refused naming those the queue
    /// offers (writing one the kernel has as a module loads it, so bfq and kyber work even
    /// when not yet listed).
    pub fn set(device: &Path, wanted: &str) -> anyhow::Result<Scheduler> {
        let file = scheduler_file(device)?;
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
        Ok(Scheduler {
            description: format!("{wanted} on {} (was {was})", device.display()),
            file,
            previous,
        })
    }

    /// Puts the previous scheduler back; safe to call more than once.
    pub fn restore(&mut self) -> anyhow::Result<()> {
        if let Some(previous) = self.previous.take() {
            std::fs::write(&self.file, &previous).with_context(|| {
                format!(
                    "cannot put the I/O scheduler `{previous}` back in {}",
                    self.file.display()
                )
            })?;
        }
        Ok(())
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("fsbench: {e:#}");
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
}

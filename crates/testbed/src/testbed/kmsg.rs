//! The kernel's own reason for a refused mount: mount(8) says only "wrong fs type, bad
//! option, bad superblock…", the kernel logs which option it did not know (`ext4: Unknown
//! parameter 'noatme'`). Read from `/dev/kmsg`, from where the log ended before the mount.

use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags, SeekFrom};

/// A mount the kernel refused, with the lines it logged about it (the context of mount(8)'s
/// own failure).
#[derive(Debug)]
pub struct MountRefused {
    pub reason: String,
}

impl std::fmt::Display for MountRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the kernel refused the mount: {}", self.reason)
    }
}

/// The kernel log from a point on (root only: `None` where it cannot be read).
pub(crate) struct KernelLog(OwnedFd);

/// Records above this level (4: warning) are news, not the kernel's reason.
const WARNING: u8 = 4;

impl KernelLog {
    /// The log from now on.
    pub(crate) fn from_now() -> Option<KernelLog> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::open("/dev/kmsg", flags, Mode::empty()).ok()?;
        rustix::fs::seek(&fd, SeekFrom::End(0)).ok()?;
        Some(KernelLog(fd))
    }

    /// The warnings and errors logged since that name one of `about` (the filesystem's
    /// name, its device's), in order; other processes' records are left out.
    pub(crate) fn said_about(&self, about: &[&str]) -> Vec<String> {
        let mut lines = Vec::new();
        let mut record = [0u8; 8192];
        loop {
            // One record per read; EAGAIN: no more. EPIPE: records overwritten, read on.
            let n = match rustix::io::read(&self.0, &mut record) {
                Ok(0) | Err(rustix::io::Errno::AGAIN) => break,
                Ok(n) => n,
                Err(rustix::io::Errno::PIPE) => continue,
                Err(_) => break,
            };
            if let Some(line) = parse(&String::from_utf8_lossy(&record[..n]), about) {
                lines.push(line);
            }
        }
        lines
    }
}

/// `PRIORITY,SEQ,USEC,FLAGS;MESSAGE` (then continuation lines): the message of a warning or
/// an error that names one of `about`, case aside.
fn parse(record: &str, about: &[&str]) -> Option<String> {
    let (head, rest) = record.split_once(';')?;
    let priority: u32 = head.split(',').next()?.parse().ok()?;
    let message = rest.lines().next()?.trim();
    let lower = message.to_lowercase();
    let named = about.iter().any(|a| lower.contains(&a.to_lowercase()));
    ((priority & 7) as u8 <= WARNING && named).then(|| message.to_string())
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn the_kernels_reason_is_its_warnings_about_the_filesystem() {
        let about = ["ext4", "loop1"];
        let said = |r| parse(r, &about);
        assert_eq!(
            said("3,5020,3380088574,-;ext4: Unknown parameter 'noatme'\n").as_deref(),
            Some("ext4: Unknown parameter 'noatme'")
        );
        assert_eq!(
            said("4,77,1,-;EXT4-fs (loop1): mounting with \"discard\" option\n SUBSYSTEM=block")
                .as_deref(),
            Some("EXT4-fs (loop1): mounting with \"discard\" option")
        );
        // News of the device, and other processes' records, are not the reason.
        assert_eq!(
            said("6,5019,3380084941,-;loop1: detected capacity change"),
            None
        );
        assert_eq!(said("3,9,1,-;XFS (loop2): unknown mount option [x]."), None);
        assert_eq!(said("garbage"), None);
    }
}

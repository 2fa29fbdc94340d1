//! What the kernel says is mounted: /proc/self/mounts and /proc/self/mountinfo.

use std::path::{Path, PathBuf};

/// One line of /proc/self/mounts.
#[derive(Debug, Clone, PartialEq)]
pub struct MountEntry {
    pub source: String,
    pub target: PathBuf,
    pub fstype: String,
    /// Options as the kernel shows them: the filesystem's effective options, not what was asked.
    pub options: String,
}

/// Undoes the octal escapes (`\040` for a space) the kernel uses in mount tables.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() {
            let oct = std::str::from_utf8(&bytes[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(oct, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// All current mounts, in mount order.
pub fn mounts() -> Vec<MountEntry> {
    let text = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            (f.len() >= 4).then(|| MountEntry {
                source: unescape(f[0]),
                target: PathBuf::from(unescape(f[1])),
                fstype: f[2].to_string(),
                options: f[3].to_string(),
            })
        })
        .collect()
}

/// The mount exactly at `target` (the last one, if several are stacked).
pub(crate) fn mount_at(target: &Path) -> Option<MountEntry> {
    mounts().into_iter().rev().find(|m| m.target == target)
}

/// Waits until a mount at `target` is there (`present`) or gone, at most `limit`; `what`
/// names the mount in the error.
pub(crate) fn wait_for(
    target: &Path,
    present: bool,
    limit: std::time::Duration,
    what: &str,
) -> anyhow::Result<()> {
    let start = std::time::Instant::now();
    while mount_at(target).is_some() != present {
        if start.elapsed() > limit {
            anyhow::bail!(
                "{what} at {} did not {} within {} s",
                target.display(),
                if present { "appear" } else { "go" },
                limit.as_secs()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(())
}

/// The mount holding `path`: the longest mount target that is a prefix of it.
pub fn mount_containing(path: &Path) -> Option<MountEntry> {
    let path = path.canonicalize().ok()?;
    mounts()
        .into_iter()
        .rev()
        .filter(|m| path.starts_with(&m.target))
        .max_by_key(|m| m.target.as_os_str().len())
}

/// Mount targets at or below `dir`, deepest first: the order to unmount them in.
pub fn mounts_below(dir: &Path) -> Vec<PathBuf> {
    let mut below: Vec<PathBuf> = mounts()
        .into_iter()
        .map(|m| m.target)
        .filter(|t| t.starts_with(dir))
        .collect();
    below.sort_by_key(|t| std::cmp::Reverse(t.components().count()));
    below.dedup();
    below
}

/// (major, minor, mount target) of every mounted filesystem, from /proc/self/mountinfo.
pub(crate) fn mounted_devices() -> Vec<(u32, u32, PathBuf)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (maj, min) = f.get(2)?.split_once(':')?;
            Some((
                maj.parse().ok()?,
                min.parse().ok()?,
                PathBuf::from(unescape(f.get(4)?)),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescapes_spaces() {
        assert_eq!(unescape("/mnt/with\\040space"), "/mnt/with space");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("trailing\\"), "trailing\\");
    }

    #[test]
    fn root_is_mounted() {
        let root = mount_containing(Path::new("/")).expect("/ is mounted");
        assert_eq!(root.target, Path::new("/"));
        assert!(!mounted_devices().is_empty());
    }
}

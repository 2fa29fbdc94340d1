//! Block devices: what sysfs says about them, and the checks that keep fsbench from
//! destroying data it was not explicitly given.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use fsbench_model::testbed::BlockInfo;

use super::{detach, mounts};
use fsbench_measure::error::FsbenchError;
use fsbench_measure::tools;

pub(crate) fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

pub(crate) fn sysfs_node(major: u32, minor: u32) -> Option<PathBuf> {
    Path::new(&format!("/sys/dev/block/{major}:{minor}"))
        .canonicalize()
        .ok()
}

/// sysfs facts about device `major:minor`.
pub fn block_info(major: u32, minor: u32) -> Option<BlockInfo> {
    let node = sysfs_node(major, minor)?;
    let disk = if node.join("partition").exists() {
        node.parent()?.to_path_buf()
    } else {
        node.clone()
    };
    let scheduler = read_trim(&disk.join("queue/scheduler")).map(|s| {
        // The active scheduler is the bracketed one: "mq-deadline [none]".
        s.split_whitespace()
            .find(|w| w.starts_with('['))
            .map(|w| w.trim_matches(['[', ']']).to_string())
            .unwrap_or(s)
    });
    Some(BlockInfo {
        name: node.file_name()?.to_string_lossy().into_owned(),
        model: read_trim(&disk.join("device/model")),
        size_bytes: read_trim(&node.join("size"))?.parse::<u64>().ok()? * 512,
        rotational: read_trim(&disk.join("queue/rotational")).map(|r| r == "1"),
        scheduler,
        logical_block_size: read_trim(&disk.join("queue/logical_block_size"))
            .and_then(|s| s.parse().ok()),
        backing_file: read_trim(&node.join("loop/backing_file")).map(PathBuf::from),
    })
}

/// The block device holding the filesystem that contains `path`, if any.
pub fn block_info_of_path(path: &Path) -> Option<BlockInfo> {
    let dev = path.metadata().ok()?.dev();
    block_info(rustix::fs::major(dev), rustix::fs::minor(dev)).or_else(|| {
        // btrfs reports an anonymous st_dev; its mount source names the real device.
        let source = mounts::mount_containing(path)?.source;
        let rdev = Path::new(&source).metadata().ok()?.rdev();
        block_info(rustix::fs::major(rdev), rustix::fs::minor(rdev))
    })
}

/// What `--device` names, once checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeviceKind {
    Block,
    /// A regular file, attached to a loop device for each run.
    ImageFile,
}

pub(super) fn refused(path: &Path, reason: impl Into<String>) -> anyhow::Error {
    FsbenchError::Refused {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
    .into()
}

/// Why the block device at `path` cannot be opened exclusively: the kernel's own word that
/// something (a mount, device-mapper, md, another exclusive opener) holds it.
pub(crate) fn held(path: &Path) -> Option<rustix::io::Errno> {
    rustix::fs::open(
        path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::EXCL | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .err()
}

/// Device numbers of every mounted filesystem, with btrfs's anonymous numbers resolved
/// through the mount source.
pub(crate) fn mounted(device_node: &Path) -> Option<PathBuf> {
    let sources = mounts::mounts().into_iter().filter_map(|m| {
        let rdev = Path::new(&m.source).metadata().ok()?;
        rdev.file_type().is_block_device().then(|| {
            (
                rustix::fs::major(rdev.rdev()),
                rustix::fs::minor(rdev.rdev()),
                m.target,
            )
        })
    });
    mounts::mounted_devices()
        .into_iter()
        .chain(sources)
        .find(|(maj, min, _)| sysfs_node(*maj, *min).is_some_and(|n| n.starts_with(device_node)))
        .map(|(_, _, target)| target)
}

/// A block device `fsbench fio --target-device` lets a job file read and write raw, checked
/// as --device is: refused where it is no block device, mounted, in use, or (without
/// `force`) carries a filesystem or partition table.
pub fn check_raw_target(path: &Path, force: bool) -> anyhow::Result<()> {
    match check_device(path, force, "--force")? {
        DeviceKind::Block => Ok(()),
        _ => Err(refused(path, "it is not a block device")),
    }
}

/// Refuses a device that is mounted, holds the root filesystem, is in use, or (without
/// `force`) carries a filesystem or partition-table signature; `force_flag` is the flag that
/// would overwrite it, for the refusal to name.
pub(crate) fn check_device(
    path: &Path,
    force: bool,
    force_flag: &str,
) -> anyhow::Result<DeviceKind> {
    let meta = path
        .metadata()
        .map_err(|e| refused(path, format!("cannot access it: {e}")))?;
    let kind = if meta.file_type().is_block_device() {
        DeviceKind::Block
    } else if meta.is_file() {
        DeviceKind::ImageFile
    } else {
        return Err(refused(
            path,
            "it is neither a block device nor an image file",
        ));
    };
    if kind == DeviceKind::Block {
        let (maj, min) = (
            rustix::fs::major(meta.rdev()),
            rustix::fs::minor(meta.rdev()),
        );
        let node =
            sysfs_node(maj, min).ok_or_else(|| refused(path, "sysfs does not know this device"))?;
        if let Some(target) = mounted(&node) {
            let what = if target == Path::new("/") {
                "it is or holds the root filesystem".to_string()
            } else {
                format!(
                    "it is mounted at {} (or holds a mounted partition)",
                    target.display()
                )
            };
            return Err(refused(path, what));
        }
        let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
        if swaps.lines().skip(1).any(|l| {
            l.split_whitespace()
                .next()
                .and_then(|dev| Path::new(dev).metadata().ok())
                .is_some_and(|m| m.rdev() == meta.rdev())
        }) {
            return Err(refused(path, "it is in use as swap"));
        }
        let holders: Vec<String> = std::fs::read_dir(node.join("holders"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if !holders.is_empty() {
            return Err(refused(
                path,
                format!("it is in use by {}", holders.join(", ")),
            ));
        }
        if let Some(e) = held(path) {
            return Err(refused(path, format!("device busy ({e})")));
        }
    } else if let Some((loopdev, _)) = detach::loop_devices()
        .into_iter()
        .find(|(_, backing)| path.canonicalize().is_ok_and(|p| &p == backing))
    {
        return Err(refused(
            path,
            format!("it is attached to {}", loopdev.display()),
        ));
    }
    if !force && let Some(signature) = signature(path)? {
        return Err(refused(
            path,
            format!("blkid finds an existing {signature} on it; pass {force_flag} to overwrite it"),
        ));
    }
    Ok(kind)
}

/// What `blkid -p -o export` found, in words: a filesystem, a partition table, the entry of a
/// partition table this device is (an empty partition), or signatures it cannot tell apart.
fn describe_signature(code: Option<i32>, field: &dyn Fn(&str) -> Option<String>) -> String {
    if let Some(t) = field("TYPE=") {
        return format!("{t} filesystem");
    }
    if let Some(t) = field("PTTYPE=") {
        return format!("{t} partition table");
    }
    if let Some(scheme) = field("PART_ENTRY_SCHEME=") {
        let number = field("PART_ENTRY_NUMBER=").unwrap_or_else(|| "?".into());
        let name = field("PART_ENTRY_NAME=")
            .map(|n| format!(" named `{n}`"))
            .unwrap_or_default();
        return format!(
            "entry {number} of a {scheme} partition table (a partition{name}, with no filesystem blkid knows)"
        );
    }
    match code {
        Some(8) => "several signatures blkid cannot tell apart (blkid -p exit 8)".to_string(),
        _ => "signature blkid cannot name".to_string(),
    }
}

/// The filesystem or partition-table signature `blkid -p` finds on `path`, if any.
pub fn signature(path: &Path) -> anyhow::Result<Option<String>> {
    let blkid = tools::require("blkid", "util-linux")?;
    let run = tools::run(
        &blkid,
        &[
            "-p".into(),
            "-o".into(),
            "export".into(),
            path.display().to_string(),
        ],
    )?;
    match run.code {
        Some(0) | Some(8) => {
            let field = |key: &str| {
                run.output
                    .lines()
                    .find_map(|l| l.strip_prefix(key).map(str::to_string))
            };
            Ok(Some(describe_signature(run.code, &field)))
        }
        Some(2) => Ok(None),
        _ => anyhow::bail!("blkid -p {} failed: {}", path.display(), run.output.trim()),
    }
}

#[cfg(test)]
mod signature_tests {
    use super::describe_signature;

    fn describe(export: &str, code: i32) -> String {
        describe_signature(Some(code), &|key: &str| {
            export
                .lines()
                .find_map(|l| l.strip_prefix(key).map(str::to_string))
        })
    }

    #[test]
    fn what_blkid_found_is_named() {
        assert_eq!(describe("TYPE=ext4\nUUID=x", 0), "ext4 filesystem");
        assert_eq!(describe("PTTYPE=gpt", 0), "gpt partition table");
        let part = describe(
            "PART_ENTRY_SCHEME=gpt\nPART_ENTRY_NUMBER=1\nPART_ENTRY_NAME=data",
            0,
        );
        assert!(
            part.starts_with("entry 1 of a gpt partition table"),
            "{part}"
        );
        assert!(part.contains("`data`"), "{part}");
        assert!(describe("", 8).contains("cannot tell apart"));
    }
}

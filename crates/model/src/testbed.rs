//! Where a suite runs and what the testbed recorded of it: the target asked for, the
//! device written to, a run's loop device and its fsck, and the storage stack below.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub mod raw;
mod stack;
pub use stack::{
    BackgroundRecord, BackingChain, BlockQueue, LoadAverage, RunTestbed, StorageStack,
    SuiteTestbed, VmTunables,
};

/// Where the filesystems under test live.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum TargetSpec {
    /// A fresh sparse loop image per run in `dir`; `size` in bytes (`None`: sized to the workloads).
    Image {
        #[serde(default = "default_image_dir")]
        dir: PathBuf,
        #[serde(default, with = "crate::units::opt_size")]
        size: Option<u64>,
        /// Buffered loop devices (through the host's page cache) instead of direct I/O.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        loop_cache: bool,
    },
    /// A real block device (or an existing image file), re-made for every run.
    Device {
        path: PathBuf,
        #[serde(default)]
        force: bool,
        /// For an image file: a buffered loop device instead of direct I/O.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        loop_cache: bool,
    },
    /// A fresh subdirectory of an existing directory; no mkfs, no unmount, no fsck.
    Dir { path: PathBuf },
}

/// Loop images go to /var/tmp: on disk (unlike a tmpfs /tmp) and kept out of the way.
pub fn default_image_dir() -> PathBuf {
    PathBuf::from("/var/tmp")
}

impl TargetSpec {
    /// Whether runs make filesystems (and so need root).
    pub fn makes_filesystems(&self) -> bool {
        !matches!(self, TargetSpec::Dir { .. })
    }

    /// Whether loop devices this target attaches use direct I/O (not `loop_cache`).
    pub fn loop_direct_io(&self) -> bool {
        match self {
            TargetSpec::Image { loop_cache, .. } | TargetSpec::Device { loop_cache, .. } => {
                !loop_cache
            }
            TargetSpec::Dir { .. } => false,
        }
    }
}

/// What sysfs says about a block device (for a partition, queue facts come from its disk).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BlockInfo {
    pub name: String,
    pub model: Option<String>,
    pub size_bytes: u64,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
    pub logical_block_size: Option<u32>,
    /// For a loop device: its backing file.
    pub backing_file: Option<PathBuf>,
}

/// The result of a read-only fsck.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FsckOutcome {
    pub clean: bool,
    pub secs: f64,
    /// fsck's output, kept when it was not clean.
    pub output: Option<String>,
}

/// A run's loop device as the kernel had it while the filesystem was mounted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoopInfo {
    pub device: PathBuf,
    /// sysfs `loop/dio` read back while mounted: the image bypasses the host's page cache.
    pub direct_io: bool,
    /// The loop device's logical block size (sysfs `queue/logical_block_size`).
    pub logical_block_size: Option<u32>,
    /// Why the loop is buffered although direct I/O was asked for (the backing filesystem
    /// refuses O_DIRECT, or the kernel did not enable it). `None` when direct I/O is on or
    /// buffered loops were asked for (`--loop-cache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

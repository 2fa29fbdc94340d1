//! What preparing a run's filesystem did before its measured phases (aging, filling, the
//! template it was copied from) and the free-space probes that tell how aged it is.

use serde::{Deserialize, Serialize};

/// What a run's filesystem went through before its measured phases, stored with the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Preparation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aging: Option<AgingStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<FillStats>,
    /// The free-space probe on the fresh filesystem and after aging and filling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_fresh: Option<Probe>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_prepared: Option<Probe>,
    /// The filesystem's own free-space views after preparation (e2freefrag, xfs_db freesp,
    /// btrfs filesystem usage).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub native: Vec<NativeView>,
    /// The template image this run's filesystem is a copy of (loop images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateInfo>,
    /// Prepared in place before this run (a device: there is no snapshot to copy).
    #[serde(default)]
    pub in_place: bool,
    /// The prepared tree as this run saw it before its phases (paths and sizes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_digest: Option<String>,
    /// Bytes and inodes left for the workload once prepared.
    #[serde(default)]
    pub free_bytes: u64,
    #[serde(default)]
    pub free_inodes: u64,
}

impl Preparation {
    /// Why aging did not measurably age the filesystem, or `None` where it did or nothing
    /// tells (no aging, no probe): the free-space probe after it found the free space in no
    /// more pieces than on the fresh filesystem, at a tenth of it and at half.
    pub fn not_aged(&self) -> Option<String> {
        let aging = self.aging.as_ref()?;
        let (fresh, aged) = (self.probe_fresh?, self.probe_prepared?);
        if aged.fragments > fresh.fragments || aged.half_fragments > fresh.half_fragments {
            return None;
        }
        Some(format!(
            "aging ({}, seed {}) did not measurably age it: its free space is in no more pieces than a fresh one's (probe at 10%: {} → {} fragments, at 50%: {} → {}, fresh → aged); the churn wrote {:.1} × its size, and the allocator kept its free space in as few pieces; its figures are a fresh filesystem's at {:.0}% used; age harder (a profile with a peak_util_percent or a larger write_multiple, or geriatrix-like)",
            aging.profile,
            aging.seed,
            fresh.fragments,
            aged.fragments,
            fresh.half_fragments,
            aged.half_fragments,
            aging.bytes_written as f64 / aging.capacity_bytes.max(1) as f64,
            aging.util_percent,
        ))
    }
}

/// What aging did, stored with every run that starts from the aged filesystem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgingStats {
    pub profile: String,
    pub seed: u64,
    pub secs: f64,
    pub bytes_written: u64,
    /// Files and directories in the aged tree at the end.
    pub files: u64,
    pub dirs: u32,
    pub creates: u64,
    pub appends: u64,
    pub overwrites: u64,
    pub deletes: u64,
    /// Writes that found the filesystem full (the churn then deletes and re-reads statvfs).
    #[serde(default)]
    pub enospc: u64,
    pub target_util_percent: f64,
    /// statvfs's utilisation after the churn and a sync.
    pub util_percent: f64,
    /// Used + available bytes (df's size of the filesystem).
    pub capacity_bytes: u64,
}

/// What filling did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FillStats {
    pub level_percent: u8,
    pub files: u64,
    pub bytes_written: u64,
    pub secs: f64,
    /// statvfs's utilisation after the fill and a sync.
    pub util_percent: f64,
    /// Bytes free (available to the caller) at that level.
    pub free_bytes: u64,
}

/// The template a run's image is a copy of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateInfo {
    /// The template image's checksum (core's `aging::image::checksum`).
    pub checksum: String,
    /// This run made the template (its aging and fill were done here, once).
    pub made_here: bool,
    /// `reflink` or `sparse copy`.
    pub copy: String,
    pub copy_secs: f64,
    /// Where the template image was kept: a resume of an interrupted suite starts from it
    /// when it is still there with this checksum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<std::path::PathBuf>,
}

/// The probe's result: a file of `bytes` (a tenth of the free space) allocated in one call
/// took this many pieces; so did one of half the free space, which sees fragmentation that
/// still leaves a tenth's worth of contiguous space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub bytes: u64,
    pub extents: u64,
    /// Physically discontiguous pieces (as filefrag counts): the figure to compare.
    pub fragments: u64,
    #[serde(default)]
    pub half_bytes: u64,
    #[serde(default)]
    pub half_fragments: u64,
}

/// One native tool's view of the free space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NativeView {
    /// The command line run.
    pub command: String,
    /// Its output (at most 8 KiB of it).
    pub output: String,
}

/// How a filesystem is aged: a seeded churn of creates, appends, overwrites and deletes until
/// `target_util_percent` of the space is used and `write_multiple` × the capacity has been
/// written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgeProfile {
    /// The preset's name or the file's stem, as reports show it.
    #[serde(default)]
    pub name: String,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Used space (df's `Use%`: used ÷ (used + available)) the churn ends at, ±1 point.
    pub target_util_percent: f64,
    /// Used space the churn first grows to before it thins the tree down to the target (0:
    /// none), so that live files and the holes between them span the whole device, not its
    /// first part: on a 1 GiB ext4 (one flex group) a churn straight to 50% left the rest of
    /// the device one free run, less fragmented than fresh by the probe.
    #[serde(default)]
    pub peak_util_percent: f64,
    /// Bytes to write in all, in multiples of the filesystem's size (at least what the target
    /// utilisation takes): the churn continues at the target until this much is written.
    #[serde(default)]
    pub write_multiple: f64,
    pub sizes: SizeDist,
    /// Directories the files are spread over (the root included), at most 256.
    #[serde(default = "default_dirs")]
    pub dirs: u32,
    /// Mean depth of a directory below the root (Poisson), capped at `max_depth`.
    #[serde(default = "default_depth_mean")]
    pub depth_mean: f64,
    #[serde(default = "default_max_depth")]
    pub max_depth: u32,
    /// Relative weights of the operations.
    #[serde(default)]
    pub ops: OpWeights,
    /// The largest single append or overwrite.
    #[serde(default = "default_write_block", with = "size")]
    pub write_block: u64,
}

/// Relative weights of the churn's operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpWeights {
    pub create: u32,
    pub append: u32,
    pub overwrite: u32,
    pub delete: u32,
}

impl Default for OpWeights {
    fn default() -> OpWeights {
        OpWeights {
            create: 4,
            append: 2,
            overwrite: 1,
            delete: 3,
        }
    }
}

/// A file-size distribution (bytes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SizeDist {
    /// A lognormal body (`mu`, `sigma` of ln bytes) with a Pareto tail: a share `tail` of the
    /// files is drawn from Pareto(`tail_alpha`, `tail_min`) instead. Capped at `max` and at a
    /// sixteenth of the filesystem, so one file never fills a small image.
    Hybrid {
        mu: f64,
        sigma: f64,
        #[serde(default)]
        tail: f64,
        #[serde(default = "default_alpha")]
        tail_alpha: f64,
        #[serde(default = "default_tail_min", with = "size")]
        tail_min: u64,
        #[serde(with = "size")]
        max: u64,
    },
    /// Uniform between `min` and `max`.
    Uniform {
        #[serde(with = "size")]
        min: u64,
        #[serde(with = "size")]
        max: u64,
    },
    /// Sizes with weights (FFSB's `size_weight`).
    Weighted { sizes: Vec<(u64, u32)> },
}

pub fn default_seed() -> u64 {
    17
}
fn default_dirs() -> u32 {
    64
}
fn default_depth_mean() -> f64 {
    2.0
}
fn default_max_depth() -> u32 {
    8
}
pub fn default_write_block() -> u64 {
    1 << 20
}
pub fn default_alpha() -> f64 {
    0.91
}
pub fn default_tail_min() -> u64 {
    512 << 20
}

/// The most directories a profile may ask for: each is held open during the churn.
pub const MAX_DIRS: u32 = 256;

/// Serde helper: a byte size written as `"4k"` or as a number of bytes.
mod size {
    use serde::{Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*v)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        crate::units::opt_size::deserialize(d)?
            .ok_or_else(|| serde::de::Error::custom("a size is required"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(fragments: u64, half_fragments: u64) -> Option<Probe> {
        Some(Probe {
            bytes: 100 << 20,
            extents: fragments,
            fragments,
            half_bytes: 500 << 20,
            half_fragments,
        })
    }

    #[test]
    fn aging_that_left_the_free_space_as_whole_as_fresh_says_so_and_why() {
        let aging = AgingStats {
            profile: "light".into(),
            seed: 17,
            secs: 1.0,
            bytes_written: 2 << 30,
            files: 1734,
            dirs: 32,
            creates: 1,
            appends: 1,
            overwrites: 1,
            deletes: 1,
            enospc: 0,
            target_util_percent: 50.0,
            util_percent: 49.5,
            capacity_bytes: 1 << 30,
        };
        // The 1 GiB ext4 of the issue: 3 fragments fresh, 1 aged at half the free space.
        let mut prep = Preparation {
            aging: Some(aging),
            probe_fresh: probe(1, 3),
            probe_prepared: probe(1, 1),
            ..Preparation::default()
        };
        let why = prep.not_aged().expect("not aged");
        assert!(
            why.starts_with("aging (light, seed 17) did not measurably age it"),
            "{why}"
        );
        assert!(
            why.contains("at 10%: 1 → 1 fragments, at 50%: 3 → 1"),
            "{why}"
        );
        prep.probe_prepared = probe(40, 232);
        assert_eq!(prep.not_aged(), None);
        // Nothing to tell without a probe (ext2) or without aging (a fill level alone).
        prep.probe_prepared = None;
        assert_eq!(prep.not_aged(), None);
        prep.probe_prepared = probe(1, 1);
        prep.aging = None;
        assert_eq!(prep.not_aged(), None);
    }
}

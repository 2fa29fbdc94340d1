//! FFSB's `agefs=1`: before the file set is made, FFSB runs the thread group inside
//! `[filesystem]` until the filesystem is `desired_util` full (ffsb_fs.c's age_fs). fsbench
//! runs it through its own aging machinery: the group's create, append, write and delete
//! weights become the churn's, the file set's sizes its file sizes, and the target is
//! `desired_util` with nothing more to write once it is reached, as in FFSB.

use serde::{Deserialize, Serialize};

use super::{FileSet, Op, ThreadGroup};
use fsbench_model::aging::{AgeProfile, OpWeights, SizeDist};

/// The aging of an `agefs=1` profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FfsbAging {
    /// `desired_util` in parts per million (FFSB's is a fraction).
    pub desired_util_ppm: u32,
    /// The aging group's weights: create (and create_fsync), append (and append_fsync),
    /// write (and write_fsync, writeall) as overwrites, delete.
    pub create: u32,
    pub append: u32,
    pub overwrite: u32,
    pub delete: u32,
    /// The aging group's `write_size`: how much an append or overwrite writes.
    pub write_size: u64,
}

impl FfsbAging {
    /// From the aging thread group; operations that do not change the layout (reads, stat,
    /// metaop) have no counterpart and are left out.
    pub(super) fn new(desired_util: f64, group: &ThreadGroup) -> FfsbAging {
        let weight = |ops: &[Op]| {
            ops.iter()
                .map(|op| group.weights.get(op).copied().unwrap_or(0))
                .sum()
        };
        FfsbAging {
            desired_util_ppm: (desired_util * 1e6).round() as u32,
            create: weight(&[Op::Create, Op::CreateFsync]),
            append: weight(&[Op::Append, Op::AppendFsync]),
            overwrite: weight(&[Op::Write, Op::WriteFsync, Op::Writeall, Op::WriteallFsync]),
            delete: weight(&[Op::Delete]),
            write_size: if group.write_size > 0 {
                group.write_size
            } else {
                4096
            },
        }
    }

    /// The churn that does it.
    pub fn profile(&self, fileset: &FileSet) -> AgeProfile {
        let sizes = if fileset.size_weights.is_empty() {
            SizeDist::Uniform {
                min: fileset.min_filesize,
                max: fileset.max_filesize.max(fileset.min_filesize),
            }
        } else {
            SizeDist::Weighted {
                sizes: fileset.size_weights.clone(),
            }
        };
        AgeProfile {
            name: format!(
                "ffsb agefs (desired_util {})",
                f64::from(self.desired_util_ppm) / 1e6
            ),
            seed: 1,
            target_util_percent: f64::from(self.desired_util_ppm) / 1e4,
            peak_util_percent: 0.0,
            write_multiple: 0.0,
            sizes,
            dirs: 1,
            depth_mean: 0.0,
            max_depth: 1,
            ops: OpWeights {
                create: self.create,
                append: self.append,
                overwrite: self.overwrite,
                delete: self.delete,
            },
            write_block: self.write_size,
        }
    }
}

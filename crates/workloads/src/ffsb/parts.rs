//! The parts of an FFSB profile: its operations, thread groups and file set.

use super::*;

/// FFSB's operations, in its operation table's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Read,
    Readall,
    Write,
    Create,
    Append,
    Delete,
    /// Two mkdir, one rmdir, one rename.
    Metaop,
    Createdir,
    Stat,
    Writeall,
    WriteallFsync,
    OpenClose,
    WriteFsync,
    CreateFsync,
    AppendFsync,
}

impl Op {
    pub const ALL: [Op; 15] = [
        Op::Read,
        Op::Readall,
        Op::Write,
        Op::Create,
        Op::Append,
        Op::Delete,
        Op::Metaop,
        Op::Createdir,
        Op::Stat,
        Op::Writeall,
        Op::WriteallFsync,
        Op::OpenClose,
        Op::WriteFsync,
        Op::CreateFsync,
        Op::AppendFsync,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Readall => "readall",
            Op::Write => "write",
            Op::Create => "create",
            Op::Append => "append",
            Op::Delete => "delete",
            Op::Metaop => "metaop",
            Op::Createdir => "createdir",
            Op::Stat => "stat",
            Op::Writeall => "writeall",
            Op::WriteallFsync => "writeall_fsync",
            Op::OpenClose => "open_close",
            Op::WriteFsync => "write_fsync",
            Op::CreateFsync => "create_fsync",
            Op::AppendFsync => "append_fsync",
        }
    }

    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Works on an existing file of the set.
    pub(super) fn needs_file(self) -> bool {
        !matches!(
            self,
            Op::Create | Op::CreateFsync | Op::Metaop | Op::Createdir
        )
    }

    pub(super) fn creates(self) -> bool {
        matches!(self, Op::Create | Op::CreateFsync)
    }

    pub(super) fn reads(self) -> bool {
        matches!(self, Op::Read | Op::Readall)
    }

    /// Writes `write_size` bytes (as opposed to whole files).
    pub(super) fn writes_sized(self) -> bool {
        matches!(
            self,
            Op::Write | Op::WriteFsync | Op::Append | Op::AppendFsync
        )
    }

    pub(super) fn writes(self) -> bool {
        self.writes_sized() || self.creates() || matches!(self, Op::Writeall | Op::WriteallFsync)
    }

    /// Reads or writes file data: FFSB counts its block calls as transactions.
    pub(super) fn moves_data(self) -> bool {
        self.reads() || self.writes()
    }
}

/// One thread group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadGroup {
    pub num_threads: u32,
    /// Operation weights (only those above zero).
    pub weights: BTreeMap<Op, u32>,
    #[serde(default)]
    pub read_size: u64,
    #[serde(default)]
    pub read_blocksize: u64,
    #[serde(default)]
    pub read_random: bool,
    /// After each block read sequentially, skip `read_skipsize` bytes.
    #[serde(default)]
    pub read_skip: bool,
    #[serde(default)]
    pub read_skipsize: u64,
    #[serde(default)]
    pub write_size: u64,
    #[serde(default)]
    pub write_blocksize: u64,
    #[serde(default)]
    pub write_random: bool,
    /// Sleep between operations, milliseconds.
    #[serde(default)]
    pub op_delay_ms: u32,
    /// Transactions per thread (fsbench's `num_ops`); without it the group runs for `time`.
    #[serde(default)]
    pub ops_per_thread: Option<u64>,
}

impl ThreadGroup {
    pub(crate) fn set_weight(&mut self, op: Op, weight: u32) {
        if weight == 0 {
            self.weights.remove(&op);
        } else {
            self.weights.insert(op, weight);
        }
    }

    pub fn total_weight(&self) -> u64 {
        self.weights.values().map(|w| u64::from(*w)).sum()
    }

    /// FFSB's choice: walk the weights, subtracting, until the draw falls inside one. The draw
    /// is FFSB's `getrandom(sum)`: as many random bytes as the sum needs (one below 256), modulo
    /// the sum, so its small bias is FFSB's too (weights 4/2/1/1/2 give read 104/256 = 40.6%,
    /// not 40%) and `% op weight` means what FFSB prints.
    pub fn choose(&self, draw: u64) -> Op {
        let total = self.total_weight().max(1);
        let bytes = (64 - total.leading_zeros()).div_ceil(8).clamp(1, 4);
        let mut left = (draw & (u64::MAX >> (64 - 8 * bytes))) % total;
        for (op, w) in &self.weights {
            let w = u64::from(*w);
            if left < w {
                return *op;
            }
            left -= w;
        }
        *self.weights.keys().next().expect("validated: some weight")
    }
}

/// The file set made before the timed part.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSet {
    /// FFSB's `location`, kept for the record; fsbench runs on its target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    pub num_files: u32,
    pub num_dirs: u32,
    pub min_filesize: u64,
    pub max_filesize: u64,
    /// `size_weight SIZE WEIGHT` lines: file sizes drawn by weight instead of a range.
    #[serde(default)]
    pub size_weights: Vec<(u64, u32)>,
    /// Write size when making the file set; 0 means FFSB's default, 4 KiB.
    #[serde(default)]
    pub create_blocksize: u64,
    /// Shrink file sizes so that the files fit the target (the preset does).
    #[serde(default)]
    pub fit: bool,
    /// `agefs=1`: the filesystem is aged before the file set is made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aging: Option<super::aging::FfsbAging>,
}

impl FileSet {
    /// The write size that makes the file set: the profile's `create_blocksize`, or FFSB's
    /// default (`FFSB_FS_DEFAULT_CREATE_BLOCKSIZE`, 4 KiB), so that the files are written as
    /// FFSB writes them.
    pub(super) fn create_block(&self) -> u64 {
        match self.create_blocksize {
            0 => 4096,
            b => b,
        }
    }

    /// The smallest size a file of the set can have.
    pub(super) fn smallest(&self) -> u64 {
        self.size_weights
            .iter()
            .map(|(s, _)| *s)
            .min()
            .unwrap_or(self.min_filesize)
    }

    /// `None` when the weighted sizes overflow.
    pub(super) fn average_size(&self) -> Option<u64> {
        let total: u64 = self.size_weights.iter().map(|(_, w)| u64::from(*w)).sum();
        let weighted = self.size_weights.iter().try_fold(0u64, |sum, (s, w)| {
            sum.checked_add(s.checked_mul(u64::from(*w))?)
        })?;
        Some(
            weighted
                .checked_div(total)
                .unwrap_or(self.min_filesize / 2 + self.max_filesize / 2),
        )
    }

    pub(super) fn largest_size(&self) -> u64 {
        self.size_weights
            .iter()
            .map(|(s, _)| *s)
            .max()
            .unwrap_or(self.max_filesize)
    }
}

//! The tree's phases: fdtree's four and mdtest's two.

use crate::PhaseInfo;

/// fdtree's four phases, in the order they run.
pub const PHASES: &[PhaseInfo] = &[
    Phase::DirCreate.info(),
    Phase::FileCreate.info(),
    Phase::FileRemove.info(),
    Phase::DirRemove.info(),
];

/// A phase of the tree: fdtree's four, and mdtest's two that fdtree lacks, between file
/// create and file remove when asked for: a stat of every file (mdtest -T), then a read of
/// every file (mdtest -E).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    DirCreate,
    FileCreate,
    FileStat,
    FileRead,
    FileRemove,
    DirRemove,
}

impl Phase {
    /// fdtree's phases, as [`PHASES`] lists them.
    pub const FDTREE: [Phase; 4] = [
        Phase::DirCreate,
        Phase::FileCreate,
        Phase::FileRemove,
        Phase::DirRemove,
    ];

    pub const fn info(self) -> PhaseInfo {
        match self {
            Phase::DirCreate => PhaseInfo::fixed("dir-create", "dirs", false),
            Phase::FileCreate => PhaseInfo::fixed("file-create", "files", true),
            Phase::FileStat => PhaseInfo::fixed("file-stat", "files", false),
            Phase::FileRead => PhaseInfo::fixed("file-read", "files", true),
            Phase::FileRemove => PhaseInfo::fixed("file-remove", "files", false),
            Phase::DirRemove => PhaseInfo::fixed("dir-remove", "dirs", false),
        }
    }

    pub(super) fn on_dirs(self) -> bool {
        matches!(self, Phase::DirCreate | Phase::DirRemove)
    }
}

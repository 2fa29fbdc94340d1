//! The filesystems a configuration names: a built-in one by its type, or a user's
//! `[[driver]]` table (carried by the configuration, so results read back without the suite
//! file), and the capabilities such a table declares.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A filesystem fsbench knows how to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsType {
    Ext2,
    Ext3,
    Ext4,
    Xfs,
    Btrfs,
    Tmpfs,
    Nilfs2,
    Jfs,
    Reiserfs,
    F2fs,
    Bcachefs,
    Ntfs,
    Zfs,
    /// A driver a suite file defines; its configuration carries it (drivers/user.rs).
    User,
}

impl FsType {
    /// Every built-in filesystem (not [`FsType::User`]).
    pub const BUILT_IN: [FsType; 13] = [
        FsType::Ext2,
        FsType::Ext3,
        FsType::Ext4,
        FsType::Xfs,
        FsType::Btrfs,
        FsType::Tmpfs,
        FsType::Nilfs2,
        FsType::Jfs,
        FsType::Reiserfs,
        FsType::F2fs,
        FsType::Bcachefs,
        FsType::Ntfs,
        FsType::Zfs,
    ];

    /// Filesystems the default suite compares.
    pub const DEFAULTS: [FsType; 3] = [FsType::Ext4, FsType::Xfs, FsType::Btrfs];

    /// Its name in `--fs`, suite files and outputs (also its stored form).
    pub const fn name(self) -> &'static str {
        match self {
            FsType::Ext2 => "ext2",
            FsType::Ext3 => "ext3",
            FsType::Ext4 => "ext4",
            FsType::Xfs => "xfs",
            FsType::Btrfs => "btrfs",
            FsType::Tmpfs => "tmpfs",
            FsType::Nilfs2 => "nilfs2",
            FsType::Jfs => "jfs",
            FsType::Reiserfs => "reiserfs",
            FsType::F2fs => "f2fs",
            FsType::Bcachefs => "bcachefs",
            FsType::Ntfs => "ntfs",
            FsType::Zfs => "zfs",
            FsType::User => "user",
        }
    }
}

impl fmt::Display for FsType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One capability a `[[driver]]` table declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    Fiemap,
    Fallocate,
    Direct,
    HardLinks,
}

impl Capability {
    pub const ALL: [Capability; 4] = [
        Capability::Fiemap,
        Capability::Fallocate,
        Capability::Direct,
        Capability::HardLinks,
    ];

    /// The `[[driver]]` key that declares it.
    pub fn key(self) -> &'static str {
        match self {
            Capability::Fiemap => "fiemap",
            Capability::Fallocate => "fallocate",
            Capability::Direct => "o_direct",
            Capability::HardLinks => "hard_links",
        }
    }

    /// Its name in messages.
    pub fn what(self) -> &'static str {
        match self {
            Capability::Fiemap => "FIEMAP",
            Capability::Fallocate => "fallocate",
            Capability::Direct => "O_DIRECT",
            Capability::HardLinks => "hard links",
        }
    }
}

/// One `[[driver]]` table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UserDriver {
    pub name: String,
    /// The Debian package a missing program is named with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// `mkfs.ext4 -F -q {options} {device}`.
    pub mkfs: String,
    /// `mount -t` type (a kernel filesystem), or else:
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_type: Option<String>,
    /// a FUSE mount command: `ntfs-3g {device} {mountpoint}` (`{options}`: the mount options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,
    /// Read-only check: `e2fsck -f -n {device}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsck: Option<String>,
    /// `fusermount -u {mountpoint}`; without it, umount(2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmount: Option<String>,
    /// What the filesystem supports, as the user declares it: a workload that needs what it
    /// lacks is refused, and fragment counts and the free-space probe say "unsupported".
    #[serde(default = "yes")]
    pub fiemap: bool,
    #[serde(default = "yes")]
    pub fallocate: bool,
    #[serde(default = "yes")]
    pub o_direct: bool,
    #[serde(default = "yes")]
    pub hard_links: bool,
}

fn yes() -> bool {
    true
}

impl UserDriver {
    /// Whether the table declares `capability`.
    pub fn has(&self, capability: Capability) -> bool {
        match capability {
            Capability::Fiemap => self.fiemap,
            Capability::Fallocate => self.fallocate,
            Capability::Direct => self.o_direct,
            Capability::HardLinks => self.hard_links,
        }
    }

    /// What the table declares the filesystem lacks.
    pub fn lacks(&self) -> Vec<Capability> {
        Capability::ALL
            .into_iter()
            .filter(|c| !self.has(*c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_stored_form() {
        for fs in FsType::BUILT_IN.into_iter().chain([FsType::User]) {
            let stored = serde_json::to_value(fs).unwrap();
            assert_eq!(stored.as_str(), Some(fs.name()));
        }
    }
}

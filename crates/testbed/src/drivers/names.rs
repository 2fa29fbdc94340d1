//! Which words of each driver's mkfs arguments and mount options name a device or a file.

use super::{Names, OptionNames};

/// mke2fs(8) 1.47 and the ext4 mount options (ext2 and ext3 mount through ext4 too). Quota
/// files (`usrjquota=`) are paths inside the filesystem being mounted: nothing outside.
pub(super) const EXT_NAMES: OptionNames = OptionNames {
    short_with_value: "bdegilmorstCEGIJLMNORTUz",
    long_with_value: &[],
    mkfs: &[
        ("-J", "device", Names::Device),
        ("-z", "", Names::WrittenFile),
        ("-d", "", Names::ReadFile),
        ("-l", "", Names::ReadFile),
    ],
    mount: &[
        ("journal_path", Names::Device),
        ("journal_dev", Names::DeviceNumber),
    ],
    // e2fsck finds an external journal by the UUID its superblock records.
    fsck: &[],
};

/// mkfs.xfs(8) 6.x (`-l`/`-r` take `name=` and `file` as `-d` does, undocumented) and the
/// xfs mount options.
pub(super) const XFS_NAMES: OptionNames = OptionNames {
    short_with_value: "bcdilLmnprs",
    long_with_value: &[],
    mkfs: &[
        ("-d", "name", Names::Device),
        ("-d", "file", Names::WrittenFile),
        ("-l", "logdev", Names::Device),
        ("-l", "name", Names::Device),
        ("-l", "file", Names::WrittenFile),
        ("-r", "rtdev", Names::Device),
        ("-r", "name", Names::Device),
        ("-r", "file", Names::WrittenFile),
        ("-c", "options", Names::ReadFile),
        ("-p", "", Names::ReadFile),
    ],
    mount: &[("logdev", Names::Device), ("rtdev", Names::Device)],
    fsck: &[
        ("-l logdev", "-l"),
        ("-l name", "-l"),
        ("-r rtdev", "-r"),
        ("-r name", "-r"),
    ],
};

/// mkfs.btrfs(8) 6.x (every positional word is a further device) and the btrfs mount options.
pub(super) const BTRFS_NAMES: OptionNames = OptionNames {
    short_with_value: "AbdlLmnORrsUu",
    long_with_value: &[
        "alloc-start",
        "byte-count",
        "checksum",
        "compress",
        "csum",
        "data",
        "device-uuid",
        "features",
        "inode-flags",
        "label",
        "leafsize",
        "metadata",
        "nodesize",
        "rootdir",
        "runtime-features",
        "sectorsize",
        "subvol",
        "uuid",
    ],
    mkfs: &[
        ("-r", "", Names::ReadFile),
        ("--rootdir", "", Names::ReadFile),
    ],
    mount: &[("device", Names::Device)],
    // btrfs check finds the other devices by scanning.
    fsck: &[],
};

/// mkfs.nilfs2(8) 2.2: nothing names a device or a file.
pub(super) const NILFS2_NAMES: OptionNames = OptionNames {
    short_with_value: "bBLmO",
    long_with_value: &[],
    mkfs: &[],
    mount: &[],
    fsck: &[],
};

/// mkfs.jfs(8) 1.1: `-j` is an external journal device, `-J device=` one to format as a log.
pub(super) const JFS_NAMES: OptionNames = OptionNames {
    short_with_value: "jJLs",
    long_with_value: &[],
    mkfs: &[("-j", "", Names::Device), ("-J", "device", Names::Device)],
    mount: &[],
    fsck: &[("-j", "-j")],
};

/// mkreiserfs(8) 3.6: an external journal device and a bad-blocks list to read.
pub(super) const REISERFS_NAMES: OptionNames = OptionNames {
    short_with_value: "bjsotBhul",
    long_with_value: &[
        "block-size",
        "journal-device",
        "journal-size",
        "journal-offset",
        "transaction-max-size",
        "badblocks",
        "hash",
        "uuid",
        "label",
        "format",
    ],
    mkfs: &[
        ("-j", "", Names::Device),
        ("--journal-device", "", Names::Device),
        ("-B", "", Names::ReadFile),
        ("--badblocks", "", Names::ReadFile),
    ],
    mount: &[("jdev", Names::Device)],
    fsck: &[("-j", "-j"), ("--journal-device", "-j")],
};

/// mkfs.f2fs(8) 1.15: `-c` lists further devices (a list fsbench cannot resolve is refused).
pub(super) const F2FS_NAMES: OptionNames = OptionNames {
    short_with_value: "acdeEloOCRsStwzU",
    long_with_value: &[],
    mkfs: &[("-c", "", Names::Device)],
    mount: &[],
    fsck: &[],
};

/// `bcachefs format` 1.x: every positional word is a further device.
pub(super) const BCACHEFS_NAMES: OptionNames = OptionNames {
    short_with_value: "LU",
    long_with_value: &[
        "block_size",
        "btree_node_size",
        "compression",
        "background_compression",
        "data_checksum",
        "metadata_checksum",
        "data_replicas",
        "metadata_replicas",
        "replicas",
        "encrypted",
        "fs_label",
        "label",
        "uuid",
        "fs_size",
        "bucket",
        "group",
        "discard",
        "durability",
        "source",
    ],
    mkfs: &[("--source", "", Names::ReadFile)],
    mount: &[],
    fsck: &[],
};

/// mkntfs(8) 2022: nothing names a device or a file.
pub(super) const NTFS_NAMES: OptionNames = OptionNames {
    short_with_value: "LcspHSz",
    long_with_value: &[
        "label",
        "cluster-size",
        "sector-size",
        "partition-start",
        "heads",
        "sectors-per-track",
        "mft-zone-multiplier",
    ],
    mkfs: &[],
    mount: &[],
    fsck: &[],
};

/// zfs-fuse's pool (`pool=`) and dataset (`dataset=`) properties are read as mount options
/// are (testbed/zfs.rs refuses those fsbench sets itself: cachefile, altroot, mountpoint).
pub(super) const ZFS_NAMES: OptionNames = NO_NAMES;

pub(super) const NO_NAMES: OptionNames = OptionNames {
    short_with_value: "",
    long_with_value: &[],
    mkfs: &[],
    mount: &[],
    fsck: &[],
};

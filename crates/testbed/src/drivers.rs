//! Filesystem drivers: how each filesystem is made, checked and mounted.
//!
//! Like fio's engine table, every filesystem fsbench can create is one row of [`DRIVERS`].

use std::path::PathBuf;

use fsbench_model::filesystem::FsType;

use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::tools;

mod kernel;
mod names;
mod user;
pub(crate) mod zfs;

use names::*;
pub use user::UserDriverExt;
pub(crate) use user::{Slots, expand};

/// How one filesystem is made, checked and versioned.
#[derive(Debug)]
pub struct Driver {
    pub fs: FsType,
    /// mkfs program; `None` for filesystems with no on-disk format (tmpfs).
    pub mkfs: Option<&'static str>,
    /// Arguments that make mkfs overwrite without asking and print little.
    pub mkfs_force: &'static [&'static str],
    /// Arguments fsbench adds before the user's so that results are not skewed by the tool's
    /// defaults: ext's lazy inode-table init would keep writing in the background during phases.
    pub mkfs_defaults: &'static [&'static str],
    /// Read-only check: program and arguments (the device is appended).
    pub fsck: Option<(&'static str, &'static [&'static str])>,
    /// Flag that makes the fsck tool print its version.
    pub fsck_version_flag: &'static str,
    /// Flag that makes the mkfs tool print its version.
    pub version_flag: &'static str,
    /// Debian package providing the tools.
    pub package: &'static str,
    /// Smallest device the mkfs tool accepts, in bytes.
    pub min_size: u64,
    /// Which words of its mkfs arguments and mount options name a device or a file.
    pub names: &'static OptionNames,
    /// The kernel configuration option that provides the filesystem (named when it is missing).
    pub kernel_option: &'static str,
    /// For a FUSE filesystem, the daemon: `mount -t` takes its name (its `mount.NAME` helper
    /// starts it), and the kernel needs `fuse` rather than a filesystem of the driver's name.
    pub fuse_daemon: Option<&'static str>,
}

/// What a word of mkfs arguments or mount options names outside the filesystem being made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Names {
    /// A device (or file) the tool writes to: an external log or journal, a further btrfs
    /// device, the data section named apart from the device fsbench appends.
    Device,
    /// A device by its number (ext4's `journal_dev=`).
    DeviceNumber,
    /// A file the tool creates or writes (an undo file, a regular-file image).
    WrittenFile,
    /// A file or directory the tool only reads (files to copy in, a configuration file).
    ReadFile,
}

/// Which words of one driver's mkfs arguments and mount options name a device or a file.
/// Every positional mkfs word names a device (fsbench appends the target itself).
#[derive(Debug)]
pub struct OptionNames {
    /// Short mkfs options that take a value (the next word, or the rest of this one), as in
    /// the tool's getopt string.
    pub short_with_value: &'static str,
    /// Long mkfs options (without `--`) that take a value.
    pub long_with_value: &'static [&'static str],
    /// (mkfs option, sub-option key or "" for the whole value, what it names).
    pub mkfs: &'static [(&'static str, &'static str, Names)],
    /// (mount option key, what its value names).
    pub mount: &'static [(&'static str, Names)],
    /// (mkfs option naming a device, the fsck flag that must name it too): xfs_repair cannot
    /// check a filesystem whose external log it is not given.
    pub fsck: &'static [(&'static str, &'static str)],
}

/// ext2, ext3 and ext4 share e2fsprogs and differ only in the mkfs name and minimum size.
const fn ext_driver(
    fs: FsType,
    mkfs: &'static str,
    min_size: u64,
    kernel_option: &'static str,
) -> Driver {
    Driver {
        fs,
        mkfs: Some(mkfs),
        mkfs_force: &["-F", "-q"],
        mkfs_defaults: &["-E", "lazy_itable_init=0,lazy_journal_init=0"],
        fsck: Some(("e2fsck", &["-f", "-n"])),
        fsck_version_flag: "-V",
        version_flag: "-V",
        package: "e2fsprogs",
        min_size,
        names: &EXT_NAMES,
        kernel_option,
        fuse_daemon: None,
    }
}

/// The driver table.
pub(crate) const DRIVERS: &[Driver] = &[
    ext_driver(
        FsType::Ext2,
        "mkfs.ext2",
        1 << 20,
        "CONFIG_EXT4_USE_FOR_EXT2",
    ),
    ext_driver(FsType::Ext3, "mkfs.ext3", 8 << 20, "CONFIG_EXT4_FS"),
    ext_driver(FsType::Ext4, "mkfs.ext4", 8 << 20, "CONFIG_EXT4_FS"),
    Driver {
        fs: FsType::Xfs,
        mkfs: Some("mkfs.xfs"),
        mkfs_force: &["-f", "-q"],
        mkfs_defaults: &[],
        fsck: Some(("xfs_repair", &["-n"])),
        fsck_version_flag: "-V",
        version_flag: "-V",
        package: "xfsprogs",
        min_size: 300 << 20,
        names: &XFS_NAMES,
        kernel_option: "CONFIG_XFS_FS",
        fuse_daemon: None,
    },
    Driver {
        fs: FsType::Btrfs,
        mkfs: Some("mkfs.btrfs"),
        mkfs_force: &["-f", "-q"],
        mkfs_defaults: &[],
        fsck: Some(("btrfs", &["check", "--readonly"])),
        fsck_version_flag: "--version",
        version_flag: "--version",
        package: "btrfs-progs",
        min_size: 128 << 20,
        names: &BTRFS_NAMES,
        kernel_option: "CONFIG_BTRFS_FS",
        fuse_daemon: None,
    },
    Driver {
        fs: FsType::Tmpfs,
        mkfs: None,
        mkfs_force: &[],
        mkfs_defaults: &[],
        fsck: None,
        fsck_version_flag: "",
        version_flag: "",
        package: "",
        min_size: 0,
        names: &NO_NAMES,
        kernel_option: "CONFIG_TMPFS",
        fuse_daemon: None,
    },
    Driver {
        fs: FsType::Nilfs2,
        mkfs: Some("mkfs.nilfs2"),
        mkfs_force: &["-f", "-q"],
        mkfs_defaults: &[],
        // nilfs-tools has no fsck: the log-structured format recovers at mount.
        fsck: None,
        fsck_version_flag: "",
        version_flag: "-V",
        package: "nilfs-tools",
        min_size: 128 << 20,
        names: &NILFS2_NAMES,
        kernel_option: "CONFIG_NILFS2_FS",
        fuse_daemon: None,
    },
    Driver {
        fs: FsType::Jfs,
        mkfs: Some("mkfs.jfs"),
        // -q also skips the "continue?" question.
        mkfs_force: &["-q"],
        mkfs_defaults: &[],
        fsck: Some(("fsck.jfs", &["-f", "-n"])),
        fsck_version_flag: "-V",
        version_flag: "-V",
        package: "jfsutils",
        min_size: 16 << 20,
        names: &JFS_NAMES,
        kernel_option: "CONFIG_JFS_FS",
        fuse_daemon: None,
    },
    Driver {
        fs: FsType::Reiserfs,
        mkfs: Some("mkfs.reiserfs"),
        // One -f still asks on a whole disk; two never ask.
        mkfs_force: &["-f", "-f", "-q"],
        mkfs_defaults: &[],
        fsck: Some(("reiserfsck", &["--check", "--yes", "--quiet"])),
        fsck_version_flag: "-V",
        version_flag: "-V",
        package: "reiserfsprogs",
        min_size: 64 << 20,
        names: &REISERFS_NAMES,
        kernel_option: "CONFIG_REISERFS_FS (removed from Linux 6.13)",
        fuse_daemon: None,
    },
    Driver {
        fs: FsType::F2fs,
        mkfs: Some("mkfs.f2fs"),
        mkfs_force: &["-f", "-q"],
        mkfs_defaults: &[],
        fsck: Some(("fsck.f2fs", &["--dry-run", "-f"])),
        fsck_version_flag: "-V",
        version_flag: "-V",
        package: "f2fs-tools",
        min_size: 64 << 20,
        names: &F2FS_NAMES,
        kernel_option: "CONFIG_F2FS_FS",
        fuse_daemon: None,
    },
    Driver {
        fs: FsType::Bcachefs,
        mkfs: Some("bcachefs"),
        mkfs_force: &["format", "--force"],
        mkfs_defaults: &[],
        fsck: Some(("bcachefs", &["fsck", "-n"])),
        fsck_version_flag: "version",
        version_flag: "version",
        package: "bcachefs-tools",
        min_size: 64 << 20,
        names: &BCACHEFS_NAMES,
        kernel_option: "CONFIG_BCACHEFS_FS (out of tree since Linux 6.18: the bcachefs-dkms package)",
        fuse_daemon: None,
    },
    Driver {
        fs: FsType::Ntfs,
        mkfs: Some("mkntfs"),
        // -Q skips zeroing the device and the bad-sector scan.
        mkfs_force: &["-F", "-Q", "-q"],
        mkfs_defaults: &[],
        fsck: Some(("ntfsfix", &["-n"])),
        fsck_version_flag: "-V",
        version_flag: "-V",
        package: "ntfs-3g",
        min_size: 16 << 20,
        names: &NTFS_NAMES,
        kernel_option: "CONFIG_FUSE_FS",
        fuse_daemon: Some("ntfs-3g"),
    },
    Driver {
        fs: FsType::Zfs,
        // `zpool create`, with the pool and dataset properties (see testbed/zfs.rs).
        mkfs: Some("zpool"),
        mkfs_force: &[],
        mkfs_defaults: &[],
        // zfs has no offline check: `zpool scrub` checks a live pool, which fsbench does not run.
        fsck: None,
        fsck_version_flag: "",
        version_flag: "",
        package: "zfs-fuse",
        // zpool's smallest vdev.
        min_size: 64 << 20,
        names: &ZFS_NAMES,
        kernel_option: "CONFIG_FUSE_FS",
        fuse_daemon: Some("zfs-fuse"),
    },
];

/// What a user driver's configuration is where the table is asked (its own commands are in
/// the configuration's [`UserDriver`]): nothing made, checked or refused by a built-in rule.
const USER_ROW: Driver = Driver {
    fs: FsType::User,
    mkfs: None,
    mkfs_force: &[],
    mkfs_defaults: &[],
    fsck: None,
    fsck_version_flag: "",
    version_flag: "",
    package: "",
    min_size: 0,
    names: &NO_NAMES,
    kernel_option: "",
    fuse_daemon: None,
};

/// The driver table's side of a filesystem type: its row, and its name read from user text
/// with fsbench's error.
pub trait FsTypeExt: Sized {
    fn driver(self) -> &'static Driver;
    /// The built-in filesystem named `name` (as `--fs` and suite files write it).
    fn parse(name: &str) -> anyhow::Result<Self>;
}

impl FsTypeExt for FsType {
    fn driver(self) -> &'static Driver {
        if self == FsType::User {
            return &USER_ROW;
        }
        DRIVERS
            .iter()
            .find(|d| d.fs == self)
            .expect("every FsType has a driver")
    }

    fn parse(name: &str) -> anyhow::Result<FsType> {
        FsType::BUILT_IN
            .into_iter()
            .find(|fs| fs.name() == name.trim())
            .ok_or_else(|| {
                let known: Vec<_> = FsType::BUILT_IN.map(FsType::name).to_vec();
                invalid(format!(
                    "unknown filesystem `{name}`: fsbench knows {}",
                    known.join(", ")
                ))
            })
    }
}

/// The installed tools of one driver, resolved once per suite.
#[derive(Debug, Clone, Default)]
pub struct Toolset {
    pub mkfs: Option<PathBuf>,
    pub fsck: Option<PathBuf>,
    /// First line of the mkfs tool's version output.
    pub version: Option<String>,
    /// First line of the fsck tool's version output.
    pub fsck_version: Option<String>,
}

impl Driver {
    /// Resolves this driver's tools, or names the package to install.
    /// A filesystem the running kernel lacks is refused first, naming its kernel option.
    pub fn toolset(&self) -> Result<Toolset, FsbenchError> {
        kernel::require(self)?;
        let Some(mkfs_name) = self.mkfs else {
            return Ok(Toolset::default());
        };
        let mkfs = tools::require(mkfs_name, self.package)?;
        let fsck = match self.fsck {
            Some((prog, _)) => Some(tools::require(prog, self.package)?),
            None => None,
        };
        if self.fs == FsType::Zfs {
            return zfs::toolset(mkfs, self.package);
        }
        let mut version = tools::version_line(&mkfs, self.version_flag);
        if let Some(daemon) = self.fuse_daemon {
            // The daemon does the filesystem's work: its version is the one that matters.
            let daemon = tools::version_line(&tools::require(daemon, self.package)?, "--version");
            version = [version, daemon]
                .into_iter()
                .flatten()
                .reduce(|a, b| format!("{a}; {b}"));
        }
        let fsck_version = fsck
            .as_ref()
            .and_then(|f| tools::version_line(f, self.fsck_version_flag));
        Ok(Toolset {
            mkfs: Some(mkfs),
            fsck,
            version,
            fsck_version,
        })
    }

    /// The type `mount -t` takes: the FUSE daemon's for a FUSE filesystem.
    pub fn mount_type(&self) -> &'static str {
        self.fuse_daemon.unwrap_or(self.fs.name())
    }

    /// The full mkfs argument list for `device`: force flags, fsbench's defaults, the user's.
    pub(crate) fn mkfs_args(&self, user_args: &[String], device: &str) -> Vec<String> {
        self.mkfs_force
            .iter()
            .chain(self.mkfs_defaults)
            .map(|s| s.to_string())
            .chain(user_args.iter().cloned())
            .chain([device.to_string()])
            .collect()
    }

    /// The read-only fsck argument list for `device`, with `extra` (the external devices
    /// mkfs was given) before it.
    pub(crate) fn fsck_args(&self, extra: &[String], device: &str) -> Vec<String> {
        self.fsck
            .map(|(_, args)| args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .chain(extra.iter().cloned())
            .chain([device.to_string()])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in DRIVERS {
            assert_eq!(FsType::parse(d.fs.name()).unwrap(), d.fs);
            assert_eq!(d.fs.driver().fs, d.fs);
        }
        // Every built-in type has its row, in the same order (`--help` and errors list them).
        let rows: Vec<FsType> = DRIVERS.iter().map(|d| d.fs).collect();
        assert_eq!(rows, FsType::BUILT_IN);
        let err = FsType::parse("ufs").unwrap_err().to_string();
        assert!(err.contains("unknown filesystem `ufs`"), "{err}");
        assert!(err.contains("ext4"), "{err}");
    }

    #[test]
    fn mkfs_arguments_put_user_options_after_defaults() {
        let args = FsType::Ext4
            .driver()
            .mkfs_args(&["-O".into(), "^has_journal".into()], "/dev/loop0");
        assert_eq!(args.first().unwrap(), "-F");
        assert_eq!(
            &args[args.len() - 3..],
            ["-O", "^has_journal", "/dev/loop0"]
        );
        assert_eq!(
            FsType::Btrfs.driver().fsck_args(&[], "/dev/loop1"),
            ["check", "--readonly", "/dev/loop1"]
        );
    }

    #[test]
    fn command_lines_of_filesystems_from_outside_the_big_three() {
        let dev = "/dev/loop7";
        let cases: [(FsType, &[&str], &[&str]); 5] = [
            (FsType::Nilfs2, &["-f", "-q", dev], &[]),
            (FsType::Jfs, &["-q", dev], &["-f", "-n", dev]),
            (
                FsType::Reiserfs,
                &["-f", "-f", "-q", dev],
                &["--check", "--yes", "--quiet", dev],
            ),
            (FsType::F2fs, &["-f", "-q", dev], &["--dry-run", "-f", dev]),
            (
                FsType::Bcachefs,
                &["format", "--force", dev],
                &["fsck", "-n", dev],
            ),
        ];
        for (fs, mkfs, fsck) in cases {
            let d = fs.driver();
            assert_eq!(d.mkfs_args(&[], dev), mkfs, "{fs}");
            if d.fsck.is_some() {
                assert_eq!(d.fsck_args(&[], dev), fsck, "{fs}");
            }
            assert!(!d.package.is_empty() && d.kernel_option.starts_with("CONFIG_"));
        }
        assert_eq!(FsType::Nilfs2.driver().mkfs, Some("mkfs.nilfs2"));
        assert!(FsType::Nilfs2.driver().fsck.is_none());
        assert_eq!(FsType::Jfs.driver().fsck.unwrap().0, "fsck.jfs");
        assert_eq!(FsType::Reiserfs.driver().fsck.unwrap().0, "reiserfsck");
        assert_eq!(FsType::Bcachefs.driver().mkfs, Some("bcachefs"));
        // A user's options go between the force flags and the device.
        assert_eq!(
            FsType::Jfs
                .driver()
                .mkfs_args(&["-L".into(), "x".into()], dev),
            ["-q", "-L", "x", dev]
        );
    }
}

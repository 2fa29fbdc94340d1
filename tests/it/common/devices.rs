//! Block devices a test makes for itself: a loop device over a blank image, an ext4 on
//! one; each undone when dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{run, status, tempdir, text};

/// A loop device attached for a test over a blank image of its own, detached when dropped.
pub struct LoopDevice {
    pub dev: String,
    _dir: tempfile::TempDir,
}

impl LoopDevice {
    /// A blank (sparse) image of `mib` MiB, attached.
    pub fn blank(mib: u64) -> LoopDevice {
        let dir = tempdir();
        let image = dir.path().join("image");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(mib << 20)
            .unwrap();
        let out = run(Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&image));
        assert!(out.status.success(), "losetup: {}", text(&out.stderr));
        LoopDevice {
            dev: text(&out.stdout).trim().to_string(),
            _dir: dir,
        }
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        status(Command::new("losetup").args(["-d", &self.dev]));
    }
}

/// An ext4 filesystem on a loop device, mounted on `dir/ext4`; unmounted when dropped.
pub struct Ext4 {
    pub path: PathBuf,
    _device: LoopDevice,
}

impl Ext4 {
    /// A fresh one of `mib` MiB.
    pub fn mount(dir: &Path, mib: u64) -> Ext4 {
        let device = LoopDevice::blank(mib);
        assert!(status(Command::new("mkfs.ext4").args(["-q", "-F", &device.dev])).success());
        let path = dir.join("ext4");
        std::fs::create_dir(&path).unwrap();
        assert!(status(Command::new("mount").arg(&device.dev).arg(&path)).success());
        Ext4 {
            path,
            _device: device,
        }
    }
}

impl Drop for Ext4 {
    fn drop(&mut self) {
        status(Command::new("umount").arg(&self.path));
    }
}

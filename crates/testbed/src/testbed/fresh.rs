//! One run's fresh filesystem, from its making to its teardown: unmount and fsck timed,
//! everything undone on drop.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use fsbench_model::testbed::{BackgroundRecord, FsckOutcome, LoopInfo};

use super::background::BackgroundLoad;
use super::{detach, mounts, open_dir, queue};
use crate::define::Load;
use crate::drivers::{FsTypeExt, Slots, Toolset, expand};
use fsbench_measure::tools;
use fsbench_model::config::FsConfig;
use fsbench_model::filesystem::{FsType, UserDriver};

/// A user driver's mount command for one run: the program and its arguments.
type MountCommand = (PathBuf, Vec<String>);

/// Timings of a run's end.
#[derive(Debug, Clone, Default)]
pub struct Teardown {
    pub unmount_secs: Option<f64>,
    pub fsck: Option<FsckOutcome>,
}

/// One run's fresh filesystem. [`FreshFs::finish`] tears it down with timings; dropping it
/// without finishing (on error or panic) undoes everything without.
pub struct FreshFs {
    /// Everything of this run lives below it: image, mount point or work tree.
    pub(super) run_dir: PathBuf,
    /// The empty directory mkfs, mount and fsck run in.
    pub(super) tool_dir: PathBuf,
    /// The directory workloads run in (the mount point, or `run_dir` for a directory target).
    pub(super) root: PathBuf,
    pub(super) root_fd: Option<OwnedFd>,
    pub(super) mountpoint: Option<PathBuf>,
    pub(super) device: Option<PathBuf>,
    pub(super) loop_device: Option<PathBuf>,
    pub(super) image: Option<PathBuf>,
    pub(super) fs: Option<FsType>,
    pub(super) fsck: Option<PathBuf>,
    /// fsck's arguments naming the external devices mkfs was given.
    pub(super) fsck_extra: Vec<String>,
    pub mkfs_secs: Option<f64>,
    pub mkfs_command: Option<String>,
    /// `mount`'s arguments, for mounting again after a checkpoint.
    pub(super) mount_args: Vec<String>,
    /// Options as /proc/self/mounts shows them.
    pub mount_options: String,
    /// The device (or `tmpfs`, or the existing directory's mount source).
    pub source: String,
    /// The loop device as sysfs showed it once mounted; `None` without a loop device.
    pub loop_info: Option<LoopInfo>,
    /// How the image was copied from a template (`reflink`, `sparse copy`) and how long it
    /// took; `None` for a freshly made filesystem.
    pub copied: Option<(&'static str, f64)>,
    /// The queue settings changed for the run (I/O schedulers: the device's, and with
    /// `--sched-backing` a loop device's backing disk's; the write cache), put back before
    /// the device is let go.
    pub(super) queue_settings: Vec<queue::Setting>,
    /// The background load during the run's phases, stopped before anything is undone.
    pub(super) background: Option<BackgroundLoad>,
    /// zfs's daemon and pool, which take the place of mkfs and mount.
    pub(super) zfs: Option<super::zfs::Pool>,
    /// A user driver's commands, and its mount command as expanded for this run.
    pub(super) user: Option<(UserDriver, Option<MountCommand>)>,
    /// The crash recorder the loop device is attached through, stopped once it is detached.
    pub(super) recording: Option<crate::crash::Recording>,
}

impl FreshFs {
    /// The directory workloads run in.
    pub fn dir(&self) -> &OwnedFd {
        self.root_fd.as_ref().expect("open until finished")
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The crash recording's directory, when the run is recorded.
    pub fn recording(&self) -> Option<&Path> {
        self.recording.as_ref().map(|r| r.dir())
    }

    /// Whether undoing the run removes its files one by one (a directory target, with no
    /// filesystem of its own to unmount or image to delete): slow for millions of them.
    pub fn removes_files(&self) -> bool {
        self.fs.is_none()
    }

    /// The device the filesystem is on (none for tmpfs and directories).
    pub fn device(&self) -> Option<&Path> {
        self.device.as_deref()
    }

    /// Sets the device's write cache on or off until the run ends (`note` records it first);
    /// says what it did.
    pub fn set_write_cache(
        &mut self,
        on: bool,
        note: impl FnOnce(super::state::QueueRecord) -> anyhow::Result<()>,
    ) -> anyhow::Result<String> {
        let device = (self.device.clone()).context("wcache= needs a block device")?;
        let set = queue::set_write_cache(&device, on, note)?;
        let said = set.description.clone();
        self.queue_settings.push(set);
        Ok(said)
    }

    /// Sets I/O scheduler `name` on the device's queue until the run ends, and where
    /// `backing` on a loop device's backing disk's too, each claimed for the run and recorded
    /// with `note` before it is changed. Says what it set, and for a loop device what it did
    /// to the backing disk's queue.
    pub fn set_scheduler(
        &mut self,
        name: &str,
        backing: bool,
        mut note: impl FnMut(super::state::QueueRecord) -> anyhow::Result<()>,
    ) -> anyhow::Result<(String, Option<String>)> {
        let device = (self.device.clone()).context("sched= needs a block device")?;
        let loop_device = self.loop_device.clone();
        let set = queue::set_noted(&device, name, loop_device.as_deref(), &mut note)?;
        let said = set.description.clone();
        self.queue_settings.push(set);
        let Some(dev) = loop_device else {
            return Ok((said, None));
        };
        if !backing {
            let left = queue::backing_untouched(&dev);
            return Ok((
                said,
                Some(format!("not set: {left} (--sched-backing sets it)")),
            ));
        }
        let set = queue::set_backing(&dev, name, note)?;
        let backing_said = set.description.clone();
        self.queue_settings.push(set);
        Ok((said, Some(backing_said)))
    }

    /// sync → unmount → fsck → `inspect(device)` → detach, keeping the image as `dest` (a
    /// template). The image stays only when fsck found it clean.
    pub fn finish_as_template(
        mut self,
        dest: &Path,
        inspect: impl FnOnce(&Path),
    ) -> anyhow::Result<Teardown> {
        let teardown = self.unmount_and_check()?;
        if let Some(fsck) = teardown.fsck.as_ref().filter(|f| !f.clean) {
            anyhow::bail!(
                "fsck found the prepared filesystem inconsistent: {}",
                fsck.output.as_deref().unwrap_or("").trim_end()
            );
        }
        if let Some(dev) = &self.device {
            inspect(dev);
        }
        if let Some(dev) = self.loop_device.take() {
            detach::detach_loop(&dev)?;
        }
        let image = self.image.take().context("a template needs a loop image")?;
        std::fs::rename(&image, dest)
            .with_context(|| format!("cannot keep {} as {}", image.display(), dest.display()))?;
        self.release()?;
        Ok(teardown)
    }

    /// sync → unmount (timed) → fsck (timed) → detach → remove the image.
    pub fn finish(mut self) -> anyhow::Result<Teardown> {
        let teardown = self.unmount_and_check()?;
        self.release()?;
        Ok(teardown)
    }

    /// Unmount (timed), fsck (timed), mount again with the same options: the data is on disk,
    /// checked with the files in place, and caches are cold. `None` where that cannot be done
    /// without losing the files (tmpfs) or the target is a plain directory.
    pub fn remount(&mut self) -> anyhow::Result<Option<Teardown>> {
        let Some(mnt) = self.mountpoint.clone() else {
            return Ok(None);
        };
        if self.device.is_none() {
            return Ok(None);
        }
        let teardown = self.unmount_and_check()?;
        self.mountpoint = Some(mnt.clone());
        if let Some(pool) = &self.zfs {
            pool.mount()
                .context("mounting the zfs dataset again failed")?;
        } else {
            self.mount().context("mounting again failed")?;
        }
        self.root_fd = Some(open_dir(&mnt)?);
        Ok(Some(teardown))
    }

    fn unmount_and_check(&mut self) -> anyhow::Result<Teardown> {
        let mut teardown = Teardown::default();
        if let Some(fd) = self.root_fd.take() {
            let _ = rustix::fs::syncfs(&fd);
        }
        if let Some(mnt) = self.mountpoint.take() {
            let start = Instant::now();
            self.unmount(&mnt)?;
            teardown.unmount_secs = Some(start.elapsed().as_secs_f64());
        }
        if let (Some(dev), Some(fsck), Some(fs)) = (&self.device, &self.fsck, self.fs) {
            let args = match &self.user {
                Some((driver, _)) => {
                    let template = driver.fsck.as_deref().context("a user driver's fsck")?;
                    let slots = Slots {
                        device: dev,
                        mountpoint: &self.root,
                        options: &[],
                    };
                    expand(template, &slots)?.1
                }
                None => fs
                    .driver()
                    .fsck_args(&self.fsck_extra, &dev.display().to_string()),
            };
            let run = tools::run_in(fsck, &args, &self.tool_dir)?;
            // Ctrl-C reaches fsck too: what it says then is no finding.
            if tools::was_interrupted(&run) {
                return Err(fsbench_measure::error::FsbenchError::Interrupted.into());
            }
            teardown.fsck = Some(FsckOutcome {
                clean: run.success,
                secs: run.elapsed.as_secs_f64(),
                output: (!run.success).then_some(run.output),
            });
        }
        Ok(teardown)
    }

    /// Unmounts `mnt`; a FUSE daemon's writes end only when it exits and lets go of the
    /// device, which is part of unmounting.
    fn unmount(&mut self, mnt: &Path) -> anyhow::Result<()> {
        if let Some(pool) = &mut self.zfs {
            // Through zfs-fuse, which holds the device until its pool is destroyed.
            return match mounts::mount_at(mnt) {
                Some(_) => pool.unmount(),
                None => Ok(()),
            };
        }
        let user_unmount = self.user.as_ref().and_then(|(d, _)| d.unmount.as_deref());
        match (user_unmount, &self.device) {
            (Some(template), Some(dev)) => {
                let slots = Slots {
                    device: dev,
                    mountpoint: mnt,
                    options: &[],
                };
                let (program, args) = expand(template, &slots)?;
                let program = tools::require(&program.display().to_string(), "that provides it")?;
                tools::run_ok_in_within(&program, &args, &self.tool_dir, tools::MOUNT_LIMIT)?;
                mounts::wait_for(mnt, false, MOUNT_LIMIT, "the unmounted filesystem")?;
            }
            _ => detach::unmount(mnt)?,
        }
        let fuse = self.user.as_ref().map(|(_, command)| command.is_some());
        match (&self.device, self.fs) {
            (Some(dev), Some(_)) if fuse == Some(true) => detach::wait_released(dev),
            (Some(dev), Some(fs)) if fs.driver().fuse_daemon.is_some() => {
                detach::wait_released(dev)
            }
            _ => Ok(()),
        }
    }

    /// Starts the background load `text` (`cpu:2+io:1`); its disk workers' files go to the
    /// run's directory beside the image, never onto the measured filesystem.
    pub fn start_background(&mut self, text: &str) -> anyhow::Result<()> {
        let Some(load) = Load::parse(text).map_err(anyhow::Error::msg)? else {
            return Ok(());
        };
        anyhow::ensure!(
            load.io == 0 || self.run_dir != self.root,
            "background `{text}`: io load needs a filesystem fsbench makes"
        );
        self.background = Some(BackgroundLoad::start(
            &load,
            &self.run_dir.join("background"),
        )?);
        Ok(())
    }

    /// What the run lost, if its filesystem's daemon (zfs-fuse) died under it.
    pub fn lost_daemon(&mut self) -> Option<String> {
        let pool = self.zfs.as_mut()?;
        (!pool.daemon_alive()).then(|| format!("the zfs-fuse daemon of pool {} died", pool.name))
    }

    /// Stops the background load, if one runs: what it cost, or an error where it had
    /// stopped on its own during the run.
    pub fn stop_background(&mut self) -> Option<anyhow::Result<BackgroundRecord>> {
        self.background.take().map(BackgroundLoad::stop)
    }

    /// Undoes whatever is still set up; safe to call more than once.
    fn release(&mut self) -> anyhow::Result<()> {
        self.background.take();
        self.root_fd.take();
        if let Some(mnt) = self.mountpoint.take() {
            self.unmount(&mnt)?;
        }
        // Each is put back even when another cannot be: the backing disk's is the machine's.
        let restored: Vec<_> = (self.queue_settings.iter_mut())
            .map(|s| s.restore())
            .collect();
        restored.into_iter().collect::<anyhow::Result<()>>()?;
        if let Some(mut pool) = self.zfs.take() {
            pool.release()?;
        }
        if let Some(dev) = self.loop_device.take() {
            detach::detach_loop(&dev)?;
        }
        if let Some(recording) = self.recording.take() {
            // The image goes with the recording: the whole log replayed must give it.
            recording.finish(self.image.take())?;
        }
        if let Some(image) = self.image.take() {
            std::fs::remove_file(&image)
                .with_context(|| format!("cannot remove {}", image.display()))?;
        }
        if self.run_dir.exists() && mounts::mounts_below(&self.run_dir).is_empty() {
            fsbench_measure::rmtree::purge(&self.run_dir)
                .with_context(|| format!("cannot remove {}", self.run_dir.display()))?;
        }
        Ok(())
    }
}

/// How long a user driver's mount may take to appear, or its unmount to go.
const MOUNT_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

impl FreshFs {
    /// A user driver's mkfs and mount in place of a built-in's (the mount point is made).
    pub(super) fn make_user(
        &mut self,
        driver: &UserDriver,
        config: &FsConfig,
        tools: &Toolset,
        device: &Path,
    ) -> anyhow::Result<()> {
        let mnt = self.run_dir.join("mnt");
        std::fs::create_dir(&mnt)?;
        let mut slots = Slots {
            device,
            mountpoint: &mnt,
            options: &config.mkfs,
        };
        if self.copied.is_none() {
            let mkfs = tools.mkfs.as_ref().context("a user driver has mkfs")?;
            let args = expand(&driver.mkfs, &slots)?.1;
            let run = tools::run_ok_in(mkfs, &args, &self.tool_dir)?;
            self.mkfs_secs = Some(run.elapsed.as_secs_f64());
            self.mkfs_command = Some(format!("{} {}", mkfs.display(), args.join(" ")));
        }
        let options = [config.mount.clone()];
        slots.options = if config.mount.is_empty() {
            &[]
        } else {
            &options
        };
        let command = match (&driver.mount_type, &driver.mount) {
            (Some(kind), _) => {
                let mut args = vec!["-t".to_string(), kind.clone()];
                if !config.mount.is_empty() {
                    args.extend(["-o".to_string(), config.mount.clone()]);
                }
                args.extend([device.display().to_string(), mnt.display().to_string()]);
                self.mount_args = args;
                None
            }
            (None, Some(template)) => {
                let (program, args) = expand(template, &slots)?;
                let package = driver.package.as_deref().unwrap_or("that provides it");
                Some((
                    tools::require(&program.display().to_string(), package)?,
                    args,
                ))
            }
            (None, None) => anyhow::bail!("user driver `{}` has no mount", driver.name),
        };
        self.device = Some(device.to_path_buf());
        self.user = Some((driver.clone(), command));
        // Set first: a mount command that fails half-way is undone all the same.
        self.mountpoint = Some(mnt.clone());
        self.mount()?;
        let entry = mounts::mount_at(&mnt).context("the new mount is not in /proc/self/mounts")?;
        self.mount_options = entry.options;
        self.source = device.display().to_string();
        self.root = mnt.clone();
        self.root_fd = Some(open_dir(&mnt)?);
        Ok(())
    }

    /// Mounts at the mount point with `mount` (its arguments kept) or a user driver's mount
    /// command, which must make the mount appear within [`MOUNT_LIMIT`].
    fn mount(&mut self) -> anyhow::Result<()> {
        let mnt = self.mountpoint.clone().context("a mount point")?;
        let command = self.user.as_ref().and_then(|(_, c)| c.as_ref());
        if let Some((program, args)) = command {
            tools::run_ok_in_within(program, args, &self.tool_dir, tools::MOUNT_LIMIT)?;
            let what = format!(
                "the mount of {}",
                self.device.as_deref().unwrap_or(&mnt).display()
            );
            return mounts::wait_for(&mnt, true, MOUNT_LIMIT, &what).with_context(|| {
                format!("`{} {}` mounted nothing", program.display(), args.join(" "))
            });
        }
        let mount = tools::require("mount", "mount")?;
        tools::run_ok_in_within(&mount, &self.mount_args, &self.tool_dir, tools::MOUNT_LIMIT)?;
        Ok(())
    }
}

impl Drop for FreshFs {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            fsbench_measure::diag::say(&format!(
                "fsbench: cleanup of {} failed: {e:#}",
                self.root.display()
            ));
        }
    }
}

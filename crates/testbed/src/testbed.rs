//! Where a suite runs and the fresh-filesystem lifecycle of every run:
//! (attach) → mkfs → mount → phases → sync → unmount (timed) → fsck (timed) → (detach).

pub mod background;
pub mod baseline;
pub mod clean;
pub(crate) mod detach;
pub mod device;
mod fresh;
mod fuse_daemons;
pub mod kmsg;
pub(crate) mod loopdev;
pub mod mounts;
pub mod named;
pub mod queue;
pub mod scratch;
pub mod stack;
pub(crate) mod state;
pub mod zfs;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use fsbench_model::testbed::{TargetSpec, default_image_dir};
use rustix::fs::{Mode, OFlags};

use crate::drivers::{FsTypeExt, Toolset};
use device::DeviceKind;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::tools;
use fsbench_model::config::FsConfig;
use fsbench_model::filesystem::FsType;
use fsbench_model::units::{format_bytes, group_thousands};
use fsbench_workloads::SpaceNeed;
use scratch::Scratch;

pub use fresh::{FreshFs, Teardown};

/// Smallest image fsbench makes: room for every filesystem's own metadata.
const MIN_IMAGE: u64 = 1 << 30;

/// Image size for `need`: room for the data, and for ext4's one inode per 16 KiB.
fn image_size_for(need: SpaceNeed) -> u64 {
    let by_bytes = need.bytes.max(need.ideal_bytes).saturating_mul(3) / 2;
    let by_inodes = need.inodes.saturating_mul(20 << 10);
    let size = by_bytes
        .max(by_inodes)
        .saturating_add(256 << 20)
        .max(MIN_IMAGE);
    size.div_ceil(64 << 20).saturating_mul(64 << 20)
}

/// An opened target: its scratch directory and everything checked once per suite.
pub struct Target {
    spec: TargetSpec,
    scratch: Scratch,
    /// Where template images are kept, apart from `scratch` so that they can outlive an
    /// interrupted suite (the first made here or adopted from an earlier attempt; more when
    /// a resume adopts another's).
    templates: Vec<Scratch>,
    image_size: u64,
    device_kind: Option<DeviceKind>,
    runs: u32,
    /// Where the next run's crash recording goes, when one is asked for.
    recording: Option<PathBuf>,
    recordings: u32,
}

impl Target {
    /// Checks the target and creates its scratch directory. `need` is the largest space any
    /// workload needs; `fs_types` the filesystems the suite will make.
    pub fn open(spec: &TargetSpec, need: SpaceNeed, fs_types: &[FsType]) -> anyhow::Result<Target> {
        if spec.makes_filesystems() && !tools::is_root() {
            return Err(
                FsbenchError::NotRoot("making filesystems (mkfs, mount, losetup)".into()).into(),
            );
        }
        let (parent, image_size, device_kind) = match spec {
            TargetSpec::Image { dir, size, .. } => {
                let size = size.unwrap_or_else(|| image_size_for(need));
                check_image_size(size, need, fs_types)?;
                check_directory(dir)?;
                // A sparse image larger than the space behind it would turn a full host
                // filesystem into I/O errors inside the filesystem under test.
                let free = free_bytes(dir)?;
                if size > free {
                    return Err(invalid(format!(
                        "an image of {} does not fit in {}, which has {} free; use --image-size or --image-dir",
                        format_bytes(size),
                        dir.display(),
                        format_bytes(free)
                    )));
                }
                (dir.clone(), size, None)
            }
            TargetSpec::Device { path, force, .. } => {
                let kind = device::check_device(path, *force, "--force")?;
                let size = device_size(path)?;
                check_image_size(size, need, fs_types)?;
                (default_image_dir(), size, Some(kind))
            }
            TargetSpec::Dir { path } => {
                check_dir_space(path, need)?;
                (path.clone(), 0, None)
            }
        };
        let mut scratch = Scratch::create(&parent)?;
        let mut spec = spec.clone();
        // The tools run in an empty directory: a relative device path would name nothing.
        if let TargetSpec::Device { path, .. } = &mut spec {
            *path = std::path::absolute(&*path)?;
            if device_kind == Some(DeviceKind::Block) {
                scratch.note_device(path)?;
            }
        }
        Ok(Target {
            spec,
            scratch,
            templates: Vec::new(),
            image_size,
            device_kind,
            runs: 0,
            recording: None,
            recordings: 0,
        })
    }

    pub fn spec(&self) -> &TargetSpec {
        &self.spec
    }

    pub fn image_size(&self) -> u64 {
        self.image_size
    }

    /// A fresh filesystem (or fresh directory) for one run of `config`.
    /// Records a queue's scheduler before a run changes it, for `fsbench clean`.
    pub fn note_queue(&mut self, record: state::QueueRecord) -> anyhow::Result<()> {
        self.scratch.note_queue(record)
    }

    pub fn fresh(&mut self, config: &FsConfig, tools: &Toolset) -> anyhow::Result<FreshFs> {
        self.fresh_from(config, tools, None)
    }

    /// Puts the next run's loop image behind a crash recorder; returns the recording's
    /// directory (`<scratch>/crash<N>`), which holds its log once the run is done. Loop
    /// images only: the recorder serves the image the loop device is attached to.
    pub fn record_next_run(&mut self) -> anyhow::Result<PathBuf> {
        if !matches!(self.spec, TargetSpec::Image { .. }) {
            return Err(invalid(
                "crash states need loop images: not on --dir or --device targets",
            ));
        }
        self.recordings += 1;
        let dir = self
            .scratch
            .path()
            .join(format!("crash{}", self.recordings));
        self.recording = Some(dir.clone());
        Ok(dir)
    }

    /// Whether runs of `config` can start from a copy of a template image (loop images).
    pub fn takes_templates(&self, config: &FsConfig) -> bool {
        // A zfs pool's image names its pool: a copy would need importing under a new name.
        matches!(self.spec, TargetSpec::Image { .. })
            && config
                .fs
                .is_some_and(|fs| fs != FsType::Tmpfs && fs != FsType::Zfs)
    }

    /// Where template image `name` is kept: in a directory of their own beside the scratch
    /// directory (made now if need be), which goes with the suite unless
    /// [`Target::keep_templates`] says otherwise, and with `fsbench clean`.
    pub fn template_path(&mut self, name: &str) -> anyhow::Result<PathBuf> {
        if self.templates.is_empty() {
            let base = self
                .scratch
                .path()
                .parent()
                .context("scratch has a parent")?;
            let dir = Scratch::create_named(base, scratch::PREFIXES[1])?;
            self.templates.push(dir);
        }
        Ok(self.templates[0].path().join(name))
    }

    /// Takes over the directory of a template an earlier attempt of the suite kept, so that
    /// it is removed (or kept) with this one's.
    pub fn adopt_templates(&mut self, template: &Path) -> anyhow::Result<()> {
        let dir = template.parent().context("a template is in a directory")?;
        if !self.templates.iter().any(|t| t.path() == dir) {
            self.templates.push(Scratch::adopt(dir)?);
        }
        Ok(())
    }

    /// Keeps the template images past this target's end (an interrupted suite that can be
    /// resumed); returns their directories.
    pub fn keep_templates(&mut self) -> Vec<PathBuf> {
        self.templates.iter_mut().for_each(Scratch::keep);
        self.templates
            .iter()
            .map(|t| t.path().to_path_buf())
            .collect()
    }

    /// Like [`Target::fresh`], but with `template` the run's image is a copy of that image
    /// (a reflink where possible) and is mounted without mkfs.
    pub fn fresh_from(
        &mut self,
        config: &FsConfig,
        tools: &Toolset,
        template: Option<&Path>,
    ) -> anyhow::Result<FreshFs> {
        self.runs += 1;
        let run_dir = self.scratch.path().join(format!("run{}", self.runs));
        std::fs::create_dir(&run_dir)
            .with_context(|| format!("cannot create {}", run_dir.display()))?;
        let mut fresh = FreshFs::in_run_dir(run_dir.clone(), config, tools);
        let Some(fs) = config.fs else {
            let entry = mounts::mount_containing(&run_dir);
            fresh.mount_options = entry
                .as_ref()
                .map(|m| m.options.clone())
                .unwrap_or_default();
            fresh.source = entry
                .map(|m| format!("{} ({})", m.source, m.fstype))
                .unwrap_or_default();
            fresh.root_fd = Some(open_dir(&run_dir)?);
            return Ok(fresh);
        };
        // From here on, anything that fails is undone by FreshFs's Drop.
        // mkfs, mount and fsck run in an empty directory of their own, so that no relative
        // path in their options reaches anything.
        std::fs::create_dir(&fresh.tool_dir)
            .with_context(|| format!("cannot create {}", fresh.tool_dir.display()))?;
        let direct_io = self.spec.loop_direct_io();
        let (device, loop_fallback) = match fs {
            FsType::Tmpfs => (None, None),
            _ => {
                let (device, fallback) = self.run_device(&mut fresh, template)?;
                (Some(device), fallback)
            }
        };
        let made = match (&config.driver, fs, &device) {
            (Some(driver), _, Some(dev)) => Some(fresh.make_user(driver, config, tools, dev)),
            (None, FsType::Zfs, Some(dev)) => Some(self.make_pool(&mut fresh, config, dev)),
            _ => None,
        };
        if let Some(made) = made {
            made?;
        } else {
            if let (Some(dev), Some(mkfs), None) = (&device, &tools.mkfs, &fresh.copied) {
                let args = fs
                    .driver()
                    .mkfs_args(&config.mkfs, &dev.display().to_string());
                let run = tools::run_ok_in(mkfs, &args, &fresh.tool_dir)?;
                fresh.mkfs_secs = Some(run.elapsed.as_secs_f64());
                fresh.mkfs_command = Some(format!("{} {}", mkfs.display(), args.join(" ")));
            }
            fresh.device = device.clone();
            self.mount(&mut fresh, fs, &config.mount, device.as_deref())?;
        }
        // Read back while mounted: what the kernel does, not what was asked for.
        fresh.loop_info = fresh
            .loop_device
            .as_deref()
            .map(|dev| loopdev::read_back(dev, direct_io, loop_fallback));
        Ok(fresh)
    }

    /// The run's block device: the target's own, or a loop device on the target's image
    /// file or on a fresh image (empty, or a copy of `template`); with why the loop device
    /// is not what was asked for, if it is not.
    fn run_device(
        &mut self,
        fresh: &mut FreshFs,
        template: Option<&Path>,
    ) -> anyhow::Result<(PathBuf, Option<String>)> {
        let direct_io = self.spec.loop_direct_io();
        match (&self.spec, self.device_kind) {
            (TargetSpec::Device { path, .. }, Some(DeviceKind::Block)) => Ok((path.clone(), None)),
            (TargetSpec::Device { path, .. }, _) => {
                self.scratch.note_attached_file(path)?;
                let attached = loopdev::attach(path, direct_io)?;
                fresh.loop_device = Some(attached.device.clone());
                self.scratch.note_loop(&attached.device, path)?;
                Ok((attached.device, attached.fallback))
            }
            _ => {
                let image = fresh.run_dir.join("image");
                match template {
                    Some(t) => {
                        let start = Instant::now();
                        let how = crate::aging::image::copy(t, &image)?;
                        fresh.copied = Some((how, start.elapsed().as_secs_f64()));
                    }
                    None => create_image(&image, self.image_size)?,
                }
                fresh.image = Some(image.clone());
                // A crash-recorded run's loop device is on the recorder's file, which
                // logs every write and flush on their way to the image.
                let backing = match self.recording.take() {
                    Some(dir) => {
                        let scratch = &mut self.scratch;
                        let recording = crate::crash::Recording::start(&dir, &image, |r| {
                            scratch.note_recorder(r)
                        })?;
                        let file = recording.file();
                        fresh.recording = Some(recording);
                        file
                    }
                    None => image.clone(),
                };
                let attached = loopdev::attach(&backing, direct_io)?;
                fresh.loop_device = Some(attached.device.clone());
                Ok((attached.device, attached.fallback))
            }
        }
    }

    /// Mounts the run's filesystem (`device`, or a tmpfs of the image's size) on `mnt` in
    /// the run's directory, with `options`.
    fn mount(
        &self,
        fresh: &mut FreshFs,
        fs: FsType,
        options: &str,
        device: Option<&Path>,
    ) -> anyhow::Result<()> {
        let mnt = fresh.run_dir.join("mnt");
        std::fs::create_dir(&mnt)?;
        let mut options = options.to_string();
        if fs == FsType::Tmpfs {
            let size = format!("size={}", self.image_size);
            options = if options.is_empty() {
                size
            } else {
                format!("{size},{options}")
            };
        }
        let source = device.map_or("tmpfs".to_string(), |d| d.display().to_string());
        let mut args = vec!["-t".to_string(), fs.driver().mount_type().to_string()];
        if !options.is_empty() {
            args.extend(["-o".to_string(), options]);
        }
        args.extend([source.clone(), mnt.display().to_string()]);
        let mount = tools::require("mount", "mount")?;
        let kernel = kmsg::KernelLog::from_now();
        if let Err(e) = tools::run_ok_in_within(&mount, &args, &fresh.tool_dir, tools::MOUNT_LIMIT)
        {
            // mount(8) says "wrong fs type, bad option…"; the kernel's log says which.
            let device_name = device.and_then(|d| d.file_name()).unwrap_or_default();
            let about = [fs.driver().mount_type(), &device_name.to_string_lossy()];
            let said = kernel.map(|k| k.said_about(&about)).unwrap_or_default();
            return Err(if said.is_empty() {
                e.context("mount failed (are the mount options valid?)")
            } else {
                e.context(kmsg::MountRefused {
                    reason: said.join("; "),
                })
            });
        }
        fresh.mount_args = args;
        fresh.mountpoint = Some(mnt.clone());
        let entry = mounts::mount_at(&mnt).context("the new mount is not in /proc/self/mounts")?;
        fresh.mount_options = entry.options;
        fresh.source = source;
        fresh.root = mnt.clone();
        fresh.root_fd = Some(open_dir(&mnt)?);
        Ok(())
    }
}

impl FreshFs {
    /// A run's filesystem before anything is made: its directory, and the configuration's
    /// fsck.
    fn in_run_dir(run_dir: PathBuf, config: &FsConfig, tools: &Toolset) -> FreshFs {
        FreshFs {
            tool_dir: run_dir.join("empty"),
            run_dir: run_dir.clone(),
            root: run_dir,
            root_fd: None,
            mountpoint: None,
            device: None,
            loop_device: None,
            image: None,
            fs: config.fs,
            fsck: tools.fsck.clone(),
            fsck_extra: config
                .fs
                .map(|fs| named::fsck_args(fs, &config.mkfs))
                .unwrap_or_default(),
            mkfs_secs: None,
            mkfs_command: None,
            mount_args: Vec::new(),
            mount_options: String::new(),
            source: String::new(),
            loop_info: None,
            copied: None,
            queue_settings: Vec::new(),
            background: None,
            zfs: None,
            user: None,
            recording: None,
        }
    }
}

impl Target {
    /// zfs instead of mkfs and mount: a daemon of the run's own, a pool on `device` with the
    /// configuration's properties, its root dataset mounted at the run's mount point.
    fn make_pool(
        &mut self,
        fresh: &mut FreshFs,
        config: &FsConfig,
        device: &Path,
    ) -> anyhow::Result<()> {
        let scratch_name = self.scratch.path().file_name().unwrap_or_default();
        let name = format!("{}-run{}", scratch_name.to_string_lossy(), self.runs);
        let mnt = fresh.run_dir.join("mnt");
        std::fs::create_dir(&mnt)?;
        let log = fresh.run_dir.join("zfs-fuse.log");
        let (pool, record) = zfs::Pool::start(&name, &mnt, &fresh.tool_dir, &log)?;
        let pool = fresh.zfs.insert(pool);
        self.scratch.note_zfs(record)?;
        let args = zfs::create_args(&name, device, &mnt, &config.mkfs, &config.mount);
        fresh.mountpoint = Some(mnt.clone());
        fresh.mkfs_secs = Some(pool.create(&args)?);
        let zpool = tools::find("zpool").unwrap_or_else(|| PathBuf::from("zpool"));
        fresh.mkfs_command = Some(format!("{} {}", zpool.display(), args.join(" ")));
        fresh.device = Some(device.to_path_buf());
        let entry = mounts::mount_at(&mnt).context("the new mount is not in /proc/self/mounts")?;
        fresh.mount_options = format!("{}; {}", entry.options, pool.properties());
        fresh.source = name;
        fresh.root = mnt.clone();
        fresh.root_fd = Some(open_dir(&mnt)?);
        Ok(())
    }
}

pub(super) fn open_dir(path: &Path) -> anyhow::Result<OwnedFd> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", path.display()))
}

/// Checks that directory `path` is one, with the space and inodes `need` asks for free on
/// its filesystem: what `run --dir` and `capture --replay -C` check before making anything.
pub fn check_dir_space(path: &Path, need: SpaceNeed) -> anyhow::Result<()> {
    check_directory(path)?;
    let free = free_bytes(path)?;
    if need.bytes > free {
        return Err(invalid(format!(
            "{} has {} free but the workloads need about {}",
            path.display(),
            format_bytes(free),
            format_bytes(need.bytes)
        )));
    }
    // Millions of entries made until ENOSPC would take as long again to remove.
    let inodes = fsbench_measure::calls::free_inodes(rustix::fs::open(
        path,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
    )?);
    if need.inodes > inodes {
        return Err(invalid(format!(
            "{} has {} free inodes but the workloads need about {}",
            path.display(),
            group_thousands(inodes),
            group_thousands(need.inodes)
        )));
    }
    Ok(())
}

fn check_directory(path: &Path) -> anyhow::Result<()> {
    match path.metadata() {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(invalid(format!("{} is not a directory", path.display()))),
        Err(e) => Err(invalid(format!("{}: {e}", path.display()))),
    }
}

/// Free space of the filesystem holding `path`. A filesystem that reports no size at all
/// (ramfs, whose files live in memory) can hold what memory is available.
fn free_bytes(path: &Path) -> anyhow::Result<u64> {
    let st = rustix::fs::statvfs(path).with_context(|| format!("statvfs {}", path.display()))?;
    if st.f_blocks == 0 {
        return Ok(fsbench_measure::sysinfo::available_memory().unwrap_or(0));
    }
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

fn device_size(path: &Path) -> anyhow::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    Ok(f.seek(SeekFrom::End(0))?)
}

fn check_image_size(size: u64, need: SpaceNeed, fs_types: &[FsType]) -> anyhow::Result<()> {
    for fs in fs_types {
        let min = fs.driver().min_size;
        if size < min {
            return Err(invalid(format!(
                "{} is too small for {fs} (mkfs needs at least {})",
                format_bytes(size),
                format_bytes(min)
            )));
        }
    }
    if size < need.bytes {
        return Err(invalid(format!(
            "{} cannot hold the workloads, which need about {} ({} inodes)",
            format_bytes(size),
            format_bytes(need.bytes),
            need.inodes
        )));
    }
    Ok(())
}

fn create_image(path: &Path, size: u64) -> anyhow::Result<()> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("cannot create image {}", path.display()))?;
    file.set_len(size).with_context(|| {
        format!(
            "cannot size image {} to {}",
            path.display(),
            format_bytes(size)
        )
    })
}

//! The recorder as the suite sees it: a daemon process started on a run's image, the FUSE
//! file the loop device is attached to, and its stop. Recorded in the state file before it
//! starts and once it has (with its pid), so `fsbench clean` finds it after a SIGKILL.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::daemon::FILE_NAME;
use crate::testbed::{detach, mounts};

/// How long the daemon may take to mount, or to exit once unmounted.
const PATIENCE: Duration = Duration::from_secs(10);

/// A recorder as the state file records it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecorderRecord {
    /// The recording's directory (`<scratch>/crash<N>`): its FUSE mount point, its log.
    pub dir: PathBuf,
    /// The daemon, once started; with its start time it names the process uniquely.
    #[serde(default)]
    pub daemon_pid: Option<u32>,
    #[serde(default)]
    pub daemon_start_ticks: Option<u64>,
}

/// The files of a recording's directory.
pub fn fuse_dir(dir: &Path) -> PathBuf {
    dir.join("fuse")
}
pub fn log_path(dir: &Path) -> PathBuf {
    dir.join("log")
}
pub fn facts_path(dir: &Path) -> PathBuf {
    dir.join("facts.jsonl")
}
/// The image as it was when the recording started, where it was not all zeros (a copy of
/// an aged template).
pub fn base_path(dir: &Path) -> PathBuf {
    dir.join("base.img")
}
/// The image as the run left it: the whole log replayed gives it byte for byte.
pub fn final_path(dir: &Path) -> PathBuf {
    dir.join("final.img")
}

/// A running recorder.
pub struct Recording {
    dir: PathBuf,
    child: Option<Child>,
}

impl Recording {
    /// Starts a recorder on `image` in `dir` (made now); `note` records it in the state file,
    /// first as an intent, then with the daemon's pid.
    pub fn start(
        dir: &Path,
        image: &Path,
        mut note: impl FnMut(RecorderRecord) -> anyhow::Result<()>,
    ) -> anyhow::Result<Recording> {
        let fuse = fuse_dir(dir);
        let mut record = RecorderRecord {
            dir: dir.to_path_buf(),
            daemon_pid: None,
            daemon_start_ticks: None,
        };
        note(record.clone())?;
        std::fs::create_dir_all(&fuse)
            .with_context(|| format!("cannot create {}", fuse.display()))?;
        if has_data(image)? {
            crate::aging::image::copy(image, &base_path(dir))?;
        }
        let exe = std::env::current_exe().context("cannot find fsbench's own executable")?;
        let errors = std::fs::File::create(dir.join("recorder.err"))?;
        let child = {
            use std::os::unix::process::CommandExt;
            Command::new(exe)
                .arg("crash-recorder")
                .arg(image)
                .arg(&fuse)
                .arg(log_path(dir))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(errors)
                // Out of the terminal's process group: Ctrl-C stops the suite, which then
                // unmounts, detaches and stops the recorder in that order.
                .process_group(0)
                .spawn()
                .context("cannot start the crash recorder")?
        };
        record.daemon_pid = Some(child.id());
        record.daemon_start_ticks = fsbench_measure::sysinfo::process_start_ticks(child.id());
        let mut recording = Recording {
            dir: dir.to_path_buf(),
            child: Some(child),
        };
        note(record)?;
        recording.wait_mounted()?;
        Ok(recording)
    }

    fn wait_mounted(&mut self) -> anyhow::Result<()> {
        let fuse = fuse_dir(&self.dir);
        let start = Instant::now();
        loop {
            if mounts::mount_at(&fuse).is_some_and(|m| m.fstype.starts_with("fuse")) {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                self.child = None;
                anyhow::bail!("the crash recorder exited ({status}): {}", self.errors());
            }
            anyhow::ensure!(
                start.elapsed() < PATIENCE,
                "the crash recorder did not mount {} within {} s",
                fuse.display(),
                PATIENCE.as_secs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn errors(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("recorder.err")).unwrap_or_default();
        match text.trim() {
            "" => "no message".into(),
            t => t.to_string(),
        }
    }

    /// The file to attach the loop device to.
    pub fn file(&self) -> PathBuf {
        fuse_dir(&self.dir).join(FILE_NAME)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the recorder (the loop device detached first): its log is complete once it
    /// has exited. `image`, the run's image, is kept beside the log as its final state.
    pub fn finish(mut self, image: Option<PathBuf>) -> anyhow::Result<()> {
        self.stop()?;
        if let Some(image) = image {
            std::fs::rename(&image, final_path(&self.dir))
                .with_context(|| format!("cannot keep {} with its recording", image.display()))?;
        }
        Ok(())
    }

    fn stop(&mut self) -> anyhow::Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let fuse = fuse_dir(&self.dir);
        let unmounted = detach::unmount(&fuse);
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if start.elapsed() > PATIENCE {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        unmounted?;
        match status {
            Some(s) if s.success() => Ok(()),
            Some(s) => anyhow::bail!("the crash recorder failed ({s}): {}", self.errors()),
            None => anyhow::bail!(
                "the crash recorder did not exit within {} s of its unmount; killed",
                PATIENCE.as_secs()
            ),
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            fsbench_measure::diag::say(&format!("fsbench: {e:#}"));
        }
    }
}

/// Whether `image` holds any data (a copied template) or is all holes (a fresh image).
fn has_data(image: &Path) -> anyhow::Result<bool> {
    let file =
        std::fs::File::open(image).with_context(|| format!("cannot open {}", image.display()))?;
    match rustix::fs::seek(&file, rustix::fs::SeekFrom::Data(0)) {
        Ok(_) => Ok(true),
        Err(rustix::io::Errno::NXIO) => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", image.display())),
    }
}

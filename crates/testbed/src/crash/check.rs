//! Checking crash states: each state's image built from the log on a copy, then — attached
//! to a loop device — fsck before recovery (informative), the recovery mount, the oracle
//! (every promise that binds the crash point), fsck after. States are checked in parallel,
//! up to one a CPU, the images built one after another by the caller's thread.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::log::Log;
use super::states::StateSpec;
use crate::drivers::FsTypeExt;
use crate::testbed::{detach, loopdev};
use fsbench_measure::tools;
use fsbench_model::filesystem::FsType;
use fsbench_workloads::oracle::Fact;

/// How long fsck or a recovery mount may take on one state.
const TOOL_LIMIT: Duration = Duration::from_secs(300);

/// What one state showed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateResult {
    pub id: u32,
    /// fsck before recovery: `None` where the filesystem has no fsck.
    pub clean_before: Option<bool>,
    pub mounted: bool,
    pub clean_after: Option<bool>,
    /// Promises broken: `path: why`.
    pub lost: Vec<String>,
    /// Why the state could not be checked (a tool failed to start, the time ran out).
    pub error: Option<String>,
    /// The mount's or fsck's complaint, its last lines.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
}

/// How states are checked: the filesystem, its mount options and fsck.
pub struct Inspector {
    pub fs: FsType,
    pub mount_options: String,
    pub fsck_extra: Vec<String>,
    /// Where states' mount points are made.
    pub work: PathBuf,
}

impl Inspector {
    /// The checks of `config`'s states, their mount points made in `work`.
    pub fn for_config(
        config: &fsbench_model::config::FsConfig,
        work: &Path,
    ) -> anyhow::Result<Inspector> {
        let fs = config
            .fs
            .ok_or_else(|| anyhow::anyhow!("no filesystem to check"))?;
        // Every state is a copy of one filesystem: xfs refuses a second mount of its UUID.
        let mount_options = match (fs, config.mount.as_str()) {
            (FsType::Xfs, "") => "nouuid".to_string(),
            (FsType::Xfs, options) => format!("{options},nouuid"),
            (_, options) => options.to_string(),
        };
        Ok(Inspector {
            fs,
            mount_options,
            fsck_extra: crate::testbed::named::fsck_args(fs, &config.mkfs),
            work: work.to_path_buf(),
        })
    }

    /// Whether states can be checked side by side: btrfs's copies share a filesystem id,
    /// which kernels before temp-fsid (6.7) take for devices of one filesystem.
    pub fn parallel(&self) -> bool {
        self.fs != FsType::Btrfs
    }

    /// Checks the state whose image is `image` against `facts`.
    pub fn check(&self, spec: &StateSpec, image: &Path, facts: &[Fact]) -> StateResult {
        let mut result = StateResult {
            id: spec.id,
            ..StateResult::default()
        };
        if let Err(e) = self.check_into(spec, image, facts, &mut result) {
            result.error = Some(format!("{e:#}"));
        }
        result
    }

    fn check_into(
        &self,
        spec: &StateSpec,
        image: &Path,
        facts: &[Fact],
        result: &mut StateResult,
    ) -> anyhow::Result<()> {
        let attached = loopdev::attach(image, false)?;
        let device = attached.device;
        let mnt = self.work.join(format!("mnt{}", spec.id));
        let checked = (|| -> anyhow::Result<()> {
            result.clean_before = self.fsck(&device, result)?;
            std::fs::create_dir_all(&mnt)?;
            let mount = tools::require("mount", "mount")?;
            let mut args = vec!["-t".to_string(), self.fs.driver().mount_type().to_string()];
            if !self.mount_options.is_empty() {
                args.extend(["-o".to_string(), self.mount_options.clone()]);
            }
            args.extend([device.display().to_string(), mnt.display().to_string()]);
            let mounted = tools::run_within(&mount, &args, TOOL_LIMIT)?;
            if !mounted.success {
                result.output = tail(&mounted.output);
                return Ok(());
            }
            result.mounted = true;
            result.lost = broken_promises(&mnt, spec.at, facts);
            detach::unmount(&mnt)?;
            result.clean_after = self.fsck(&device, result)?;
            Ok(())
        })();
        if super::super::testbed::mounts::mount_at(&mnt).is_some() {
            let _ = detach::unmount(&mnt);
        }
        let _ = std::fs::remove_dir(&mnt);
        let detached = detach::detach_loop(&device);
        checked.and(detached)
    }

    /// fsck's verdict on `device`; its complaint goes to `result.output`.
    fn fsck(&self, device: &Path, result: &mut StateResult) -> anyhow::Result<Option<bool>> {
        let driver = self.fs.driver();
        let Some((name, _)) = driver.fsck else {
            return Ok(None);
        };
        let program = tools::require(name, driver.package)?;
        let args = driver.fsck_args(&self.fsck_extra, &device.display().to_string());
        let run = tools::run_within(&program, &args, TOOL_LIMIT)?;
        if !run.success {
            result.output = tail(&run.output);
        }
        Ok(Some(run.success))
    }
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}

/// The facts that bind a crash at `at`: promised before it, not voided since, and for one
/// that later writes may change (not stable) promised at that very moment; of several about
/// one file, the latest.
pub fn binding(facts: &[Fact], at: u64) -> Vec<&Fact> {
    let voided = facts
        .iter()
        .filter(|f| matches!(f, Fact::Void { .. }) && f.at() <= at)
        .map(Fact::at)
        .max();
    let mut latest: std::collections::BTreeMap<(u8, &str), &Fact> = Default::default();
    for fact in facts {
        let (key, stable) = match fact {
            Fact::File { path, stable, .. } => ((0, path.as_str()), *stable),
            Fact::Entries { dir, stable, .. } => ((1, dir.as_str()), *stable),
            _ => continue,
        };
        let bound =
            fact.at() <= at && voided.is_none_or(|v| fact.at() >= v) && (stable || fact.at() == at);
        if bound {
            latest.insert(key, fact);
        }
    }
    latest.into_values().collect()
}

/// What a recovered filesystem at `root` lost of the promises binding a crash at `at`.
pub fn broken_promises(root: &Path, at: u64, facts: &[Fact]) -> Vec<String> {
    let mut lost = BTreeSet::new();
    for fact in binding(facts, at) {
        match fact {
            Fact::File { path, len, crc, .. } => {
                if let Some(why) = file_differs(&root.join(path), *len, *crc) {
                    lost.insert(format!("{path}: {why}"));
                }
            }
            Fact::Entries { dir, names, .. } => {
                for name in names {
                    let path = root.join(dir).join(name);
                    if std::fs::symlink_metadata(&path).is_err() {
                        let shown = Path::new(dir).join(name);
                        lost.insert(format!("{}: entry missing", shown.display()));
                    }
                }
            }
            _ => {}
        }
    }
    lost.into_iter().collect()
}

/// Why the file at `path` is not the `len` bytes with CRC `crc` it was promised to be; a
/// file that is not there is another promise's (its directory's) to keep.
fn file_differs(path: &Path, len: u64, crc: u32) -> Option<String> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(format!("cannot open: {e}")),
    };
    let (found, found_crc) = match fsbench_workloads::oracle::content(&file) {
        Ok(c) => c,
        Err(e) => return Some(format!("unreadable: {e}")),
    };
    if found != len {
        return Some(format!("{found} bytes, {len} promised"));
    }
    (found_crc != crc).then(|| "content differs".to_string())
}

/// Builds state images in order: a prefix image advanced along the log, copied (reflink
/// where the scratch filesystem can) for each state and given its pending writes.
pub struct Builder<'a> {
    log: &'a Log,
    prefix: File,
    prefix_path: PathBuf,
    applied: usize,
    buf: Vec<u8>,
}

impl<'a> Builder<'a> {
    /// Starts from `base` (a copy of it) or zeros, in `dir`.
    pub fn new(log: &'a Log, base: Option<&Path>, dir: &Path) -> anyhow::Result<Builder<'a>> {
        let prefix_path = dir.join("prefix.img");
        let prefix = match base {
            Some(base) => {
                crate::aging::image::copy(base, &prefix_path)?;
                std::fs::OpenOptions::new().write(true).open(&prefix_path)?
            }
            None => super::log::zeroed_image(&prefix_path, log.image_size)?,
        };
        Ok(Builder {
            log,
            prefix,
            prefix_path,
            applied: 0,
            buf: Vec::new(),
        })
    }

    /// Writes `spec`'s image to `out`. States must come in order of `durable`.
    pub fn build(&mut self, spec: &StateSpec, out: &Path) -> anyhow::Result<()> {
        anyhow::ensure!(
            spec.durable >= self.applied,
            "states must be built in log order"
        );
        for record in &self.log.records[self.applied..spec.durable] {
            self.log.apply(record, &self.prefix, &mut self.buf)?;
        }
        self.applied = spec.durable;
        crate::aging::image::copy(&self.prefix_path, out)?;
        let image = std::fs::OpenOptions::new().write(true).open(out)?;
        let (keep, torn) = spec.selection();
        let pending = &self.log.records[spec.durable..spec.upto];
        for (i, record) in pending.iter().enumerate() {
            if !keep[i] {
                continue;
            }
            match torn {
                Some((t, seed)) if t == i => {
                    let mut rng = fastrand::Rng::with_seed(seed);
                    let sectors: Vec<bool> = (0..record.len.div_ceil(super::log::SECTOR))
                        .map(|_| rng.bool())
                        .collect();
                    let keep = |s: u64| sectors[s as usize];
                    self.log
                        .apply_sectors(record, &image, keep, &mut self.buf)?;
                }
                _ => self.log.apply(record, &image, &mut self.buf)?,
            }
        }
        Ok(())
    }
}

impl Drop for Builder<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.prefix_path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promises_bind_from_their_moment_until_voided() {
        let file = |at, stable| Fact::File {
            at,
            path: "f".into(),
            len: 1,
            crc: 0,
            stable,
        };
        let facts = [
            Fact::Start { at: 0 },
            file(10, true),
            file(20, false),
            Fact::Void { at: 30 },
        ];
        assert!(binding(&facts, 5).is_empty());
        assert_eq!(binding(&facts, 10), [&facts[1]]);
        assert_eq!(binding(&facts, 15), [&facts[1]]);
        // The unstable one binds its own moment only, and is the latest there.
        assert_eq!(binding(&facts, 20), [&facts[2]]);
        assert_eq!(binding(&facts, 25), [&facts[1]]);
        assert!(binding(&facts, 30).is_empty());
    }

    #[test]
    fn a_changed_short_or_missing_entry_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), b"abc").unwrap();
        let facts = [
            Fact::File {
                at: 1,
                path: "a".into(),
                len: 3,
                crc: crc32fast::hash(b"abd"),
                stable: true,
            },
            Fact::Entries {
                at: 1,
                dir: String::new(),
                names: vec!["a".into(), "b".into()],
                stable: true,
            },
        ];
        let lost = broken_promises(dir.path(), 2, &facts);
        assert_eq!(lost, ["a: content differs", "b: entry missing"]);
        std::fs::write(dir.path().join("b"), b"").unwrap();
        std::fs::write(dir.path().join("a"), b"abd").unwrap();
        assert!(broken_promises(dir.path(), 2, &facts).is_empty());
    }
}

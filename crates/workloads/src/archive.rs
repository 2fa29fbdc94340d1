//! The archive workload, after the BackupPC tar reported to the kernel mailing list: extract a
//! BackupPC-shaped archive — a pool of files, then millions of hard links to them — and `rm -rf`
//! the result. The archive is generated on the fly (no multi-GB tar on disk) or read from a user's
//! tar file (plain or compressed: gzip, zstd, xz, bzip2, lzop).

mod compressed;
pub(crate) mod extract;
pub(crate) mod generate;
pub mod tarfile;

mod option_table;

use std::borrow::Cow;
use std::io::{BufReader, Read};
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rustix::fs::{Access, AtFlags, Mode, OFlags};
use serde::{Deserialize, Serialize};

use super::options::{Parsed, WorkloadKind};
use super::{Need, PhaseInfo, SpaceNeed, Workload, WorkloadParams};
use extract::Extractor;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::PhaseRecorder;
use fsbench_measure::rmtree;
use fsbench_model::filesystem::Capability;
use fsbench_model::units::group_thousands;
use generate::Shape;
use option_table::{OPTIONS, PRESETS};

/// What kind of member an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File,
    HardLink,
    Symlink,
    /// A named pipe (mkfifoat).
    Fifo,
    /// Devices, sparse files and the like: refused, for the reason given.
    Other(&'static str),
}

/// One archive member, borrowed from the generator's or the tar reader's buffers.
#[derive(Debug)]
pub struct Entry<'a> {
    pub path: &'a [u8],
    pub kind: EntryKind,
    pub size: u64,
    /// Link target (hard links: a member path; symlinks: the link's text).
    pub link: &'a [u8],
}

pub const PHASES: &[PhaseInfo] = &[
    PhaseInfo::fixed("extract", "entries", true),
    PhaseInfo::fixed("remove", "entries", false),
];

/// The order `rm -rf` visits the top level in: the BackupPC report found it changes the time on
/// ext4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RemoveOrder {
    /// As the directory lists its entries (what `rm -rf` does).
    #[default]
    Directory,
    PoolFirst,
    BackupsFirst,
}

/// The order as the `order` option spells it: `directory`, `pool-first`, `backups-first`.
impl std::fmt::Display for RemoveOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = serde_json::to_value(self).map_err(|_| std::fmt::Error)?;
        f.write_str(name.as_str().unwrap_or_default())
    }
}

/// The generated archive's shape, one option per [`Shape`] field.
const SHAPE_KEYS: &[&str] = &[
    "pool", "hosts", "backups", "files", "per-dir", "empty", "regular", "popular", "min-size",
    "max-size", "seed",
];

/// The archive workload's option table.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "archive",
    summary: "extract a BackupPC-shaped archive (pool files and hard links), then rm -rf it",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "tiny",
    more_work: &["pool", "backups", "files"],
    aliases: &[],
};

fn build(p: &Parsed) -> anyhow::Result<ArchiveParams> {
    let remove_order = match p.text("order") {
        Some("pool-first") => RemoveOrder::PoolFirst,
        Some("backups-first") => RemoveOrder::BackupsFirst,
        _ => RemoveOrder::Directory,
    };
    let custom = p.first_explicit(SHAPE_KEYS);
    if let Some(path) = p.text("file") {
        if let Some(key) = custom {
            return Err(invalid(format!(
                "archive: `{key}` does not apply to a file archive"
            )));
        }
        return Ok(ArchiveParams {
            remove_order,
            ..ArchiveParams::from_file(Path::new(path))?
        });
    }
    let n = |key| {
        p.num(key)
            .expect("shape options have preset or default values")
    };
    let small = |key| {
        p.small(key)
            .expect("shape options have preset or default values")
    };
    let shape = Shape {
        pool_files: n("pool"),
        hosts: small("hosts"),
        backups_per_host: small("backups"),
        files_per_backup: n("files"),
        files_per_dir: small("per-dir"),
        empty_permille: small("empty"),
        regular_permille: small("regular"),
        popular_links: n("popular"),
        min_size: n("min-size"),
        max_size: n("max-size"),
        seed: n("seed"),
    };
    Ok(ArchiveParams {
        source: Source::Generated {
            preset: custom.is_none().then(|| p.preset.name.to_string()),
            shape,
        },
        remove_order,
    })
}

/// Where the archive comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Generated {
        preset: Option<String>,
        shape: Shape,
    },
    File {
        path: PathBuf,
    },
}

/// The archive workload's parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveParams {
    pub source: Source,
    #[serde(default)]
    pub remove_order: RemoveOrder,
}

/// The directory the archive is extracted into, in the run's directory.
const TARGET: &str = "archive";

impl ArchiveParams {
    /// Parses the part after `archive:`: a preset, `file=PATH`, and/or `KEY=N` settings:
    /// pool, hosts, backups, files, per-dir, empty (‰), regular (‰), popular, min-size,
    /// max-size, seed, order (directory, pool-first, backups-first).
    pub fn parse(args: &str) -> anyhow::Result<ArchiveParams> {
        build(&KIND.parse_cli(args)?)
    }

    /// A tar file taken by name as it is, never parsed as options (a name may hold commas).
    pub fn from_file(path: &Path) -> anyhow::Result<ArchiveParams> {
        Ok(ArchiveParams {
            source: Source::File {
                path: std::path::absolute(path)
                    .with_context(|| format!("archive {}", path.display()))?,
            },
            remove_order: RemoveOrder::default(),
        })
    }
}

impl WorkloadParams for ArchiveParams {
    const KIND: &'static WorkloadKind = &KIND;

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    fn name(&self) -> String {
        let base = match &self.source {
            Source::Generated {
                preset: Some(p), ..
            } => p.clone(),
            Source::Generated { shape: s, .. } => format!(
                "p{}-h{}-b{}-f{}-pop{}",
                s.pool_files, s.hosts, s.backups_per_host, s.files_per_backup, s.popular_links
            ),
            Source::File { path } => path
                .file_name()
                .map_or("file".into(), |f| f.to_string_lossy().into_owned()),
        };
        match self.remove_order {
            RemoveOrder::Directory => base,
            RemoveOrder::PoolFirst => format!("{base},pool-first"),
            RemoveOrder::BackupsFirst => format!("{base},backups-first"),
        }
    }

    fn validate(&self) -> anyhow::Result<()> {
        match &self.source {
            Source::File { path } => match path.metadata() {
                Ok(m) if m.is_file() => Ok(()),
                Ok(_) => Err(invalid(format!("archive {} is not a file", path.display()))),
                Err(e) => Err(invalid(format!("archive {}: {e}", path.display()))),
            },
            Source::Generated { shape, .. } => {
                if shape.hosts == 0 || shape.backups_per_host == 0 || shape.files_per_backup == 0 {
                    return Err(invalid(
                        "archive: hosts, backups and files must be at least 1",
                    ));
                }
                if shape.pool_files == 0 {
                    return Err(invalid("archive: the pool needs at least 1 file"));
                }
                if shape.empty_permille + shape.regular_permille > 1000 {
                    return Err(invalid(
                        "archive: empty + regular shares exceed 1000 per mille",
                    ));
                }
                if shape.min_size > shape.max_size {
                    return Err(invalid("archive: min-size is larger than max-size"));
                }
                let entries = (shape.hosts as u64 * shape.backups_per_host as u64)
                    .checked_mul(shape.files_per_backup)
                    .and_then(|n| n.checked_add(shape.pool_files))
                    .and_then(|n| n.checked_add(shape.popular_links));
                if entries.is_none_or(|n| n > 1_000_000_000) {
                    return Err(invalid("archive: more than a billion entries is absurd"));
                }
                Ok(())
            }
        }
    }

    fn describe(&self) -> String {
        match &self.source {
            Source::Generated { shape, .. } => {
                let (entries, bytes, _) = shape.totals();
                format!(
                    "BackupPC-shaped archive: {} pool files, {} hosts × {} backups × {} files, {} popular links; {} entries, {} MiB; removal order {}",
                    group_thousands(shape.pool_files),
                    shape.hosts,
                    shape.backups_per_host,
                    group_thousands(shape.files_per_backup),
                    group_thousands(shape.popular_links),
                    group_thousands(entries),
                    group_thousands(bytes >> 20),
                    self.remove_order
                )
            }
            Source::File { path } => format!(
                "archive file {}; removal order {}",
                path.display(),
                self.remove_order
            ),
        }
    }

    /// `None` when the totals overflow.
    fn space_needed(&self) -> Option<SpaceNeed> {
        Some(match &self.source {
            Source::Generated { shape, .. } => {
                let (entries, bytes, inodes) = shape.totals();
                // Data rounded to blocks, plus directory entries for the links.
                let need = bytes
                    .checked_add(inodes.checked_mul(4096)?)?
                    .checked_add(entries.checked_mul(64)?)?;
                SpaceNeed::exactly(need, inodes)
            }
            Source::File { path } => {
                let size = path.metadata().map_or(0, |m| m.len());
                // A compressed archive may expand several times; inodes are unknown.
                SpaceNeed::exactly(size.checked_mul(4)?, size / 512)
            }
        })
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        Cow::Borrowed(PHASES)
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(Archive::new(self.clone()))
    }

    fn needs(&self) -> Option<Need> {
        (matches!(self.source, Source::Generated { .. })).then_some(Need {
            capability: Capability::HardLinks,
            option: "generated archive (without `file=`)",
        })
    }

    /// An archive file's own size, or the generated one's options.
    fn more_work_advice(&self) -> String {
        match self.source {
            Source::File { .. } => "a larger archive file".into(),
            Source::Generated { .. } => Self::KIND.more_work_advice(),
        }
    }

    fn mpi_refusal(&self) -> Option<&'static str> {
        Some(
            "it extracts one archive that one client reads; N ranks would measure N copies of \
             the archive's reads, not the filesystem",
        )
    }
}

/// The workload: extract, then remove.
pub struct Archive {
    params: ArchiveParams,
    /// Subdirectory of the phase directory to extract into; `None`: the directory itself.
    target: Option<&'static str>,
    expected: u64,
    /// Entries extracted, so that remove knows how many units to expect.
    extracted: u64,
    /// A compressed tar file decompressed before the extraction (in memory).
    unpacked: Option<std::fs::File>,
}

impl Archive {
    /// Extracts into `archive/` in the run's directory, which `remove` removes.
    pub fn new(params: ArchiveParams) -> Archive {
        Archive::extracting_into(params, Some(TARGET))
    }

    /// Extracts into `target` below the phase directory, or into it directly (`None`, as
    /// `tar -C DIR`); `remove` then empties it.
    pub fn extracting_into(params: ArchiveParams, target: Option<&'static str>) -> Archive {
        let expected = match &params.source {
            Source::Generated { shape, .. } => shape.totals().0,
            Source::File { .. } => 0,
        };
        Archive {
            params,
            target,
            expected,
            extracted: 0,
            unpacked: None,
        }
    }
}

/// Extracts the archive of `params` into `target` (a directory); a tar file from
/// `unpacked` where it was decompressed before the phase.
pub fn extract_into(
    params: &ArchiveParams,
    target: BorrowedFd<'_>,
    unpacked: Option<&mut std::fs::File>,
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    let mut extractor = Extractor::new(target);
    match &params.source {
        Source::Generated { shape, .. } => {
            let mut outcome = Ok(());
            shape.walk(&mut |e| {
                outcome = extractor.extract(e, &mut std::io::repeat(0).take(e.size), rec);
                outcome.is_ok()
            });
            outcome
        }
        Source::File { path } => {
            let fail = |e: std::io::Error| {
                FsbenchError::Failed(format!("reading {}: {e}", path.display()))
            };
            let stream: Box<dyn Read + '_> = match unpacked {
                Some(file) => Box::new(BufReader::with_capacity(1 << 20, file)),
                None => compressed::open_tar(path)?,
            };
            let mut reader = tarfile::TarReader::new(stream);
            let mut outcome = Ok(());
            loop {
                let next = reader.next(&mut |entry, data| {
                    outcome = extractor.extract(entry, data, rec);
                    // Stop reading at the first fatal error; it is returned below.
                    outcome
                        .as_ref()
                        .map(|_| ())
                        .map_err(|_| std::io::Error::other("stopped"))
                });
                match next {
                    Ok(true) => {}
                    Ok(false) => return Ok(()),
                    Err(_) if outcome.is_err() => return outcome,
                    Err(e) => return Err(fail(e)),
                }
            }
        }
    }
}

impl Workload for Archive {
    /// A compressed tar file is decompressed here, untimed, not during the extraction.
    fn before_phase(&mut self, phase: usize) -> Result<(), FsbenchError> {
        if let (0, Source::File { path }) = (phase, &self.params.source) {
            self.unpacked = compressed::unpack_if_compressed(path)?;
        }
        Ok(())
    }

    fn phases(&self) -> std::borrow::Cow<'static, [PhaseInfo]> {
        std::borrow::Cow::Borrowed(PHASES)
    }

    fn expected_units(&self, phase: usize) -> u64 {
        if phase == 0 {
            self.expected
        } else {
            self.extracted
        }
    }

    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        use std::os::fd::AsFd;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let open_target = |name: &str| {
            rustix::fs::openat(dir, name, flags, Mode::empty())
                .map_err(|e| FsbenchError::Failed(format!("cannot open {name}: {e}")))
        };
        if phase == 0 {
            let target = match self.target {
                Some(name) => {
                    rustix::fs::mkdirat(dir, name, Mode::from(0o755))
                        .map_err(|e| FsbenchError::Failed(format!("cannot create {name}: {e}")))?;
                    Some(open_target(name)?)
                }
                None => None,
            };
            let outcome = extract_into(
                &self.params,
                target.as_ref().map_or(dir, |t| t.as_fd()),
                self.unpacked.as_mut(),
                rec,
            );
            self.unpacked = None;
            self.extracted = rec.units();
            return outcome;
        }
        // Remove: the chosen top-level entry first, then everything.
        let target = self.target.map(open_target).transpose()?;
        let top = target.as_ref().map_or(dir, |t| t.as_fd());
        let first = match self.params.remove_order {
            RemoveOrder::Directory => None,
            RemoveOrder::PoolFirst => Some("cpool"),
            RemoveOrder::BackupsFirst => Some("pc"),
        };
        if let Some(first) = first
            && rustix::fs::accessat(top, first, Access::EXISTS, AtFlags::SYMLINK_NOFOLLOW).is_ok()
        {
            rmtree::remove(top, first.as_bytes(), rec)?;
        }
        match self.target {
            Some(name) => {
                drop(target);
                rmtree::remove(dir, name.as_bytes(), rec)
            }
            None => rmtree::remove_all_in(dir, rec),
        }
    }
}

#[cfg(test)]
mod tests;

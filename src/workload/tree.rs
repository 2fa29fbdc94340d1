//! The fdtree metadata tree (seed 000): directory create, file create, file remove,
//! directory remove, over exactly fdtree.bash's tree, names and order.
//!
//! fdtree.bash names a directory `L<level>D<n>` and a file `L<level>F<n>`, where the level counts
//! down from `levels` at the root to 0 at the leaves and `n` counts down from `dirs` (or
//! `files`) to 1. Directory create makes a directory's children, then recurses into each;
//! directory remove recurses first, then removes the children; file create and remove visit a
//! directory's files, then recurse. The root `LEVEL0.<host>.<pid>` is made in the directory
//! create phase and removed in the directory remove phase, as fdtree times it.
//!
//! Every operation is one system call relative to its parent's descriptor; the recursion holds
//! one descriptor per level, so memory is independent of the tree's size.

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Mode, OFlags};
use serde::{Deserialize, Serialize};

use super::options::{OptKind, OptionDef, Parsed, Preset, WorkloadKind};
use super::{PhaseInfo, SpaceNeed, Workload, WorkloadSpec, push_decimal};
use crate::error::{FsbenchError, invalid};
use crate::measure::{OpKind, PhaseRecorder};
use crate::units::group_thousands;

/// fdtree's block: file sizes are given in 4 KiB blocks.
pub const BLOCK: usize = 4096;
/// Deeper trees would need more descriptors than a default `ulimit -n` allows.
pub const MAX_LEVELS: u32 = 100;

pub const PHASES: &[PhaseInfo] = &[
    PhaseInfo::fixed("dir-create", "Directory create", "dirs", false),
    PhaseInfo::fixed("file-create", "File create", "files", true),
    PhaseInfo::fixed("file-remove", "File remove", "files", false),
    PhaseInfo::fixed("dir-remove", "Directory remove", "dirs", false),
];

/// Index of each phase in [`PHASES`].
pub const DIR_CREATE: usize = 0;
pub const FILE_CREATE: usize = 1;
pub const FILE_REMOVE: usize = 2;
pub const DIR_REMOVE: usize = 3;

/// fdtree's options; the numbers fit `u32`.
const OPTIONS: &[OptionDef] = &[
    OptionDef {
        aliases: &["d"],
        min: 1,
        max: u32::MAX as u64,
        ..OptionDef::new(
            "dirs",
            OptKind::Count,
            "subdirectories per directory (fdtree -d)",
        )
    },
    OptionDef {
        aliases: &["f"],
        min: 1,
        max: u32::MAX as u64,
        ..OptionDef::new("files", OptKind::Count, "files per directory (fdtree -f)")
    },
    OptionDef {
        aliases: &["s"],
        unit: "4 KiB blocks",
        max: u32::MAX as u64,
        ..OptionDef::new("size", OptKind::Count, "file size (fdtree -s)")
    },
    OptionDef {
        aliases: &["l"],
        max: MAX_LEVELS as u64,
        ..OptionDef::new(
            "levels",
            OptKind::Count,
            "levels below the root (fdtree -l)",
        )
    },
];

/// Named parameter sets: the article's four and two quick ones for the default suite.
const PRESETS: &[Preset] = &[
    Preset {
        name: "small-shallow",
        values: &[
            ("dirs", "20"),
            ("files", "40"),
            ("size", "1"),
            ("levels", "3"),
        ],
        help: "the article's",
    },
    Preset {
        name: "small-deep",
        values: &[
            ("dirs", "3"),
            ("files", "4"),
            ("size", "1"),
            ("levels", "10"),
        ],
        help: "the article's",
    },
    Preset {
        name: "medium-shallow",
        values: &[
            ("dirs", "17"),
            ("files", "10"),
            ("size", "1000"),
            ("levels", "2"),
        ],
        help: "the article's",
    },
    Preset {
        name: "medium-deep",
        values: &[
            ("dirs", "2"),
            ("files", "2"),
            ("size", "1000"),
            ("levels", "10"),
        ],
        help: "the article's",
    },
    // Sized so that every phase lasts about a second on a loop image here, with one file per
    // directory so that the directory phases are not drowned by the file phases.
    Preset {
        name: "quick-shallow",
        values: &[
            ("dirs", "50"),
            ("files", "1"),
            ("size", "1"),
            ("levels", "3"),
        ],
        help: "about a second per phase",
    },
    Preset {
        name: "quick-deep",
        values: &[
            ("dirs", "3"),
            ("files", "1"),
            ("size", "1"),
            ("levels", "10"),
        ],
        help: "about a second per phase",
    },
];

/// The tree workload's row in the registry.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "tree",
    summary: "fdtree: create and remove a tree of directories and files",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "quick-shallow",
    aliases: &[],
    build: |p| build(p).map(WorkloadSpec::Tree),
};

fn build(p: &Parsed) -> anyhow::Result<TreeParams> {
    let n = |name| p.small(name).expect("tree options have preset values");
    Ok(TreeParams::new(
        n("dirs"),
        n("files"),
        n("size"),
        n("levels"),
    ))
}

/// fdtree's four parameters (`-d -f -s -l`) and the preset they came from, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "serde_json::Map<String, serde_json::Value>")]
pub struct TreeParams {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Subdirectories per directory (`-d`).
    pub dirs: u32,
    /// Files per directory (`-f`).
    pub files: u32,
    /// File size in 4 KiB blocks (`-s`).
    pub size: u32,
    /// Levels below the root (`-l`).
    pub levels: u32,
}

/// The suite-file form: a preset, explicit numbers, or a preset with some numbers overridden.
impl TryFrom<serde_json::Map<String, serde_json::Value>> for TreeParams {
    type Error = anyhow::Error;

    fn try_from(map: serde_json::Map<String, serde_json::Value>) -> anyhow::Result<TreeParams> {
        build(&KIND.parse_map(&map)?)
    }
}

impl TreeParams {
    pub fn new(dirs: u32, files: u32, size: u32, levels: u32) -> TreeParams {
        TreeParams {
            preset: None,
            dirs,
            files,
            size,
            levels,
        }
        .named()
    }

    /// Attaches the preset name whose numbers these are, if one matches.
    fn named(mut self) -> TreeParams {
        let values = [self.dirs, self.files, self.size, self.levels].map(u64::from);
        self.preset = PRESETS
            .iter()
            .find(|preset| {
                let row = |key| {
                    preset
                        .values
                        .iter()
                        .find(|(k, _)| *k == key)
                        .map(|(_, v)| v.parse::<u64>().ok())
                };
                ["dirs", "files", "size", "levels"]
                    .iter()
                    .zip(values)
                    .all(|(key, v)| row(*key) == Some(Some(v)))
            })
            .map(|preset| preset.name.to_string());
        self
    }

    pub fn preset(name: &str) -> anyhow::Result<TreeParams> {
        build(&KIND.parse_cli(&format!("preset={name}"))?)
    }

    /// Parses the part after `tree:`: a preset and/or `dirs=N,files=N,size=N,levels=N`
    /// (fdtree's letters d, f, s, l work too; unnamed values come from the preset, by default
    /// `quick-shallow`).
    pub fn parse(args: &str) -> anyhow::Result<TreeParams> {
        build(&KIND.parse_cli(args)?)
    }

    /// The preset's name, or fdtree's flags for a custom tree.
    pub fn name(&self) -> String {
        self.preset.clone().unwrap_or_else(|| {
            format!(
                "d{}-f{}-s{}-l{}",
                self.dirs, self.files, self.size, self.levels
            )
        })
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        if self.dirs == 0 {
            return Err(invalid(
                "tree: directories per level (-d) must be at least 1",
            ));
        }
        if self.files == 0 {
            return Err(invalid("tree: files per directory (-f) must be at least 1"));
        }
        if self.levels > MAX_LEVELS {
            return Err(invalid(format!(
                "tree: {} levels is more than the {MAX_LEVELS} fsbench supports",
                self.levels
            )));
        }
        self.checked_totals().ok_or_else(|| {
            invalid(format!(
                "tree: -d {} -l {} -f {} -s {} is absurdly large ({}^{} directories)",
                self.dirs, self.levels, self.files, self.size, self.dirs, self.levels
            ))
        })?;
        Ok(())
    }

    /// (directories, files, KiB), or `None` on overflow.
    fn checked_totals(&self) -> Option<(u64, u64, u64)> {
        // fdtree: ndtot = 1 + d * ndtot, once per level and once for the root.
        let mut dirs: u64 = 0;
        for _ in 0..=self.levels {
            dirs = (self.dirs as u64).checked_mul(dirs)?.checked_add(1)?;
        }
        let files = dirs.checked_mul(self.files as u64)?;
        let kib = files.checked_mul(self.size as u64)?.checked_mul(4)?;
        // Beyond a billion entries no filesystem test here is meaningful.
        (dirs.checked_add(files)? <= 1_000_000_000).then_some((dirs, files, kib))
    }

    /// Directories in the tree, the root included: Σ d^i for i = 0..=l.
    pub fn total_dirs(&self) -> u64 {
        self.checked_totals().map_or(u64::MAX, |t| t.0)
    }

    pub fn total_files(&self) -> u64 {
        self.checked_totals().map_or(u64::MAX, |t| t.1)
    }

    pub fn total_kib(&self) -> u64 {
        self.checked_totals().map_or(u64::MAX, |t| t.2)
    }

    pub fn describe(&self) -> String {
        format!(
            "fdtree -d {} -f {} -s {} -l {}: {} dirs, {} files, {} KiB",
            self.dirs,
            self.files,
            self.size,
            self.levels,
            group_thousands(self.total_dirs()),
            group_thousands(self.total_files()),
            group_thousands(self.total_kib())
        )
    }

    /// `None` when the totals overflow.
    pub fn space_needed(&self) -> Option<SpaceNeed> {
        let (dirs, files, kib) = self.checked_totals()?;
        let inodes = dirs.checked_add(files)?;
        // Data plus one block per inode for directory blocks and inode tables.
        let bytes = kib
            .checked_mul(1024)?
            .checked_add(inodes.checked_mul(BLOCK as u64)?)?;
        Some(SpaceNeed::exactly(bytes, inodes))
    }
}

workload_params!(TreeParams, |p| phases: Cow::Borrowed(PHASES),
    instantiate: Tree::new(p.clone(), default_base_name()));

/// `LEVEL0.<short hostname>.<pid>`, fdtree's root name.
pub fn default_base_name() -> String {
    let uname = rustix::system::uname();
    let host = uname.nodename().to_string_lossy();
    let short = host.split('.').next().unwrap_or("localhost");
    format!("LEVEL0.{short}.{}", std::process::id())
}

/// A `L<level><kind><n>` name built in place, so the hot loops allocate nothing.
struct Name {
    buf: [u8; 24],
}

impl Name {
    fn new() -> Name {
        Name { buf: [0; 24] }
    }

    fn of(&mut self, level: u32, kind: u8, n: u32) -> &CStr {
        let mut i = 0;
        self.buf[i] = b'L';
        i += 1;
        i = push_decimal(&mut self.buf, i, level as u64);
        self.buf[i] = kind;
        i += 1;
        i = push_decimal(&mut self.buf, i, n as u64);
        self.buf[i] = 0;
        CStr::from_bytes_with_nul(&self.buf[..=i]).expect("digits and letters only")
    }
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);
const CREATE_FLAGS: OFlags = OFlags::WRONLY
    .union(OFlags::CREATE)
    .union(OFlags::TRUNC)
    .union(OFlags::CLOEXEC);

/// The tree workload: its parameters and the root directory's name.
pub struct Tree {
    params: TreeParams,
    base: CString,
    zeros: Vec<u8>,
}

impl Tree {
    pub fn new(params: TreeParams, base: String) -> Tree {
        Tree {
            params,
            base: CString::new(base).expect("base name has no NUL"),
            zeros: vec![0; BLOCK],
        }
    }

    pub fn base_name(&self) -> &str {
        self.base.to_str().expect("base name is UTF-8")
    }

    fn open_dir(
        rec: &mut PhaseRecorder,
        parent: BorrowedFd<'_>,
        name: &CStr,
    ) -> Result<Option<OwnedFd>, FsbenchError> {
        let result = rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty());
        rec.record(OpKind::OpenDir, result)
    }

    /// Calls `visit` on each subdirectory `L<level>D<n>` of `dir`, n from `dirs` down to 1.
    fn for_each_subdir(
        &mut self,
        dir: BorrowedFd<'_>,
        level: u32,
        rec: &mut PhaseRecorder,
        visit: fn(&mut Tree, BorrowedFd<'_>, u32, &mut PhaseRecorder) -> Result<(), FsbenchError>,
    ) -> Result<(), FsbenchError> {
        let mut name = Name::new();
        for nd in (1..=self.params.dirs).rev() {
            if let Some(child) = Self::open_dir(rec, dir, name.of(level, b'D', nd))? {
                visit(self, child.as_fd(), level - 1, rec)?;
                drop(child);
                rec.record(OpKind::Close, Ok(()))?;
            }
        }
        Ok(())
    }

    fn create_dirs(
        &mut self,
        dir: BorrowedFd<'_>,
        level: u32,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        if level == 0 {
            return Ok(());
        }
        let mut name = Name::new();
        for nd in (1..=self.params.dirs).rev() {
            let made = rustix::fs::mkdirat(dir, name.of(level, b'D', nd), Mode::from(0o755));
            if rec.record(OpKind::Mkdir, made)?.is_some() {
                rec.unit_done(0)?;
            }
        }
        self.for_each_subdir(dir, level, rec, Tree::create_dirs)
    }

    fn create_files(
        &mut self,
        dir: BorrowedFd<'_>,
        level: u32,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        let mut name = Name::new();
        for nf in (1..=self.params.files).rev() {
            let created = rustix::fs::openat(
                dir,
                name.of(level, b'F', nf),
                CREATE_FLAGS,
                Mode::from(0o644),
            );
            let Some(file) = rec.record(OpKind::Create, created)? else {
                continue;
            };
            let mut written = 0u64;
            for _ in 0..self.params.size {
                written += self.write_block(&file, rec)?;
            }
            drop(file);
            rec.record(OpKind::Close, Ok(()))?;
            rec.unit_done(written)?;
        }
        if level > 0 {
            self.for_each_subdir(dir, level, rec, Tree::create_files)?;
        }
        Ok(())
    }

    /// Writes one 4 KiB block as dd does, finishing short writes; returns bytes written.
    fn write_block(&self, file: &OwnedFd, rec: &mut PhaseRecorder) -> Result<u64, FsbenchError> {
        let mut done = 0;
        while done < BLOCK {
            let result = rustix::io::write(file, &self.zeros[done..]);
            match rec.record(OpKind::Write, result)? {
                Some(0) | None => break,
                Some(n) => done += n,
            }
        }
        Ok(done as u64)
    }

    fn remove_files(
        &mut self,
        dir: BorrowedFd<'_>,
        level: u32,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        let mut name = Name::new();
        for nf in (1..=self.params.files).rev() {
            let removed = rustix::fs::unlinkat(dir, name.of(level, b'F', nf), AtFlags::empty());
            if rec.record(OpKind::Unlink, removed)?.is_some() {
                rec.unit_done(0)?;
            }
        }
        if level > 0 {
            self.for_each_subdir(dir, level, rec, Tree::remove_files)?;
        }
        Ok(())
    }

    fn remove_dirs(
        &mut self,
        dir: BorrowedFd<'_>,
        level: u32,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        if level > 1 {
            self.for_each_subdir(dir, level, rec, Tree::remove_dirs)?;
        }
        if level > 0 {
            let mut name = Name::new();
            for nd in (1..=self.params.dirs).rev() {
                let removed =
                    rustix::fs::unlinkat(dir, name.of(level, b'D', nd), AtFlags::REMOVEDIR);
                if rec.record(OpKind::Rmdir, removed)?.is_some() {
                    rec.unit_done(0)?;
                }
            }
        }
        Ok(())
    }

    /// Opens the tree's root, failing the phase if it is not there.
    fn open_base(
        &self,
        parent: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<OwnedFd, FsbenchError> {
        Self::open_dir(rec, parent, &self.base)?.ok_or_else(|| {
            FsbenchError::Failed(format!("tree root `{}` cannot be opened", self.base_name()))
        })
    }
}

impl Workload for Tree {
    fn phases(&self) -> std::borrow::Cow<'static, [PhaseInfo]> {
        std::borrow::Cow::Borrowed(PHASES)
    }

    fn expected_units(&self, phase: usize) -> u64 {
        match phase {
            DIR_CREATE | DIR_REMOVE => self.params.total_dirs(),
            _ => self.params.total_files(),
        }
    }

    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        let levels = self.params.levels;
        match phase {
            DIR_CREATE => {
                let made = rustix::fs::mkdirat(dir, &self.base, Mode::from(0o755));
                let failure = made.err();
                if rec.record(OpKind::Mkdir, made)?.is_none() {
                    return Err(FsbenchError::Failed(format!(
                        "cannot create tree root `{}`: {}",
                        self.base_name(),
                        failure.map_or_else(String::new, |e| e.to_string())
                    )));
                }
                rec.unit_done(0)?;
                let base = self.open_base(dir, rec)?;
                self.create_dirs(base.as_fd(), levels, rec)
            }
            FILE_CREATE => {
                let base = self.open_base(dir, rec)?;
                self.create_files(base.as_fd(), levels, rec)
            }
            FILE_REMOVE => {
                let base = self.open_base(dir, rec)?;
                self.remove_files(base.as_fd(), levels, rec)
            }
            DIR_REMOVE => {
                let base = self.open_base(dir, rec)?;
                self.remove_dirs(base.as_fd(), levels, rec)?;
                drop(base);
                let removed = rustix::fs::unlinkat(dir, &self.base, AtFlags::REMOVEDIR);
                if rec.record(OpKind::Rmdir, removed)?.is_some() {
                    rec.unit_done(0)?;
                }
                Ok(())
            }
            _ => unreachable!("tree has four phases"),
        }
    }
}

#[cfg(test)]
mod tests;

//! Extended attributes: the `user.*` attributes that backup tools, Samba and desktop search
//! keep beside each file, set, read back, listed and removed, on files created before and
//! removed after. Where a filesystem keeps them decides what is measured: small values fit
//! in the inode (ext4 with 256-byte inodes, xfs's attribute fork, btrfs's tree items), larger
//! ones take a block of their own, so the value size picks the path.

use std::borrow::Cow;
use std::ffi::CStr;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Mode, OFlags, XattrFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::options::{OptKind, OptionDef, Parsed, Preset, WorkloadKind};
use super::{PhaseInfo, PhaseOutput, SpaceNeed, Workload, WorkloadParams};
use fsbench_measure::calls::numbered_name;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::{OpKind, PhaseRecorder};
use fsbench_model::units::group_thousands;

pub(crate) const PHASES: &[PhaseInfo] = &[
    PhaseInfo::fixed("create", "files", false),
    PhaseInfo::fixed("set", "attrs", true),
    PhaseInfo::fixed("get", "attrs", true),
    PhaseInfo::fixed("list", "files", false),
    PhaseInfo::fixed("remove", "attrs", false),
    PhaseInfo::fixed("unlink", "files", false),
];
const CREATE: usize = 0;
const SET: usize = 1;
const GET: usize = 2;
const LIST: usize = 3;
const REMOVE: usize = 4;

/// Files per directory, so that no directory grows large enough to be what is measured.
const PER_DIR: u64 = 1000;
/// The kernel's largest attribute value (XATTR_SIZE_MAX).
const SIZE_MAX: u64 = 65536;
const ATTRS_MAX: u64 = 1000;
const FILES_MAX: u64 = 100_000_000;
/// Every attribute's name starts so; its number follows.
const PREFIX: &[u8] = b"user.fsbench.";

/// How many files, and how many attributes of what size each carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XattrParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    pub files: u64,
    /// Attributes per file.
    pub attrs: u32,
    /// Bytes of each attribute's value.
    pub size: u32,
}

const OPTIONS: &[OptionDef] = &[
    OptionDef {
        min: 1,
        max: FILES_MAX,
        ..OptionDef::new("files", OptKind::Count, "files, 1,000 per directory")
    },
    OptionDef {
        min: 1,
        max: ATTRS_MAX,
        ..OptionDef::new("attrs", OptKind::Count, "user.* attributes per file")
    },
    OptionDef {
        min: 1,
        max: SIZE_MAX,
        ..OptionDef::new("size", OptKind::Size, "bytes of each attribute's value")
    },
];

const PRESETS: &[Preset] = &[
    Preset {
        name: "quick",
        values: &[("files", "2000"), ("attrs", "4"), ("size", "32")],
        help: "a look at the default's values on fewer files; 0.1 s a run on tmpfs here",
    },
    Preset {
        name: "default",
        values: &[("files", "80000"), ("attrs", "4"), ("size", "32")],
        help: "small values, kept in the inode where the filesystem can; 4.5 s a run on tmpfs here",
    },
    Preset {
        name: "block",
        values: &[("files", "20000"), ("attrs", "2"), ("size", "1024")],
        help: "2 KiB of values per file: past the inode, in a block of their own; 1.0 s a run on tmpfs here",
    },
];

/// The xattr workload's option table.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "xattr",
    summary: "extended attributes: set, get, list and remove user.* attributes on many files",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "default",
    more_work: &["files", "attrs"],
    aliases: &[],
};

fn build(p: &Parsed) -> anyhow::Result<XattrParams> {
    let (files, attrs, size) = (
        p.num("files").expect("xattr options have preset values"),
        p.small("attrs").expect("preset value"),
        p.small("size").expect("preset value"),
    );
    // Named by its values, as tree's are: a preset written out in full (a suite file's table,
    // a stored suite) is that preset.
    let value = |key: &str| match key {
        "files" => Some(files.to_string()),
        "attrs" => Some(attrs.to_string()),
        _ => Some(size.to_string()),
    };
    let preset = PRESETS
        .iter()
        .find(|preset| preset.matches(&["files", "attrs", "size"], value))
        .map(|preset| preset.name.to_string());
    Ok(XattrParams {
        preset,
        files,
        attrs,
        size,
    })
}

impl XattrParams {
    /// Parses the part after `xattr:`.
    #[cfg(test)]
    pub(crate) fn parse(args: &str) -> anyhow::Result<XattrParams> {
        build(&KIND.parse_cli(args)?)
    }

    fn dirs(&self) -> u64 {
        self.files.div_ceil(PER_DIR)
    }

    /// Bytes one `flistxattr` returns: every name and its NUL.
    fn list_bytes(&self) -> usize {
        (0..self.attrs)
            .map(|i| PREFIX.len() + i.to_string().len() + 1)
            .sum()
    }
}

impl WorkloadParams for XattrParams {
    const KIND: &'static WorkloadKind = &KIND;

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    fn name(&self) -> String {
        self.preset
            .clone()
            .unwrap_or_else(|| format!("f{}-a{}-s{}", self.files, self.attrs, self.size))
    }

    fn validate(&self) -> anyhow::Result<()> {
        if !(1..=FILES_MAX).contains(&self.files) {
            return Err(invalid(format!(
                "xattr: files must be 1 to {}",
                group_thousands(FILES_MAX)
            )));
        }
        if !(1..=ATTRS_MAX).contains(&u64::from(self.attrs)) {
            return Err(invalid(format!("xattr: attrs must be 1 to {ATTRS_MAX}")));
        }
        if !(1..=SIZE_MAX).contains(&u64::from(self.size)) {
            return Err(invalid(format!(
                "xattr: size must be 1 to {SIZE_MAX} bytes (the kernel's largest value)"
            )));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "extended attributes: {} files × {} user.* attributes of {} B: create, set, get, list, remove, unlink",
            group_thousands(self.files),
            self.attrs,
            self.size
        )
    }

    /// Each file's inode and its values in blocks of their own; `None` on overflow.
    fn space_needed(&self) -> Option<SpaceNeed> {
        let values = u64::from(self.attrs)
            .checked_mul(u64::from(self.size))?
            .next_multiple_of(4096);
        let bytes = self.files.checked_mul(values.checked_add(4096)?)?;
        let inodes = self.files.checked_add(self.dirs())?.checked_add(2)?;
        Some(SpaceNeed::exactly(
            bytes.checked_add(self.dirs().checked_mul(4096)?)?,
            inodes,
        ))
    }

    fn buffer_bytes(&self) -> u64 {
        2 * u64::from(self.size) + self.list_bytes() as u64
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        Cow::Borrowed(PHASES)
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(Xattr::new(self.clone()))
    }
}

/// A NUL-terminated `<prefix><n>` built in place: no allocation per call.
struct Name {
    buf: [u8; 40],
}

impl Name {
    fn new() -> Name {
        Name { buf: [0; 40] }
    }

    fn of(&mut self, prefix: &[u8], n: u64) -> &CStr {
        numbered_name(&mut self.buf, prefix, n)
    }
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);
const PROBE: &str = ".fsbench-xattr-probe";

pub(crate) struct Xattr {
    params: XattrParams,
    /// The value every attribute is set to.
    value: Vec<u8>,
    /// Where values and the list are read back into.
    buf: Vec<u8>,
    /// Why the attribute phases measure nothing on this filesystem (found after `create`).
    unsupported: Option<String>,
}

impl Xattr {
    pub(crate) fn new(params: XattrParams) -> Xattr {
        let size = params.size as usize;
        let read = size.max(params.list_bytes());
        Xattr {
            value: (0..size).map(|i| b'a' + (i % 26) as u8).collect(),
            buf: vec![0; read],
            params,
            unsupported: None,
        }
    }

    /// Untimed: whether one file here can carry the attributes (a filesystem without
    /// `user.*` attributes, or one that keeps a file's in the inode and one block, as ext4
    /// without `ea_inode` does, says so before any is timed).
    fn probe(&self, dir: BorrowedFd<'_>) -> Result<Option<String>, FsbenchError> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
        let file = rustix::fs::openat(dir, PROBE, flags, Mode::from(0o600))
            .map_err(|e| FsbenchError::Failed(format!("xattr: cannot create {PROBE}: {e}")))?;
        let mut name = Name::new();
        let mut outcome = Ok(None);
        for i in 0..u64::from(self.params.attrs) {
            match rustix::fs::fsetxattr(&file, name.of(PREFIX, i), &self.value, XattrFlags::CREATE)
            {
                Ok(()) => {}
                Err(Errno::OPNOTSUPP) => {
                    outcome = Ok(Some(
                        "this filesystem has no user.* extended attributes (EOPNOTSUPP)".into(),
                    ));
                    break;
                }
                Err(e @ (Errno::NOSPC | Errno::TOOBIG | Errno::RANGE)) => {
                    outcome = Ok(Some(format!(
                        "one file here holds {i} of the {} attributes of {} B ({}): a filesystem \
                         that keeps a file's attributes in its inode and one block (ext4 without \
                         `mkfs.ext4 -O ea_inode`) holds about 4 KiB",
                        self.params.attrs,
                        self.params.size,
                        fsbench_measure::measure::errno_name(e.raw_os_error())
                    )));
                    break;
                }
                Err(e) => {
                    outcome = Err(FsbenchError::Failed(format!(
                        "xattr: setting an attribute on {PROBE}: {e}"
                    )));
                    break;
                }
            }
        }
        drop(file);
        rustix::fs::unlinkat(dir, PROBE, AtFlags::empty())
            .map_err(|e| FsbenchError::Failed(format!("xattr: cannot remove {PROBE}: {e}")))?;
        outcome
    }

    /// `each` on every file, open read-only, directory by directory (`each` counts the
    /// units: attributes or files).
    fn each_file(
        &mut self,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
        mut each: impl FnMut(&mut Self, &OwnedFd, &mut PhaseRecorder) -> Result<(), FsbenchError>,
    ) -> Result<(), FsbenchError> {
        let mut name = Name::new();
        for d in 0..self.params.dirs() {
            let sub = open_dir(dir, name.of(b"d", d), rec)?;
            for f in self.files_in(d) {
                let opened = rustix::fs::openat(
                    &sub,
                    name.of(b"f", f),
                    OFlags::RDONLY | OFlags::CLOEXEC,
                    Mode::empty(),
                );
                let Some(file) = rec.record(OpKind::OpenFile, opened)? else {
                    rec.note_failure(|| format!("d{d}/f{f}"));
                    continue;
                };
                each(self, &file, rec)?;
                drop(file);
                rec.record(OpKind::Close, Ok(()))?;
            }
        }
        Ok(())
    }

    /// The numbers of directory `d`'s files.
    fn files_in(&self, d: u64) -> std::ops::Range<u64> {
        d * PER_DIR..((d + 1) * PER_DIR).min(self.params.files)
    }

    fn create(&mut self, dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let mut name = Name::new();
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
        for d in 0..self.params.dirs() {
            let made = rustix::fs::mkdirat(dir, name.of(b"d", d), Mode::from(0o755));
            if rec.record(OpKind::Mkdir, made)?.is_none() {
                return Err(FsbenchError::Failed(format!(
                    "xattr: cannot create directory d{d}"
                )));
            }
            let sub = open_dir(dir, name.of(b"d", d), rec)?;
            for f in self.files_in(d) {
                let made = rustix::fs::openat(&sub, name.of(b"f", f), flags, Mode::from(0o644));
                if rec.record(OpKind::Create, made)?.is_some() {
                    rec.record(OpKind::Close, Ok(()))?;
                    rec.unit_done(0)?;
                } else {
                    rec.note_failure(|| format!("d{d}/f{f}"));
                }
            }
        }
        Ok(())
    }

    fn unlink(&mut self, dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let mut name = Name::new();
        for d in 0..self.params.dirs() {
            let sub = open_dir(dir, name.of(b"d", d), rec)?;
            for f in self.files_in(d) {
                let removed = rustix::fs::unlinkat(&sub, name.of(b"f", f), AtFlags::empty());
                if rec.record(OpKind::Unlink, removed)?.is_some() {
                    rec.unit_done(0)?;
                } else {
                    rec.note_failure(|| format!("d{d}/f{f}"));
                }
            }
            drop(sub);
            rec.record(OpKind::Close, Ok(()))?;
            let removed = rustix::fs::unlinkat(dir, name.of(b"d", d), AtFlags::REMOVEDIR);
            rec.record(OpKind::Rmdir, removed)?;
        }
        Ok(())
    }
}

fn open_dir(
    dir: BorrowedFd<'_>,
    name: &CStr,
    rec: &mut PhaseRecorder,
) -> Result<OwnedFd, FsbenchError> {
    let opened = rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty());
    rec.record(OpKind::OpenDir, opened)?
        .ok_or_else(|| FsbenchError::Failed(format!("xattr: cannot open directory {name:?}")))
}

impl Workload for Xattr {
    fn phases(&self) -> std::borrow::Cow<'static, [PhaseInfo]> {
        std::borrow::Cow::Borrowed(PHASES)
    }

    fn expected_units(&self, phase: usize) -> u64 {
        match phase {
            SET | GET | REMOVE => self.params.files * u64::from(self.params.attrs),
            _ => self.params.files,
        }
    }

    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        let attrs = u64::from(self.params.attrs);
        let size = self.params.size as usize;
        let mut name = Name::new();
        match phase {
            CREATE => self.create(dir, rec),
            _ if (SET..=REMOVE).contains(&phase) && self.unsupported.is_some() => Ok(()),
            SET => self.each_file(dir, rec, |me, file, rec| {
                for i in 0..attrs {
                    let set = rustix::fs::fsetxattr(
                        file,
                        name.of(PREFIX, i),
                        &me.value,
                        XattrFlags::CREATE,
                    );
                    if rec.record(OpKind::Xattr, set)?.is_some() {
                        rec.unit_done(size as u64)?;
                    }
                }
                Ok(())
            }),
            GET => self.each_file(dir, rec, |me, file, rec| {
                for i in 0..attrs {
                    let got = rustix::fs::fgetxattr(file, name.of(PREFIX, i), &mut me.buf[..]);
                    if let Some(n) = rec.record(OpKind::Xattr, got)? {
                        if n != size {
                            return Err(FsbenchError::Failed(format!(
                                "xattr: read back {n} bytes of a {size}-byte value"
                            )));
                        }
                        rec.unit_done(n as u64)?;
                    }
                }
                Ok(())
            }),
            LIST => {
                let want = self.params.list_bytes();
                self.each_file(dir, rec, |me, file, rec| {
                    let listed = rustix::fs::flistxattr(file, &mut me.buf[..]);
                    if let Some(n) = rec.record(OpKind::Xattr, listed)? {
                        // Another attribute (a security label) may be listed too.
                        if n < want {
                            return Err(FsbenchError::Failed(format!(
                                "xattr: a file lists {n} bytes of names, under its {want}"
                            )));
                        }
                        rec.unit_done(0)?;
                    }
                    Ok(())
                })
            }
            REMOVE => self.each_file(dir, rec, |_, file, rec| {
                for i in 0..attrs {
                    let removed = rustix::fs::fremovexattr(file, name.of(PREFIX, i));
                    if rec.record(OpKind::Xattr, removed)?.is_some() {
                        rec.unit_done(0)?;
                    }
                }
                Ok(())
            }),
            _ => self.unlink(dir, rec),
        }
    }

    fn after_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
    ) -> Result<PhaseOutput, FsbenchError> {
        if phase == CREATE {
            self.unsupported = self.probe(dir)?;
        }
        Ok(PhaseOutput {
            unsupported: self
                .unsupported
                .clone()
                .filter(|_| (SET..=REMOVE).contains(&phase)),
            ..PhaseOutput::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_validates_and_names_in_place() {
        let p = XattrParams::parse("").unwrap();
        assert_eq!((p.files, p.attrs, p.size), (80_000, 4, 32));
        // A preset written out in full is that preset; one value off, none.
        let written = XattrParams::parse("files=20000,attrs=2,size=1k").unwrap();
        assert_eq!(written.preset.as_deref(), Some("block"));
        assert_eq!(XattrParams::parse("block,size=1025").unwrap().preset, None);
        let q = XattrParams::parse("files=1500,attrs=3,size=2k").unwrap();
        assert_eq!(
            (q.dirs(), q.size, q.name().as_str()),
            (2, 2048, "f1500-a3-s2048")
        );
        assert!(XattrParams::parse("size=65537").is_err());
        assert!(XattrParams::parse("attrs=0").is_err());
        assert!(XattrParams::parse("values=3").is_err());
        // "user.fsbench.0" … "user.fsbench.2", each with its NUL.
        assert_eq!(q.list_bytes(), 3 * 15);
        let mut n = Name::new();
        assert_eq!(n.of(PREFIX, 12), c"user.fsbench.12");
        assert_eq!(n.of(b"d", 3), c"d3");
    }
}

//! The Linux Magazine filesystem tests' "atomic" loops: mkdir, touch, echo, cat, dd, rm and
//! rmdir, each repeated in its own directory with raw system calls, where the article ran a
//! shell command per operation.

use std::borrow::Cow;
use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Mode, OFlags};
use serde::{Deserialize, Serialize};

use super::options::{OptKind, OptionDef, Parsed, Preset, WorkloadKind};
use super::{PhaseInfo, SpaceNeed, Workload, WorkloadParams};
use fsbench_measure::calls::numbered_name;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::{OpKind, PhaseRecorder};
use fsbench_model::units::group_thousands;

pub(crate) const PHASES: &[PhaseInfo] = &[
    PhaseInfo::fixed("mkdir", "dirs", false),
    PhaseInfo::fixed("touch", "files", false),
    PhaseInfo::fixed("echo", "appends", true),
    PhaseInfo::fixed("cat", "files", true),
    PhaseInfo::fixed("dd", "files", true),
    PhaseInfo::fixed("rm", "files", false),
    PhaseInfo::fixed("rmdir", "dirs", false),
];

/// Loop counts and dd's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtomicParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Repetitions of mkdir, touch, echo, cat, rm and rmdir.
    pub count: u64,
    /// Files dd writes (each `dd_blocks` blocks of `dd_block_size` bytes).
    pub dd_count: u64,
    pub dd_blocks: u32,
    pub dd_block_size: u32,
}

/// The line `echo` appends: the article's `echo` of a short text.
const LINE: &[u8] = b"fsbench atomic echo\n";

const COUNT_MAX: u64 = 100_000_000;

const OPTIONS: &[OptionDef] = &[
    OptionDef {
        min: 1,
        max: COUNT_MAX,
        ..OptionDef::new(
            "count",
            OptKind::Count,
            "repetitions of mkdir, touch, echo, cat, rm and rmdir",
        )
    },
    OptionDef {
        min: 1,
        max: COUNT_MAX,
        ..OptionDef::new("dd-count", OptKind::Count, "files dd writes")
    },
    OptionDef {
        min: 1,
        max: u32::MAX as u64,
        ..OptionDef::new("dd-blocks", OptKind::Count, "blocks per dd file")
    },
    OptionDef {
        min: 1,
        max: 64 << 20,
        ..OptionDef::new("dd-bs", OptKind::Size, "dd's block size")
    },
];

/// `quick` for a look; `standard` makes every loop last over a second on tmpfs here.
const PRESETS: &[Preset] = &[
    Preset {
        name: "quick",
        values: &[
            ("count", "20000"),
            ("dd-count", "2000"),
            ("dd-blocks", "4"),
            ("dd-bs", "4096"),
        ],
        help: "a look; 1.7 s a run on tmpfs here",
    },
    Preset {
        name: "standard",
        values: &[
            ("count", "1200000"),
            ("dd-count", "50000"),
            ("dd-blocks", "4"),
            ("dd-bs", "4096"),
        ],
        help: "every loop over a second on tmpfs",
    },
];

/// The atomic workload's option table.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "atomic",
    summary: "the article's shell loops (mkdir, touch, echo, cat, dd, rm, rmdir) as system calls",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "quick",
    more_work: &["count", "dd-count"],
    aliases: &[],
};

fn build(p: &Parsed) -> anyhow::Result<AtomicParams> {
    let n = |name| p.num(name).expect("atomic options have preset values");
    let custom = p.first_explicit(&["count", "dd-count", "dd-blocks", "dd-bs"]);
    Ok(AtomicParams {
        preset: custom.is_none().then(|| p.preset.name.to_string()),
        count: n("count"),
        dd_count: n("dd-count"),
        dd_blocks: p.small("dd-blocks").expect("preset value"),
        dd_block_size: p.small("dd-bs").expect("preset value"),
    })
}

impl AtomicParams {
    /// Parses the part after `atomic:`: a preset and/or `count=N,dd-count=N,dd-blocks=N,dd-bs=SIZE`.
    #[cfg(test)]
    pub(crate) fn parse(args: &str) -> anyhow::Result<AtomicParams> {
        build(&KIND.parse_cli(args)?)
    }
}

impl WorkloadParams for AtomicParams {
    const KIND: &'static WorkloadKind = &KIND;

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    fn name(&self) -> String {
        self.preset.clone().unwrap_or_else(|| {
            format!(
                "n{}-dd{}x{}x{}",
                self.count, self.dd_count, self.dd_blocks, self.dd_block_size
            )
        })
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.count == 0 || self.dd_count == 0 || self.dd_blocks == 0 || self.dd_block_size == 0 {
            return Err(invalid(
                "atomic: counts and dd's block count and size must be at least 1",
            ));
        }
        if self.dd_block_size > 64 << 20 {
            return Err(invalid("atomic: dd-bs above 64 MiB is absurd"));
        }
        if self.count > 100_000_000 || self.dd_count > 100_000_000 {
            return Err(invalid(
                "atomic: more than 100 million repetitions is absurd",
            ));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "atomic loops: mkdir, touch, echo >>, cat, rm, rmdir ×{}; dd of {} files × {} × {} B",
            group_thousands(self.count),
            group_thousands(self.dd_count),
            self.dd_blocks,
            self.dd_block_size
        )
    }

    /// Bytes of I/O buffers the workload allocates.
    fn buffer_bytes(&self) -> u64 {
        u64::from(self.dd_block_size).max(4096)
    }

    /// `None` when the counts and sizes overflow.
    fn space_needed(&self) -> Option<SpaceNeed> {
        let dd = self
            .dd_count
            .checked_mul(self.dd_blocks as u64)?
            .checked_mul(self.dd_block_size as u64)?;
        let inodes = self
            .count
            .checked_mul(2)?
            .checked_add(self.dd_count)?
            .checked_add(8)?;
        Some(SpaceNeed::exactly(
            dd.checked_add(inodes.checked_mul(4096)?)?,
            inodes,
        ))
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        Cow::Borrowed(PHASES)
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(Atomic::new(self.clone()))
    }
}

/// A `<prefix><n>` name built in place.
struct Name {
    buf: [u8; 24],
}

impl Name {
    fn of(&mut self, prefix: u8, n: u64) -> &CStr {
        numbered_name(&mut self.buf, &[prefix], n)
    }
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

pub(crate) struct Atomic {
    params: AtomicParams,
    buf: Vec<u8>,
}

impl Atomic {
    pub(crate) fn new(params: AtomicParams) -> Atomic {
        let size = params.dd_block_size as usize;
        Atomic {
            params,
            buf: vec![0; size.max(4096)],
        }
    }

    /// The loop's own directory (made by the first phase that needs it).
    fn dir(parent: BorrowedFd<'_>, name: &str, create: bool) -> Result<OwnedFd, FsbenchError> {
        if create {
            match rustix::fs::mkdirat(parent, name, Mode::from(0o755)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(FsbenchError::Failed(format!("cannot create {name}/: {e}"))),
            }
        }
        rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty())
            .map_err(|e| FsbenchError::Failed(format!("cannot open {name}/: {e}")))
    }

    /// open → body → close, one unit, for `count` files `f<i>` in `dir`.
    fn each_file(
        &mut self,
        dir: BorrowedFd<'_>,
        count: u64,
        flags: OFlags,
        op: OpKind,
        rec: &mut PhaseRecorder,
        mut body: impl FnMut(&mut Vec<u8>, &OwnedFd, &mut PhaseRecorder) -> Result<u64, FsbenchError>,
    ) -> Result<(), FsbenchError> {
        let mut name = Name { buf: [0; 24] };
        for i in 0..count {
            let opened = rustix::fs::openat(dir, name.of(b'f', i), flags, Mode::from(0o644));
            let Some(file) = rec.record(op, opened)? else {
                rec.note_failure(|| format!("f{i}"));
                continue;
            };
            let bytes = body(&mut self.buf, &file, rec)?;
            drop(file);
            rec.record(OpKind::Close, Ok(()))?;
            rec.unit_done(bytes)?;
        }
        Ok(())
    }

    /// `mkdir d0..dN`: directories.
    fn mkdir(&mut self, dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let d = Self::dir(dir, "mkdir", true)?;
        each_name(
            ("mkdir", b'd'),
            self.params.count,
            OpKind::Mkdir,
            rec,
            |name| rustix::fs::mkdirat(&d, name, Mode::from(0o755)),
        )
    }

    /// `touch f0..fN`: empty files.
    fn touch(&mut self, dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let write_flags = OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC;
        let count = self.params.count;
        let d = Self::dir(dir, "files", true)?;
        self.each_file(
            d.as_fd(),
            count,
            write_flags,
            OpKind::Create,
            rec,
            |_, _, _| Ok(0),
        )?;
        Ok(())
    }

    /// `echo >> fI`: a line appended to each file.
    fn echo(&mut self, dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let count = self.params.count;
        let d = Self::dir(dir, "files", false)?;
        let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CLOEXEC;
        self.each_file(
            d.as_fd(),
            count,
            flags,
            OpKind::OpenFile,
            rec,
            |_, file, rec| {
                let written = rustix::io::write(file, LINE);
                Ok(rec.record(OpKind::Write, written)?.unwrap_or(0) as u64)
            },
        )?;
        Ok(())
    }

    /// `cat fI`: each file read whole.
    fn cat(&mut self, dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let count = self.params.count;
        let d = Self::dir(dir, "files", false)?;
        self.each_file(
            d.as_fd(),
            count,
            OFlags::RDONLY | OFlags::CLOEXEC,
            OpKind::OpenFile,
            rec,
            |buf, file, rec| {
                let mut total = 0;
                while let Some(n) =
                    rec.record(OpKind::Read, rustix::io::read(file, &mut buf[..]))?
                {
                    if n == 0 {
                        break;
                    }
                    total += n as u64;
                }
                Ok(total)
            },
        )?;
        Ok(())
    }

    /// `dd`: files of `dd_blocks` blocks each.
    fn dd(&mut self, dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let write_flags = OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC;
        let d = Self::dir(dir, "dd", true)?;
        let (blocks, size) = (self.params.dd_blocks, self.params.dd_block_size as usize);
        self.each_file(
            d.as_fd(),
            self.params.dd_count,
            write_flags,
            OpKind::Create,
            rec,
            |buf, file, rec| {
                let mut total = 0;
                for _ in 0..blocks {
                    match rec.record(OpKind::Write, rustix::io::write(file, &buf[..size]))? {
                        Some(n) => total += n as u64,
                        None => break,
                    }
                }
                Ok(total)
            },
        )?;
        Ok(())
    }

    /// `rm`: the files and the dd files.
    fn rm(&mut self, dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let count = self.params.count;
        for (sub, n) in [("files", count), ("dd", self.params.dd_count)] {
            let d = Self::dir(dir, sub, false)?;
            each_name((sub, b'f'), n, OpKind::Unlink, rec, |name| {
                rustix::fs::unlinkat(&d, name, AtFlags::empty())
            })?;
        }
        Ok(())
    }

    /// `rmdir`: the directories, then the workload's own.
    fn rmdir(&mut self, dir: BorrowedFd<'_>, rec: &mut PhaseRecorder) -> Result<(), FsbenchError> {
        let d = Self::dir(dir, "mkdir", false)?;
        each_name(
            ("mkdir", b'd'),
            self.params.count,
            OpKind::Rmdir,
            rec,
            |name| rustix::fs::unlinkat(&d, name, AtFlags::REMOVEDIR),
        )?;
        drop(d);
        for sub in ["mkdir", "files", "dd"] {
            let _ = rustix::fs::unlinkat(dir, sub, AtFlags::REMOVEDIR);
        }
        Ok(())
    }
}

impl Workload for Atomic {
    fn phases(&self) -> std::borrow::Cow<'static, [PhaseInfo]> {
        std::borrow::Cow::Borrowed(PHASES)
    }

    fn expected_units(&self, phase: usize) -> u64 {
        match PHASES[phase].name.as_ref() {
            "dd" => self.params.dd_count,
            "rm" => self.params.count + self.params.dd_count,
            _ => self.params.count,
        }
    }

    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        match PHASES[phase].name.as_ref() {
            "mkdir" => self.mkdir(dir, rec),
            "touch" => self.touch(dir, rec),
            "echo" => self.echo(dir, rec),
            "cat" => self.cat(dir, rec),
            "dd" => self.dd(dir, rec),
            "rm" => self.rm(dir, rec),
            _ => self.rmdir(dir, rec),
        }
    }
}

/// One call per name `<prefix><i>` of directory `sub`, for `i` below `n`, each one unit,
/// a failed one noted by its path.
fn each_name(
    (sub, prefix): (&str, u8),
    n: u64,
    op: OpKind,
    rec: &mut PhaseRecorder,
    call: impl Fn(&CStr) -> rustix::io::Result<()>,
) -> Result<(), FsbenchError> {
    let mut name = Name { buf: [0; 24] };
    for i in 0..n {
        if rec.record(op, call(name.of(prefix, i)))?.is_some() {
            rec.unit_done(0)?;
        } else {
            rec.note_failure(|| format!("{sub}/{}{i}", prefix as char));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_validates() {
        let p = AtomicParams::parse("standard").unwrap();
        assert_eq!(p.count, 1_200_000);
        let q = AtomicParams::parse("count=10,dd-count=3,dd-blocks=2,dd-bs=8k").unwrap();
        assert_eq!(
            (q.count, q.dd_block_size, q.name().as_str()),
            (10, 8192, "n10-dd3x2x8192")
        );
        assert!(
            AtomicParams::parse("count=0")
                .and_then(|p| p.validate())
                .is_err()
        );
        assert!(AtomicParams::parse("loops=3").is_err());
        let mut n = Name { buf: [0; 24] };
        assert_eq!(n.of(b'f', 12345), c"f12345");
    }
}

//! alloc-perf (Amit Shah's file-allocation articles): one file of a given size allocated by each
//! method in turn — posix_fallocate, native fallocate, mmap + memset, write() in chunks — each
//! timed from open until the data is durable (fsync, optionally unmount), each followed by the
//! file's fragment count from FIEMAP. One phase per method, so every method's time is a figure
//! with its spread.
//!
//! Unlike alloc-perf itself, native fallocate is reported unsupported where the filesystem
//! lacks it (ext2, ext3) instead of silently becoming a slow zero-writing loop; posix_fallocate
//! keeps glibc's fallback, as applications see it.

mod option_table;

use std::borrow::Cow;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::options::{Parsed, WorkloadKind};
use super::{Boundary, Need, PhaseInfo, PhaseOutput, SpaceNeed, Workload, WorkloadParams};
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::extents::Mapper;
use fsbench_measure::measure::{OpKind, PhaseRecorder};
use fsbench_measure::units::parse_size;
use fsbench_model::filesystem::Capability;
use fsbench_model::measurement::Figure;
use fsbench_model::units::{compact_size, format_bytes};
use option_table::{OPTIONS, PRESETS};

/// An allocation method, named as in the articles' table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    PosixFallocate,
    Fallocate,
    Mmap,
    /// write() of zeros in chunks of this many bytes.
    Chunks(u64),
}

impl Method {
    pub fn name(self) -> String {
        match self {
            Method::PosixFallocate => "posix-fallocate".into(),
            Method::Fallocate => "fallocate".into(),
            Method::Mmap => "mmap".into(),
            Method::Chunks(n) => format!("chunk-{n}"),
        }
    }

    fn title(self) -> String {
        match self {
            Method::PosixFallocate => "posix_fallocate".into(),
            Method::Fallocate => "fallocate".into(),
            Method::Mmap => "mmap + memset".into(),
            Method::Chunks(n) => format!("write {n} B chunks"),
        }
    }

    fn parse(text: &str) -> anyhow::Result<Method> {
        match text {
            "posix-fallocate" => Ok(Method::PosixFallocate),
            "fallocate" => Ok(Method::Fallocate),
            "mmap" => Ok(Method::Mmap),
            other => other
                .strip_prefix("chunk-")
                .and_then(|n| parse_size(n).ok())
                .filter(|n| *n > 0)
                .map(Method::Chunks)
                .ok_or_else(|| {
                    invalid(format!(
                        "unknown allocation method `{other}`: use posix-fallocate, fallocate, mmap or chunk-SIZE"
                    ))
                }),
        }
    }
}

impl Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Method {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Method::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// What each method starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fresh {
    /// The previous method's file is removed (and the removal synced) first.
    File,
    /// A newly made filesystem for every method.
    Fs,
}

/// Until when a method is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durable {
    Fsync,
    /// fsync, then also the unmount right after (`time+unmount`), as the second article timed it.
    Unmount,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllocParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Bytes per file.
    pub size: u64,
    /// Shrink the file to fit the target (presets do; an explicit size does not).
    pub fit: bool,
    pub methods: Vec<Method>,
    pub fresh: Fresh,
    pub durable: Durable,
}

/// The alloc workload's option table.
pub(crate) const KIND: WorkloadKind = WorkloadKind {
    name: "alloc",
    summary: "alloc-perf: one file allocated by each method, timed until durable, then its fragments counted",
    options: OPTIONS,
    presets: PRESETS,
    default_preset: "seed-1g",
    more_work: &["size"],
    aliases: &[],
};

fn build(p: &Parsed) -> anyhow::Result<AllocParams> {
    let mut methods = p
        .texts("methods")
        .expect("methods has a default")
        .into_iter()
        .map(Method::parse)
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(chunks) = p.nums("chunks") {
        methods.retain(|m| !matches!(m, Method::Chunks(_)));
        methods.extend(chunks.into_iter().map(Method::Chunks));
    }
    let custom = p.first_explicit(&["size", "methods", "chunks"]);
    Ok(AllocParams {
        preset: custom.is_none().then(|| p.preset.name.to_string()),
        size: p.num("size").expect("presets give a size"),
        fit: !p.explicit("size"),
        methods,
        fresh: match p.text("fresh") {
            Some("fs") => Fresh::Fs,
            _ => Fresh::File,
        },
        durable: match p.text("durable") {
            Some("unmount") => Durable::Unmount,
            _ => Durable::Fsync,
        },
    })
}

impl AllocParams {
    /// Parses the part after `alloc:`: a preset and `size=`, `methods=A+B`, `chunks=4k+8k`
    /// (replaces the chunk methods), `fresh=file|fs`, `durable=fsync|unmount`.
    #[cfg(test)]
    pub(crate) fn parse(args: &str) -> anyhow::Result<AllocParams> {
        build(&KIND.parse_cli(args)?)
    }
}

impl WorkloadParams for AllocParams {
    const KIND: &'static WorkloadKind = &KIND;

    fn build(options: &Parsed) -> anyhow::Result<Self> {
        build(options)
    }

    fn name(&self) -> String {
        let mut name = self.preset.clone().unwrap_or_else(|| {
            let methods: Vec<String> = self.methods.iter().map(|m| m.name()).collect();
            format!(
                "size={},methods={}",
                compact_size(self.size),
                methods.join("+")
            )
        });
        if self.fresh == Fresh::Fs {
            name.push_str(",fresh=fs");
        }
        if self.durable == Durable::Unmount {
            name.push_str(",durable=unmount");
        }
        name
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.methods.is_empty() {
            return Err(invalid("alloc: no methods"));
        }
        if self.size == 0 || self.size > 1 << 40 {
            return Err(invalid("alloc: the size must be between 1 byte and 1 TiB"));
        }
        let names: Vec<String> = self.methods.iter().map(|m| m.name()).collect();
        if (1..names.len()).any(|i| names[..i].contains(&names[i])) {
            return Err(invalid("alloc: a method is listed twice"));
        }
        if let Some(big) = self
            .methods
            .iter()
            .find(|m| matches!(m, Method::Chunks(n) if *n > 1 << 30))
        {
            return Err(invalid(format!(
                "alloc: {} is larger than 1 GiB",
                big.name()
            )));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let methods: Vec<String> = self.methods.iter().map(|m| m.title()).collect();
        format!(
            "alloc-perf: one {} file{} by {}; each timed until {} on a fresh {}, then its fragments counted",
            format_bytes(self.size),
            if self.fit {
                " (smaller if it does not fit)"
            } else {
                ""
            },
            methods.join(", "),
            match self.durable {
                Durable::Fsync => "fsync",
                Durable::Unmount => "fsync and unmount",
            },
            match self.fresh {
                Fresh::File => "file",
                Fresh::Fs => "filesystem",
            }
        )
    }

    /// One file at a time (the previous is removed first); a preset shrinks to fit.
    /// Bytes of I/O buffers the workload allocates: the largest write chunk.
    fn buffer_bytes(&self) -> u64 {
        self.methods
            .iter()
            .map(|m| match m {
                Method::Chunks(n) => *n,
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// `None` when the size overflows.
    fn space_needed(&self) -> Option<SpaceNeed> {
        let ideal = self.size.checked_add(self.size / 16)?;
        Some(SpaceNeed {
            bytes: if self.fit { ideal.min(16 << 20) } else { ideal },
            inodes: 16,
            ideal_bytes: ideal,
        })
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        let phases = self.methods.iter().map(|m| PhaseInfo {
            name: Cow::Owned(m.name()),
            unit: Cow::Borrowed("MiB"),
            moves_data: false,
            has_rate: true,
            timed: true,
        });
        Cow::Owned(phases.collect())
    }

    fn instantiate(&self) -> Box<dyn Workload> {
        Box::new(Alloc::new(self.clone()))
    }

    fn needs(&self) -> Option<Need> {
        (self.methods.contains(&Method::Fallocate)).then_some(Need {
            capability: Capability::Fallocate,
            option: "`methods=fallocate`",
        })
    }

    fn mpi_refusal(&self) -> Option<&'static str> {
        Some(
            "it measures how one filesystem lays out one file per method (extents, \
             fragmentation); figures of several clients do not add up",
        )
    }
}

pub(crate) struct Alloc {
    params: AllocParams,
    /// The size in use: the parameter, or what fits the target.
    size: Option<u64>,
    mapper: Mapper,
    /// Why the current phase measured nothing.
    unsupported: Option<String>,
    /// That the file was shrunk to fit, for the phase that shrank it.
    fit_note: Option<String>,
}

/// The file every method allocates (one at a time).
const FILE: &str = "alloc.file";
/// mmap windows: the tool's own mapping stays bounded whatever the file size.
const MMAP_WINDOW: u64 = 256 << 20;

impl Alloc {
    pub(crate) fn new(params: AllocParams) -> Alloc {
        Alloc {
            params,
            size: None,
            mapper: Mapper::new(),
            unsupported: None,
            fit_note: None,
        }
    }

    /// The file size for this filesystem: the parameter, shrunk to fit when asked (and said so).
    fn size_for(&mut self, dir: BorrowedFd<'_>) -> Result<u64, FsbenchError> {
        if let Some(size) = self.size {
            return Ok(size);
        }
        let mut size = self.params.size;
        if self.params.fit
            && let (fitted, Some(free)) = fsbench_measure::calls::fit_size(dir, size, 1, 1 << 20)?
        {
            self.fit_note = Some(format!(
                "files of {} (the {} asked for do not fit in 80% of the {} free)",
                format_bytes(fitted),
                format_bytes(size),
                format_bytes(free)
            ));
            size = fitted;
        }
        self.size = Some(size);
        Ok(size)
    }

    fn allocate(
        &mut self,
        method: Method,
        file: &OwnedFd,
        size: u64,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        let mib = size.div_ceil(1 << 20);
        match method {
            Method::PosixFallocate | Method::Fallocate => {
                let result = if method == Method::Fallocate {
                    rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, size)
                } else {
                    // SAFETY: a plain libc call on an open descriptor; it returns the errno.
                    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, size as libc::off_t) }
                    {
                        0 => Ok(()),
                        rc => Err(Errno::from_raw_os_error(rc)),
                    }
                };
                if matches!(result, Err(Errno::OPNOTSUPP)) {
                    self.unsupported = Some(format!(
                        "{} is not supported by this filesystem (EOPNOTSUPP)",
                        method.title()
                    ));
                    return Ok(());
                }
                if rec.record(OpKind::Allocate, result)?.is_none() {
                    return Err(failed(method, "allocate", rec));
                }
                rec.units_done(mib, size)
            }
            Method::Mmap => {
                let done = rustix::fs::ftruncate(file, size);
                if rec.record(OpKind::Allocate, done)?.is_none() {
                    return Err(failed(method, "ftruncate", rec));
                }
                let mut offset = 0;
                while offset < size {
                    let len = MMAP_WINDOW.min(size - offset) as usize;
                    fill_window(file, offset, len).map_err(|e| {
                        fsbench_measure::measure::fatal_error(e, &method.name(), rec.units())
                            .unwrap_or_else(|| {
                                FsbenchError::Failed(format!("mmap window at {offset}: {e}"))
                            })
                    })?;
                    rec.record(OpKind::Allocate, Ok(()))?;
                    offset += len as u64;
                    rec.units_done(len.div_ceil(1 << 20) as u64, len as u64)?;
                }
                Ok(())
            }
            Method::Chunks(chunk) => {
                let buf = vec![0u8; chunk as usize];
                let mut written = 0u64;
                let mut next_mib = 1u64 << 20;
                while written < size {
                    let len = chunk.min(size - written) as usize;
                    let n = rec.record(OpKind::Write, rustix::io::write(file, &buf[..len]))?;
                    let Some(n) = n else {
                        return Err(failed(method, "write", rec));
                    };
                    written += n as u64;
                    if written >= next_mib || written == size {
                        rec.units_done(1, 0)?;
                        next_mib += 1 << 20;
                    }
                }
                Ok(())
            }
        }
    }
}

/// A failed call that is not disk full: the method cannot go on.
fn failed(method: Method, call: &str, rec: &PhaseRecorder) -> FsbenchError {
    FsbenchError::Failed(format!(
        "{}: {call} failed after {} MiB",
        method.title(),
        rec.units()
    ))
}

/// Maps `len` bytes of `file` at `offset` and fills them with zeros. Writing through a mapping
/// of a full filesystem raises SIGBUS, which would kill fsbench with its mounts in place, so the
/// free space is checked first and a shortfall is reported as ENOSPC.
fn fill_window(file: &OwnedFd, offset: u64, len: usize) -> Result<(), Errno> {
    if fsbench_measure::calls::free_bytes(file) < len as u64 {
        return Err(Errno::NOSPC);
    }
    // SAFETY: a shared writable mapping of a file we opened read-write and sized with
    // ftruncate; it is unmapped before returning and never aliased.
    unsafe {
        let ptr = rustix::mm::mmap(
            std::ptr::null_mut(),
            len,
            rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
            rustix::mm::MapFlags::SHARED,
            file,
            offset,
        )?;
        std::ptr::write_bytes(ptr.cast::<u8>(), 0, len);
        rustix::mm::munmap(ptr, len)?;
    }
    Ok(())
}

impl Workload for Alloc {
    fn filesystem_lacks(&mut self, lacks: &[Capability]) {
        self.mapper
            .declare_fiemap(!lacks.contains(&fsbench_model::filesystem::Capability::Fiemap));
    }

    fn phases(&self) -> Cow<'static, [PhaseInfo]> {
        self.params.phases()
    }

    fn expected_units(&self, _: usize) -> u64 {
        self.size.unwrap_or(self.params.size).div_ceil(1 << 20)
    }

    fn run_phase(
        &mut self,
        phase: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        let method = self.params.methods[phase];
        let size = self.size_for(dir)?;
        self.unsupported = None;
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
        let file = rec.record(
            OpKind::Create,
            rustix::fs::openat(dir, FILE, flags, Mode::from(0o644)),
        )?;
        let Some(file) = file else {
            return Err(failed(method, "create", rec));
        };
        self.allocate(method, &file, size, rec)?;
        if self.unsupported.is_some() {
            return Ok(());
        }
        if rec
            .record(OpKind::Fsync, rustix::fs::fsync(&file))?
            .is_none()
        {
            return Err(failed(method, "fsync", rec));
        }
        drop(file);
        rec.record(OpKind::Close, Ok(()))?;
        Ok(())
    }

    fn after_phase(&mut self, _: usize, dir: BorrowedFd<'_>) -> Result<PhaseOutput, FsbenchError> {
        let mut out = PhaseOutput {
            unsupported: self.unsupported.take(),
            notes: self.fit_note.take().into_iter().collect(),
            ..Default::default()
        };
        let file = rustix::fs::openat(dir, FILE, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| FsbenchError::Failed(format!("alloc: reopening {FILE}: {e}")))?;
        if out.unsupported.is_none() {
            let st = rustix::fs::fstat(&file).map_err(|e| FsbenchError::Failed(e.to_string()))?;
            let size = self.size.unwrap_or(self.params.size);
            if st.st_size as u64 != size {
                return Err(FsbenchError::Failed(format!(
                    "alloc: the file is {} bytes after allocating {size}",
                    st.st_size
                )));
            }
            match self.mapper.count(&file) {
                Ok(count) => {
                    out.figures.push(Figure::new(
                        "extents",
                        "count",
                        false,
                        count.fragments as f64,
                    ));
                }
                Err(e) => out.notes.push(fsbench_measure::extents::not_counted(e)),
            }
        }
        drop(file);
        if self.params.fresh == Fresh::File {
            rustix::fs::unlinkat(dir, FILE, AtFlags::empty())
                .map_err(|e| FsbenchError::Failed(format!("alloc: removing {FILE}: {e}")))?;
            // btrfs and ext4 free the blocks at the next commit: the next method starts with them.
            let _ = rustix::fs::syncfs(dir);
        }
        Ok(out)
    }

    fn boundary_after(&self, _: usize) -> Boundary {
        match (self.params.fresh, self.params.durable) {
            (Fresh::Fs, _) => Boundary::Remake,
            (Fresh::File, Durable::Unmount) => Boundary::Remount,
            (Fresh::File, Durable::Fsync) => Boundary::Keep,
        }
    }
}

#[cfg(test)]
mod tests;

//! The io workload's choices: fio's `rw=`, `ioengine=`, `fallocate=` and
//! `random_distribution=`.

use serde::{Deserialize, Serialize};

use fsbench_measure::error::invalid;

/// fio's `rw=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    ReadWrite,
    RandRw,
    /// Trims in sequence, where fio can trim a file (its `falloc` engine punches holes).
    Trim,
    RandTrim,
    /// Each block trimmed, then written (fio's `trimwrite`, `randtrimwrite`).
    TrimWrite,
    RandTrimWrite,
}

impl Rw {
    pub(crate) const NAMES: &'static [&'static str] = &[
        "read",
        "write",
        "randread",
        "randwrite",
        "readwrite",
        "randrw",
        "trim",
        "randtrim",
        "trimwrite",
        "randtrimwrite",
    ];

    pub(super) fn parse(text: &str) -> Rw {
        match text {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "readwrite" => Rw::ReadWrite,
            "trim" => Rw::Trim,
            "randtrim" => Rw::RandTrim,
            "trimwrite" => Rw::TrimWrite,
            "randtrimwrite" => Rw::RandTrimWrite,
            _ => Rw::RandRw,
        }
    }

    pub fn name(self) -> &'static str {
        Rw::NAMES[self as usize]
    }

    pub fn random(self) -> bool {
        matches!(
            self,
            Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim | Rw::RandTrimWrite
        )
    }

    /// Whether the job trims: every I/O of it is a trim, issued and recorded where a
    /// writing job's writes are (and reported in fio's trim direction).
    pub fn trims(self) -> bool {
        matches!(self, Rw::Trim | Rw::RandTrim)
    }

    /// Whether the job trims each block before it writes it (fio's `trimwrite`): its I/Os
    /// are writes, each after a trim of its range.
    pub fn trims_then_writes(self) -> bool {
        matches!(self, Rw::TrimWrite | Rw::RandTrimWrite)
    }

    /// The share of reads in percent, given `rwmixread` for the mixed ones.
    pub(crate) fn read_percent(self, rwmixread: u32) -> u32 {
        match self {
            Rw::Read | Rw::RandRead => 100,
            Rw::Write | Rw::RandWrite | Rw::Trim | Rw::RandTrim => 0,
            Rw::TrimWrite | Rw::RandTrimWrite => 0,
            Rw::ReadWrite | Rw::RandRw => rwmixread,
        }
    }
}

/// fio's `ioengine=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Psync,
    /// `lseek` (when the offset is not where the last I/O ended) then `read`/`write`.
    Sync,
    /// As `sync`, with `readv`/`writev`.
    Vsync,
    /// `preadv`/`pwritev`.
    Pvsync,
    Pvsync2,
    IoUring,
    /// The kernel's native AIO (io_submit), as fio's libaio engine.
    Libaio,
    /// No I/O at all (and no files), as fio's `null` engine: the harness's own cost.
    Null,
    /// fio's file and directory operation engines: each of the job's files (or
    /// directories) created, stat'ed or deleted once, each operation timed.
    FileCreate,
    FileStat,
    FileDelete,
    DirCreate,
    DirStat,
    DirDelete,
    /// The file mapped (`mmap`), its bytes copied in and out, `msync` for a sync.
    Mmap,
    /// POSIX AIO (glibc's `aio_read`, `aio_write`, `aio_suspend`), up to `iodepth` in flight.
    Posixaio,
    /// Each write an `ftruncate` of the file to the I/O's offset, as fio 3.33's engine.
    Ftruncate,
    /// Each I/O a `fallocate`: a read keeps the size, a write may extend it, a trim punches
    /// a hole.
    Falloc,
    /// Each write an `ioctl(EXT4_IOC_MOVE_EXT)` moving its blocks from a donor file (ext4).
    E4defrag,
    /// No I/O and no files: the job burns a share of a CPU, as fio's cpuio engine, beside
    /// the jobs that do I/O.
    Cpuio,
    /// No I/O and no files: the job runs a program for its time, as fio's exec engine,
    /// beside the jobs that do I/O.
    Exec,
    /// PMDK's libpmemblk: each file a block pool (`filename=PATH,BSIZE,FSIZEMiB`), each
    /// I/O its blocks' `pmemblk_read`/`pmemblk_write`.
    Pmemblk,
    /// PMDK's libpmem: each file mapped by `pmem_map_file` (on persistent memory only), a
    /// write a `pmem_memcpy`, a sync a `pmem_drain`.
    Libpmem,
    /// fio's engine for a device-DAX character device: refused (none is a filesystem's).
    DevDax,
}

impl Engine {
    /// fio's names, in [`Engine`]'s order.
    pub(crate) const NAMES: &'static [&'static str] = &[
        "psync",
        "sync",
        "vsync",
        "pvsync",
        "pvsync2",
        "io_uring",
        "libaio",
        "null",
        "filecreate",
        "filestat",
        "filedelete",
        "dircreate",
        "dirstat",
        "dirdelete",
        "mmap",
        "posixaio",
        "ftruncate",
        "falloc",
        "e4defrag",
        "cpuio",
        "exec",
        "pmemblk",
        "libpmem",
        "dev-dax",
    ];

    pub(super) fn parse(text: &str) -> Engine {
        match text {
            "sync" => Engine::Sync,
            "vsync" => Engine::Vsync,
            "pvsync" => Engine::Pvsync,
            "pvsync2" => Engine::Pvsync2,
            "io_uring" => Engine::IoUring,
            "libaio" => Engine::Libaio,
            "null" => Engine::Null,
            "filecreate" => Engine::FileCreate,
            "filestat" => Engine::FileStat,
            "filedelete" => Engine::FileDelete,
            "dircreate" => Engine::DirCreate,
            "dirstat" => Engine::DirStat,
            "dirdelete" => Engine::DirDelete,
            "mmap" => Engine::Mmap,
            "posixaio" => Engine::Posixaio,
            "ftruncate" => Engine::Ftruncate,
            "falloc" => Engine::Falloc,
            "e4defrag" => Engine::E4defrag,
            "cpuio" => Engine::Cpuio,
            "exec" => Engine::Exec,
            "pmemblk" => Engine::Pmemblk,
            "libpmem" => Engine::Libpmem,
            "dev-dax" => Engine::DevDax,
            _ => Engine::Psync,
        }
    }

    /// fio's engines that need what fsbench does not drive, with what each needs: a job
    /// naming one is refused at its `ioengine` line, saying so.
    pub(crate) const UNAVAILABLE: &'static [(&'static str, &'static str)] = &[(
        "mtd",
        "erases and writes a flash (MTD) device (/dev/mtdN), which fsbench does not drive",
    )];

    /// Why fio's engine `name` cannot run here (a row of [`Engine::UNAVAILABLE`]), with
    /// what this kernel lacks for it; `None` for another name.
    pub(crate) fn unavailable(name: &str) -> Option<String> {
        let (_, needs) = Engine::UNAVAILABLE.iter().find(|(n, _)| *n == name)?;
        let lacks = match name {
            "mtd" if !std::path::Path::new("/sys/class/mtd").exists() => {
                "; this kernel has no MTD support (no /sys/class/mtd)"
            }
            _ => "",
        };
        Some(format!("fio's {name} engine {needs}{lacks}"))
    }

    /// One of fio's file and directory operation engines (no data I/O).
    pub fn file_op(self) -> bool {
        matches!(
            self,
            Engine::FileCreate
                | Engine::FileStat
                | Engine::FileDelete
                | Engine::DirCreate
                | Engine::DirStat
                | Engine::DirDelete
        )
    }

    /// An engine with no files (fio's `FIO_DISKLESSIO`): `null`, `cpuio` and `exec`.
    pub fn diskless(self) -> bool {
        matches!(self, Engine::Null | Engine::Cpuio | Engine::Exec)
    }

    /// One of PMDK's engines: fio's `FIO_DISKLESSIO`, which open their files themselves
    /// (no `O_DIRECT`, no cache dropped).
    pub fn pmem(self) -> bool {
        matches!(self, Engine::Pmemblk | Engine::Libpmem | Engine::DevDax)
    }

    /// An engine that queues I/Os and reaps them apart (`iodepth` of them in flight).
    pub fn queues(self) -> bool {
        matches!(self, Engine::IoUring | Engine::Libaio | Engine::Posixaio)
    }

    pub fn name(self) -> &'static str {
        match self {
            Engine::Psync => "psync",
            Engine::Sync => "sync",
            Engine::Vsync => "vsync",
            Engine::Pvsync => "pvsync",
            Engine::Null => "null",
            Engine::FileCreate => "filecreate",
            Engine::FileStat => "filestat",
            Engine::FileDelete => "filedelete",
            Engine::DirCreate => "dircreate",
            Engine::DirStat => "dirstat",
            Engine::DirDelete => "dirdelete",
            Engine::Pvsync2 => "pvsync2",
            Engine::IoUring => "io_uring",
            Engine::Libaio => "libaio",
            Engine::Mmap => "mmap",
            Engine::Posixaio => "posixaio",
            Engine::Ftruncate => "ftruncate",
            Engine::Falloc => "falloc",
            Engine::E4defrag => "e4defrag",
            Engine::Cpuio => "cpuio",
            Engine::Exec => "exec",
            Engine::Pmemblk => "pmemblk",
            Engine::Libpmem => "libpmem",
            Engine::DevDax => "dev-dax",
        }
    }
}

/// fio's `fallocate=`: how the layout allocates a file that is only written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fallocate {
    /// `fallocate(2)` (fio's `native` and `posix` on Linux, `1`).
    #[default]
    Native,
    /// `fallocate(FALLOC_FL_KEEP_SIZE)`, then the size set by `ftruncate`.
    Keep,
    /// The size set by `ftruncate` alone (fio's `truncate`, `none`, `0`).
    None,
}

impl Fallocate {
    pub(super) fn parse(text: &str) -> Fallocate {
        match text {
            "keep" => Fallocate::Keep,
            "none" | "truncate" | "0" => Fallocate::None,
            _ => Fallocate::Native,
        }
    }
}

/// fio's `sync=`: the flag a job's files are opened with, so that each write returns once
/// it is on stable storage (`O_SYNC`) or its data is (`O_DSYNC`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncIo {
    #[default]
    None,
    Sync,
    Dsync,
}

impl SyncIo {
    /// The io workload's names, fio's own spellings (`0`, `1`) read as these.
    pub(crate) const NAMES: &'static [&'static str] = &["none", "sync", "dsync"];

    pub(super) fn parse(text: &str) -> SyncIo {
        match text {
            "sync" => SyncIo::Sync,
            "dsync" => SyncIo::Dsync,
            _ => SyncIo::None,
        }
    }

    pub(crate) fn is_none(&self) -> bool {
        *self == SyncIo::None
    }
}

/// fio's `random_distribution=`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "value")]
pub enum Distribution {
    Random,
    Zipf(f64),
    Pareto(f64),
    /// Standard deviation in percent of the file's blocks.
    Normal(f64),
    /// fio's `zoned:A/S:...`: A% of the accesses to the next S% of the file.
    Zoned(Zones),
}

/// fio's zones: per zone, its share of the accesses and of the file, in percent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Zones {
    pub zones: [(u8, u8); Zones::MAX],
    pub count: u8,
}

impl Zones {
    const MAX: usize = 16;

    /// `A/S:A/S:...`, the accesses adding up to 100, the sizes too (an empty size: the
    /// rest of the file).
    fn parse(text: &str, list: &str) -> anyhow::Result<Zones> {
        let bad = || {
            invalid(format!(
                "io: `random-distribution={text}`: zoned:A/S:A/S..., at most {} zones, accesses and sizes (in %) adding up to 100",
                Zones::MAX
            ))
        };
        let mut zones = Zones {
            zones: [(0, 0); Zones::MAX],
            count: 0,
        };
        let mut rest = None;
        for (i, part) in list.split(':').enumerate() {
            let (access, size) = part.split_once('/').ok_or_else(bad)?;
            let access: u8 = access.parse().map_err(|_| bad())?;
            let size: u8 = match size {
                "" if rest.is_none() => {
                    rest = Some(i);
                    0
                }
                s => s.parse().map_err(|_| bad())?,
            };
            *zones.zones.get_mut(i).ok_or_else(bad)? = (access, size);
            zones.count += 1;
        }
        let used = &zones.zones[..zones.count as usize];
        let accesses: u32 = used.iter().map(|z| u32::from(z.0)).sum();
        let sizes: u32 = used.iter().map(|z| u32::from(z.1)).sum();
        match rest {
            Some(i) if sizes < 100 => zones.zones[i].1 = (100 - sizes) as u8,
            None if sizes == 100 => {}
            _ => return Err(bad()),
        }
        if accesses != 100 {
            return Err(bad());
        }
        Ok(zones)
    }

    /// Each zone's share of the accesses and its blocks, `first..first+len`, of `n`.
    pub(crate) fn each(&self, n: u64) -> impl Iterator<Item = (u8, u64, u64)> + '_ {
        let mut start = 0u64;
        self.zones[..self.count as usize]
            .iter()
            .map(move |&(access, size)| {
                let len = (n * u64::from(size) / 100).max(1);
                let first = start.min(n - 1);
                start += len;
                (access, first, len.min(n - first))
            })
    }
}

impl Distribution {
    pub(super) fn parse(text: &str) -> anyhow::Result<Distribution> {
        let (kind, value) = text.split_once(':').unwrap_or((text, ""));
        let number = |what: &str, ok: fn(f64) -> bool| -> anyhow::Result<f64> {
            value
                .parse::<f64>()
                .ok()
                .filter(|v| ok(*v))
                .ok_or_else(|| invalid(format!("io: `random-distribution={text}`: {what}")))
        };
        Ok(match kind {
            "random" if value.is_empty() => Distribution::Random,
            "zipf" => Distribution::Zipf(number("zipf:θ needs θ > 0 and θ ≠ 1", |v| {
                v > 0.0 && v != 1.0 && v.is_finite()
            })?),
            "pareto" => {
                Distribution::Pareto(number("pareto:h needs 0 < h < 1", |v| v > 0.0 && v < 1.0)?)
            }
            "normal" => {
                Distribution::Normal(number("normal:σ needs 0 < σ ≤ 100 (percent)", |v| {
                    v > 0.0 && v <= 100.0
                })?)
            }
            "zoned" => Distribution::Zoned(Zones::parse(text, value)?),
            _ => {
                return Err(invalid(format!(
                    "io: `random-distribution` is random, zipf:θ, pareto:h, normal:σ or zoned:A/S:...; got `{text}`"
                )));
            }
        })
    }

    pub(super) fn text(self) -> String {
        match self {
            Distribution::Random => "random".into(),
            Distribution::Zipf(v) => format!("zipf:{v}"),
            Distribution::Pareto(v) => format!("pareto:{v}"),
            Distribution::Normal(v) => format!("normal:{v}"),
            Distribution::Zoned(z) => {
                let parts: Vec<String> = z.zones[..z.count as usize]
                    .iter()
                    .map(|(a, s)| format!("{a}/{s}"))
                    .collect();
                format!("zoned:{}", parts.join(":"))
            }
        }
    }
}

/// fio's `file_service_type`: which of a job's files the next I/O goes to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "value")]
pub enum FileService {
    /// The next file every N I/Os, in turn (fio's default, N = 1).
    RoundRobin(u32),
    /// Each file's share of the pass before the next file.
    Sequential,
    /// A file drawn uniformly every N I/Os.
    Random(u32),
    /// A file drawn by a skewed distribution (zipf, pareto or normal).
    Skewed(Distribution),
}

impl Default for FileService {
    fn default() -> FileService {
        FileService::RoundRobin(1)
    }
}

impl FileService {
    /// fio's `roundrobin[:N]`, `sequential`, `random[:N]`, `zipf[:θ]`, `pareto[:h]`,
    /// `normal:σ` (or `gauss:σ`); zipf's θ is 1.1 and pareto's h 0.2 when not given, as in fio.
    pub(super) fn parse(text: &str) -> anyhow::Result<FileService> {
        let bad = || {
            invalid(format!(
                "io: `file-service-type={text}` is roundrobin[:N], sequential, random[:N], zipf[:θ], pareto[:h] or normal:σ"
            ))
        };
        let (kind, value) = text.split_once(':').unwrap_or((text, ""));
        let count = || match value {
            "" => Ok(1),
            n => n.parse::<u32>().ok().filter(|n| *n >= 1).ok_or_else(bad),
        };
        let skewed = |default: &str| {
            let value = if value.is_empty() { default } else { value };
            let name = if kind == "gauss" { "normal" } else { kind };
            Distribution::parse(&format!("{name}:{value}")).map_err(|_| bad())
        };
        Ok(match kind {
            "roundrobin" => FileService::RoundRobin(count()?),
            // fio takes a count here too, and finishes each file all the same.
            "sequential" => count().map(|_| FileService::Sequential)?,
            "random" => FileService::Random(count()?),
            "zipf" => FileService::Skewed(skewed("1.1")?),
            "pareto" => FileService::Skewed(skewed("0.2")?),
            "normal" | "gauss" if !value.is_empty() => FileService::Skewed(skewed("")?),
            _ => return Err(bad()),
        })
    }
}

//! Compressed tar files: gzip, zstd, xz and bzip2 through their crates, lzop through the
//! `lzop` tool (no maintained crate reads its container). Recognised by their magic numbers,
//! not their names. A compressed archive is decompressed before the timed extraction, untimed,
//! into memory (a memfd), so the extraction times the filesystem, not the decompressor — as
//! the BackupPC report's `tar --lzop -x` did not.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fsbench_measure::error::FsbenchError;

/// How a tar file is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compression {
    None,
    Gzip,
    Zstd,
    Xz,
    Bzip2,
    Lzop,
}

impl Compression {
    /// The compression whose magic number `head` starts with.
    pub(super) fn detect(head: &[u8]) -> Compression {
        const MAGIC: [(&[u8], Compression); 5] = [
            (&[0x1f, 0x8b], Compression::Gzip),
            (&[0x28, 0xb5, 0x2f, 0xfd], Compression::Zstd),
            (&[0xfd, b'7', b'z', b'X', b'Z', 0], Compression::Xz),
            (b"BZh", Compression::Bzip2),
            (
                &[0x89, b'L', b'Z', b'O', 0, 0x0d, 0x0a, 0x1a, 0x0a],
                Compression::Lzop,
            ),
        ];
        (MAGIC.iter())
            .find(|(magic, _)| head.starts_with(magic))
            .map_or(Compression::None, |(_, c)| *c)
    }
}

/// The longest an `lzop -d` may take.
const LZOP_TIMEOUT: Duration = Duration::from_secs(3600);

fn failed(path: &Path, what: impl std::fmt::Display) -> FsbenchError {
    FsbenchError::Failed(format!("cannot read {}: {what}", path.display()))
}

/// The tar file at `path` as it is, plain, and its compression.
fn open(path: &Path) -> Result<(BufReader<File>, Compression), FsbenchError> {
    let file = File::open(path).map_err(|e| failed(path, e))?;
    let mut file = BufReader::with_capacity(1 << 20, file);
    let head = std::io::BufRead::fill_buf(&mut file).map_err(|e| failed(path, e))?;
    let compression = Compression::detect(head);
    Ok((file, compression))
}

/// The tar file at `path` as a stream of plain tar, decompressing as it is read (lzop
/// archives through [`unpack`] first).
pub(super) fn open_tar(path: &Path) -> Result<Box<dyn Read>, FsbenchError> {
    let (file, compression) = open(path)?;
    Ok(match compression {
        Compression::None => Box::new(file),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(file)),
        Compression::Zstd => {
            Box::new(zstd::stream::read::Decoder::with_buffer(file).map_err(|e| failed(path, e))?)
        }
        Compression::Xz => Box::new(liblzma::read::XzDecoder::new_multi_decoder(file)),
        Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(file)),
        Compression::Lzop => Box::new(unpack(path)?),
    })
}

/// Half the memory available now: the most a decompressed archive may take.
fn memory_limit() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = (meminfo.lines())
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    kib.map_or(u64::MAX, |k| k * 1024 / 2)
}

/// The tar file at `path` decompressed into memory and rewound, or `None` where it is plain
/// (read from its file as it is). Refused when it would take over half the free memory.
pub(super) fn unpack_if_compressed(path: &Path) -> Result<Option<File>, FsbenchError> {
    match open(path)?.1 {
        Compression::None => Ok(None),
        _ => unpack(path).map(Some),
    }
}

fn unpack(path: &Path) -> Result<File, FsbenchError> {
    let memfd = rustix::fs::memfd_create("fsbench-archive", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(|e| {
            failed(
                path,
                format!("no memory file for the decompressed tar: {e}"),
            )
        })?;
    let mut out = File::from(memfd);
    let limit = memory_limit();
    let too_big = || {
        failed(
            path,
            format!(
                "decompressed, it takes more than half the free memory ({} MiB); decompress it to a plain tar first",
                limit >> 20
            ),
        )
    };
    if open(path)?.1 == Compression::Lzop {
        // Past the limit lzop dies of SIGXFSZ: the size says why it failed.
        let outcome = lzop_into(path, &out, limit);
        if out.metadata().map_err(|e| failed(path, e))?.len() >= limit {
            return Err(too_big());
        }
        outcome?;
    } else {
        let copied = std::io::copy(&mut open_tar(path)?.take(limit + 1), &mut out)
            .map_err(|e| failed(path, e))?;
        if copied > limit {
            return Err(too_big());
        }
    }
    out.rewind().map_err(|e| failed(path, e))?;
    Ok(out)
}

/// Runs `lzop -dc PATH` with its output into `out` (at most `limit` bytes: its file size
/// limit), waiting at most [`LZOP_TIMEOUT`]; its messages go to a memory file, no pipe to drain.
fn lzop_into(path: &Path, out: &File, limit: u64) -> Result<(), FsbenchError> {
    let stdout = out.try_clone().map_err(|e| failed(path, e))?;
    let messages = rustix::fs::memfd_create("fsbench-lzop", rustix::fs::MemfdFlags::CLOEXEC)
        .map(File::from)
        .map_err(|e| failed(path, e))?;
    let mut command = Command::new("lzop");
    command
        .args(["-dc", "--"])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(messages.try_clone().map_err(|e| failed(path, e))?);
    // SAFETY: setrlimit is async-signal-safe and touches no memory of this process.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            let rlim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &rlim);
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| {
        let why = if e.kind() == std::io::ErrorKind::NotFound {
            "it is lzop-compressed and `lzop` is not installed (Debian: apt-get install lzop)"
                .to_string()
        } else {
            format!("cannot run lzop: {e}")
        };
        failed(path, why)
    })?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait().map_err(|e| failed(path, e))? {
            Some(status) => break status,
            None if started.elapsed() > LZOP_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(path, "lzop -d took over an hour; stopped"));
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut said = String::new();
    let mut messages = messages;
    let _ = messages.rewind();
    let _ = messages.take(4096).read_to_string(&mut said);
    Err(failed(
        path,
        format!("lzop -d failed ({status}): {}", said.trim()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers_name_their_compression() {
        assert_eq!(Compression::detect(b"\x1f\x8b\x08"), Compression::Gzip);
        assert_eq!(Compression::detect(b"\xfd7zXZ\0\0"), Compression::Xz);
        assert_eq!(Compression::detect(b"BZh91AY"), Compression::Bzip2);
        assert_eq!(
            Compression::detect(b"\x89LZO\0\r\n\x1a\n\x10"),
            Compression::Lzop
        );
        assert_eq!(Compression::detect(b"\x28\xb5\x2f\xfd"), Compression::Zstd);
        assert_eq!(Compression::detect(b"ustar"), Compression::None);
        assert_eq!(Compression::detect(b""), Compression::None);
    }
}

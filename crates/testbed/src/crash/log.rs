//! The block log a recorder writes: every write (with its data), flush, discard and
//! zero-range the filesystem sent to its device, in the order the device saw them.
//!
//! Layout: a header ([`MAGIC`], the image size), then records of a kind byte, the offset and
//! the length (little-endian u64 each) and, for a write, its data. A record's end in the
//! file is its position: what a workload reads as the log's size when a durability call
//! returns is the position of everything the device had been sent by then.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::Context;

pub(crate) const MAGIC: &[u8; 8] = b"FSBCRSH1";
pub(crate) const HEADER_LEN: u64 = 16;
pub(crate) const RECORD_HEAD: usize = 17;

/// What a record did to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Write = 1,
    Flush = 2,
    /// A discard (punch-hole): reads as zeros afterwards on a loop device's file.
    Discard = 3,
    ZeroRange = 4,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Write,
            2 => Kind::Flush,
            3 => Kind::Discard,
            4 => Kind::ZeroRange,
            _ => return None,
        })
    }
}

/// One record as indexed: its data stays in the log file until it is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub kind: Kind,
    pub offset: u64,
    pub len: u64,
    /// Where its data starts in the log (writes only).
    pub data_at: u64,
    /// Its position: the log offset just past it.
    pub end: u64,
}

/// Writes records, each in as few calls as it can.
pub(crate) struct LogWriter<W: Write> {
    out: W,
    position: u64,
}

impl<W: Write> LogWriter<W> {
    pub(crate) fn start(mut out: W, image_size: u64) -> std::io::Result<LogWriter<W>> {
        out.write_all(MAGIC)?;
        out.write_all(&image_size.to_le_bytes())?;
        Ok(LogWriter {
            out,
            position: HEADER_LEN,
        })
    }

    pub(crate) fn record(
        &mut self,
        kind: Kind,
        offset: u64,
        len: u64,
        data: &[u8],
    ) -> std::io::Result<()> {
        let mut head = [0u8; RECORD_HEAD];
        head[0] = kind as u8;
        head[1..9].copy_from_slice(&offset.to_le_bytes());
        head[9..17].copy_from_slice(&len.to_le_bytes());
        // One call for head and data where it can: with an unbuffered log, the file's size is
        // the position at every moment, which is what durability calls read.
        let mut bufs = [std::io::IoSlice::new(&head), std::io::IoSlice::new(data)];
        let mut slices = &mut bufs[..];
        std::io::IoSlice::advance_slices(&mut slices, 0);
        while !slices.is_empty() {
            let n = self.out.write_vectored(slices)?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            std::io::IoSlice::advance_slices(&mut slices, n);
        }
        self.position += RECORD_HEAD as u64 + data.len() as u64;
        Ok(())
    }
}

/// A log read back: its records indexed, its data read on demand.
pub struct Log {
    file: File,
    pub image_size: u64,
    pub records: Vec<Record>,
}

impl Log {
    /// Reads the index of the log at `path`; a record cut short at the end (the recorder was
    /// killed mid-write) is left out.
    pub fn open(path: &Path) -> anyhow::Result<Log> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let total = file.metadata()?.len();
        let mut reader = BufReader::with_capacity(1 << 16, &file);
        let mut header = [0u8; HEADER_LEN as usize];
        reader
            .read_exact(&mut header)
            .with_context(|| format!("{} is not a crash log", path.display()))?;
        anyhow::ensure!(
            &header[..8] == MAGIC,
            "{} is not a crash log (no header)",
            path.display()
        );
        let image_size = u64::from_le_bytes(header[8..16].try_into()?);
        let mut records = Vec::new();
        let mut at = HEADER_LEN;
        let mut head = [0u8; RECORD_HEAD];
        while at + RECORD_HEAD as u64 <= total {
            reader.read_exact(&mut head)?;
            let kind = Kind::from_byte(head[0]).with_context(|| {
                format!(
                    "{}: unknown record kind {} at {at}",
                    path.display(),
                    head[0]
                )
            })?;
            let offset = u64::from_le_bytes(head[1..9].try_into()?);
            let len = u64::from_le_bytes(head[9..17].try_into()?);
            let data_at = at + RECORD_HEAD as u64;
            let data_len = if kind == Kind::Write { len } else { 0 };
            let end = data_at + data_len;
            if end > total {
                break;
            }
            anyhow::ensure!(
                offset.saturating_add(len) <= image_size,
                "{}: a record at {at} reaches past the image",
                path.display()
            );
            reader.seek_relative(data_len as i64)?;
            records.push(Record {
                kind,
                offset,
                len,
                data_at,
                end,
            });
            at = end;
        }
        Ok(Log {
            file,
            image_size,
            records,
        })
    }

    /// Applies `record` to `image`: its data written, or its range zeroed.
    pub fn apply(&self, record: &Record, image: &File, buf: &mut Vec<u8>) -> anyhow::Result<()> {
        match record.kind {
            Kind::Flush => Ok(()),
            Kind::Write => {
                buf.resize(record.len as usize, 0);
                self.file.read_exact_at(buf, record.data_at)?;
                image.write_all_at(buf, record.offset)?;
                Ok(())
            }
            Kind::Discard | Kind::ZeroRange => zero_range(image, record.offset, record.len),
        }
    }

    /// Applies the sectors of write `record` that `keep` says (a torn write).
    pub fn apply_sectors(
        &self,
        record: &Record,
        image: &File,
        keep: impl Fn(u64) -> bool,
        buf: &mut Vec<u8>,
    ) -> anyhow::Result<()> {
        if record.kind != Kind::Write {
            return self.apply(record, image, buf);
        }
        buf.resize(record.len as usize, 0);
        self.file.read_exact_at(buf, record.data_at)?;
        for (i, sector) in buf.chunks(SECTOR as usize).enumerate() {
            if keep(i as u64) {
                image.write_all_at(sector, record.offset + i as u64 * SECTOR)?;
            }
        }
        Ok(())
    }
}

/// The unit a device writes atomically, for torn writes.
pub const SECTOR: u64 = 512;

/// Makes `[offset, offset+len)` of `image` read as zeros, punching a hole where it can.
fn zero_range(image: &File, offset: u64, len: u64) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: fallocate on an open file descriptor with plain integer arguments.
    let punched = unsafe {
        libc::fallocate(
            image.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset as libc::off_t,
            len as libc::off_t,
        )
    };
    if punched == 0 {
        return Ok(());
    }
    let zeros = vec![0u8; (len.min(1 << 20)) as usize];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(zeros.len() as u64) as usize;
        image.write_all_at(&zeros[..n], offset + done)?;
        done += n as u64;
    }
    Ok(())
}

/// Makes an empty (sparse, all zeros) image of `size` at `path`.
pub fn zeroed_image(path: &Path, size: u64) -> anyhow::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.set_len(size)?;
    Ok(file)
}

/// Replays the first `count` records of `log` onto a zeroed image at `out`.
pub fn replay_prefix(log: &Log, count: usize, out: &Path) -> anyhow::Result<()> {
    let image = zeroed_image(out, log.image_size)?;
    let mut buf = Vec::new();
    for record in &log.records[..count.min(log.records.len())] {
        log.apply(record, &image, &mut buf)?;
    }
    image.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_written_are_read_back_and_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut w = LogWriter::start(File::create(&path).unwrap(), 8192).unwrap();
        w.record(Kind::Write, 512, 4, b"abcd").unwrap();
        w.record(Kind::Flush, 0, 0, &[]).unwrap();
        w.record(Kind::Write, 4096, 3, b"xyz").unwrap();
        w.record(Kind::ZeroRange, 512, 2, &[]).unwrap();
        let end = w.position;
        drop(w);
        // A record cut short by a kill is left out.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&[1, 0, 0]).unwrap();
        let log = Log::open(&path).unwrap();
        assert_eq!(log.image_size, 8192);
        let kinds: Vec<Kind> = log.records.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [Kind::Write, Kind::Flush, Kind::Write, Kind::ZeroRange]
        );
        assert_eq!(log.records.last().unwrap().end, end);
        let out = dir.path().join("img");
        replay_prefix(&log, 4, &out).unwrap();
        let image = std::fs::read(&out).unwrap();
        assert_eq!(image.len(), 8192);
        assert_eq!(&image[512..516], b"\0\0cd");
        assert_eq!(&image[4096..4099], b"xyz");
        let out2 = dir.path().join("img2");
        replay_prefix(&log, 1, &out2).unwrap();
        assert_eq!(&std::fs::read(&out2).unwrap()[512..516], b"abcd");
    }

    #[test]
    fn a_file_that_is_not_a_log_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, b"hello, this is not a log").unwrap();
        assert!(Log::open(&path).is_err());
    }
}

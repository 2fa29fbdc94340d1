//! The recorder daemon's body: a FUSE filesystem of one file, `image`, backed by the run's
//! image file, that logs every write (with its data), flush, discard and zero-range in the
//! order it serves them. It runs in a process of its own (`fsbench crash-recorder`), its
//! memory locked, and touches only its image and its log, never the filesystem under test: a
//! loop device on a FUSE file deadlocks under memory reclaim otherwise.

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, KernelConfig,
    LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    ReplyWrite, Request, WriteFlags,
};

use super::log::{Kind, LogWriter};

/// The name of the one file the daemon serves.
pub const FILE_NAME: &str = "image";
const FILE_INO: INodeNo = INodeNo(2);

struct Served {
    image: File,
    /// The image opened with O_DIRECT where its filesystem allows, as a plain loop device
    /// with direct I/O writes it (the recording's cost is measured against that), with an
    /// aligned buffer to write from; writes that are not sector-aligned go through `image`.
    direct: Option<(File, Aligned)>,
    /// Unbuffered: a record is in the file before its request is answered, so the file's
    /// size is the position of everything answered (what durability calls read).
    log: LogWriter<File>,
    /// The first error met: every later request fails, so the run sees it.
    failed: Option<String>,
}

struct Recorder {
    /// One critical section for logging and writing: the log's order is the image's.
    served: Mutex<Served>,
    size: u64,
    started: SystemTime,
}

impl Recorder {
    fn attr(&self, ino: INodeNo) -> FileAttr {
        let (kind, perm, size) = if ino == INodeNo::ROOT {
            (FileType::Directory, 0o700, 0)
        } else {
            (FileType::RegularFile, 0o600, self.size)
        };
        FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: self.started,
            mtime: self.started,
            ctime: self.started,
            crtime: self.started,
            kind,
            perm,
            nlink: 1,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    /// Runs `step` on the served state under its lock; an I/O error is kept and answered
    /// as EIO from then on.
    fn with(&self, step: impl FnOnce(&mut Served) -> std::io::Result<()>) -> Result<(), Errno> {
        let mut served = self.served.lock().unwrap_or_else(|e| e.into_inner());
        if served.failed.is_some() {
            return Err(Errno::EIO);
        }
        step(&mut served).map_err(|e| {
            // The daemon's stderr is the recording's recorder.err, which the suite reports.
            eprintln!("fsbench crash-recorder: {e}; every request fails from now on");
            served.failed = Some(e.to_string());
            Errno::EIO
        })
    }

    fn in_range(&self, offset: u64, len: u64) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.size)
    }
}

const TTL: Duration = Duration::from_secs(3600);

/// The alignment O_DIRECT asks of buffers, offsets and lengths (4 KiB covers every device).
const ALIGN: usize = 4096;

/// A reusable buffer aligned for O_DIRECT: no allocation per write.
struct Aligned {
    bytes: Vec<u8>,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        Aligned {
            bytes: vec![0; len + ALIGN],
        }
    }

    /// The aligned part, `len` bytes (grown if need be).
    fn slice(&mut self, len: usize) -> &mut [u8] {
        if self.bytes.len() < len + ALIGN {
            self.bytes.resize(len + ALIGN, 0);
        }
        let start = self.bytes.as_ptr().align_offset(ALIGN);
        &mut self.bytes[start..start + len]
    }
}

impl Served {
    fn write(&mut self, data: &[u8], offset: u64) -> std::io::Result<()> {
        let aligned = offset.is_multiple_of(ALIGN as u64) && data.len().is_multiple_of(ALIGN);
        match &mut self.direct {
            Some((file, buf)) if aligned => {
                let buf = buf.slice(data.len());
                buf.copy_from_slice(data);
                file.write_all_at(buf, offset)
            }
            _ => self.image.write_all_at(data, offset),
        }
    }
}

fn answer(reply: ReplyEmpty, result: Result<(), Errno>) {
    match result {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

impl fuser::Filesystem for Recorder {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Large writes reach the log whole; the writeback cache stays off (never asked
        // for): it would merge writes and lose their order.
        let _ = config.set_max_write(1 << 20);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent == INodeNo::ROOT && name == FILE_NAME {
            reply.entry(&TTL, &self.attr(FILE_INO), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match ino {
            INodeNo::ROOT | FILE_INO => reply.attr(&TTL, &self.attr(ino)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino != FILE_INO {
            return reply.error(Errno::EISDIR);
        }
        // No page cache between the loop device and the log: every write arrives as sent.
        reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let len = u64::from(size).min(self.size.saturating_sub(offset));
        let mut buf = vec![0u8; len as usize];
        match self.with(|s| s.image.read_exact_at(&mut buf, offset)) {
            Ok(()) => reply.data(&buf),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if !self.in_range(offset, data.len() as u64) {
            return reply.error(Errno::ENOSPC);
        }
        let done = self.with(|s| {
            s.log.record(Kind::Write, offset, data.len() as u64, data)?;
            s.write(data, offset)
        });
        match done {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    /// A block flush (the loop device has no FUA: a FUA write arrives as write and flush).
    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        answer(
            reply,
            self.with(|s| {
                s.log.record(Kind::Flush, 0, 0, &[])?;
                // As a plain loop device's flush does: what the recording costs is measured
                // against the same work.
                s.image.sync_data()
            }),
        );
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if !self.in_range(offset, length) {
            return reply.error(Errno::EINVAL);
        }
        let kind = if mode & libc::FALLOC_FL_PUNCH_HOLE != 0 {
            Some(Kind::Discard)
        } else if mode & libc::FALLOC_FL_ZERO_RANGE != 0 {
            Some(Kind::ZeroRange)
        } else {
            // Plain preallocation changes no byte the filesystem reads.
            None
        };
        answer(
            reply,
            self.with(|s| {
                if let Some(kind) = kind {
                    s.log.record(kind, offset, length, &[])?;
                }
                fallocate(&s.image, mode, offset, length)
            }),
        );
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _l: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close(2), not a block flush.
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        reply.statfs(self.size / 4096, 0, 0, 2, 0, 4096, 255, 4096);
    }
}

fn fallocate(file: &File, mode: i32, offset: u64, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: fallocate on an open file descriptor with plain integer arguments.
    let r = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            mode,
            offset as libc::off_t,
            len as libc::off_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Serves `image` as `<mountpoint>/image`, logging to `log` (created), until unmounted.
pub fn serve(image: &Path, mountpoint: &Path, log: &Path) -> anyhow::Result<()> {
    // SAFETY: mlockall takes plain flags.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        return Err(std::io::Error::last_os_error()).context("mlockall");
    }
    let image_file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(image)
        .with_context(|| format!("cannot open {}", image.display()))?;
    let size = image_file.metadata()?.len();
    let direct = {
        use std::os::unix::fs::OpenOptionsExt;
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(image);
        opened.ok().map(|f| (f, Aligned::new(1 << 20)))
    };
    let log_file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(log)
        .with_context(|| format!("cannot create {}", log.display()))?;
    let writer = LogWriter::start(log_file, size)?;
    let recorder = Recorder {
        served: Mutex::new(Served {
            image: image_file,
            direct,
            log: writer,
            failed: None,
        }),
        size,
        started: SystemTime::now(),
    };
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName("fsbench-recorder".into()),
        fuser::MountOption::NoDev,
        fuser::MountOption::NoSuid,
        fuser::MountOption::NoExec,
    ];
    let session = fuser::Session::new(recorder, mountpoint, &config)
        .with_context(|| format!("cannot mount the recorder at {}", mountpoint.display()))?;
    session.run().context("the recorder's FUSE session")?;
    Ok(())
}

//! FFSB's file set: its files' names, sizes and the set made before timing.

use super::*;

/// A file number mixed into a well-spread value (splitmix64's finalizer).
fn spread(id: u32) -> u64 {
    let mut z = u64::from(id).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// NUL-terminated names built in place.
pub(crate) struct Names {
    buf: Vec<u8>,
    /// Put before every file path: the data directory's absolute path, so that a path is
    /// walked from `/` as FFSB's are (empty: paths relative to the data directory).
    root: Box<[u8]>,
}

impl Default for Names {
    fn default() -> Self {
        Names::under(b"")
    }
}

impl Names {
    /// Names whose file paths start with `root` (ending in `/`).
    pub(crate) fn under(root: &[u8]) -> Names {
        Names {
            buf: vec![0; root.len() + 64],
            root: root.into(),
        }
    }

    pub(super) fn finish(&mut self, end: usize) -> &CStr {
        self.buf[end] = 0;
        CStr::from_bytes_with_nul(&self.buf[..=end]).expect("one NUL at the end")
    }

    pub(super) fn prefixed(&mut self, prefix: &[u8], n: u64) -> &CStr {
        fsbench_measure::calls::numbered_name(&mut self.buf, prefix, n)
    }

    /// `datadirN`, a directory of the file set, named as FFSB 6 names it (its base name
    /// `data` before `dir`).
    pub(crate) fn dir(&mut self, d: u32) -> &CStr {
        self.prefixed(b"datadir", u64::from(d))
    }

    /// File `id`'s path below `data/`, as FFSB 6 names and spreads its files: `datafile<id>`
    /// at the top or `datadir<k>/datafile<id>`, one of the `dirs + 1` places chosen at random
    /// (here by a hash of the number, so the name is known again without storing it).
    pub(crate) fn file(&mut self, id: u32, dirs: u32) -> &CStr {
        let place = spread(id) % (u64::from(dirs) + 1);
        let mut at = self.root.len();
        self.buf[..at].copy_from_slice(&self.root);
        if place > 0 {
            self.buf[at..at + 7].copy_from_slice(b"datadir");
            at = push_decimal(&mut self.buf, at + 7, place - 1);
            self.buf[at] = b'/';
            at += 1;
        }
        self.buf[at..at + 8].copy_from_slice(b"datafile");
        let end = push_decimal(&mut self.buf, at + 8, u64::from(id));
        self.finish(end)
    }

    /// `t<thread>_<k>` (with `r` appended once renamed): a thread's metaop directories.
    pub(super) fn meta(&mut self, thread: u32, k: u64, renamed: bool) -> &CStr {
        self.buf[0] = b't';
        let mut at = push_decimal(&mut self.buf, 1, u64::from(thread));
        self.buf[at] = b'_';
        at = push_decimal(&mut self.buf, at + 1, k);
        if renamed {
            self.buf[at] = b'r';
            at += 1;
        }
        self.finish(at)
    }
}

/// A file size from the set's distribution: weighted sizes, or uniform in [min, max].
pub(super) fn choose_size(fs: &FileSet, (min, max): (u64, u64), draw: u64) -> u64 {
    let total: u64 = fs.size_weights.iter().map(|(_, w)| u64::from(*w)).sum();
    if total > 0 {
        let mut left = draw % total;
        for (size, w) in &fs.size_weights {
            if left < u64::from(*w) {
                return *size;
            }
            left -= u64::from(*w);
        }
    }
    min + draw % (max - min + 1)
}

/// xorshift64*: fast, allocation-free, a stream per thread.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Writes `size` bytes from the start in `block`-byte writes.
/// Writes `size` bytes in `block`-byte calls; the number of calls, FFSB's transactions of a
/// write (a last partial block counts, as in FFSB's writefile_helper).
pub(super) fn fill(file: &OwnedFd, buf: &mut Aligned, size: u64, block: u64) -> Result<u64, Errno> {
    let (mut done, mut calls) = (0, 0);
    while done < size {
        let n = block.min(size - done) as usize;
        write_all(file, &buf.buf()[..n])?;
        done += n as u64;
        calls += 1;
    }
    Ok(calls)
}

/// Makes the file set before the timed part, single-threaded, each file one unit.
pub(crate) fn make_file_set(
    data: &OwnedFd,
    params: &FfsbParams,
    sizes: (u64, u64),
    block: u64,
    table: &mut FileTable,
    rec: &mut PhaseRecorder,
) -> Result<(), FsbenchError> {
    let fs = &params.fileset;
    let mut names = Names::default();
    let mut rng = Rng::new(0x5eed);
    let mut buf = Aligned::new(block as usize);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
    for _ in 0..fs.num_files {
        let id = table.next_id();
        let size = choose_size(fs, sizes, rng.next());
        let path = names.file(id, fs.num_dirs);
        let opened = rustix::fs::openat(data, path, flags, Mode::from(0o644));
        let Some(file) = rec.record(OpKind::Create, opened)? else {
            return Err(FsbenchError::Failed(format!(
                "ffsb: cannot create file {id} of the set"
            )));
        };
        rec.record(
            OpKind::Write,
            fill(&file, &mut buf, size, block).map(|_| ()),
        )?
        .ok_or_else(|| FsbenchError::Failed(format!("ffsb: cannot write file {id}")))?;
        drop(file);
        rec.record(OpKind::Close, Ok(()))?;
        table.add(size);
        rec.unit_done(size)?;
    }
    Ok(())
}

/// Average and largest fragment count of the set's files; `None` when there are none.
pub(crate) fn count_extents(
    data: &OwnedFd,
    table: &FileTable,
    dirs: u32,
    mapper: &mut Mapper,
) -> Result<Option<(f64, u64)>, Errno> {
    let mut names = Names::default();
    let (mut sum, mut max) = (0u64, 0u64);
    for &id in &table.live {
        let file = rustix::fs::openat(
            data,
            names.file(id, dirs),
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let n = mapper.count(&file)?.fragments;
        sum += n;
        max = max.max(n);
    }
    Ok((!table.live.is_empty()).then(|| (sum as f64 / table.live.len() as f64, max)))
}

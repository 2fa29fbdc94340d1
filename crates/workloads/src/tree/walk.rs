//! Walking fdtree's tree: every phase visits it in fdtree.bash's order, one system call
//! relative to its parent's descriptor per step, with names built in place.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering;

use rustix::fs::{AtFlags, Mode, OFlags};

use super::{BLOCK, Share, Tree};
use fsbench_measure::calls::push_decimal;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::{OpKind, PhaseRecorder};

/// A `L<level><kind><n>` name built in place, so the hot loops allocate nothing; a shared
/// tree's files end in their owner's `.r<rank>` and `.t<thread>`.
pub(super) struct Name {
    // "L100F4294967295.r4294967295.t4294967295" and its NUL fit.
    buf: [u8; 48],
}

impl Name {
    pub(super) fn new() -> Name {
        Name { buf: [0; 48] }
    }

    pub(super) fn of(&mut self, level: u32, kind: u8, n: u32) -> &CStr {
        self.owned(level, kind, n, None)
    }

    /// The name with `share`'s owner in it, if the tree is shared.
    pub(super) fn owned(&mut self, level: u32, kind: u8, n: u32, share: Option<Share>) -> &CStr {
        let mut i = 0;
        self.buf[i] = b'L';
        i += 1;
        i = push_decimal(&mut self.buf, i, level as u64);
        self.buf[i] = kind;
        i += 1;
        i = push_decimal(&mut self.buf, i, n as u64);
        let owner = share.map_or([None, None], |s| [s.rank, s.thread]);
        for (tag, id) in [b'r', b't'].into_iter().zip(owner) {
            if let Some(id) = id {
                self.buf[i..i + 2].copy_from_slice(&[b'.', tag]);
                i = push_decimal(&mut self.buf, i + 2, id as u64);
            }
        }
        self.buf[i] = 0;
        CStr::from_bytes_with_nul(&self.buf[..=i]).expect("digits and letters only")
    }
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);
const READ_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::CLOEXEC);
const CREATE_FLAGS: OFlags = OFlags::WRONLY
    .union(OFlags::CREATE)
    .union(OFlags::TRUNC)
    .union(OFlags::CLOEXEC);

/// What a phase does in one directory (at a level), recursing as it needs.
type Visit<'a> =
    dyn FnMut(&mut Tree, BorrowedFd<'_>, u32, &mut PhaseRecorder) -> Result<(), FsbenchError> + 'a;

/// What a file phase does to each file.
#[derive(Debug, Clone, Copy)]
pub(super) enum FileStep {
    Create,
    /// mdtest -T: a stat by name relative to the file's directory.
    Stat,
    Read,
    Remove,
}

impl Tree {
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
        visit: &mut Visit<'_>,
    ) -> Result<(), FsbenchError> {
        let mut name = Name::new();
        for nd in (1..=self.params.dirs).rev() {
            // A file phase stopped by the stonewall opens no more directories.
            if self.visited >= self.limit {
                break;
            }
            if let Some(child) = Self::open_dir(rec, dir, name.of(level, b'D', nd))? {
                visit(self, child.as_fd(), level - 1, rec)?;
                drop(child);
                rec.record(OpKind::Close, Ok(()))?;
            }
        }
        Ok(())
    }

    pub(super) fn create_dirs(
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
        // Children at level 1 are leaves: opening them to create nothing would only cost
        // calls (fdtree.bash cds into them; mdtest does not).
        if level > 1 {
            self.for_each_subdir(dir, level, rec, &mut Tree::create_dirs)?;
        }
        Ok(())
    }

    /// A file phase: `step` on each file of `dir` (`L<level>F<n>`, n counting down), then
    /// the same in each subdirectory, as fdtree visits files; it stops after `limit` files.
    pub(super) fn walk_files(
        &mut self,
        dir: BorrowedFd<'_>,
        level: u32,
        rec: &mut PhaseRecorder,
        step: FileStep,
    ) -> Result<(), FsbenchError> {
        let mut name = Name::new();
        for nf in (1..=self.params.files).rev() {
            if self.visited >= self.limit {
                return Ok(());
            }
            self.visited += 1;
            let file = name.owned(level, b'F', nf, self.share);
            match step {
                FileStep::Create => self.create_file(dir, file, rec)?,
                FileStep::Read => self.read_file(dir, file, rec)?,
                FileStep::Stat => {
                    let stat = rustix::fs::statat(dir, file, AtFlags::empty());
                    if rec.record(OpKind::Stat, stat)?.is_some() {
                        rec.unit_done(0)?;
                    }
                }
                FileStep::Remove => {
                    let removed = rustix::fs::unlinkat(dir, file, AtFlags::empty());
                    if rec.record(OpKind::Unlink, removed)?.is_some() {
                        rec.unit_done(0)?;
                    }
                }
            }
            // One relaxed load per file; the stonewall's timer sets it.
            if self
                .deadline
                .as_ref()
                .is_some_and(|d| d.passed.load(Ordering::Relaxed))
            {
                self.reach_stonewall(rec)?;
            }
        }
        if let (FileStep::Create, true) = (step, self.params.fsync) {
            self.sync(dir, rec, true)?;
        }
        if level > 0 {
            self.for_each_subdir(dir, level, rec, &mut |tree, child, level, rec| {
                tree.walk_files(child, level, rec, step)
            })?;
        }
        Ok(())
    }

    /// `fsync`: makes `fd` durable, and a crash-recorded run notes what that covered.
    fn sync(
        &self,
        fd: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
        is_dir: bool,
    ) -> Result<(), FsbenchError> {
        if rec.record(OpKind::Fsync, rustix::fs::fsync(fd))?.is_some()
            && let Some(oracle) = &self.oracle
        {
            match is_dir {
                // The tree changes nothing it made until its remove phases, which void.
                true => oracle.dir_synced(fd, true),
                false => oracle.file_synced(fd, true),
            }
        }
        Ok(())
    }

    /// Creates a file and writes its `size` blocks, as fdtree's dd does.
    fn create_file(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &CStr,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        let created = rustix::fs::openat(dir, name, CREATE_FLAGS, Mode::from(0o644));
        let Some(file) = rec.record(OpKind::Create, created)? else {
            return Ok(());
        };
        let mut written = 0u64;
        let mut left = self.params.file_bytes();
        while left > 0 {
            let len = left.min(BLOCK as u64) as usize;
            written += self.write_block(&file, len, rec)?;
            left -= len as u64;
        }
        if self.params.fsync {
            self.sync(file.as_fd(), rec, false)?;
        }
        drop(file);
        rec.record(OpKind::Close, Ok(()))?;
        rec.unit_done(written)
    }

    /// Writes one block (4 KiB as dd does, or the rest of a byte size), finishing short
    /// writes; returns bytes written.
    fn write_block(
        &self,
        file: &OwnedFd,
        len: usize,
        rec: &mut PhaseRecorder,
    ) -> Result<u64, FsbenchError> {
        let mut done = 0;
        while done < len {
            let result = rustix::io::write(file, &self.block[done..len]);
            match rec.record(OpKind::Write, result)? {
                Some(0) | None => break,
                Some(n) => done += n,
            }
        }
        Ok(done as u64)
    }

    /// mdtest -E: open, read the file's `size` blocks in 4 KiB calls, close.
    fn read_file(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &CStr,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        let opened = rustix::fs::openat(dir, name, READ_FLAGS, Mode::empty());
        let Some(file) = rec.record(OpKind::OpenFile, opened)? else {
            return Ok(());
        };
        // The size written, in 4 KiB calls, as mdtest reads its `-e` bytes: no call to find
        // the end (and none for empty files, which mdtest only opens and closes).
        let mut read = 0u64;
        let want = self.params.file_bytes();
        while read < want {
            match rec.record(OpKind::Read, rustix::io::read(&file, &mut self.block))? {
                Some(0) | None => break,
                Some(n) => read += n as u64,
            }
        }
        drop(file);
        rec.record(OpKind::Close, Ok(()))?;
        rec.unit_done(read)
    }

    pub(super) fn remove_dirs(
        &mut self,
        dir: BorrowedFd<'_>,
        level: u32,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        if level > 1 {
            self.for_each_subdir(dir, level, rec, &mut Tree::remove_dirs)?;
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
    pub(super) fn open_base(
        &self,
        parent: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<OwnedFd, FsbenchError> {
        Self::open_dir(rec, parent, &self.base)?.ok_or_else(|| {
            FsbenchError::Failed(format!("tree root `{}` cannot be opened", self.base_name()))
        })
    }
}

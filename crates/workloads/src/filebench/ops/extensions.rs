//! The flowops on directories (filebench's makedir, removedir and listdir), and fsbench's
//! own for the personalities of today: renamefile and setattr (syncfs is one call, in
//! `ops`).

use std::sync::atomic::Ordering::Relaxed;

use rustix::fs::{AtFlags, Mode, OFlags};

use super::super::files::Want;
use super::super::model::Op;
use super::super::worker::{Flow, Step, Worker};

/// The buffer listdir reads entries into: glibc's readdir asks for 32 KiB at a time.
const DIRENT_BUF: usize = 32 << 10;
/// What filebench counts a directory entry as: its name and a `struct dirent` less one byte.
const DIRENT_BYTES: u64 = 279;

impl Worker<'_> {
    /// makedir (a leaf directory that does not exist, made) and removedir (one that does,
    /// removed), picked as files are, on the set's leaf-directory rotors.
    pub(in crate::filebench) fn leafdir(&mut self, fi: usize) -> Flow {
        let make = self.flowops[fi].op == Op::Makedir;
        let set = self.set_of(fi)?;
        let want = if make { Want::Free } else { Want::Existing };
        let Some(dir) = self.obtain_in(fi, set, want, usize::from(!make), true)? else {
            return Ok(Step::Stopping);
        };
        let sh = self.sh;
        let t0 = self.now();
        let path = sh.layouts[set].leafdir_path(dir, &mut self.path);
        let done = if make {
            rustix::fs::mkdirat(sh.dir, path, Mode::from(0o755))
        } else {
            rustix::fs::unlinkat(sh.dir, path, AtFlags::REMOVEDIR)
        };
        self.done(fi, t0, 0);
        let dirs = &sh.sets[set].leafdirs;
        dirs.unbusy(&dirs.lock.lock(), dir, done.is_ok().then_some(make), 0);
        done.map_err(|e| {
            format!(
                "{}: {}: {e}",
                self.flowops[fi].name,
                if make { "mkdir" } else { "rmdir" }
            )
        })?;
        Ok(Step::Next)
    }

    /// listdir: the next of the set's directories, opened, read to its end, closed; its
    /// bytes counted as filebench counts them.
    pub(in crate::filebench) fn listdir(&mut self, fi: usize) -> Flow {
        let set = self.set_of(fi)?;
        let sh = self.sh;
        let layout = &sh.layouts[set];
        let dir = (sh.sets[set].dir_rotor.fetch_add(1, Relaxed) % layout.dir_count() as u64) as u32;
        if self.dirents.len() < DIRENT_BUF {
            self.dirents
                .resize(DIRENT_BUF, std::mem::MaybeUninit::uninit());
        }
        let t0 = self.now();
        let path = layout.dir_path(dir, &mut self.path);
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let listed = rustix::fs::openat(sh.dir, path, flags, Mode::empty()).and_then(|fd| {
            // As glibc's opendir: the directory's stat, then its entries.
            rustix::fs::fstat(&fd)?;
            let mut bytes = 0;
            let mut entries = rustix::fs::RawDir::new(&fd, &mut self.dirents);
            while let Some(entry) = entries.next() {
                bytes += entry?.file_name().to_bytes().len() as u64 + DIRENT_BYTES;
            }
            Ok(bytes)
        });
        self.done(fi, t0, *listed.as_ref().unwrap_or(&0));
        listed.map_err(|e| format!("{}: listdir: {e}", self.flowops[fi].name))?;
        Ok(Step::Next)
    }

    /// The file flowop `fi` acts on: its slot's (held while another thread picks it), or
    /// one of its set picked as deletes are; `None` when the run stops first.
    pub(in crate::filebench) fn slot_or_pick(
        &mut self,
        fi: usize,
    ) -> Result<Option<(usize, usize, u64)>, String> {
        let slot = self.slot_of(fi);
        if let (1.., Some((set, file))) = (slot, self.slots[slot].file) {
            self.hold(set, file);
            return Ok(Some((slot, set, file)));
        }
        let set = self.set_of(fi)?;
        Ok(self
            .obtain(fi, set, Want::Existing, 1)?
            .map(|file| (slot, set, file)))
    }

    /// renamefile: the file moves into a free slot of the set `target` names (a Maildir
    /// delivery's tmp to new, an object store's upload to its place).
    pub(in crate::filebench) fn rename(&mut self, fi: usize) -> Flow {
        let target = self.target(fi)?.to_string();
        let sh = self.sh;
        let to = (sh.model.filesets.iter())
            .position(|s| s.name == target)
            .ok_or_else(|| {
                format!(
                    "{}: no fileset {target} to rename into",
                    self.flowops[fi].name
                )
            })?;
        let Some((slot, from, file)) = self.slot_or_pick(fi)? else {
            return Ok(Step::Stopping);
        };
        let Some(free) = self.obtain(fi, to, Want::Free, 0)? else {
            let state = &sh.sets[from];
            state.unbusy(&state.lock.lock(), file, None, 0);
            return Ok(Step::Stopping);
        };
        let t0 = self.now();
        let old = sh.layouts[from].file_path(file, &mut self.path);
        let new = sh.layouts[to].file_path(free, &mut self.path2);
        let moved = rustix::fs::renameat(sh.dir, old, sh.dir, new);
        self.done(fi, t0, 0);
        let (src, dst) = (&sh.sets[from], &sh.sets[to]);
        let opens = i32::from(src.opens(file));
        let ok = moved.is_ok();
        src.unbusy(
            &src.lock.lock(),
            file,
            ok.then_some(false),
            if ok { -opens } else { 0 },
        );
        dst.unbusy(
            &dst.lock.lock(),
            free,
            ok.then_some(true),
            if ok { opens } else { 0 },
        );
        moved.map_err(|e| self.failed(fi, "rename", from, file, e))?;
        if self.slots[slot].file == Some((from, file)) {
            self.slots[slot].file = Some((to, free));
        }
        Ok(Step::Next)
    }

    /// setattr: chmod, chown (to its owner) and utimens, as an archive's extraction sets each
    /// member's mode, owner and times: on the slot's descriptor if open, else by path.
    pub(in crate::filebench) fn setattr(&mut self, fi: usize) -> Flow {
        use rustix::fs::{Timestamps, UTIME_NOW};
        let now = rustix::fs::Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_NOW,
        };
        let times = Timestamps {
            last_access: now,
            last_modification: now,
        };
        let (uid, gid) = (rustix::process::getuid(), rustix::process::getgid());
        let mode = Mode::from(0o644);
        let slot = self.slot_of(fi);
        if let Some(fd) = &self.slots[slot].fd {
            let t0 = self.now();
            let set = rustix::fs::fchmod(fd, mode)
                .and_then(|()| rustix::fs::fchown(fd, Some(uid), Some(gid)))
                .and_then(|()| rustix::fs::futimens(fd, &times));
            self.done(fi, t0, 0);
            return set
                .map(|()| Step::Next)
                .map_err(|e| format!("{}: setattr: {e}", self.flowops[fi].name));
        }
        let Some((_, set, file)) = self.slot_or_pick(fi)? else {
            return Ok(Step::Stopping);
        };
        let t0 = self.now();
        let path = self.sh.layouts[set].file_path(file, &mut self.path);
        let dir = self.sh.dir;
        let done = rustix::fs::chmodat(dir, path, mode, AtFlags::empty())
            .and_then(|()| rustix::fs::chownat(dir, path, Some(uid), Some(gid), AtFlags::empty()))
            .and_then(|()| rustix::fs::utimensat(dir, path, &times, AtFlags::empty()));
        self.done(fi, t0, 0);
        let state = &self.sh.sets[set];
        state.unbusy(&state.lock.lock(), file, None, 0);
        done.map_err(|e| self.failed(fi, "setattr", set, file, e))?;
        Ok(Step::Next)
    }
}

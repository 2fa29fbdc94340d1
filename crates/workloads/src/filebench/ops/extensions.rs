//! fsbench's own flowops, for the personalities of today: renamefile and setattr (syncfs
//! is one call, in `ops`).

use rustix::fs::{AtFlags, Mode};

use super::super::files::Want;
use super::super::worker::{Flow, Step, Worker};

impl Worker<'_> {
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

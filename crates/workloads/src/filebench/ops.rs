//! Each flowop, call for call as filebench makes it (read in flowop_library.c and
//! fb_localfs.c), so that a run costs what filebench's does; what differs is said where it
//! is: a flowop that finds no file waits for one, a delete skipped is counted, a whole-file
//! write writes the file's size (filebench rounds it up to a multiple of `iosize`).

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, Mode, OFlags, SeekFrom};

use super::control::POLL;
use super::files::Want;
use super::model::Op;
use super::worker::{Flow, Step, Worker};

mod extensions;

impl Worker<'_> {
    /// One run of flowop `fi`: a dispatch on its type, one piece, the short flowops written
    /// in place (a function each would only move their few lines).
    pub(super) fn flowop(&mut self, fi: usize) -> Flow {
        match self.flowops[fi].op {
            Op::Read | Op::Write => self.read_write(fi),
            Op::Aiowrite => self.aiowrite(fi),
            Op::Aiowait => {
                let t0 = self.now();
                let control = &self.sh.control;
                let reaped = self
                    .aio
                    .reap(super::aio::MOST_OUTSTANDING, || control.stopping());
                self.done(fi, t0, 0);
                reaped.map(|()| Step::Next)
            }
            Op::Openfile => {
                let slot = self.slot_of(fi);
                self.open_slot(fi, slot)
            }
            Op::Createfile => self.create(fi),
            Op::Closefile => self.close(fi),
            Op::Deletefile => self.delete(fi),
            Op::Statfile => self.stat(fi),
            Op::Fsync => {
                let slot = self.slot_of(fi);
                let t0 = self.now();
                let fd = self.open_fd(fi, slot)?;
                let synced = rustix::fs::fsync(fd);
                self.done(fi, t0, 0);
                synced.map_err(|e| format!("{}: fsync: {e}", self.flowops[fi].name))?;
                Ok(Step::Next)
            }
            Op::Fsyncset => self.fsync_set(fi),
            Op::Readwholefile => self.read_whole(fi),
            Op::Writewholefile => self.write_whole(fi),
            Op::Appendfile | Op::Appendfilerand => self.append(fi),
            Op::Hog => {
                let loops = self.value(fi);
                let t0 = self.now();
                hog(self.buf.buf().as_mut_ptr(), loops);
                self.done(fi, t0, 0);
                Ok(Step::Next)
            }
            Op::Delay => {
                let t0 = self.now();
                let end = Instant::now() + Duration::from_secs(self.value(fi));
                while Instant::now() < end && !self.sh.control.stopping() {
                    std::thread::sleep(POLL.min(end.saturating_duration_since(Instant::now())));
                }
                self.done(fi, t0, 0);
                Ok(Step::Next)
            }
            Op::Block => {
                let point = self.sh.plan.wake_point(self.me, fi);
                let t0 = self.now();
                self.sh.wakes[point].wait(&self.sh.control);
                self.done(fi, t0, 0);
                Ok(Step::Next)
            }
            Op::Wakeup => {
                for point in self.sh.plan.wake_points_named(self.target(fi)?) {
                    let t0 = self.now();
                    self.sh.wakes[*point].wake();
                    self.done(fi, t0, 0);
                }
                Ok(Step::Next)
            }
            Op::Semblock => {
                let sem = self.sh.plan.semaphore(self.me, fi);
                let n = self.value(fi) as i64;
                let t0 = self.now();
                let got = self.sh.sems[sem].block(n, &self.sh.control);
                self.done(fi, t0, 0);
                Ok(if got { Step::Next } else { Step::Stopping })
            }
            Op::Sempost => self.sempost(fi),
            Op::Eventlimit => {
                if self.sh.model.eventrate == 0 {
                    return Ok(Step::Next);
                }
                let t0 = self.now();
                let got = self.sh.control.take_events(1);
                self.done(fi, t0, 0);
                Ok(if got { Step::Next } else { Step::Stopping })
            }
            Op::Opslimit | Op::Iopslimit | Op::Bwlimit => self.limit(fi),
            Op::Makedir | Op::Removedir => self.leafdir(fi),
            Op::Listdir => self.listdir(fi),
            Op::Composite => unreachable!("run_list runs a composite's body"),
            Op::Renamefile => self.rename(fi),
            Op::Setattr => self.setattr(fi),
            Op::Syncfs => {
                let t0 = self.now();
                let synced = rustix::fs::syncfs(self.sh.dir);
                self.done(fi, t0, 0);
                synced.map_err(|e| format!("{}: syncfs: {e}", self.flowops[fi].name))?;
                Ok(Step::Next)
            }
            Op::Finishoncount | Op::Finishonbytes => {
                let value = self.value(fi);
                let reached = match (self.flowops[fi].op, self.targets[fi]) {
                    (Op::Finishoncount, Some(t)) => self.stats[t].count >= value,
                    (Op::Finishoncount, None) => self.sh.control.io_count.load(Relaxed) >= value,
                    (_, Some(t)) => self.stats[t].bytes > value,
                    (_, None) => self.sh.control.io_bytes.load(Relaxed) > value,
                };
                let t0 = self.now();
                self.done(fi, t0, 0);
                Ok(if reached { Step::Done } else { Step::Next })
            }
        }
    }

    fn value(&mut self, fi: usize) -> u64 {
        let v = self.flowops[fi].value;
        v.map_or(0, |n| n.draw(&mut self.rng))
    }

    fn target(&self, fi: usize) -> Result<&str, String> {
        let f = &self.flowops[fi];
        f.target
            .as_deref()
            .ok_or_else(|| format!("{}: {} needs a target", f.name, f.op.name()))
    }

    /// The drawn `iosize` of flowop `fi`; `zero_ok` where 0 means the whole file.
    fn iosize(&mut self, fi: usize, zero_ok: bool) -> Result<u64, String> {
        let n = self.flowops[fi].iosize.map_or(0, |n| n.draw(&mut self.rng));
        if n == 0 && !zero_ok {
            return Err(format!("{}: zero iosize", self.flowops[fi].name));
        }
        Ok(n)
    }

    /// The descriptor open on `slot`, or an error naming flowop `fi`.
    fn open_fd(&self, fi: usize, slot: usize) -> Result<std::os::fd::BorrowedFd<'_>, String> {
        use std::os::fd::AsFd;
        self.slots[slot]
            .fd
            .as_ref()
            .map(|fd| fd.as_fd())
            .ok_or_else(|| {
                let f = &self.flowops[fi];
                format!(
                    "{}: {} on slot {slot}, which is not open",
                    f.name,
                    f.op.name()
                )
            })
    }

    /// A random offset below `wss - iosize`, a multiple of `iosize`.
    fn offset(&mut self, wss: u64, iosize: u64) -> u64 {
        let span = wss - iosize;
        ((self.rng.unit() * span as f64) as u64 / iosize) * iosize
    }

    fn read_write(&mut self, fi: usize) -> Flow {
        let iosize = self.iosize(fi, false)?;
        let Some((slot, wss)) = self.setup(fi)? else {
            return Ok(Step::Stopping);
        };
        let f = &self.flowops[fi];
        let (random, write, name) = (f.random, f.op == Op::Write, f.name.clone());
        let offset = if random {
            if iosize > wss {
                return Err(format!(
                    "{name}: file size {wss} smaller than iosize {iosize}"
                ));
            }
            Some(self.offset(wss, iosize))
        } else {
            None
        };
        self.buffer(iosize as usize);
        let fd = self.slots[slot].fd.take().expect("set up");
        let t0 = self.now();
        let buf = &mut self.buf.buf()[..iosize as usize];
        let moved = match (write, offset) {
            (false, Some(off)) => rustix::io::pread(&fd, buf, off),
            (false, None) => rustix::io::read(&fd, buf),
            (true, Some(off)) => rustix::io::pwrite(&fd, buf, off).map(|_| iosize as usize),
            (true, None) => rustix::io::write(&fd, buf).map(|_| iosize as usize),
        };
        let n = moved.as_ref().map_or(0, |n| *n as u64);
        self.done(fi, t0, n);
        if !write && n == 0 && moved.is_ok() {
            let _ = rustix::fs::seek(&fd, SeekFrom::Start(0));
        }
        self.slots[slot].fd = Some(fd);
        moved.map_err(|e| format!("{name}: {}: {e}", if write { "write" } else { "read" }))?;
        Ok(Step::Next)
    }

    fn aiowrite(&mut self, fi: usize) -> Flow {
        let iosize = self.iosize(fi, false)?;
        let Some((slot, wss)) = self.setup(fi)? else {
            return Ok(Step::Stopping);
        };
        let name = self.flowops[fi].name.clone();
        if !self.flowops[fi].random {
            return Err(format!("{name}: aiowrite needs `random`, as in filebench"));
        }
        if iosize > wss {
            return Err(format!(
                "{name}: file size {wss} smaller than iosize {iosize}"
            ));
        }
        let offset = self.offset(wss, iosize);
        let fd = self.open_fd(fi, slot)?.as_raw_fd();
        let t0 = self.now();
        let started = self.aio.write(fd, iosize as usize, offset);
        self.done(fi, t0, iosize);
        started.map_err(|e| format!("{name}: aio_write: {e}"))?;
        Ok(Step::Next)
    }

    fn create(&mut self, fi: usize) -> Flow {
        let slot = self.slot_of(fi);
        let set = self.set_of(fi)?;
        if self.slots[slot].fd.is_some() {
            return Err(format!(
                "{}: creates on slot {slot}, which is open",
                self.flowops[fi].name
            ));
        }
        let Some(file) = self.obtain(fi, set, Want::Free, 0)? else {
            return Ok(Step::Stopping);
        };
        self.slots[slot].file = Some((set, file));
        let flags = self.flags(fi, set) | OFlags::CREATE;
        let layout = &self.sh.layouts[set];
        let t0 = self.now();
        // filebench looks for the parent before each create, and makes it if it is gone.
        let parent = layout.parent_path(file, &mut self.path);
        if rustix::fs::statat(self.sh.dir, parent, AtFlags::empty()).is_err() {
            let parent = parent.to_bytes().to_vec();
            make_parents(self.sh.dir, &parent);
        }
        let path = layout.file_path(file, &mut self.path);
        let created = rustix::fs::openat(self.sh.dir, path, flags, Mode::from(0o666));
        self.done(fi, t0, 0);
        let state = &self.sh.sets[set];
        let ok = created.is_ok();
        state.unbusy(&state.lock.lock(), file, ok.then_some(true), i32::from(ok));
        self.slots[slot].fd = Some(created.map_err(|e| self.failed(fi, "create", set, file, e))?);
        Ok(Step::Next)
    }

    /// Waits while another thread is picking file `file` of `set`, then holds it.
    fn hold(&self, set: usize, file: u64) {
        let state = &self.sh.sets[set];
        let mut g = state.lock.lock();
        while state.is_busy(file) && !self.sh.control.stopping() {
            g.wait(POLL);
        }
        state.make_busy(&g, file);
    }

    fn close(&mut self, fi: usize) -> Flow {
        let slot = self.slot_of(fi);
        self.open_fd(fi, slot)?;
        let (set, file) = self.slots[slot].file.expect("an open slot has its file");
        self.hold(set, file);
        let t0 = self.now();
        drop(self.slots[slot].fd.take());
        self.done(fi, t0, 0);
        let state = &self.sh.sets[set];
        state.unbusy(&state.lock.lock(), file, None, -1);
        Ok(Step::Next)
    }

    fn delete(&mut self, fi: usize) -> Flow {
        let Some((slot, set, file)) = self.slot_or_pick(fi)? else {
            return Ok(Step::Stopping);
        };
        if slot > 0 && self.slots[slot].file == Some((set, file)) {
            // A delete of the slot's file forgets it, as filebench's.
            self.slots[slot].file = None;
        }
        let state = &self.sh.sets[set];
        // Not while another thread has it open (a slot of this thread may).
        let mine = u16::from(slot > 0 && self.slots[slot].fd.is_some());
        if state.opens(file) > mine {
            state.unbusy(&state.lock.lock(), file, None, 0);
            self.stats[fi].skipped += 1;
            return Ok(Step::Next);
        }
        let t0 = self.now();
        let path = self.sh.layouts[set].file_path(file, &mut self.path);
        let removed = rustix::fs::unlinkat(self.sh.dir, path, AtFlags::empty());
        self.done(fi, t0, 0);
        let opens = i32::from(state.opens(file));
        state.unbusy(&state.lock.lock(), file, Some(false), -opens);
        removed.map_err(|e| self.failed(fi, "unlink", set, file, e))?;
        Ok(Step::Next)
    }

    fn stat(&mut self, fi: usize) -> Flow {
        let slot = self.slot_of(fi);
        if slot > 0 && self.slots[slot].fd.is_some() {
            let t0 = self.now();
            let fd = self.open_fd(fi, slot)?;
            let _ = rustix::fs::fstat(fd);
            self.done(fi, t0, 0);
            return Ok(Step::Next);
        }
        let set = self.set_of(fi)?;
        let Some(file) = self.obtain(fi, set, Want::Existing, 1)? else {
            return Ok(Step::Stopping);
        };
        let t0 = self.now();
        let path = self.sh.layouts[set].file_path(file, &mut self.path);
        // filebench logs a failed stat and goes on.
        let _ = rustix::fs::statat(self.sh.dir, path, AtFlags::empty());
        self.done(fi, t0, 0);
        let state = &self.sh.sets[set];
        state.unbusy(&state.lock.lock(), file, None, 0);
        Ok(Step::Next)
    }

    fn fsync_set(&mut self, fi: usize) -> Flow {
        let set = self.set_of(fi)?;
        for slot in 0..self.slots.len() {
            if self.slots[slot].file.is_none_or(|(s, _)| s != set) || self.slots[slot].fd.is_none()
            {
                continue;
            }
            let t0 = self.now();
            let _ = rustix::fs::fsync(self.slots[slot].fd.as_ref().expect("open"));
            self.done(fi, t0, 0);
        }
        Ok(Step::Next)
    }

    fn read_whole(&mut self, fi: usize) -> Flow {
        let Some((slot, wss)) = self.setup(fi)? else {
            return Ok(Step::Stopping);
        };
        let iosize = match self.iosize(fi, true)? {
            0 => wss.max(1),
            n => n,
        } as usize;
        self.buffer(iosize);
        let fd = self.slots[slot].fd.take().expect("set up");
        let t0 = self.now();
        let buf = &mut self.buf.buf()[..iosize];
        let _ = rustix::fs::seek(&fd, SeekFrom::Start(0));
        let mut bytes = 0u64;
        let outcome = loop {
            match rustix::io::read(&fd, &mut *buf) {
                Ok(0) => break Ok(()),
                Ok(n) => bytes += n as u64,
                Err(e) => break Err(e),
            }
        };
        self.done(fi, t0, bytes);
        self.slots[slot].fd = Some(fd);
        outcome.map_err(|e| format!("{}: read: {e}", self.flowops[fi].name))?;
        Ok(Step::Next)
    }

    fn write_whole(&mut self, fi: usize) -> Flow {
        let Some((slot, mut wss)) = self.setup(fi)? else {
            return Ok(Step::Stopping);
        };
        let srcfd = self.flowops[fi].srcfd as usize;
        match self.slots[srcfd].file {
            Some((set, file)) => wss = self.sh.layouts[set].size(file),
            None if srcfd != 0 => {
                return Err(format!(
                    "{}: srcfd {srcfd} holds no file",
                    self.flowops[fi].name
                ));
            }
            None => {}
        }
        let iosize = match self.iosize(fi, true)? {
            0 => wss.max(1),
            n => n,
        };
        self.buffer(iosize.min(wss).max(1) as usize);
        let fd = self.slots[slot].fd.take().expect("set up");
        let t0 = self.now();
        let mut written = 0u64;
        let mut outcome = Ok(());
        while written < wss {
            let n = iosize.min(wss - written) as usize;
            match rustix::io::write(&fd, &self.buf.buf()[..n]) {
                Ok(w) if w == n => written += n as u64,
                Ok(_) => {
                    outcome = Err(rustix::io::Errno::NOSPC);
                    break;
                }
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        self.done(fi, t0, written);
        self.slots[slot].fd = Some(fd);
        outcome.map_err(|e| format!("{}: write: {e}", self.flowops[fi].name))?;
        Ok(Step::Next)
    }

    fn append(&mut self, fi: usize) -> Flow {
        let iosize = self.iosize(fi, false)?;
        let size = if self.flowops[fi].op == Op::Appendfilerand {
            // filebench's size: uniform below iosize; an append of 0 is counted and skipped.
            let size = (self.rng.unit() * (iosize - 1) as f64) as u64;
            if size == 0 {
                let t0 = self.now();
                self.done(fi, t0, 0);
                return Ok(Step::Next);
            }
            size
        } else {
            iosize
        };
        let Some((slot, _)) = self.setup(fi)? else {
            return Ok(Step::Stopping);
        };
        self.buffer(size as usize);
        let fd = self.slots[slot].fd.take().expect("set up");
        let t0 = self.now();
        let _ = rustix::fs::seek(&fd, SeekFrom::End(0));
        let written = rustix::io::write(&fd, &self.buf.buf()[..size as usize]);
        self.done(fi, t0, written.as_ref().map_or(0, |n| *n as u64));
        self.slots[slot].fd = Some(fd);
        match written {
            Ok(n) if n as u64 == size => Ok(Step::Next),
            Ok(n) => Err(format!(
                "{}: wrote {n} of {size} bytes",
                self.flowops[fi].name
            )),
            Err(e) => Err(format!("{}: write: {e}", self.flowops[fi].name)),
        }
    }

    fn sempost(&mut self, fi: usize) -> Flow {
        let n = self.value(fi) as i64;
        let blocking = self.flowops[fi].blocking;
        let sh = self.sh;
        let targets = sh.plan.semaphores_named(self.target(fi)?);
        if targets.is_empty() {
            return Err(format!(
                "{}: no semblock flowop is called {}",
                self.flowops[fi].name,
                self.target(fi)?
            ));
        }
        let t0 = self.now();
        let mut posted = true;
        for sem in targets {
            posted &= sh.sems[*sem].post(n, blocking, &sh.control);
        }
        self.done(fi, t0, 0);
        Ok(if posted { Step::Next } else { Step::Stopping })
    }

    /// opslimit, iopslimit and bwlimit: filebench's bucket, refilled by eventgen's events
    /// (one operation, or one MiB, each).
    fn limit(&mut self, fi: usize) -> Flow {
        if self.sh.model.eventrate == 0 {
            return Ok(Step::Next);
        }
        let op = self.flowops[fi].op;
        let control = &self.sh.control;
        let done = match (op, self.targets[fi]) {
            (Op::Bwlimit, Some(t)) => self.stats[t].bytes,
            (Op::Bwlimit, None) => control.rw_bytes.load(Relaxed),
            (Op::Iopslimit, Some(t)) => self.stats[t].count,
            (Op::Iopslimit, None) => control.rw_count.load(Relaxed),
            (_, Some(t)) => self.stats[t].count,
            (_, None) => control.io_count.load(Relaxed),
        };
        let t0 = self.now();
        let bucket = &mut self.buckets[fi];
        if !bucket.started {
            *bucket = super::worker::Bucket {
                started: true,
                last: done,
                level: 0,
            };
            return Ok(Step::Next);
        }
        bucket.level -= (done - bucket.last) as i64;
        bucket.last = done;
        if bucket.level >= 0 {
            self.done(fi, t0, 0);
            return Ok(Step::Next);
        }
        let unit: i64 = if op == Op::Bwlimit { 1 << 20 } else { 1 };
        let events = if op == Op::Bwlimit {
            -bucket.level / unit + 1
        } else {
            -bucket.level
        };
        let got = control.take_events(events);
        self.buckets[fi].level += events * unit;
        self.done(fi, t0, 0);
        Ok(if got { Step::Next } else { Step::Stopping })
    }
}

/// Makes the directories of `path` (relative to `dir`) that are missing, parents first.
fn make_parents(dir: std::os::fd::BorrowedFd<'_>, path: &[u8]) {
    for (i, _) in path.iter().enumerate().filter(|(_, b)| **b == b'/') {
        let _ = rustix::fs::mkdirat(dir, &path[..i], Mode::from(0o755));
    }
    let _ = rustix::fs::mkdirat(dir, path, Mode::from(0o755));
}

/// filebench's hog: `loops` times, the buffer's address loaded and a byte stored there. Its
/// cost per loop is the flowop's meaning, so the loop is made as gcc makes filebench's: one
/// loop at a time. LLVM unrolls the same loop written in Rust 8 times, which made a hog 1.6 ×
/// cheaper than filebench's and oltp's ops/s (bound by its readers' hogs) 1.4–1.8 × higher.
#[cfg(target_arch = "x86_64")]
fn hog(buf: *mut u8, loops: u64) {
    if loops == 0 {
        return;
    }
    let at = std::ptr::addr_of!(buf);
    // SAFETY: `at` points at the local above, which points at a live buffer; the loop only
    // stores one byte there, and `loops` > 0 so the counter reaches 0.
    unsafe {
        std::arch::asm!(
            "2:",
            "mov {p}, qword ptr [{at}]",
            "mov byte ptr [{p}], 1",
            "dec {n}",
            "jnz 2b",
            at = in(reg) at,
            p = out(reg) _,
            n = inout(reg) loops => _,
            options(nostack),
        );
    }
}

/// Elsewhere the Rust loop (which the compiler may unroll).
#[cfg(not(target_arch = "x86_64"))]
fn hog(buf: *mut u8, loops: u64) {
    let at = std::ptr::addr_of!(buf);
    for _ in 0..loops {
        // SAFETY: `at` points at the local above, which points at a live buffer.
        unsafe { at.read_volatile().write_volatile(1) };
    }
}

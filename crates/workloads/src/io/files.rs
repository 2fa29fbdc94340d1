//! A job's descriptors, one slot per file: each opened in the job's time when the file
//! service first picks it, at most `openfiles` open at once (all of them by default), each
//! closed when its range is done, once its I/Os in flight completed (fio's
//! `td_io_open_file`, `td_io_close_file` and `put_file`); or, where the job's options need
//! them so, all opened before the job. Beneath both the job, which issues its I/Os to them,
//! and the file service, which opens them as it picks.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use super::params::IoParams;
use fsbench_measure::error::FsbenchError;

/// Whether a file the file service picked can take the next I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opened {
    /// It is open (was, or is now).
    Yes,
    /// It is closed and `openfiles` are open: fio's `-EBUSY` (reap, then pick again).
    Busy,
}

/// The job's descriptors, one slot per file. Per file it keeps a descriptor, a count of I/Os
/// in flight and a flag: no buffers, so that 65,536 files cost a few hundred KiB.
pub(crate) struct Files {
    fds: Vec<Option<OwnedFd>>,
    /// I/Os in flight per file (queueing engines), and their sum.
    in_flight: Vec<u32>,
    total_in_flight: usize,
    /// Files done and waiting for their I/Os in flight before they close (fio's "closing").
    closing: Vec<bool>,
    /// How many are open (closing ones among them, as fio counts `nr_open_files`) and the
    /// most at once; `None`: every file opened before the job, open for the whole of it.
    open: usize,
    limit: Option<usize>,
    /// Opens made during the job (after the first ones of a job with every file open).
    pub opens: u64,
}

impl Files {
    /// The job's files: none open yet where they open and close as the job goes, else
    /// `fds`, open for the whole job.
    pub(crate) fn of(params: &IoParams, fds: Vec<OwnedFd>) -> Files {
        match params.opens_as_picked() {
            Some(limit) => Files::as_picked(params.nrfiles as usize, limit),
            None => Files::all(fds),
        }
    }

    /// Every one of `fds` open for the whole job.
    pub(crate) fn all(fds: Vec<OwnedFd>) -> Files {
        let n = fds.len();
        Files {
            open: n,
            fds: fds.into_iter().map(Some).collect(),
            in_flight: Vec::new(),
            total_in_flight: 0,
            closing: Vec::new(),
            limit: None,
            opens: 0,
        }
    }

    /// `files` files, none open yet, at most `limit` open at once.
    pub(crate) fn as_picked(files: usize, limit: usize) -> Files {
        Files {
            fds: (0..files).map(|_| None).collect(),
            in_flight: vec![0; files],
            total_in_flight: 0,
            closing: vec![false; files],
            open: 0,
            limit: Some(limit),
            opens: 0,
        }
    }

    /// Whether files open and close as the job goes.
    pub(crate) fn open_as_picked(&self) -> bool {
        self.limit.is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.fds.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.fds.is_empty()
    }

    /// File `file`'s descriptor, if it is open.
    #[inline]
    pub(crate) fn get(&self, file: usize) -> Option<BorrowedFd<'_>> {
        self.fds.get(file)?.as_ref().map(AsFd::as_fd)
    }

    /// File `file`'s descriptor: an I/O goes only to a file the file service opened.
    #[inline]
    pub(crate) fn fd(&self, file: usize) -> BorrowedFd<'_> {
        self.get(file).expect("an I/O's file is open")
    }

    #[inline]
    pub(crate) fn raw(&self, file: usize) -> RawFd {
        self.fd(file).as_raw_fd()
    }

    /// Whether `file` is open and not closing (the file service keeps serving it).
    #[inline]
    pub(crate) fn serves(&self, file: usize) -> bool {
        self.fds[file].is_some() && !self.closing.get(file).copied().unwrap_or(false)
    }

    /// Opens `file` (by `open`) unless it is open, where fewer than `openfiles` are; a
    /// closing file is taken back, as fio's open of a closing file undoes the close.
    #[inline]
    pub(crate) fn open(
        &mut self,
        file: usize,
        open: impl FnOnce() -> Result<OwnedFd, FsbenchError>,
    ) -> Result<Opened, FsbenchError> {
        if self.fds[file].is_some() {
            if let Some(closing) = self.closing.get_mut(file) {
                *closing = false;
            }
            return Ok(Opened::Yes);
        }
        if self.limit.is_some_and(|limit| self.open >= limit) {
            return Ok(Opened::Busy);
        }
        self.fds[file] = Some(open()?);
        self.open += 1;
        self.opens += 1;
        Ok(Opened::Yes)
    }

    /// `file`'s range is done: it closes now, or once its last I/O in flight completes.
    #[inline]
    pub(crate) fn done(&mut self, file: usize) {
        if self.fds[file].is_none() {
            return;
        }
        match self.in_flight[file] {
            0 => self.close(file),
            _ => self.closing[file] = true,
        }
    }

    /// Every file done (fio closes them all before the next loop over them).
    pub(crate) fn done_all(&mut self) {
        if self.open_as_picked() {
            (0..self.fds.len()).for_each(|f| self.done(f));
        }
    }

    fn close(&mut self, file: usize) {
        self.fds[file] = None;
        self.closing[file] = false;
        self.open -= 1;
    }

    /// An I/O of `file` queued (a queueing engine's; it holds the file open).
    #[inline]
    pub(crate) fn issued(&mut self, file: usize) {
        if let Some(n) = self.in_flight.get_mut(file) {
            *n += 1;
            self.total_in_flight += 1;
        }
    }

    /// An I/O of `file` completed: a closing file closes with its last.
    #[inline]
    pub(crate) fn completed(&mut self, file: usize) {
        if let Some(n) = self.in_flight.get_mut(file) {
            *n -= 1;
            self.total_in_flight -= 1;
            if *n == 0 && self.closing[file] {
                self.close(file);
            }
        }
    }

    /// I/Os in flight on the job's files (counted where files open and close).
    pub(crate) fn in_flight(&self) -> usize {
        self.total_in_flight
    }

    /// The open files with their numbers.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, BorrowedFd<'_>)> {
        (self.fds.iter().enumerate()).filter_map(|(f, fd)| Some((f, fd.as_ref()?.as_fd())))
    }

    /// Each open file replaced by what `renew` opens for it (`unlink_each_loop`).
    pub(crate) fn renew(
        &mut self,
        mut renew: impl FnMut(usize) -> Result<OwnedFd, FsbenchError>,
    ) -> Result<(), FsbenchError> {
        for (f, fd) in self.fds.iter_mut().enumerate() {
            if fd.is_some() {
                *fd = Some(renew(f)?);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn null() -> Result<OwnedFd, FsbenchError> {
        Ok(std::fs::File::open("/dev/null").unwrap().into())
    }

    #[test]
    fn at_most_the_limit_is_open_and_a_closing_file_closes_with_its_last_io() {
        let mut files = Files::as_picked(4, 2);
        assert_eq!(files.open(0, null).unwrap(), Opened::Yes);
        assert_eq!(files.open(1, null).unwrap(), Opened::Yes);
        assert_eq!(files.open(2, null).unwrap(), Opened::Busy);
        files.issued(0);
        files.done(0);
        // Closing, still counted open: no room yet, and not served.
        assert!(!files.serves(0));
        assert_eq!(files.open(2, null).unwrap(), Opened::Busy);
        files.completed(0);
        assert!(files.get(0).is_none());
        assert_eq!(files.open(2, null).unwrap(), Opened::Yes);
        assert_eq!(files.opens, 3);
        assert_eq!(files.iter().map(|(f, _)| f).collect::<Vec<_>>(), [1, 2]);
    }
}

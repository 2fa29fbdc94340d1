//! fio's `file_service_type`: which of a job's files the next I/O goes to. With every file
//! open, the next in turn, a random one or a skewed one; with `openfiles` below `nrfiles`,
//! fio 3.33's `__get_next_file` over the files open and not done (io_u.c).

use std::os::fd::OwnedFd;

use serde::{Deserialize, Serialize};

use super::Rng;
use super::picker::Picker;
use crate::io::files::{Files, Opened};
use crate::io::params::{FileService, IoParams};
use fsbench_measure::error::FsbenchError;

/// The file service of one job: how the next file is chosen, the file in use, the I/Os left
/// on it (round robin and random) or its bytes so far (sequential), and the next in turn.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Service {
    kind: FileService,
    picker: Option<Picker>,
    current: usize,
    left: u32,
    file_done: u64,
    next_file: usize,
    files: usize,
    /// Where files open and close (`openfiles` below `nrfiles`): the files whose range is
    /// done this pass (fio's `FIO_FILE_done`), and how many.
    done: Vec<bool>,
    nr_done: usize,
}

/// What the file service gives where files open and close.
pub(super) enum Served {
    File(usize),
    /// The file picked is closed and `openfiles` are open (fio's `-EBUSY`).
    Busy,
    /// Every file is done this pass.
    End,
}

impl Service {
    pub(super) fn new(p: &IoParams, rng: &mut Rng) -> Service {
        let picker = match p.file_service {
            FileService::Skewed(d) => Some(Picker::new(d, u64::from(p.nrfiles), rng)),
            _ => None,
        };
        Service {
            kind: p.file_service,
            picker,
            current: 0,
            left: 0,
            file_done: 0,
            next_file: 0,
            files: p.nrfiles as usize,
            done: vec![false; p.opens_as_picked().map_or(0, |_| p.nrfiles as usize)],
            nr_done: 0,
        }
    }

    /// A new pass: sequential service from the first file; every file undone (fio's
    /// `clear_io_state`; the next in turn stays where it was).
    pub(super) fn new_pass(&mut self) {
        if self.kind == FileService::Sequential {
            (self.current, self.file_done) = (0, 0);
        }
        self.done.fill(false);
        self.nr_done = 0;
    }

    /// Whether a file's range, once used up, starts over rather than being done (fio resets
    /// a file under a skewed file service).
    pub(super) fn skewed(&self) -> bool {
        matches!(self.kind, FileService::Skewed(_))
    }

    /// The file of the next I/O (of `bs` bytes of a pass of `pass_bytes`), every file open.
    #[inline]
    pub(super) fn pick(&mut self, bs: u64, pass_bytes: u64, rng: &mut Rng) -> usize {
        let files = self.files;
        match self.kind {
            FileService::RoundRobin(per) | FileService::Random(per) => {
                if self.left == 0 {
                    self.current = match self.kind {
                        FileService::Random(_) => rng.below(files as u64) as usize,
                        _ => self.turn(),
                    };
                    self.left = per;
                }
                self.left -= 1;
            }
            FileService::Sequential => {
                // fio finishes one file (its share of the pass) before the next.
                if self.file_done + bs > pass_bytes / files as u64 && self.current + 1 < files {
                    (self.current, self.file_done) = (self.current + 1, 0);
                }
                self.file_done += bs;
            }
            FileService::Skewed(_) => {
                if let Some(picker) = &self.picker {
                    self.current = picker.pick(files as u64, rng) as usize;
                }
            }
        }
        self.current
    }

    /// The next file in turn.
    #[inline]
    fn turn(&mut self) -> usize {
        let next = self.next_file;
        self.next_file = (next + 1) % self.files;
        next
    }

    /// The file of the next I/O where at most `openfiles` are open, as fio's
    /// `__get_next_file`: the file in use while it is open (sequential: until it is done;
    /// otherwise for its count of I/Os), else the next in turn or a random one among those
    /// not done, opened (by `open`) if fewer than `openfiles` are; a closed one when as many
    /// are open is `Busy`, the turn having moved on past it.
    #[inline]
    pub(super) fn pick_open(
        &mut self,
        rng: &mut Rng,
        files: &mut Files,
        open: &mut dyn FnMut(usize) -> Result<OwnedFd, FsbenchError>,
    ) -> Result<Served, FsbenchError> {
        if self.nr_done >= self.files {
            return Ok(Served::End);
        }
        if files.serves(self.current) {
            if self.kind == FileService::Sequential {
                return Ok(Served::File(self.current));
            }
            if self.left > 0 {
                self.left -= 1;
                return Ok(Served::File(self.current));
            }
        }
        let start = self.next_file;
        let served = loop {
            let f = match self.kind {
                FileService::RoundRobin(_) | FileService::Sequential => self.turn(),
                FileService::Random(_) => rng.below(self.files as u64) as usize,
                FileService::Skewed(_) => {
                    (self.picker.as_ref()).map_or(0, |p| p.pick(self.files as u64, rng) as usize)
                }
            };
            if !self.done[f] {
                match files.open(f, || open(f))? {
                    Opened::Yes => break Served::File(f),
                    Opened::Busy => return Ok(Served::Busy),
                }
            }
            let in_turn = matches!(
                self.kind,
                FileService::RoundRobin(_) | FileService::Sequential
            );
            if in_turn && self.next_file == start {
                return Ok(Served::End);
            }
        };
        if let Served::File(f) = served {
            self.current = f;
            self.left = match self.kind {
                FileService::RoundRobin(per) | FileService::Random(per) => per.saturating_sub(1),
                _ => 0,
            };
        }
        Ok(served)
    }

    /// `file`'s range is done this pass (fio's `fio_file_set_done`).
    pub(super) fn set_done(&mut self, file: usize) {
        if !std::mem::replace(&mut self.done[file], true) {
            self.nr_done += 1;
        }
    }
}

//! The files a job opens before it starts, and its next step where they open and close
//! during it (fio's way, as the file service picks them): the pick, fio's `-EBUSY` (at
//! `openfiles`), the end of a pass.

use std::os::fd::{BorrowedFd, OwnedFd};

use super::Job;
use crate::io::layout::open_file;
use crate::io::params::{Engine, IoParams};
use crate::io::pattern::{Next, Pick};
use fsbench_measure::error::FsbenchError;

/// The files a job opens before it starts: none where they open and close during the job,
/// else all of them.
pub(super) fn at_start(
    params: &IoParams,
    dir: BorrowedFd<'_>,
    names: &[String],
) -> Result<Vec<OwnedFd>, FsbenchError> {
    // fio opens a file when its file service first picks it, in the job's time.
    let as_picked = params.opens_as_picked();
    // fio's `null` engine has no files; its file and directory engines and pmemblk open none.
    let opened = match params.engine {
        e if e.diskless() || e.file_op() || e == Engine::Pmemblk => &names[..0],
        _ if as_picked.is_some() => &names[..0],
        _ => names,
    };
    (opened.iter())
        .map(|name| open_file(params, dir, name, params.create_on_open))
        .collect()
}

/// The next step of a job's I/O where files open and close.
pub(crate) enum Step {
    Io(Next),
    /// Reap first: the file picked is closed and `openfiles` are open.
    Busy,
    Done,
}

impl Job<'_> {
    /// The next I/O of the passes, or `Busy` where the file picked is closed, `openfiles`
    /// are open and I/Os in flight hold some of them (fio reaps, then picks again).
    pub(super) fn next_step(&mut self, passes: &mut u32) -> Step {
        loop {
            let pick = match self.files.open_as_picked() {
                false => self.pattern.next().map_or(Pick::End, Pick::Io),
                true => {
                    let (params, dir, names) = (self.params, self.dir, &self.names);
                    let positions = &mut self.positions;
                    let mut open = |f: usize| {
                        // A new descriptor is at the file's start.
                        positions[f] = 0;
                        open_file(params, dir, &names[f], params.create_on_open)
                    };
                    match self.pattern.next_open(&mut self.files, &mut open) {
                        Ok(pick) => pick,
                        Err(e) => {
                            self.open_failed = Some(e);
                            return Step::Done;
                        }
                    }
                }
            };
            match pick {
                Pick::Io(next) => return Step::Io(next),
                Pick::Busy if self.files.in_flight() > 0 => return Step::Busy,
                Pick::Busy => continue,
                Pick::End => {}
            }
            *passes += 1;
            if !self.span.time_based && *passes >= self.params.loops {
                return Step::Done;
            }
            // fio closes every file before the next loop over them.
            self.files.done_all();
            self.pattern.new_pass();
        }
    }
}

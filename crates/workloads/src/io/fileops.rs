//! fio's file and directory operation engines (`filecreate`, `filestat`, `filedelete`,
//! `dircreate`, `dirstat`, `dirdelete`): no data I/O; each of the job's files (or
//! directories) is created, stat'ed or deleted once, and that operation is what is timed,
//! in the read direction for a reading job and the write direction otherwise, as fio
//! counts it. The created files and directories are left for the run's directory to go.

use std::os::fd::OwnedFd;
use std::time::Instant;

use rustix::fs::{AtFlags, Mode, OFlags};

use super::job::{Job, io_error};
use super::params::Engine;
use super::pattern::Next;
use fsbench_measure::error::FsbenchError;

/// Each file's operation, once, until the files, the runtime or another job ends it.
pub(crate) fn run(job: &mut Job) -> Result<(), FsbenchError> {
    let read = job.params.rw.read_percent(job.params.rwmixread) == 100;
    for file in 0..job.names.len() {
        // The pattern's checks (the time limit, another job's failure, Ctrl-C), not its
        // offsets: one pass is all a file operation engine does.
        let mut passes = 0;
        if job.next_io(&mut passes).is_none() {
            break;
        }
        let io = Next {
            file,
            offset: 0,
            len: 0,
            read,
            prio: 0,
        };
        let submitted = Instant::now();
        let result = operate(job, file);
        let done = Instant::now();
        // A created file's descriptor is closed untimed, as fio closes it apart.
        drop(result.map_err(|e| io_error(e, job.params.engine.name(), &job.rec))?);
        job.count_issue();
        job.complete(io, done, submitted, submitted, None)?;
    }
    Ok(())
}

/// The engine's call on file `file`, as fio makes it (`open(O_CREAT|O_RDWR)`, `stat`,
/// `unlink`, `mkdir`, `rmdir`): a created file's descriptor, to close after the timing.
fn operate(job: &Job, file: usize) -> Result<Option<OwnedFd>, rustix::io::Errno> {
    let (dir, name) = (job.dir, job.names[file].as_str());
    match job.params.engine {
        Engine::FileCreate => rustix::fs::openat(
            dir,
            name,
            OFlags::CREATE | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::from(0o600),
        )
        .map(Some),
        Engine::FileStat | Engine::DirStat => {
            rustix::fs::statat(dir, name, AtFlags::empty()).map(|_| None)
        }
        Engine::FileDelete => rustix::fs::unlinkat(dir, name, AtFlags::empty()).map(|()| None),
        Engine::DirCreate => rustix::fs::mkdirat(dir, name, Mode::from(0o700)).map(|()| None),
        Engine::DirDelete => rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR).map(|()| None),
        _ => unreachable!("only the file and directory engines come here"),
    }
}

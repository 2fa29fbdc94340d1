//! A job's files: their names, fio's "Laying out IO file" (the untimed phase before the
//! jobs: every job's files made at their size, or its directories), their opening by a job,
//! and `unlink` once the jobs end.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags};

mod earlier;
mod fill;
pub(super) use earlier::fit;
pub(super) use fill::full;

use super::params::SyncIo;
use super::{Engine, Fallocate, Io, IoParams, pattern};
use fsbench_measure::calls::Aligned;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::measure::PhaseRecorder;

/// Copy `copy` (of `numjobs`) of job `job`: its file `file` is fio's `NAME.COPY.FILE` for a
/// job file's job (NAME its name). The io workload of `fsbench run`, which has no name, has
/// `io.COPY.FILE`, and `ioJOB.COPY.FILE` for a job beside the first. A job's `filename`s are
/// its files' names instead (every copy shares them), or its `filename_format` makes them,
/// and its `directory` is where they are.
pub(crate) fn file_name(params: &IoParams, job: usize, copy: u32, file: usize) -> String {
    let name = match (params.filename.get(file), &params.filename_format) {
        (Some(given), _) => given.clone(),
        (None, Some(format)) => formatted(format, params, copy, file),
        (None, None) => match (&params.job, job) {
            (Some(name), _) => format!("{name}.{copy}.{file}"),
            (None, 0) => format!("io.{copy}.{file}"),
            (None, j) => format!("io{j}.{copy}.{file}"),
        },
    };
    match &params.directory {
        // The block device fsbench was given is named as it is.
        Some(dir) if !params.raw_device => format!("{dir}/{name}"),
        _ => name,
    }
}

/// fio's `filename_format` (init.c's `make_filename`): `$jobname`, `$jobnum` (the copy),
/// `$filenum` and `$clientuid` replaced, in that order and in any case (fio's
/// `strcasestr`); `$clientuid` is fio's client's address, empty for a job fio runs itself.
pub(super) fn formatted(format: &str, params: &IoParams, copy: u32, file: usize) -> String {
    let keywords = [
        (
            "$jobname",
            params.job.as_deref().unwrap_or("io").to_string(),
        ),
        ("$jobnum", copy.to_string()),
        ("$filenum", file.to_string()),
        ("$clientuid", String::new()),
    ];
    keywords
        .iter()
        .fold(format.to_string(), |name, (key, value)| {
            replace_any_case(&name, key, value)
        })
}

/// `text` with every `key` (ASCII, any case) replaced by `value`.
fn replace_any_case(text: &str, key: &str, value: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some(at) = lower[from..].find(key) {
        out.push_str(&text[from..from + at]);
        out.push_str(value);
        from += at + key.len();
    }
    out + &text[from..]
}

/// Opens one of the job's files as its options say, its cached pages dropped when asked
/// (fio's `invalidate`) and readahead hinted as fio's `fadvise_hint` does.
pub(super) fn open_file(
    params: &IoParams,
    dir: BorrowedFd<'_>,
    name: &str,
    create: bool,
) -> Result<OwnedFd, FsbenchError> {
    let writes = params.rw.read_percent(params.rwmixread) < 100;
    // fio's falloc engine opens every file `O_CREAT|O_RDWR`, its reads being fallocates too.
    let falloc = params.engine == Engine::Falloc;
    let mut flags = if writes || falloc {
        OFlags::RDWR
    } else {
        OFlags::RDONLY
    } | OFlags::CLOEXEC;
    // libpmem's engine maps the file, which `O_DIRECT` has no say in (fio opens none).
    if params.direct && !params.engine.pmem() {
        flags |= OFlags::DIRECT;
    }
    // fio opens a trim job's files without its `sync` flag.
    flags |= match params.sync_io {
        _ if params.rw.trims() || params.rw.trims_then_writes() => OFlags::empty(),
        SyncIo::None => OFlags::empty(),
        SyncIo::Sync => OFlags::SYNC,
        // rustix's `OFlags::DSYNC` is O_SYNC's bits on Linux: O_DSYNC's own.
        SyncIo::Dsync => OFlags::from_bits_retain(libc::O_DSYNC as u32),
    };
    if create || falloc {
        flags |= OFlags::CREATE;
    }
    let fd = rustix::fs::openat(dir, name, flags, Mode::from(0o644))
        .map_err(|e| open_failed(params, name, e))?;
    // fio invalidates no file of an engine of its own files (`FIO_DISKLESSIO`).
    if params.invalidate && !params.direct && !params.engine.pmem() {
        let _ = rustix::fs::fadvise(&fd, 0, None, rustix::fs::Advice::DontNeed);
    }
    // On by default in fio: random I/O asks for no readahead, or each buffered miss would
    // bring its neighbours in for later random reads.
    let hint = if params.rw.random() {
        rustix::fs::Advice::Random
    } else {
        rustix::fs::Advice::Sequential
    };
    let _ = rustix::fs::fadvise(&fd, 0, None, hint);
    Ok(fd)
}

impl Io {
    /// The files to lay out, each once (jobs that name the same `filename` share it), with
    /// the largest size a job asks for and whether a job reads it. fio's `null`, `cpuio`,
    /// `filecreate` and `dircreate` engines have none, `pmemblk` its pools
    /// ([`Io::make_pools`]); `dirstat` and `dirdelete` have directories.
    pub(super) fn layout_files(&self) -> Vec<LaidOut> {
        let mut files: Vec<LaidOut> = Vec::new();
        // Where each name is in `files`, by its hash: jobs that share a file lay it out once
        // (a search of `files` per name was quadratic: 20 s at 65,536 files; a map of the
        // names themselves held 5 MiB more).
        let mut seen: HashMap<u64, usize> = HashMap::new();
        let hasher = RandomState::new();
        for (p, job, copy) in self.threads() {
            // A data engine's `create_on_open`: the job's open makes its files, timed.
            let made_by_job = p.create_on_open && !p.engine.file_op();
            if made_by_job
                || p.raw_device
                || matches!(
                    p.engine,
                    Engine::Null
                        | Engine::Cpuio
                        | Engine::Exec
                        | Engine::FileCreate
                        | Engine::DirCreate
                        | Engine::Pmemblk
                )
            {
                continue;
            }
            let reads = p.rw.read_percent(p.rwmixread) > 0;
            for f in 0..p.nrfiles as usize {
                let name = file_name(p, job, copy, f);
                // fio writes a fill job's files from empty, allocating nothing first.
                let size = if p.fill_device {
                    0
                } else {
                    p.copy_filesize(copy)
                };
                let key = hasher.hash_one(&name);
                // Two names of one hash: the other is found by a search.
                let at = match seen.get(&key) {
                    Some(&at) if files[at].name == name => Some(at),
                    Some(_) => files.iter().position(|f| f.name == name),
                    None => None,
                };
                match at {
                    Some(at) => {
                        let have = &mut files[at];
                        have.size = have.size.max(size);
                        have.reads |= reads;
                    }
                    None => {
                        seen.entry(key).or_insert(files.len());
                        files.push(LaidOut {
                            name,
                            size,
                            reads,
                            named: !p.filename.is_empty() || p.filename_format.is_some(),
                            is_dir: matches!(p.engine, Engine::DirStat | Engine::DirDelete),
                            fallocate: if p.fill_device {
                                Fallocate::None
                            } else {
                                p.fallocate
                            },
                        })
                    }
                }
            }
        }
        files
    }

    /// fio's "Laying out IO file": every job's files made at their size (in their
    /// `directory`), one unit per file with the bytes written. Files only written get their
    /// blocks allocated as `fallocate` says; files that are read are written in full. First
    /// the groups before it whose files it uses run again: a file they left that is as
    /// large as the jobs need stays as it is, a smaller one is made anew (fio's rule).
    pub(super) fn layout(
        &mut self,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        // Files a group before this one left, run again before it (and before each group
        // run again that uses them), are kept as fio keeps them.
        let keeps = self.params.jobs().any(|p| p.existing_files);
        self.run_earlier_groups(dir)?;
        self.fit_to_files(dir)?;
        self.make_pools(dir)?;
        self.fit_to_filesystem(dir);
        let mut buf = Aligned::new(1 << 20);
        let mut fill = pattern::Rng::new(self.params.randseed);
        pattern::fill_random(buf.buf(), &mut fill);
        for file in self.layout_files() {
            let failed = |e: rustix::io::Errno| {
                fsbench_measure::measure::fatal_error(e, "layout", 0).unwrap_or_else(|| {
                    FsbenchError::Failed(format!("io: laying out {}: {e}", file.name))
                })
            };
            make_parents(dir, &file.name).map_err(failed)?;
            if file.is_dir {
                match rustix::fs::mkdirat(dir, file.name.as_str(), Mode::from(0o700)) {
                    Err(rustix::io::Errno::EXIST) if keeps => {}
                    made => made.map_err(failed)?,
                }
                rec.unit_done(0)?;
                continue;
            }
            if keeps && !made_anew(dir, &file)? {
                rec.unit_done(0)?;
                continue;
            }
            let fd = rustix::fs::openat(
                dir,
                file.name.as_str(),
                OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::from(0o644),
            )
            .map_err(failed)?;
            let mut at = 0;
            if file.reads {
                while at < file.size {
                    let n = (file.size - at).min(1 << 20) as usize;
                    fsbench_measure::calls::pwrite_all(&fd, &buf.buf()[..n], at).map_err(failed)?;
                    at += n as u64;
                }
            } else {
                allocate(&fd, file.size, file.fallocate).map_err(failed)?;
            }
            rustix::fs::fsync(&fd).map_err(failed)?;
            rec.unit_done(at)?;
        }
        Ok(())
    }

    /// fio's `unlink`: the files of the jobs that ask, removed once they ended (untimed).
    pub(super) fn unlink_files(&self, dir: BorrowedFd<'_>) -> Result<(), FsbenchError> {
        for (p, job, copy) in self.threads() {
            if !p.unlink || p.raw_device {
                continue;
            }
            for f in 0..p.nrfiles as usize {
                let name = file_name(p, job, copy, f);
                let flags = match p.engine {
                    Engine::DirCreate | Engine::DirStat => rustix::fs::AtFlags::REMOVEDIR,
                    _ => rustix::fs::AtFlags::empty(),
                };
                match rustix::fs::unlinkat(dir, name.as_str(), flags) {
                    // Shared by jobs, or deleted by the job itself (`filedelete`).
                    Ok(()) | Err(rustix::io::Errno::NOENT) => {}
                    Err(e) => {
                        return Err(FsbenchError::Failed(format!("io: unlink {name}: {e}")));
                    }
                }
            }
        }
        Ok(())
    }
}

/// One file (or directory) the layout makes.
pub(super) struct LaidOut {
    name: String,
    size: u64,
    reads: bool,
    /// Named by the job file (`filename`, `filename_format`), not by fsbench.
    named: bool,
    is_dir: bool,
    fallocate: Fallocate,
}

/// Whether `file` is to be laid out where a group before this one may have left it: not
/// where it is as large as the jobs need; where it is smaller, it is removed first, as
/// fio makes such a file anew. A file fsbench named is another job's in fio (fio names
/// it after its job): made anew.
fn made_anew(dir: BorrowedFd<'_>, file: &LaidOut) -> Result<bool, FsbenchError> {
    match earlier::existing_size(dir, &file.name)? {
        None => Ok(true),
        Some(size) if file.named && size >= file.size => Ok(false),
        Some(_) => rustix::fs::unlinkat(dir, file.name.as_str(), rustix::fs::AtFlags::empty())
            .map(|()| true)
            .map_err(|e| FsbenchError::Failed(format!("io: unlink {}: {e}", file.name))),
    }
}

/// A written file's blocks, as fio's `fallocate` says; its size set either way.
fn allocate(fd: &OwnedFd, size: u64, how: Fallocate) -> Result<(), rustix::io::Errno> {
    use rustix::fs::FallocateFlags;
    let flags = match how {
        Fallocate::Native => FallocateFlags::empty(),
        Fallocate::Keep => FallocateFlags::KEEP_SIZE,
        Fallocate::None => return rustix::fs::ftruncate(fd, size),
    };
    // A filesystem without fallocate gets the size alone, as fio goes on without it.
    let _ = rustix::fs::fallocate(fd, flags, 0, size);
    rustix::fs::ftruncate(fd, size)
}

/// The directories above `name` (a job's `directory`, or a `filename` with a `/`), made
/// under `dir` where missing.
pub(super) fn make_parents(dir: BorrowedFd<'_>, name: &str) -> Result<(), rustix::io::Errno> {
    let mut end = 0;
    while let Some(slash) = name[end..].find('/') {
        end += slash;
        match rustix::fs::mkdirat(dir, &name[..end], Mode::from(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e),
        }
        end += 1;
    }
    Ok(())
}

/// fio's `pre_read`: every file read to its end (before the job's time starts).
pub(super) fn pre_read(files: &[OwnedFd]) -> Result<(), rustix::io::Errno> {
    let mut buf = Aligned::new(1 << 20);
    for fd in files {
        let mut at = 0;
        loop {
            match rustix::io::pread(fd, buf.buf(), at)? {
                0 => break,
                n => at += n as u64,
            }
        }
    }
    Ok(())
}

/// A failed open; EMFILE named with the process's open-file limit and `openfiles`, as
/// fio's "try reducing/setting openfiles".
fn open_failed(params: &IoParams, name: &str, e: rustix::io::Errno) -> FsbenchError {
    if e != rustix::io::Errno::MFILE {
        return FsbenchError::Failed(format!("io: open {name}: {e}"));
    }
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    FsbenchError::Failed(format!(
        "io: open {name}: EMFILE (too many open files): the process's open-file limit (RLIMIT_NOFILE {}) is below the job's {} files held open at once; set openfiles below it",
        limit.map_or("unlimited".into(), |l| l.to_string()),
        params.opens_as_picked().unwrap_or(params.nrfiles as usize),
    ))
}

/// fio's `unlink_each_loop`: the job's files removed after a loop and made anew, empty, for
/// the next.
pub(super) fn renew(
    params: &IoParams,
    dir: BorrowedFd<'_>,
    name: &str,
) -> Result<OwnedFd, FsbenchError> {
    rustix::fs::unlinkat(dir, name, rustix::fs::AtFlags::empty())
        .map_err(|e| FsbenchError::Failed(format!("io: unlink {name}: {e}")))?;
    open_file(params, dir, name, true)
}

#[cfg(test)]
mod tests {
    use crate::io::jobfile::read_text as jobs;

    /// fio 3.33's names: `JOBNAME.COPY.FILE`, and `filename_format`'s keywords in any case,
    /// `$clientuid` empty (tests/it/fio_fidelity.rs checks them against fio's own).
    #[test]
    fn a_job_files_jobs_name_their_files_as_fio_does() {
        let text = "[global]\nsize=8k\n[seq]\nnumjobs=2\n[f]\nfilename_format=$JOBNAME-$clientuid$FileNum.$jobnum\n";
        let jobs = jobs(text).unwrap();
        let p: Vec<_> = jobs[0].jobs().collect();
        let names = [(0, 1), (1, 0)].map(|(j, c)| super::file_name(p[j], j, c, 0));
        assert_eq!(names, ["seq.1.0", "f-0.0"]);
    }

    /// fio would write where a job's name leads; fsbench refuses it before anything runs.
    #[test]
    fn a_job_name_that_leads_out_of_the_run_directory_is_refused() {
        for name in ["../out", "/etc/out", "a/../../out"] {
            let err = jobs(&format!("[{name}]\nrw=write\nsize=8k\n")).unwrap_err();
            let err = format!("{err:#}");
            assert!(
                err.contains(&format!("job `{name}` has no `filename`")),
                "{err}"
            );
        }
        // A name fio's files take inside the directory is taken.
        assert!(jobs("[..]\nrw=write\nsize=8k\n").is_ok());
    }
}

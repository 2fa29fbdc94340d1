//! An IOzone-style throughput matrix (the Linux Magazine filesystem tests): for every file size ×
//! record size cell, the IOzone tests in IOzone's order — write, rewrite, read, reread, random
//! read and write, backward read, record rewrite, stride read, fwrite/fread (optional), pwrite,
//! pread — each on N threads with a file each. One phase, `matrix`, holds the cells; each cell's
//! throughput is a figure of its own.

use std::borrow::Cow;
use std::io::{BufWriter, Write};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, Mode, OFlags};
use serde::{Deserialize, Serialize};

use super::options::{OptKind, OptionDef, Parsed, Preset, WorkloadKind};
use super::parallel::Crew;
use super::{Need, PhaseInfo, SpaceNeed, Workload, WorkloadParams};
use fsbench_measure::calls::Aligned;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::{CpuTimes, PhaseRecorder, Progress};
use fsbench_model::filesystem::Capability;
use fsbench_model::measurement::{Dim, DimValue, Figure};
use fsbench_model::units::{compact_size, format_bytes};

mod offsets;
pub use offsets::*;

mod params;
pub use params::*;

pub const PHASES: &[PhaseInfo] = &[PhaseInfo::matrix("matrix", "records")];

/// IOzone's tests: (name, IOzone group number `-i`, the `-R` report title).
pub const TESTS: &[(&str, u8, &str)] = &[
    ("write", 0, "Writer report"),
    ("rewrite", 0, "Re-writer report"),
    ("read", 1, "Reader report"),
    ("reread", 1, "Re-Reader report"),
    ("random-read", 2, "Random read report"),
    ("random-write", 2, "Random write report"),
    ("backward-read", 3, "Backward read report"),
    ("record-rewrite", 4, "Record rewrite report"),
    ("stride-read", 5, "Stride read report"),
    ("fwrite", 6, "Fwrite report"),
    ("refwrite", 6, "Re-Fwrite report"),
    ("fread", 7, "Fread report"),
    ("refread", 7, "Re-Fread report"),
    ("pwrite", 9, "Pwrite report"),
    ("repwrite", 9, "Re-Pwrite report"),
    ("pread", 10, "Pread report"),
    ("repread", 10, "Re-Pread report"),
];

/// IOzone's stride: read a record, skip 17.
const STRIDE: u64 = 17;

/// One cell of one test: every thread's file, aggregated.
pub struct CellResult {
    pub bytes: u64,
    /// From the start barrier to the last thread's end.
    pub elapsed_ns: u64,
    pub cpu_ns: u64,
    pub threads: u32,
    /// The threads' own KiB/s: lowest, mean, highest.
    pub thread_rates: [f64; 3],
    pub caches_dropped: bool,
}

/// The names of a cell's dimensions, in the order the matrix views use them: one table per
/// test, file sizes down, record sizes across.
pub const DIMENSIONS: [&str; 3] = ["test", "file size", "record size"];

impl CellResult {
    /// The cell as figures at its place in the matrix: throughput as IOzone reports it (the
    /// sum of every thread's own rate, each timed from its first to its last I/O call, as
    /// IOzone's "Children see throughput"; with one thread, IOzone's `-a` figure), CPU over the
    /// cell's wall time, bytes moved and, with several threads, their spread.
    pub fn figures(&self, test: &str, file_size: u64, record: u64) -> Vec<Figure> {
        let dims = [
            Dim::new(DIMENSIONS[0], DimValue::Text(test.to_string())),
            Dim::new(DIMENSIONS[1], DimValue::Bytes(file_size)),
            Dim::new(DIMENSIONS[2], DimValue::Bytes(record)),
        ];
        let cpu = self.cpu_ns as f64 / self.elapsed_ns.max(1) as f64 * 100.0;
        let children_see = self.thread_rates[1] * self.threads as f64;
        let mut out = vec![
            Figure::new("throughput", "KiB/s", true, children_see),
            Figure::new("cpu", "%", false, cpu),
            Figure::new("bytes", "B", true, self.bytes as f64),
        ];
        if self.threads > 1 {
            let names = ["thread min", "thread avg", "thread max"];
            for (name, v) in names.into_iter().zip(self.thread_rates) {
                out.push(Figure::new(name, "KiB/s", true, v));
            }
        }
        out.into_iter().map(|f| f.at(&dims)).collect()
    }
}

/// A test's I/O on `file`: `n` records of `buf`, in its pattern, by system calls or through
/// stdio's buffers; the bytes moved.
fn transfer(
    file: &OwnedFd,
    io: Io,
    writes: bool,
    buf: &mut [u8],
    n: u64,
    record: u64,
) -> Result<u64, FsbenchError> {
    let mut moved = 0u64;
    match io {
        Io::Write | Io::Read => {
            for _ in 0..n {
                moved += if writes {
                    write_all(file, buf)?
                } else {
                    read_full(file, buf)?
                };
            }
        }
        Io::PWrite(pattern) | Io::PRead(pattern) => {
            for i in Offsets::new(pattern, n) {
                let off = i * record;
                moved += if writes {
                    pwrite_all(file, buf, off)?
                } else {
                    pread_full(file, buf, off)?
                };
            }
        }
        Io::StdioWrite => {
            let mut out = BufWriter::new(std::fs::File::from(file.try_clone().map_err(io_err)?));
            for _ in 0..n {
                out.write_all(buf)
                    .map_err(|e| FsbenchError::Failed(format!("fwrite: {e}")))?;
                moved += record;
            }
            out.flush()
                .map_err(|e| FsbenchError::Failed(format!("fflush: {e}")))?;
        }
        Io::StdioRead => {
            let mut input =
                std::io::BufReader::new(std::fs::File::from(file.try_clone().map_err(io_err)?));
            for _ in 0..n {
                std::io::Read::read_exact(&mut input, buf)
                    .map_err(|e| FsbenchError::Failed(format!("fread: {e}")))?;
                moved += record;
            }
        }
    }
    Ok(moved)
}

/// IOzone's timer resolution: it times with gettimeofday and prints "Time Resolution =
/// 0.000001 seconds" in its header.
const IOZONE_TIME_RES: f64 = 1e-6;

/// A test's time as IOzone computes it: the measured time less its timer's resolution, and
/// never below that resolution (write_perf_test: `time - time_res`, then `time_res` when under
/// a microsecond). It matters for small files only: a 64 KiB file read from memory in 5 µs
/// gets 20% more KiB/s, and fsbench's figure must mean what IOzone's does.
fn iozone_time(measured: f64) -> f64 {
    let t = measured - IOZONE_TIME_RES;
    if t < 1e-6 { IOZONE_TIME_RES } else { t }
}

/// What a test does with each record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Io {
    Write,
    Read,
    /// Positioned (pread/pwrite) in the given pattern.
    PWrite(Pattern),
    PRead(Pattern),
    StdioWrite,
    StdioRead,
}

fn io_of(test: &str) -> Io {
    match test {
        "write" | "rewrite" => Io::Write,
        "read" | "reread" => Io::Read,
        "random-read" => Io::PRead(Pattern::Random),
        "random-write" => Io::PWrite(Pattern::Random),
        "backward-read" => Io::PRead(Pattern::Backward),
        "record-rewrite" => Io::PWrite(Pattern::Same),
        "stride-read" => Io::PRead(Pattern::Stride),
        "fwrite" | "refwrite" => Io::StdioWrite,
        "fread" | "refread" => Io::StdioRead,
        "pwrite" | "repwrite" => Io::PWrite(Pattern::Sequential),
        _ => Io::PRead(Pattern::Sequential),
    }
}

pub struct Iozone {
    params: IozoneParams,
    /// Every cell's figures, in IOzone's order.
    figures: Vec<Figure>,
    /// Which cells were skipped, and why.
    notes: Vec<String>,
    /// Read tests that ran with caches in place (not root, or `no-drop`).
    reads_without_drop: usize,
}

impl Iozone {
    pub fn new(params: IozoneParams) -> Iozone {
        Iozone {
            params,
            figures: Vec::new(),
            notes: Vec::new(),
            reads_without_drop: 0,
        }
    }

    fn flags(&self, write: bool) -> OFlags {
        let mut f = if write {
            OFlags::RDWR | OFlags::CREATE
        } else {
            OFlags::RDONLY
        } | OFlags::CLOEXEC;
        if self.params.direct {
            f |= OFlags::DIRECT;
        }
        if self.params.sync && write {
            f |= OFlags::SYNC;
        }
        f
    }

    /// Refuses O_DIRECT on a filesystem without it, or records it cannot align, before any I/O.
    fn check_direct(&self, dir: BorrowedFd<'_>) -> Result<(), FsbenchError> {
        if !self.params.direct {
            return Ok(());
        }
        let (fs, align) = fsbench_measure::calls::direct_alignment(dir)?;
        if let Some(bad) = self
            .params
            .record_sizes
            .iter()
            .chain(&self.params.file_sizes)
            .find(|r| *r % align != 0)
        {
            return Err(FsbenchError::InvalidInput(format!(
                "O_DIRECT on {fs} needs sizes that are multiples of {align} bytes (its logical block size); {bad} is not"
            )));
        }
        Ok(())
    }

    /// One test of one cell on every worker's file, each worker with its own buffer of
    /// `buffers` (allocated once per phase and kept warm, as IOzone's one main buffer is);
    /// `cancel` is the run's Ctrl-C flag.
    fn run_test(
        &self,
        dir: BorrowedFd<'_>,
        test: &str,
        (file_size, record): (u64, u64),
        buffers: &mut [Aligned],
        cancel: &Arc<AtomicBool>,
    ) -> Result<CellResult, FsbenchError> {
        let io = io_of(test);
        let writes = matches!(io, Io::Write | Io::PWrite(_) | Io::StdioWrite);
        let caches_dropped = !writes
            && self.params.drop_caches
            && fsbench_measure::measure::sync_and_drop_caches(dir);
        let threads = self.params.threads as usize;
        let (results, elapsed, cpu) = if let [buf] = buffers {
            // One thread does its I/O on the calling thread, as IOzone does without -t: no
            // worker to start, and the caches stay the ones the previous test warmed.
            let cpu = CpuTimes::now();
            let start = Instant::now();
            let r = self.thread_io(dir, 0, io, writes, file_size, record, buf, || Ok(()));
            (vec![r], start.elapsed(), CpuTimes::now().since(&cpu))
        } else {
            // The cell's own recorder, for the workers' CPU time (their processes' too).
            let progress = Progress {
                cancel: cancel.clone(),
                ..Progress::default()
            };
            let mut cell = PhaseRecorder::start(test, Arc::new(progress));
            let keep = [dir];
            let crew = Crew::new(self.params.workers, &keep);
            let ran = crew.run(&mut cell, buffers.iter_mut().collect(), |w, buf| {
                let t = w.index();
                self.thread_io(dir, t, io, writes, file_size, record, buf, || w.start())
            })?;
            cell.ran(ran.from, ran.to);
            let m = cell.finish();
            let cpu = CpuTimes {
                user: Duration::from_nanos(m.cpu_user_ns),
                system: Duration::from_nanos(m.cpu_system_ns),
            };
            (ran.outcomes, ran.to - ran.from, cpu)
        };
        let mut bytes = 0;
        let mut rates = Vec::with_capacity(threads);
        for r in results {
            let (b, secs) = r?;
            if b != file_size {
                return Err(FsbenchError::Failed(format!(
                    "{test}: moved {b} bytes of a {file_size}-byte file"
                )));
            }
            bytes += b;
            rates.push(b as f64 / 1024.0 / secs.max(1e-9));
        }
        Ok(CellResult {
            bytes,
            elapsed_ns: elapsed.as_nanos() as u64,
            cpu_ns: (cpu.user + cpu.system).as_nanos() as u64,
            threads: self.params.threads,
            thread_rates: [
                rates.iter().copied().fold(f64::INFINITY, f64::min),
                rates.iter().sum::<f64>() / rates.len() as f64,
                rates.iter().copied().fold(0.0, f64::max),
            ],
            caches_dropped: writes || caches_dropped,
        })
    }

    /// One thread's part: open (untimed), the I/O, fsync and close as asked; (bytes, seconds).
    #[allow(clippy::too_many_arguments)]
    fn thread_io(
        &self,
        dir: BorrowedFd<'_>,
        t: usize,
        io: Io,
        writes: bool,
        size: u64,
        record: u64,
        buf: &mut Aligned,
        start_together: impl FnOnce() -> Result<(), FsbenchError>,
    ) -> Result<(u64, f64), FsbenchError> {
        let name = thread_file(t);
        let name = std::ffi::CStr::from_bytes_with_nul(&name).expect("NUL-terminated");
        let opened = rustix::fs::openat(dir, name, self.flags(writes), Mode::from(0o644));
        let file: OwnedFd =
            opened.map_err(|e| FsbenchError::Failed(format!("open {name:?}: {e}")))?;
        start_together()?;
        let buf = &mut buf.buf()[..record as usize];
        let n = size / record;
        let start = Instant::now();
        let moved = transfer(&file, io, writes, buf, n, record)?;
        if writes && self.params.fsync {
            rustix::fs::fsync(&file).map_err(io_err)?;
        }
        let secs_before_checks = iozone_time(start.elapsed().as_secs_f64());
        if writes {
            // Not timed: the file must have exactly the cell's size after every write test.
            let st = rustix::fs::fstat(&file).map_err(io_err)?;
            if st.st_size as u64 != size {
                return Err(FsbenchError::Failed(format!(
                    "file {name:?} is {} bytes after writing, not {size}",
                    st.st_size
                )));
            }
        }
        if writes && !self.params.fsync && !self.params.close {
            // Not timed: IOzone flushes a written file before the next test ("clean up before
            // read starts") unless `-e` or `-c` ended its timing with a flush or close.
            rustix::fs::fsync(&file).map_err(io_err)?;
        }
        if self.params.close {
            let before_close = Instant::now();
            drop(file);
            return Ok((
                moved,
                secs_before_checks + before_close.elapsed().as_secs_f64(),
            ));
        }
        drop(file);
        Ok((moved, secs_before_checks))
    }

    /// Creates every thread's file at its full size (untimed), for cells without a write test.
    fn prepare_files(
        &self,
        dir: BorrowedFd<'_>,
        size: u64,
        record: u64,
        buf: &mut Aligned,
    ) -> Result<(), FsbenchError> {
        for t in 0..self.params.threads as usize {
            self.thread_io(dir, t, Io::Write, true, size, record, buf, || Ok(()))?;
        }
        Ok(())
    }
}

/// Thread `t`'s file, `iozone.tmp.NNNN\0`: one name for creating and removing it (threads
/// are at most 1024, so four digits suffice).
fn thread_file(t: usize) -> [u8; 16] {
    let mut name = *b"iozone.tmp.0000\0";
    let mut v = t;
    for digit in name[11..15].iter_mut().rev() {
        *digit = b'0' + (v % 10) as u8;
        v /= 10;
    }
    name
}

fn io_err(e: impl std::fmt::Display) -> FsbenchError {
    FsbenchError::Failed(format!("I/O: {e}"))
}

fn check_disk_full(e: rustix::io::Errno) -> FsbenchError {
    fsbench_measure::measure::fatal_error(e, "matrix", 0).unwrap_or_else(|| io_err(e))
}

fn write_all(file: &OwnedFd, buf: &[u8]) -> Result<u64, FsbenchError> {
    fsbench_measure::calls::write_all(file, buf)
        .map(|n| n as u64)
        .map_err(check_disk_full)
}

fn pwrite_all(file: &OwnedFd, buf: &[u8], off: u64) -> Result<u64, FsbenchError> {
    fsbench_measure::calls::pwrite_all(file, buf, off)
        .map(|n| n as u64)
        .map_err(check_disk_full)
}

fn read_full(file: &OwnedFd, buf: &mut [u8]) -> Result<u64, FsbenchError> {
    fsbench_measure::calls::read_full(file, buf)
        .map(|n| n as u64)
        .map_err(io_err)
}

fn pread_full(file: &OwnedFd, buf: &mut [u8], off: u64) -> Result<u64, FsbenchError> {
    fsbench_measure::calls::pread_full(file, buf, off)
        .map(|n| n as u64)
        .map_err(io_err)
}

impl Workload for Iozone {
    fn phases(&self) -> std::borrow::Cow<'static, [PhaseInfo]> {
        std::borrow::Cow::Borrowed(PHASES)
    }

    fn expected_units(&self, _: usize) -> u64 {
        let tests = self.params.tests().count() as u64;
        self.params
            .cells()
            .iter()
            .map(|(f, r)| f / r * tests * self.params.threads as u64)
            .sum()
    }

    fn run_phase(
        &mut self,
        _: usize,
        dir: BorrowedFd<'_>,
        rec: &mut PhaseRecorder,
    ) -> Result<(), FsbenchError> {
        self.check_direct(dir)?;
        let has_write = self.params.groups.contains(&0);
        // The largest file whose threads' copies fit the target (the workloads' one rule).
        let threads = self.params.threads as u64;
        let wanted = self.params.file_sizes.iter().copied().max().unwrap_or(0);
        let (largest, free) = fsbench_measure::calls::fit_size(dir, wanted, threads, 1)?;
        let (cells, skipped): (Vec<_>, Vec<_>) = self
            .params
            .cells()
            .into_iter()
            .partition(|(f, _)| *f <= largest);
        if let Some(free) = free
            && !skipped.is_empty()
        {
            let mut sizes: Vec<u64> = skipped.iter().map(|(f, _)| *f).collect();
            sizes.sort_unstable();
            sizes.dedup();
            self.notes.push(format!(
                "skipping files of {} and larger ({} of {} cells, file sizes {}): {threads} thread(s)' files of that size do not fit in 80% of the {} free",
                format_bytes(sizes[0]),
                skipped.len(),
                skipped.len() + cells.len(),
                sizes.iter().map(|s| compact_size(*s)).collect::<Vec<_>>().join("+"),
                format_bytes(free)
            ));
        }
        let largest_record = cells.iter().map(|c| c.1).max().unwrap_or(0);
        let mut buffers: Vec<Aligned> = (0..threads)
            .map(|_| Aligned::new(largest_record as usize))
            .collect();
        for (file_size, record) in cells {
            if !has_write {
                self.prepare_files(dir, file_size, record, &mut buffers[0])?;
            }
            for (test, _, _) in self.params.tests() {
                let cancel = &rec.progress().cancel;
                let size = (file_size, record);
                let cell = self.run_test(dir, test, size, &mut buffers, cancel)?;
                rec.units_done(
                    (file_size / record) * self.params.threads as u64,
                    cell.bytes,
                )?;
                self.reads_without_drop += usize::from(!cell.caches_dropped);
                self.figures.extend(cell.figures(test, file_size, record));
            }
            for t in 0..self.params.threads as usize {
                let _ = rustix::fs::unlinkat(dir, &thread_file(t)[..15], AtFlags::empty());
            }
        }
        Ok(())
    }

    fn after_phase(
        &mut self,
        _: usize,
        _: BorrowedFd<'_>,
    ) -> Result<super::PhaseOutput, FsbenchError> {
        if std::mem::take(&mut self.reads_without_drop) > 0 {
            self.notes.push(if self.params.drop_caches {
                "caches could not be dropped before the read tests (needs root): reads may come from memory".to_string()
            } else {
                "caches were kept before the read tests (no-drop): reads may come from memory".to_string()
            });
        }
        Ok(super::PhaseOutput {
            figures: std::mem::take(&mut self.figures),
            notes: std::mem::take(&mut self.notes),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests;

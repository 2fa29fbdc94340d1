//! fio's log files of one job thread (`write_lat_log`, `write_bw_log`, `write_iops_log`,
//! `write_hist_log`) kept as fio keeps them and written in its format: `TIME, VALUE, DDIR,
//! BS, PRIO` per line (`TIME, VALUE, DDIR, BS, OFFSET, PRIO` with `log_offset`), times in
//! milliseconds from the job's start; histogram lines `TIME, DDIR, BS, ` then the count of
//! each of fio's latency buckets in the interval.
//!
//! Every I/O's entry is kept until the job ends when `log_avg_msec` is 0, as fio keeps them:
//! memory grows with the I/Os logged (24 bytes each, reserved up front for the I/Os the job
//! is expected to do). With `log_avg_msec` a window's mean (or maximum) is one entry.

use std::fmt::Write;

use fsbench_model::fio::LogOptions;
use fsbench_model::measurement::LogFile;
use serde::{Deserialize, Serialize};

use super::plat::{PLAT_NR, plat_index};

/// One line of a value log.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(super) struct Entry {
    time_ms: u64,
    value: u64,
    dir: u8,
    /// The I/O's priority (fio's ioprio value), in the padding beside `dir`.
    #[serde(default)]
    prio: u16,
    bs: u32,
    offset: u64,
}

/// A window being averaged (per direction), as fio's `avg_window`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Window {
    samples: u64,
    sum: u64,
    max: u64,
    last_ms: u64,
}

/// One value log (`lat`, `clat`, `slat`, `bw` or `iops`): its entries, and its windows when
/// averaged.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ValueLog {
    entries: Vec<Entry>,
    windows: [Window; 2],
}

impl ValueLog {
    fn new(reserve: usize) -> ValueLog {
        ValueLog {
            entries: Vec::with_capacity(reserve),
            windows: [Window::default(); 2],
        }
    }

    /// One I/O's value (`io`: its block size, offset and priority): an entry of its own, or
    /// into its direction's window, which becomes an entry once `avg_msec` have passed
    /// (fio's `add_log_sample`).
    #[inline]
    pub(super) fn add(
        &mut self,
        opts: &LogOptions,
        at_ms: u64,
        read: bool,
        value: u64,
        (bs, offset, prio): (u32, u64, u16),
    ) {
        let dir = u8::from(!read);
        if opts.avg_msec == 0 {
            self.entries.push(Entry {
                time_ms: at_ms,
                value,
                dir,
                prio,
                bs,
                offset,
            });
            return;
        }
        let w = &mut self.windows[usize::from(dir)];
        w.samples += 1;
        w.sum += value;
        w.max = w.max.max(value);
        if at_ms.saturating_sub(w.last_ms) < opts.avg_msec {
            return;
        }
        self.close(opts, dir, at_ms);
        self.windows[usize::from(dir)].last_ms = at_ms - at_ms % opts.avg_msec;
    }

    /// A window's entry (its mean rounded, or its maximum), with no block size, offset nor
    /// priority as fio writes averaged entries.
    fn close(&mut self, opts: &LogOptions, dir: u8, at_ms: u64) {
        let w = &mut self.windows[usize::from(dir)];
        if w.samples > 0 {
            let value = if opts.max_value {
                w.max
            } else {
                (w.sum as f64 / w.samples as f64 + 0.5) as u64
            };
            self.entries.push(Entry {
                time_ms: at_ms,
                value,
                dir,
                prio: 0,
                bs: 0,
                offset: 0,
            });
        }
        *w = Window {
            last_ms: w.last_ms,
            ..Window::default()
        };
    }

    /// The windows still open at the job's end, logged then (fio's `finalize_logs`).
    fn finish(&mut self, opts: &LogOptions, end_ms: u64) {
        if opts.avg_msec > 0 {
            self.close(opts, 0, end_ms);
            self.close(opts, 1, end_ms);
        }
    }

    fn text(&self, opts: &LogOptions) -> String {
        let mut out = String::with_capacity(self.entries.len() * 24);
        for e in &self.entries {
            let _ = write!(out, "{}, {}, {}, {}, ", e.time_ms, e.value, e.dir, e.bs);
            if opts.offset {
                let _ = write!(out, "{}, ", e.offset);
            }
            // fio's `log_prio`: the value; else whether the class is real-time (1).
            let _ = if opts.prio {
                writeln!(out, "0x{:04x}", e.prio)
            } else {
                writeln!(out, "{}", u8::from(e.prio >> 13 == 1))
            };
        }
        out
    }
}

/// One interval's completion latencies in fio's buckets, only the buckets that had any.
#[derive(Debug, Serialize, Deserialize)]
struct HistEntry {
    time_ms: u64,
    dir: u8,
    bs: u32,
    counts: Vec<(u16, u32)>,
}

/// The histogram log: each direction's counts since its last entry.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct HistLog {
    current: [Box<[u32]>; 2],
    last_ms: [u64; 2],
    entries: Vec<HistEntry>,
}

impl HistLog {
    fn new() -> HistLog {
        HistLog {
            current: [vec![0; PLAT_NR].into(), vec![0; PLAT_NR].into()],
            last_ms: [0; 2],
            entries: Vec::new(),
        }
    }

    /// One completion latency; every `hist_msec` a direction's counts become an entry (fio
    /// drops the last, partial interval, and so does this).
    #[inline]
    pub(super) fn add(&mut self, hist_msec: u64, at_ms: u64, read: bool, clat_ns: u64, bs: u32) {
        if hist_msec == 0 {
            // fio writes the file, with no entries, without `log_hist_msec`.
            return;
        }
        let d = usize::from(!read);
        self.current[d][plat_index(clat_ns)] += 1;
        if self.last_ms[d] == 0 {
            self.last_ms[d] = at_ms;
        }
        let window = at_ms.saturating_sub(self.last_ms[d]);
        if window < hist_msec {
            return;
        }
        let counts = (self.current[d].iter_mut().enumerate())
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (i as u16, std::mem::take(n)))
            .collect();
        self.entries.push(HistEntry {
            time_ms: at_ms,
            dir: d as u8,
            bs,
            counts,
        });
        self.last_ms[d] = at_ms - (window - hist_msec);
    }

    fn text(&self) -> String {
        let mut out = String::new();
        let mut row = vec![0u32; PLAT_NR];
        for e in &self.entries {
            row.iter_mut().for_each(|n| *n = 0);
            for (i, n) in &e.counts {
                row[usize::from(*i)] = *n;
            }
            let _ = write!(out, "{}, {}, {}", e.time_ms, e.dir, e.bs);
            for n in &row {
                let _ = write!(out, ", {n}");
            }
            out.push('\n');
        }
        out
    }
}

/// Every log one thread keeps.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Logs {
    pub(super) opts: LogOptions,
    /// fio's thread number, in the files' names.
    thread: u32,
    pub(super) lat: Option<[ValueLog; 3]>,
    pub(super) bw: Option<ValueLog>,
    pub(super) iops: Option<ValueLog>,
    pub(super) hist: Option<HistLog>,
}

/// The kinds of the latency logs, in [`Logs::lat`]'s order.
pub(super) const LAT: usize = 0;
pub(super) const CLAT: usize = 1;
pub(super) const SLAT: usize = 2;
const LAT_KINDS: [&str; 3] = ["lat", "clat", "slat"];

impl Logs {
    /// The logs `opts` asks for, room for `expected_ios` entries each where every I/O is
    /// logged.
    pub(super) fn new(opts: &LogOptions, thread: u32, expected_ios: u64) -> Logs {
        let reserve = if opts.avg_msec == 0 {
            expected_ios.min(1 << 22) as usize
        } else {
            0
        };
        Logs {
            opts: opts.clone(),
            thread,
            lat: opts.lat.as_ref().map(|_| {
                [
                    ValueLog::new(reserve),
                    ValueLog::new(reserve),
                    ValueLog::new(reserve),
                ]
            }),
            bw: opts.bw.as_ref().map(|_| ValueLog::new(reserve)),
            iops: opts.iops.as_ref().map(|_| ValueLog::new(reserve)),
            hist: opts.hist.is_some().then(HistLog::new),
        }
    }

    /// The files, named as fio names them, each thread's windows closed at `end_ms`.
    pub(super) fn files(mut self, end_ms: u64) -> Vec<LogFile> {
        let opts = self.opts.clone();
        let file = |prefix: &Option<String>, kind: &str, text: String| LogFile {
            path: opts
                .file_name(prefix.as_deref().unwrap_or_default(), kind, self.thread)
                .into(),
            text,
        };
        let mut out = Vec::new();
        if let Some(logs) = &mut self.lat {
            for (log, kind) in logs.iter_mut().zip(LAT_KINDS) {
                log.finish(&opts, end_ms);
                out.push(file(&opts.lat, kind, log.text(&opts)));
            }
        }
        for (log, prefix, kind) in [
            (&mut self.bw, &opts.bw, "bw"),
            (&mut self.iops, &opts.iops, "iops"),
        ] {
            if let Some(log) = log {
                log.finish(&opts, end_ms);
                out.push(file(prefix, kind, log.text(&opts)));
            }
        }
        if let Some(hist) = &self.hist {
            out.push(file(&opts.hist, "clat_hist", hist.text()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_priority_column_is_fio_s_with_and_without_log_prio() {
        let mut log = ValueLog::new(4);
        let mut opts = LogOptions::default();
        // Real-time level 2, best effort level 4, none.
        for prio in [0x2002, 0x4004, 0] {
            log.add(&opts, 5, true, 100, (4096, 8192, prio));
        }
        assert_eq!(
            log.text(&opts),
            "5, 100, 0, 4096, 1\n5, 100, 0, 4096, 0\n5, 100, 0, 4096, 0\n"
        );
        opts.prio = true;
        opts.offset = true;
        let text = log.text(&opts);
        let last: Vec<&str> = text
            .lines()
            .map(|l| l.rsplit(", ").next().unwrap())
            .collect();
        assert_eq!(last, ["0x2002", "0x4004", "0x0000"]);
        assert!(
            text.starts_with("5, 100, 0, 4096, 8192, 0x2002\n"),
            "{text}"
        );
    }
}

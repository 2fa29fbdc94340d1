//! fdtree.bash's own report lines, with millisecond times and real rates where fdtree printed
//! integer seconds and 0 for anything faster than a second.

use std::fmt::Write;

use fsbench_model::measurement::PhaseMeasurement;
use fsbench_workloads::tree::{Phase, TreeParams};

/// The header fdtree prints before it starts.
pub fn header(params: &TreeParams, base: &str) -> String {
    format!(
        "fdtree-1.0.2: starting at {base}/\n\
         \tcreating/deleting {} directory levels with {} directories at each level\n\
         \tfor a total of {} directories\n\
         \twith {} files of size {}KiB per directory\n\
         \tfor a total of {} files and {}KiB\n",
        params.levels,
        params.dirs,
        params.total_dirs(),
        params.files,
        params.size as u64 * 4,
        params.total_files(),
        params.total_kib()
    )
}

/// `date`'s default output, as fdtree printed before and after each phase: the C library's
/// strftime, since only it knows the zone's abbreviation (`UTC`, `CET`) where chrono prints
/// an offset.
pub fn date() -> String {
    let mut buf = [0u8; 128];
    // SAFETY: `tm` is written by localtime_r before strftime reads it; strftime writes at
    // most `buf.len()` bytes and returns how many (0 when it did not fit).
    let len = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return chrono::Local::now()
                .format("%a %b %e %H:%M:%S %Y")
                .to_string();
        }
        libc::strftime(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%a %b %e %H:%M:%S %Z %Y".as_ptr(),
            &tm,
        )
    };
    String::from_utf8_lossy(&buf[..len]).into_owned()
}

/// The TIME IN, OUT, TOTAL block of one phase; `tin` and `tout` are seconds since the start.
pub fn phase_block(phase: Phase, tin: f64, tout: f64, m: &PhaseMeasurement) -> String {
    let rate = m.ops_per_sec();
    let mut out = String::new();
    // In whole milliseconds, so that TOTAL is OUT − IN as printed, as fdtree's is.
    let (tin_ms, tout_ms) = ((tin * 1e3).round() as i64, (tout * 1e3).round() as i64);
    let ms = |v: i64| v as f64 / 1e3;
    let times = format!(
        "{:.3}, {:.3}, {:.3}",
        ms(tin_ms),
        ms(tout_ms),
        ms(tout_ms - tin_ms)
    );
    match phase {
        Phase::DirCreate => {
            let _ = writeln!(out, "DIRECTORY CREATE TIME IN, OUT, TOTAL = {times}");
            let _ = writeln!(out, "\tDirectory creates per second =  {rate:.1}");
        }
        Phase::FileCreate => {
            let _ = writeln!(out, "FILE CREATE TIME IN, OUT, TOTAL      = {times}");
            let _ = writeln!(out, "\tFile creates per second      =  {rate:.1}");
            let _ = writeln!(
                out,
                "\tKiB per second               =  {:.1}",
                m.kib_per_sec()
            );
        }
        Phase::FileRemove => {
            let _ = writeln!(out, "FILE REMOVE TIME IN, OUT, TOTAL      = {times}");
            let _ = writeln!(out, "\tFile removals per second     =  {rate:.1}");
        }
        Phase::DirRemove => {
            let _ = writeln!(out, "DIRECTORY REMOVE TIME IN, OUT, TOTAL = {times}");
            let _ = writeln!(out, "\tDirectory removals per second =  {rate:.1}");
        }
        // mdtest's phases: fdtree has no block for them.
        Phase::FileStat | Phase::FileRead => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_matches_fdtree() {
        let p = TreeParams::new(5, 3, 10, 4);
        let h = header(&p, "./LEVEL0.host.1");
        assert!(h.starts_with("fdtree-1.0.2: starting at ./LEVEL0.host.1/\n"));
        assert!(h.contains("\tfor a total of 781 directories\n"));
        assert!(h.contains("\twith 3 files of size 40KiB per directory\n"));
        assert!(h.contains("\tfor a total of 2343 files and 93720KiB\n"));
    }

    #[test]
    fn phase_block_has_milliseconds_and_real_rates() {
        let m = PhaseMeasurement {
            elapsed_ns: 250_000_000,
            ops: 1000,
            bytes: 4096 * 1000,
            cpu_user_ns: 0,
            cpu_system_ns: 0,
            latency: Default::default(),
            errors: Default::default(),
            refused: 0,
            failures: Vec::new(),
            latency_timeline: Default::default(),
            jobs: Vec::new(),
            logs: Default::default(),
        };
        let b = phase_block(Phase::FileCreate, 1.5, 1.75, &m);
        assert!(
            b.starts_with("FILE CREATE TIME IN, OUT, TOTAL      = 1.500, 1.750, 0.250\n"),
            "{b}"
        );
        assert!(b.contains("File creates per second      =  4000.0"), "{b}");
        assert!(b.contains("KiB per second               =  16000.0"), "{b}");
        // Rounded apart, IN and OUT still give TOTAL by subtraction (not 0.008).
        let b = phase_block(Phase::FileCreate, 0.0136, 0.0214, &m);
        assert!(b.contains("= 0.014, 0.021, 0.007\n"), "{b}");
    }
}

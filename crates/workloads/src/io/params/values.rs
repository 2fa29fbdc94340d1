//! fio's values of the io workload's options that need more than a number: times and
//! ranges of times, names inside the run's directory, `rw=`'s modifier, `bssplit`, and the
//! job's files and sizes from its options.

use super::Rw;
use crate::options::Parsed;
use fsbench_measure::error::invalid;

/// fio's time values: a number with an optional unit, seconds when bare; in milliseconds.
pub(in crate::io) fn parse_time(key: &str, text: &str) -> anyhow::Result<u64> {
    Ok(parse_ns(key, text, 1_000_000_000)? / 1_000_000)
}

/// fio's times that are microseconds when bare (`thinktime`), in microseconds.
/// A fill job's size when its job gives none: it stops where the filesystem is full, long
/// before this (the layout bounds it by the filesystem's size).
pub(crate) const UNBOUNDED: u64 = 1 << 50;

/// A size stored as what is true of it: `null` where it is [`UNBOUNDED`] (a fill job with
/// no set size: its figures say what it wrote), a number of bytes otherwise.
pub(super) mod unbounded_as_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::UNBOUNDED;

    pub(in crate::io::params) fn serialize<S: Serializer>(
        size: &u64,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        (*size < UNBOUNDED).then_some(*size).serialize(s)
    }

    pub(in crate::io::params) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<u64, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.unwrap_or(UNBOUNDED))
    }
}

pub(super) fn parse_micros(key: &str, text: &str) -> anyhow::Result<u64> {
    Ok(parse_ns(key, text, 1000)? / 1000)
}

/// A number with an optional unit (us, ms, s, m, h), `bare` nanoseconds each without one;
/// in nanoseconds.
fn parse_ns(key: &str, text: &str, bare: u64) -> anyhow::Result<u64> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits.parse().map_err(|_| {
        invalid(format!(
            "io: `{key}={text}` is not a time (e.g. 30, 500ms, 2m)"
        ))
    })?;
    let per = match unit {
        "" => Some(bare),
        "us" => Some(1000),
        "ms" => Some(1_000_000),
        "s" => Some(1_000_000_000),
        "m" => Some(60_000_000_000),
        "h" => Some(3_600_000_000_000),
        _ => None,
    };
    let units = || invalid(format!("io: `{key}={text}`: units are us, ms, s, m, h"));
    n.checked_mul(per.ok_or_else(units)?).ok_or_else(units)
}

/// fio's `thinktime` and `thinktime_spin` in microseconds (the spin at most the whole).
pub(super) fn thinktime(p: &Parsed) -> anyhow::Result<(u64, u64)> {
    let micros = |key| p.text(key).map_or(Ok(0), |t| parse_micros(key, t));
    let (think, spin) = (micros("thinktime")?, micros("thinktime-spin")?);
    Ok((think, spin.min(think)))
}

/// The job's `rate` and `rate_iops`: of fio's per-direction `rate=READ,WRITE`, the
/// direction the job moves; a job that reads and writes at different rates is refused.
pub(super) fn rates(p: &Parsed, read_percent: u32) -> anyhow::Result<(u64, u64)> {
    let pick = |key: &str, write_key: &str| {
        let read = p.num(key).expect("has a default");
        match (p.num(write_key), read_percent) {
            (None, _) | (Some(_), 100) => Ok(read),
            (Some(write), 0) => Ok(write),
            (Some(write), _) if write == read => Ok(read),
            (Some(_), _) => Err(invalid(format!(
                "io: `{key}` per direction (`{write_key}`) differs: a job that reads and writes at a rate of each direction's own is not implemented"
            ))),
        }
    };
    Ok((
        pick("rate", "write-rate")?,
        pick("rate-iops", "write-rate-iops")?,
    ))
}

/// A `filename` or `directory` as fsbench takes it: relative, within the run's directory
/// (no `..`), since fsbench writes nowhere else.
pub(super) fn inside_name(key: &str, name: &str) -> anyhow::Result<String> {
    let path = std::path::Path::new(name);
    if name.is_empty() || name.contains('\0') {
        return Err(invalid(format!("io: `{key}` needs a name")));
    }
    if matches!(name, "/dev/null" | "/dev/zero") {
        return Err(invalid(format!(
            "io: `{key}={name}` moves no data through a filesystem: a job file's job may name it as its one file (`filename={name}` alone), as fio runs it"
        )));
    }
    if path.is_absolute() {
        return Err(invalid(format!(
            "io: `{key}={name}` is outside the run's directory: fsbench writes only in the directory it was given (--dir, which may hold the job file's absolute names) or the filesystem it made (--fs); give a name relative to it"
        )));
    }
    if path.components().any(|c| {
        !matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    }) {
        return Err(invalid(format!(
            "io: `{key}={name}` leaves the run's directory (`..`)"
        )));
    }
    Ok(name.trim_end_matches('/').to_string())
}

/// fio's `rw=PATTERN:MODIFIER`: for a sequential pattern a gap in bytes after each I/O
/// (negative: backwards), for a random one the number of I/Os per random offset.
pub(super) fn rw_modifier(rw: Rw, text: &str) -> anyhow::Result<(i64, u32)> {
    let bad = |what: &str| invalid(format!("io: `rw={}:{text}`: {what}", rw.name()));
    if rw.random() {
        let n: u32 = text
            .parse()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| bad("a random pattern takes a count of I/Os per offset"))?;
        return Ok((0, n));
    }
    let (sign, size) = match text.strip_prefix('-') {
        Some(size) => (-1, size),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let size = fsbench_measure::units::parse_size(size)
        .ok()
        .and_then(|s| i64::try_from(s).ok())
        .ok_or_else(|| bad("a sequential pattern takes a size, e.g. 8k or -8k"))?;
    Ok((sign * size, 0))
}

/// fio's `TIME` or `MIN-MAX` (a delay drawn from the range at each run).
pub(super) fn time_range(key: &str, text: &str) -> anyhow::Result<(u64, u64)> {
    let (lo, hi) = text.split_once('-').unwrap_or((text, text));
    let (lo, hi) = (parse_time(key, lo)?, parse_time(key, hi)?);
    if lo > hi {
        return Err(invalid(format!(
            "io: `{key}={text}`: MIN-MAX with MIN ≤ MAX"
        )));
    }
    Ok((lo, hi))
}

/// fio's `bssplit=4k/80:64k/20`: sizes and percentages; the percentages add up to 100.
pub(super) fn parse_bssplit(text: &str) -> anyhow::Result<Vec<(u64, u32)>> {
    let bad = || {
        invalid(format!(
            "io: `bssplit={text}` is SIZE/PCT:SIZE/PCT..., percentages adding up to 100"
        ))
    };
    let split: Vec<(u64, u32)> = text
        .split(':')
        .map(|part| {
            let (size, pct) = part.split_once('/').ok_or_else(bad)?;
            let size = fsbench_measure::units::parse_size(size).map_err(|_| bad())?;
            let pct: u32 = pct.parse().map_err(|_| bad())?;
            if size == 0 || size > 256 << 20 {
                return Err(bad());
            }
            Ok((size, pct))
        })
        .collect::<anyhow::Result<_>>()?;
    if split.iter().map(|s| s.1).sum::<u32>() != 100 {
        return Err(bad());
    }
    Ok(split)
}

/// fio's `filename` (several, `:`-separated) and `directory`, and the job's number of
/// files: as fio, `filename=a:b` is the job's files, however many `nrfiles` says.
pub(super) fn files(p: &Parsed) -> anyhow::Result<(Vec<String>, Option<String>, u32)> {
    let filename = match p.text("filename") {
        Some(names) => names
            .split(':')
            .map(|n| inside_name("filename", n))
            .collect::<anyhow::Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    let directory = p
        .text("directory")
        .map(|d| inside_name("directory", d))
        .transpose()?;
    let nrfiles = match filename.len() {
        0 => p.small("nrfiles").expect("nrfiles has a default"),
        n => u32::try_from(n).map_err(|_| invalid("io: too many `filename`s"))?,
    };
    Ok((filename, directory, nrfiles))
}

/// The bytes a job moves, each file's size and where I/O starts in it. As fio: `size`
/// alone is split over the files, each `offset` longer; `filesize` alone makes `size` the
/// files' sum; `io_size` is the bytes moved over files of `size`. `size=N%` moves that share
/// of each file (in whole `smallest` blocks, from the offset at most to its end).
/// `offset=N%` is a share of the size a file has before the job (fio's `real_file_size`):
/// 0 for a new file, as every file fsbench lays out is.
pub(super) fn sizes(p: &Parsed, nrfiles: u32, smallest: u64) -> anyhow::Result<(u64, u64, u64)> {
    let files = u64::from(nrfiles);
    let offset = match p.num("offset-percent") {
        Some(_) => 0,
        None => p.num("offset").expect("offset has a default"),
    };
    let filesize = p.num("filesize");
    if let Some(pct) = p.num("size-percent") {
        let filesize = filesize.ok_or_else(|| {
            invalid("io: `size-percent` (fio's size=N%) is a share of each file's size: fsbench's files are new, so it needs `filesize`")
        })?;
        let share = (filesize * pct / 100).min(filesize.saturating_sub(offset));
        let moved = (share - share % smallest).saturating_mul(files);
        return Ok((p.num("io-size").unwrap_or(moved), filesize, offset));
    }
    // fio's `fill_device` without a size: bounded by the filesystem's size when laid out.
    let fills = p.flag("fill-device") && !p.explicit("size") && !p.explicit("filesize");
    let size = p
        .num("size")
        .filter(|_| !fills && (p.explicit("size") || !p.explicit("filesize")));
    let (size, filesize) = match (size, filesize) {
        (Some(size), Some(filesize)) => (size, filesize),
        (Some(size), None) => (size, offset.saturating_add(size / files)),
        (None, Some(filesize)) => (filesize.saturating_mul(files), filesize),
        // Its files as unbounded as the job, until the layout bounds them by the filesystem.
        (None, None) if fills => (UNBOUNDED, UNBOUNDED),
        (None, None) => return Err(invalid("io: `size` or `filesize` is needed")),
    };
    Ok((p.num("io-size").unwrap_or(size), filesize, offset))
}

/// The block sizes with their shares: `bssplit`, or `bs` alone.
pub(super) fn block_sizes(p: &Parsed) -> anyhow::Result<Vec<(u64, u32)>> {
    match p.text("bssplit") {
        Some(text) if p.explicit("bs") => Err(invalid(format!(
            "io: give `bs` or `bssplit={text}`, not both"
        ))),
        Some(text) => parse_bssplit(text),
        None => Ok(vec![(p.num("bs").expect("bs has a default"), 100)]),
    }
}

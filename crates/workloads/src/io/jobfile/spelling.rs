//! fio's other spellings of the io workload's options: aliases (`blocksize`, `readwrite`,
//! `rwmixwrite`, `buffered`, `iodepth_batch`, `timeout`, `nr_files`, `fileoffset`, `ba`,
//! `percentage_sequential`, `rate_min`), fio's names of the mixed patterns (`rw=rw`),
//! percentages (`size=50%`), and the per-direction forms (`bs=4k,8k`, `rate=1m,2m`,
//! `bssplit=4k/100,64k/100`, `bsrange=4k-4k`). A form fsbench does not do is refused naming
//! what it lacks.

/// fio's keys that are other spellings of the io workload's options (or say why not).
pub(super) const ALIASES: &[&str] = &[
    "blocksize",
    "bsrange",
    "blocksize_range",
    "readwrite",
    "rwmixwrite",
    "buffered",
    "iodepth_batch",
    "iodepth_batch_complete",
    "ioscheduler",
    "timeout",
    "nr_files",
    "io_limit",
    "fileoffset",
    "thread",
    "threads",
    "ba",
    "percentage_sequential",
    "rate_min",
    "file_append",
    "steadystate",
    "steadystate_duration",
    "steadystate_ramp_time",
];

/// The io workload's options (and values) for fio's `key=value`; `Err` says why fsbench
/// cannot take it as written.
pub(super) fn translate(key: &str, value: &str) -> Result<Vec<(String, String)>, String> {
    let key = key.replace('-', "_");
    let one = |k: &str, v: &str| Ok(vec![(k.to_string(), v.to_string())]);
    match key.as_str() {
        "blocksize" | "bs" => block_sizes(&key, value),
        "bsrange" | "blocksize_range" => {
            let range = per_direction(&key, value)?;
            match range.split_once('-') {
                Some((lo, hi)) if same_size(lo, hi) => one("bs", lo),
                Some((lo, hi)) => one("bssplit", &range_split(&key, value, lo, hi)?),
                None => Err(format!("`{key}={value}` is MIN-MAX")),
            }
        }
        "rate" | "rate_iops" => Ok(read_and_write(&key, value)),
        "bssplit" => {
            let pairs = read_and_write(&key, value);
            match pairs[0].1.as_str() {
                "0" => Err(format!("`{key}={value}` needs the reads' sizes first")),
                _ => Ok(pairs),
            }
        }
        "rate_min" => one("ratemin", &per_direction(&key, value)?),
        "size" if value.ends_with('%') => one("size_percent", percent(&key, value)?),
        "offset" | "fileoffset" if value.ends_with('%') => {
            one("offset_percent", percent(&key, value)?)
        }
        "blockalign" | "ba" => one("blockalign", &per_direction(&key, value)?),
        "percentage_random" => one("percentage_random", &per_direction(&key, value)?),
        "percentage_sequential" => {
            let sequential: u32 = per_direction(&key, value)?
                .parse()
                .ok()
                .filter(|p| *p <= 100)
                .ok_or_else(|| format!("`{key}={value}` is a percentage"))?;
            one("percentage_random", &(100 - sequential).to_string())
        }
        "readwrite" | "rw" => {
            let (base, modifier) = value.split_once(':').unwrap_or((value, ""));
            let mut pairs = vec![("rw".to_string(), pattern(base))];
            if !modifier.is_empty() {
                pairs.push(("rw-modifier".to_string(), modifier.to_string()));
            }
            Ok(pairs)
        }
        "rwmixwrite" => {
            let pct: u32 = value
                .parse()
                .ok()
                .filter(|p| *p <= 100)
                .ok_or_else(|| format!("`{key}={value}` is a percentage"))?;
            one("rwmixread", &(100 - pct).to_string())
        }
        "buffered" => one("direct", if flag(value) { "0" } else { "1" }),
        "iodepth_batch" => one("iodepth_batch_submit", value),
        "iodepth_batch_complete" => one("iodepth_batch_complete_min", value),
        // fio runs jobs as processes unless told `thread` (3.33 takes `threads=1` too).
        "thread" | "threads" => one("workers", if flag(value) { "threads" } else { "processes" }),
        // fio appends at the size a file has before the layout; fsbench's files are new,
        // of size 0, so the I/O starts where it would without it (as fio's on a new file).
        "file_append" => Ok(Vec::new()),
        "sync" => one("sync", sync_flag(&key, value)?),
        "filesize" if value.contains('-') => Err(format!(
            "`{key}={value}`: each file's size drawn from a range is not implemented (give one size)"
        )),
        "timeout" => one("runtime", value),
        "nr_files" => one("nrfiles", value),
        "io_limit" => one("io_size", value),
        "fileoffset" => one("offset", value),
        "steadystate" => one("ss", value),
        "steadystate_duration" => one("ss_dur", value),
        "steadystate_ramp_time" => one("ss_ramp", value),
        // fio's cpp_null is its null engine built as an outside C++ plugin: the same engine.
        "ioengine" if value == "cpp_null" => one("ioengine", "null"),
        "ioscheduler" => Err(format!(
            "`{key}`: fsbench sets the scheduler per configuration (--sched or FS:sched=NAME)"
        )),
        _ => one(&key, value),
    }
}

/// fio's `bsrange=MIN-MAX` as shares: fio draws a size between them, a multiple of MIN,
/// each multiple as likely; as `bssplit`, each multiple of MIN its share of 100 (the first
/// ones a point more where 100 does not divide evenly).
fn range_split(key: &str, value: &str, lo: &str, hi: &str) -> Result<String, String> {
    let size = |t: &str| fsbench_model::units::parse_size(t).ok().filter(|s| *s > 0);
    let bad = || format!("`{key}={value}` is MIN-MAX, sizes with MIN ≤ MAX");
    let (lo, hi) = (size(lo).ok_or_else(bad)?, size(hi).ok_or_else(bad)?);
    if lo > hi {
        return Err(bad());
    }
    let count = hi / lo;
    if count > 100 {
        return Err(format!(
            "`{key}={value}`: more than 100 sizes between them (give `bssplit`)"
        ));
    }
    let parts: Vec<String> = (1..=count)
        .map(|k| {
            let share = 100 / count + u64::from(k <= 100 % count);
            format!("{}/{share}", k * lo)
        })
        .collect();
    Ok(parts.join(":"))
}

/// fio's boolean: a bare key, `1`, `true`, `on` or `yes`.
pub(super) fn flag(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "" | "1" | "true" | "on" | "yes"
    )
}

fn same_size(a: &str, b: &str) -> bool {
    let size = |t: &str| fsbench_model::units::parse_size(t).ok();
    size(a).is_some() && size(a) == size(b)
}

/// fio's `bs=READ,WRITE[,TRIM]`: the writes' size where it differs (`write_bs`); an empty
/// part is the read size (fsbench has no trims, so their size changes nothing).
fn block_sizes(key: &str, value: &str) -> Result<Vec<(String, String)>, String> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    let read = parts.first().copied().filter(|r| !r.is_empty());
    let write = parts.get(1).copied().filter(|w| !w.is_empty());
    let mut pairs = Vec::new();
    match (read, write) {
        (None, None) => return Err(format!("`{key}=` needs a value")),
        (Some(r), _) => pairs.push(("bs".to_string(), r.to_string())),
        (None, Some(_)) => {}
    }
    if let Some(w) = write.filter(|w| read.is_none_or(|r| !same_size(r, w))) {
        pairs.push(("write_bs".to_string(), w.to_string()));
    }
    Ok(pairs)
}

/// fio's `read,write[,trim]` form: the same value for every direction, or one alone. A job
/// whose reads and writes differ needs per-direction sizes and rates fsbench lacks.
fn per_direction(key: &str, value: &str) -> Result<String, String> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    let given: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
    match given.as_slice() {
        [] => Err(format!("`{key}=` needs a value")),
        [first, rest @ ..] if rest.iter().all(|r| r == first || same_size(r, first)) => {
            Ok(first.to_string())
        }
        _ => Err(format!(
            "`{key}={value}`: a different value per direction (read,write,trim) is not implemented; give one value"
        )),
    }
}

/// fio's `READ,WRITE[,TRIM]` of a rate or `bssplit`: one value is every direction's, an
/// empty one none (`0`); the writes' own key (`write_rate`) where theirs differs.
fn read_and_write(key: &str, value: &str) -> Vec<(String, String)> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    let given = |p: &str| if p.is_empty() { "0" } else { p }.to_string();
    let read = given(parts[0]);
    let write = parts.get(1).map_or_else(|| read.clone(), |w| given(w));
    let mut pairs = vec![(key.to_string(), read.clone())];
    if write != read && !same_size(&write, &read) {
        pairs.push((format!("write_{key}"), write));
    }
    pairs
}

/// fio's `N%` of `size=` and `offset=`: N.
fn percent<'v>(key: &str, value: &'v str) -> Result<&'v str, String> {
    let n = value.trim_end_matches('%');
    match n.parse::<u32>() {
        Ok(p) if p <= 100 => Ok(n),
        _ => Err(format!("`{key}={value}` is a percentage")),
    }
}

/// fio's `rw=` names: `rw` and `readwrite` are the mixed sequential pattern.
fn pattern(value: &str) -> String {
    match value {
        "rw" | "readwrite" => "readwrite".into(),
        other => other.to_string(),
    }
}

/// fio's `sync=` values: `0` and `none` (no flag), `1` and `sync` (`O_SYNC`), `dsync`.
fn sync_flag(key: &str, value: &str) -> Result<&'static str, String> {
    match value {
        "0" | "none" => Ok("none"),
        "1" | "sync" => Ok("sync"),
        "dsync" => Ok("dsync"),
        _ => Err(format!(
            "`{key}={value}`: fio takes none, 0, sync, 1 or dsync"
        )),
    }
}

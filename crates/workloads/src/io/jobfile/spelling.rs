//! fio's other spellings of the io workload's options: aliases (`blocksize`, `readwrite`,
//! `rwmixwrite`, `buffered`, `iodepth_batch`, `timeout`, `nr_files`, `fileoffset`), fio's names of the mixed patterns (`rw=rw`),
//! and the per-direction forms (`bs=4k,8k`, `rate=1m,2m`, `bsrange=4k-4k`) where the job
//! uses them with one value. A form fsbench does not do is refused naming what it lacks.

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
    "fileoffset",
];

/// The io workload's options (and values) for fio's `key=value`; `Err` says why fsbench
/// cannot take it as written.
pub(super) fn translate(key: &str, value: &str) -> Result<Vec<(String, String)>, String> {
    let key = key.replace('-', "_");
    let one = |k: &str, v: &str| Ok(vec![(k.to_string(), v.to_string())]);
    match key.as_str() {
        "blocksize" | "bs" => one("bs", &per_direction(&key, value)?),
        "bsrange" | "blocksize_range" => {
            let range = per_direction(&key, value)?;
            match range.split_once('-') {
                Some((lo, hi)) if same_size(lo, hi) => one("bs", lo),
                Some(_) => Err(format!(
                    "`{key}={value}`: block sizes drawn from a range are not implemented (give `bs`, or `bssplit` with shares)"
                )),
                None => Err(format!("`{key}={value}` is MIN-MAX")),
            }
        }
        "rate" => one("rate", &per_direction(&key, value)?),
        "rate_iops" => one("rate_iops", &per_direction(&key, value)?),
        "readwrite" | "rw" => {
            let (base, modifier) = value.split_once(':').unwrap_or((value, ""));
            let mut pairs = vec![("rw".to_string(), pattern(&key, base)?)];
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
        "timeout" => one("runtime", value),
        "nr_files" => one("nrfiles", value),
        "fileoffset" => one("offset", value),
        "ioscheduler" => Err(format!(
            "`{key}`: fsbench sets the scheduler per configuration (--sched or FS:sched=NAME)"
        )),
        _ => one(&key, value),
    }
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

/// fio's `rw=` names: `rw` and `readwrite` are the mixed sequential pattern; trims are not
/// implemented.
fn pattern(key: &str, value: &str) -> Result<String, String> {
    match value {
        "rw" | "readwrite" => Ok("readwrite".into()),
        "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => Err(format!(
            "`{key}={value}`: trims are not implemented by the io workload"
        )),
        other => Ok(other.to_string()),
    }
}

//! What a job file says for fio's outputs rather than for the I/O: the options as written
//! (fio's JSON repeats them), `group_reporting`, `description`, and the log files
//! (`write_*_log` and how they log). Read here, kept in the job's [`FioJob`].

use fsbench_model::fio::FioJob;

use super::spelling;

/// The options read here, besides `group_reporting` and `description`.
pub(super) const KEYS: &[&str] = &[
    "write_lat_log",
    "write_bw_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "log_max_value",
    "log_offset",
    "per_job_logs",
    "log_hist_msec",
    "log_prio",
    "group_reporting",
    "description",
];

/// Applies `key=value` (one of [`KEYS`]) to `fio` for job `job`; false for another key.
pub(super) fn apply(fio: &mut FioJob, key: &str, value: &str, job: &str) -> Result<bool, String> {
    let logs = &mut fio.logs;
    // A log without a file prefix is named after the job, as fio names it.
    let prefix = || Some(if value.is_empty() { job } else { value }.to_string());
    let msec = || -> Result<u64, String> {
        value
            .parse()
            .map_err(|_| format!("`{key}={value}` is a number of milliseconds"))
    };
    match key {
        "write_lat_log" => logs.lat = prefix(),
        "write_bw_log" => logs.bw = prefix(),
        "write_iops_log" => logs.iops = prefix(),
        "write_hist_log" => logs.hist = prefix(),
        "log_avg_msec" => logs.avg_msec = msec()?,
        "log_hist_msec" => logs.hist_msec = msec()?,
        "log_max_value" => logs.max_value = spelling::flag(value),
        "log_offset" => logs.offset = spelling::flag(value),
        "per_job_logs" => logs.per_job = spelling::flag(value),
        "log_prio" => logs.prio = spelling::flag(value),
        "group_reporting" => fio.group_reporting = spelling::flag(value),
        "description" => fio.description = Some(value.to_string()),
        _ => return Ok(false),
    }
    Ok(true)
}

/// `key=value` lines as fio's JSON lists them: with a value (fio leaves flags out), the
/// key as written.
pub(super) fn listed<'a>(lines: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<(String, String)> {
    lines
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

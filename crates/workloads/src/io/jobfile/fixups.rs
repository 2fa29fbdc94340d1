//! What fio changes in a job as it reads it, saying so on stderr, and goes on (its
//! `fixup_options`): fsbench does the same and keeps the message for stderr.

use super::{Section, spelling};

/// fio's `time_based` without a runtime: fio says "time_based requires a runtime/timeout
/// setting" and runs the job without time basing (its size ends it); so does fsbench.
pub(super) fn untimed_without_runtime(
    s: &Section,
    pairs: &mut Vec<(String, String, &str)>,
    fio: &mut fsbench_model::fio::FioJob,
) {
    let value = |key: &str| pairs.iter().rfind(|(k, _, _)| k == key).map(|p| &p.1);
    let timed = value("time_based").is_some_and(|v| spelling::flag(v));
    let runtime = value("runtime")
        .and_then(|v| crate::io::params::parse_time("runtime", v).ok())
        .unwrap_or(0);
    if !timed || runtime > 0 {
        return;
    }
    let at = (pairs.iter())
        .rfind(|(k, _, _)| k == "time_based")
        .map_or(s.at.as_str(), |p| p.2);
    fio.notes.push(format!(
        "{at}: job `{}`: fio: time_based requires a runtime/timeout setting (the job runs without time basing, as in fio)",
        s.name
    ));
    pairs.retain(|(k, _, _)| k != "time_based");
}

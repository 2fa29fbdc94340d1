//! `fsbench clean`: undo what killed runs left, say what it could not.

use std::process::ExitCode;

use super::output::write_stdout;
use fsbench_testbed::testbed::scratch;

/// Cleans every stale state file; what is done goes to stdout, what is left to stderr.
pub(super) fn clean() -> anyhow::Result<ExitCode> {
    let report = fsbench_testbed::testbed::clean::clean_stale();
    if report.done.is_empty() && report.left.is_empty() {
        super::console::say(&format!(
            "fsbench: nothing to clean in {}",
            scratch::state_dir().display()
        ));
    }
    for a in &report.done {
        write_stdout(&format!("{a}\n"))?;
    }
    if report.left.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for why in &report.left {
        super::console::say(&format!("fsbench: left: {why}"));
    }
    super::console::say(&format!(
        "fsbench: clean left {} thing(s) it could not verify as fsbench's or undo (above) and \
         cleaned the rest; a kept state file goes once what it names is dealt with (or by \
         hand, if that is nothing of fsbench's)",
        report.left.len()
    ));
    Ok(ExitCode::FAILURE)
}

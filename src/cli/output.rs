//! What commands write: stdout (a closed one ends the process as Unix tools end), files,
//! and the exports `fsbench export` and `run --export-*` share.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use super::RunArgs;
use fsbench_model::results::SuiteResult;
use fsbench_report::fit::View;
use fsbench_report::formats::{Report, named};

/// `run`'s and `show`'s report on stdout.
pub(super) fn print_result(
    result: &SuiteResult,
    format: &dyn Report,
    verbose: bool,
) -> anyhow::Result<()> {
    write_stdout(&format.render(result, &View::terminal(verbose))?)
}

/// Its reader closed stdout (`fsbench show 1 | head -1`).
#[derive(Debug, thiserror::Error)]
#[error("stdout closed")]
pub(super) struct StdoutClosed;

/// Every command's stdout goes through here. A closed stdout is an error like any other, so
/// what is running unwinds and cleans up (a run unmounts everything) before `main` ends the
/// process by SIGPIPE, quietly, as Unix tools end.
pub(super) fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        written => written.context("cannot write to stdout"),
    }
}

/// Ends the process by SIGPIPE, as `cat` or `grep` end when their reader goes away (the
/// shell sees status 141).
pub(super) fn die_by_sigpipe() -> ExitCode {
    // SAFETY: restores the default action of SIGPIPE (Rust ignores it) and raises it; neither
    // touches memory of this program.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    ExitCode::from(128 + libc::SIGPIPE as u8)
}

/// Writes `text` to the file `path`, or to stdout without one or when it is `-`.
pub(super) fn write_output(path: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match path.filter(|p| *p != Path::new("-")) {
        Some(p) => std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display())),
        None => write_stdout(text),
    }
}

/// A suite's results in one of `fsbench export`'s formats.
pub(super) fn export_text(result: &SuiteResult, format: &dyn Report) -> anyhow::Result<String> {
    format.render(result, &View::file())
}

/// `run --export-json/--export-csv/--export-markdown FILE`: the files `fsbench export` would
/// write, as hyperfine writes its exports at the end of a run.
pub(super) fn export_files(result: &SuiteResult, args: &RunArgs) -> anyhow::Result<()> {
    let exports = [
        (&args.export_json, "json"),
        (&args.export_csv, "csv"),
        (&args.export_markdown, "markdown"),
    ];
    for (path, format) in exports {
        if let Some(path) = path {
            write_output(Some(path), &export_text(result, named(format)?)?)?;
        }
    }
    Ok(())
}

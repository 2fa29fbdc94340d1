//! What Ctrl-C, SIGTERM and SIGHUP do to a running suite.

use fsbench_measure::measure::Progress;
use fsbench_testbed::testbed::scratch;

/// Ctrl-C, SIGTERM and SIGHUP (a closed terminal, `tmux kill-session`) set the cancel flag:
/// the running phase stops at its next operation and everything is unmounted and detached. A
/// second signal exits at once, saying what it leaves; everything made is recorded in the
/// state file before it is made, so `fsbench clean` undoes what is left.
pub(super) fn install_signal_handlers(progress: &Progress) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use std::sync::atomic::Ordering;
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        let cancel = progress.cancel.clone();
        // SAFETY: an atomic load, write(2) and _exit are async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                if cancel.load(Ordering::SeqCst) {
                    scratch::write_leaving_note();
                    signal_hook::low_level::exit(130);
                }
            })?;
        }
        signal_hook::flag::register(sig, progress.cancel.clone())?;
    }
    // After a hang-up the terminal is gone and writing to it fails (EIO): diagnostics go to
    // /dev/null instead, so that the cleanup's messages cannot turn into a panic mid-way.
    let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    let null = std::os::fd::IntoRawFd::into_raw_fd(null);
    // SAFETY: dup2 is async-signal-safe; the descriptor stays open for the process's life.
    unsafe {
        signal_hook::low_level::register(SIGHUP, move || {
            libc::dup2(null, libc::STDERR_FILENO);
        })?;
    }
    Ok(())
}

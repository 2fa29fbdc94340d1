//! Where the crates below the CLI send what they must tell the user outside a run's events (a
//! cleanup that failed in a destructor, a saved run imported on open): the CLI installs its
//! console, which wraps lines at the terminal's width; until then (tests, other callers) a
//! line goes to stderr as it is.

use std::sync::OnceLock;

static SINK: OnceLock<fn(&str)> = OnceLock::new();

/// Sends every later [`say`] to `sink` (the first call wins).
pub fn set_sink(sink: fn(&str)) {
    let _ = SINK.set(sink);
}

/// Tells the user `line` (without its newline); a closed stderr loses it, nothing else.
pub fn say(line: &str) {
    use std::io::Write;
    match SINK.get() {
        Some(sink) => sink(line),
        None => {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    }
}

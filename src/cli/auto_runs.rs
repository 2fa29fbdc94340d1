//! `--runs N | auto` and the options of `--runs auto`.

use fsbench_measure::error::invalid;
use fsbench_model::suite::Suite;

/// `--runs`: a number, or `auto`.
#[derive(Debug, Clone, Copy)]
pub(super) enum RunCount {
    Fixed(u32),
    Auto,
}

pub(super) fn parse_runs(text: &str) -> Result<RunCount, String> {
    if text == "auto" {
        return Ok(RunCount::Auto);
    }
    text.parse()
        .map(RunCount::Fixed)
        .map_err(|_| format!("`{text}`: expected a number of runs or `auto`"))
}

/// `5%` or `5`.
pub(super) fn parse_percent(text: &str) -> Result<f64, String> {
    text.trim_end_matches('%')
        .parse()
        .map_err(|_| format!("`{text}`: expected a percentage such as 5%"))
}

/// Seconds, or a number with `s`, `m` or `h`.
pub(super) fn parse_duration(text: &str) -> Result<f64, String> {
    let (number, unit) = match text.char_indices().last() {
        Some((i, 's')) => (&text[..i], 1.0),
        Some((i, 'm')) => (&text[..i], 60.0),
        Some((i, 'h')) => (&text[..i], 3600.0),
        _ => (text, 1.0),
    };
    number
        .parse::<f64>()
        .map(|n| n * unit)
        .map_err(|_| format!("`{text}`: expected a duration such as 90s, 30m or 2h"))
}

/// Applies the command line's run options over the suite file's.
pub(super) fn apply(
    suite: &mut Suite,
    runs: Option<RunCount>,
    target_ci: Option<f64>,
    max_runs: Option<u32>,
    max_time: Option<f64>,
) -> anyhow::Result<()> {
    match runs {
        Some(RunCount::Fixed(runs)) => {
            suite.runs = runs;
            suite.auto_runs = None;
        }
        Some(RunCount::Auto) => suite.set_auto_runs(suite.auto_runs.clone().unwrap_or_default()),
        None => {}
    }
    match suite.auto_runs.clone() {
        Some(mut auto) => {
            auto.target_ci_percent = target_ci.unwrap_or(auto.target_ci_percent);
            auto.max_runs = max_runs.unwrap_or(auto.max_runs);
            auto.max_secs = max_time.or(auto.max_secs);
            suite.set_auto_runs(auto);
            Ok(())
        }
        None if target_ci.is_some() || max_runs.is_some() || max_time.is_some() => Err(invalid(
            "--target-ci, --max-runs and --max-time need --runs auto",
        )),
        None => Ok(()),
    }
}

//! The warnings as a person reads them: one line per kind of the many-per-suite warnings
//! (short phases, noisy figures), naming the first few; every warning with `--verbose`.

use fsbench_model::results::{SuiteResult, Warning, WarningKind};

/// How many of a group's figures its line names.
const NAMED: usize = 3;

/// The warning lines of a suite, grouped unless `verbose`.
pub(crate) fn lines(r: &SuiteResult, verbose: bool) -> Vec<String> {
    if verbose {
        return r.warnings.iter().map(|w| w.message.clone()).collect();
    }
    let mut out = Vec::new();
    let mut grouped: Vec<WarningKind> = Vec::new();
    for w in &r.warnings {
        let group: Vec<&Warning> = r.warnings.iter().filter(|o| o.kind == w.kind).collect();
        let Some(summary) = group_line(r, w.kind, &group) else {
            out.push(w.message.clone());
            continue;
        };
        if !grouped.contains(&w.kind) {
            grouped.push(w.kind);
            out.push(summary);
        }
    }
    out
}

/// One line for several warnings of a kind that comes per figure, or `None` for a kind
/// (or a lone warning) that reads best on its own.
fn group_line(r: &SuiteResult, kind: WarningKind, group: &[&Warning]) -> Option<String> {
    if group.len() < 2 {
        return None;
    }
    let (what, advice) = match kind {
        WarningKind::ShortPhase => (
            format!(
                "phases are shorter than {} s, too short to measure",
                r.suite.min_phase_secs
            ),
            more_work(r, group),
        ),
        WarningKind::HighVariation => (
            format!(
                "rates vary by more than {}% (CV) across runs",
                r.suite.max_cv_percent
            ),
            "add runs (--runs 10) or quiet the machine".into(),
        ),
        WarningKind::HarnessBound => (
            format!(
                "rates are over {}% of the harness ceiling",
                fsbench_model::results::ceiling::HARNESS_BOUND_PERCENT
            ),
            "those figures are mostly fsbench's and the kernel's VFS cost, not the filesystem's"
                .into(),
        ),
        _ => return None,
    };
    let mut named: Vec<String> = group
        .iter()
        .take(NAMED)
        .map(|w| {
            // The workload only where there are several to tell apart.
            let workload = w.workload.as_ref().filter(|_| r.suite.workloads.len() > 1);
            [w.config.as_ref(), workload, w.phase.as_ref()]
                .into_iter()
                .flatten()
                .cloned()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    if group.len() > NAMED {
        named.push("…".into());
    }
    Some(format!(
        "{} {what}: {}; {advice} (--verbose lists them)",
        group.len(),
        named.join(", ")
    ))
}

/// Advice for the workloads of `group`, each in its own settings: `size=` for FFSB's
/// large-write, a larger preset or `dirs=` for the tree.
fn more_work(r: &SuiteResult, group: &[&Warning]) -> String {
    let mut workloads: Vec<&str> = Vec::new();
    for w in group {
        if let Some(name) = w.workload.as_deref()
            && !workloads.contains(&name)
        {
            workloads.push(name);
        }
    }
    match workloads.as_slice() {
        [one] => format!(
            "give it more work: {}",
            fsbench_workloads::more_work_advice(&r.suite, one)
        ),
        several => {
            let each: Vec<String> = several
                .iter()
                .map(|w| format!("{w}: {}", fsbench_workloads::more_work_advice(&r.suite, w)))
                .collect();
            format!("give them more work ({})", each.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warning(kind: WarningKind, phase: &str) -> Warning {
        Warning {
            kind,
            config: Some("ext4".into()),
            workload: Some("tree:x".into()),
            phase: Some(phase.into()),
            message: format!("ext4 / tree:x / {phase}: {kind:?}"),
        }
    }

    #[test]
    fn warnings_of_a_kind_share_one_line() {
        let mut r = SuiteResult::for_tests();
        r.warnings = ["a", "b", "c", "d", "e"]
            .map(|p| warning(WarningKind::HighVariation, p))
            .into_iter()
            .chain([warning(WarningKind::ShortPhase, "a")])
            .collect();
        let grouped = lines(&r, false);
        assert_eq!(grouped.len(), 2, "{grouped:?}");
        assert!(
            grouped[0].starts_with("5 rates vary by more than 10% (CV)"),
            "{grouped:?}"
        );
        assert!(
            grouped[0].contains("ext4 a, ext4 b, ext4 c, …"),
            "{grouped:?}"
        );
        // A lone warning keeps its own message.
        assert_eq!(grouped[1], r.warnings[5].message);
        assert_eq!(lines(&r, true).len(), 6);
    }

    #[test]
    fn short_phases_are_told_the_settings_their_workload_has() {
        let mut r = SuiteResult::for_tests();
        let typed = fsbench_workloads::Params::parse_list("ffsb-large-write,tree:quick").unwrap();
        r.suite.workloads = typed.iter().map(|w| w.spec()).collect();
        let ffsb = typed[0].label();
        let short = |workload: &str, phase: &str| Warning {
            workload: Some(workload.into()),
            ..warning(WarningKind::ShortPhase, phase)
        };
        r.warnings = vec![short(&ffsb, "run"), short(&ffsb, "remove")];
        let line = &lines(&r, false)[0];
        assert!(
            line.contains("give it more work: larger `size=`, `threads=`")
                && !line.contains("preset"),
            "{line}"
        );
        let tree = typed[1].label();
        r.warnings.push(short(&tree, "dir-create"));
        let line = &lines(&r, false)[0];
        assert!(
            line.contains("tree:quick: a larger tree preset or larger `dirs=`"),
            "{line}"
        );
    }
}

//! Whether aged configurations were aged: one warning per configuration whose aging left its
//! free space no more fragmented than a fresh filesystem's, by the probe it reports.

use super::*;

/// One warning per configuration, with the first such run's figures and a count (a
/// template's runs share one preparation; runs prepared in place each have their own).
pub(super) fn aging_warnings(r: &SuiteResult) -> Vec<Warning> {
    // (configuration, why its first such run was not aged, runs not aged, runs aged)
    let mut seen: Vec<(&str, Option<String>, usize, usize)> = Vec::new();
    for run in &r.runs {
        let Some(prep) = run.preparation.as_ref().filter(|p| p.aging.is_some()) else {
            continue;
        };
        let i = (seen.iter().position(|s| s.0 == run.config)).unwrap_or_else(|| {
            seen.push((&run.config, None, 0, 0));
            seen.len() - 1
        });
        seen[i].3 += 1;
        if let Some(why) = prep.not_aged() {
            seen[i].2 += 1;
            seen[i].1.get_or_insert(why);
        }
    }
    (seen.into_iter())
        .filter_map(|(config, why, not, all)| {
            Some(Warning {
                kind: WarningKind::NotAged,
                config: Some(config.to_string()),
                workload: None,
                phase: None,
                message: format!("{config}: {} ({not} of {all} aged run(s))", why?),
            })
        })
        .collect()
}

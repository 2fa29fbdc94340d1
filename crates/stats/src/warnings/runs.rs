//! Warnings about what the runs ran under and how their phases went: buffered loop devices
//! (and their summary), a storage stack that changed mid-suite, phases that never reached a
//! steady state or were harness-bound.

use super::*;

/// Phases whose mean rate is over [`HARNESS_BOUND_PERCENT`] of the harness ceiling, one
/// warning per matrix phase (IOzone's) with such cells, counting them, and one for all
/// the phases and cells that outran their round's ceiling.
pub(super) fn harness_warnings(r: &SuiteResult) -> Vec<Warning> {
    let untimed = r.untimed_phases();
    let timed = (r.summaries.iter())
        .filter(|s| s.metric == HARNESS_PERCENT)
        .filter(|s| !(untimed.iter()).any(|(w, p)| *w == s.workload && *p == s.phase));
    let (outrun, timed): (Vec<_>, Vec<_>) = timed.partition(|s| outran(&s.summary));
    let bound = timed.into_iter().filter(|s| harness_bound(&s.summary));
    let mut warnings: Vec<Warning> = Vec::new();
    if !outrun.is_empty() {
        let mut named: Vec<String> = Vec::new();
        for s in &outrun {
            let name = format!("{} {} {}", s.config, s.workload, s.phase);
            if !named.contains(&name) {
                named.push(name);
            }
        }
        let more = if named.len() > 4 { ", …" } else { "" };
        named.truncate(4);
        warnings.push(Warning {
            kind: WarningKind::CeilingOutrun,
            config: None,
            workload: None,
            phase: None,
            message: format!(
                "ceiling not comparable: the phase ran faster than the ceiling measured in its round, {} time(s) ({}{more}); not called harness-bound",
                outrun.len(),
                named.join(", ")
            ),
        });
    }
    for s in bound {
        let scope = |message| Warning {
            kind: WarningKind::HarnessBound,
            config: Some(s.config.clone()),
            workload: Some(s.workload.clone()),
            phase: Some(s.phase.clone()),
            message,
        };
        if s.dims.is_empty() {
            warnings.push(scope(format!(
                "{} / {} / {}: harness-bound ({:.0}% of the harness ceiling): the figure is mostly fsbench's and the kernel's VFS cost, not the filesystem's",
                s.config, s.workload, s.phase, s.summary.mean
            )));
            continue;
        }
        let same = |w: &Warning| {
            w.config.as_deref() == Some(&s.config)
                && w.workload.as_deref() == Some(&s.workload)
                && w.phase.as_deref() == Some(&s.phase)
        };
        if warnings.iter().any(same) {
            continue;
        }
        let cells = (r.summaries.iter())
            .filter(|o| o.metric == HARNESS_PERCENT && !o.dims.is_empty())
            .filter(|o| o.config == s.config && o.workload == s.workload && o.phase == s.phase);
        let (over, all) = cells.fold((0, 0), |(over, all), o| {
            (over + usize::from(harness_bound(&o.summary)), all + 1)
        });
        warnings.push(scope(format!(
            "{} / {} / {}: {over} of {all} cells harness-bound (over {HARNESS_BOUND_PERCENT}% of the same cell on tmpfs): their figures are mostly fsbench's and the kernel's VFS and page cache cost, not the filesystem's",
            s.config, s.workload, s.phase
        )));
    }
    warnings
}

/// One line about the suite's loop devices, from what each run read back: all direct, all
/// buffered, or mixed. `None` when no run used a loop device.
fn describe_runs<'a>(loops: impl IntoIterator<Item = &'a LoopInfo>) -> Option<String> {
    let loops: Vec<&LoopInfo> = loops.into_iter().collect();
    if loops.is_empty() {
        return None;
    }
    let direct = loops.iter().filter(|l| l.direct_io).count();
    let sizes: std::collections::BTreeSet<String> = loops
        .iter()
        .filter_map(|l| l.logical_block_size.map(|b| b.to_string()))
        .collect();
    let block = if sizes.is_empty() {
        String::new()
    } else {
        format!(
            ", logical block size {}",
            sizes.into_iter().collect::<Vec<_>>().join("/")
        )
    };
    let how = if direct == loops.len() {
        "direct I/O (dio=1: the image's writes reach the disk, not the host page cache)".to_string()
    } else {
        format!(
            "BUFFERED in the host page cache in {} of {} run(s): part of every figure is the host's memory",
            loops.len() - direct,
            loops.len()
        )
    };
    Some(format!(
        "loop devices: {how}; read back from sysfs in {} run(s){block}",
        loops.len()
    ))
}

/// What the runs' loop devices did, read back from sysfs (`None` without loop devices).
pub fn loop_summary(r: &SuiteResult) -> Option<String> {
    describe_runs(r.runs.iter().filter_map(|r| r.loop_device.as_ref()))
}

/// One warning per configuration, workload and phase whose rate never settled in some run.
pub(super) fn steady_state_warnings(r: &SuiteResult) -> Vec<Warning> {
    // (config, workload, phase) → (runs unsettled, runs too short to tell, runs), in
    // first-seen order: the count is of the phase's runs, each said as what it was.
    type Phase<'a> = (&'a str, &'a str, &'a str);
    let mut seen: Vec<(Phase, [usize; 3])> = Vec::new();
    for r in r.runs.iter().filter(|r| r.status == RunStatus::Ok) {
        for p in &r.phases {
            let key = (r.config.as_str(), r.workload.as_str(), p.name.as_str());
            let i = seen.iter().position(|(k, _)| *k == key).unwrap_or_else(|| {
                seen.push((key, [0; 3]));
                seen.len() - 1
            });
            let counts = &mut seen[i].1;
            match &p.shape.steady {
                Some(steady) => counts[0] += usize::from(!steady.reached),
                None => counts[1] += 1,
            }
            counts[2] += 1;
        }
    }
    seen.into_iter()
        .filter(|(_, [unsettled, ..])| *unsettled > 0)
        .map(|((config, workload, phase), [unsettled, untold, runs])| Warning {
            kind: WarningKind::NoSteadyState,
            config: Some(config.to_string()),
            workload: Some(workload.to_string()),
            phase: Some(phase.to_string()),
            message: format!(
                "{config} / {workload} / {phase}: no steady state in {unsettled} of {runs} run(s){} (MSER-5 found the warm-up past half the phase): its rate was still changing when it ended; lengthen the phase",
                match untold {
                    0 => String::new(),
                    n => format!(", {n} too short to tell"),
                }
            ),
        })
        .collect()
}

/// Said when the stack a run saw differs from the suite's (someone changed dirty_ratio or
/// a scheduler mid-suite, say): its runs are not alike.
pub(super) fn stack_warning(r: &SuiteResult) -> Option<Warning> {
    let changed: Vec<&RunRecord> = r
        .runs
        .iter()
        .filter(|r| r.testbed.as_ref().is_some_and(|t| !t.changed.is_empty()))
        .collect();
    let first = changed.first()?.testbed.as_ref()?;
    Some(Warning {
        kind: WarningKind::StackChanged,
        config: None,
        workload: None,
        phase: None,
        message: format!(
            "the storage stack changed during the suite: {} run(s) saw a stack other than the suite's (first: {}); their figures are not comparable with the others",
            changed.len(),
            first.changed.join("; ")
        ),
    })
}

/// Said when any run's loop device was buffered: asked for (`loop_cache`) or a fallback.
pub(super) fn loop_warning(r: &SuiteResult) -> Option<Warning> {
    let loops: Vec<&LoopInfo> = r
        .runs
        .iter()
        .filter_map(|r| r.loop_device.as_ref())
        .collect();
    let buffered: Vec<&&LoopInfo> = loops.iter().filter(|l| !l.direct_io).collect();
    if buffered.is_empty() {
        return None;
    }
    let why = match buffered.iter().find_map(|l| l.fallback.as_deref()) {
        Some(reason) => format!("direct I/O was asked for, but {reason}"),
        None => "buffered loops were asked for (--loop-cache / loop_cache = true)".to_string(),
    };
    Some(Warning {
        kind: WarningKind::LoopBuffered,
        config: None,
        workload: None,
        phase: None,
        message: format!(
            "{} of {} run(s) had a BUFFERED loop device (sysfs loop/dio = 0): {why}; their figures are partly the host's page cache, not the disk",
            buffered.len(),
            loops.len()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::{LoopInfo, describe_runs};
    use fsbench_model::results::{CiMethod, MetricSummary, SuiteResult, Summary, WarningKind};

    /// A `harness %` summary of `phase` on ext4 with these per-run values.
    fn percent(phase: &str, values: &[f64]) -> MetricSummary {
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        let min = values.iter().copied().fold(f64::MAX, f64::min);
        MetricSummary {
            config: "ext4".into(),
            workload: "tree:quick".into(),
            phase: phase.into(),
            metric: super::HARNESS_PERCENT.into(),
            dims: Vec::new(),
            unit: "%".into(),
            higher_is_better: false,
            summary: Summary {
                n: values.len(),
                mean,
                stddev: None,
                min,
                max,
                median: mean,
                cv_percent: None,
                ci95_low: None,
                ci95_high: None,
                ci_method: CiMethod::LogNormalCox,
                values: values.to_vec(),
            },
        }
    }

    #[test]
    fn a_phase_that_outran_its_ceiling_is_never_harness_bound_and_is_said_once() {
        let mut r = SuiteResult::for_tests();
        r.summaries = vec![
            percent("dir-create", &[85.0, 95.0]),
            // 34,230 files/s against a ceiling of 21,178: 162%, and 70% in the other round.
            percent("file-create", &[162.0, 70.0]),
            percent("file-remove", &[101.0, 120.0]),
            percent("dir-remove", &[20.0, 30.0]),
        ];
        let warnings = super::harness_warnings(&r);
        let bound: Vec<_> = (warnings.iter())
            .filter(|w| w.kind == WarningKind::HarnessBound)
            .map(|w| w.phase.as_deref().unwrap())
            .collect();
        assert_eq!(bound, ["dir-create"]);
        let outrun: Vec<_> = (warnings.iter())
            .filter(|w| w.kind == WarningKind::CeilingOutrun)
            .collect();
        assert_eq!(outrun.len(), 1, "{warnings:?}");
        let message = &outrun[0].message;
        assert!(
            message.starts_with(
                "ceiling not comparable: the phase ran faster than the ceiling measured in its round, 2 time(s) (ext4 tree:quick file-create, ext4 tree:quick file-remove);"
            ),
            "{message}"
        );
    }

    #[test]
    fn no_steady_state_counts_every_run_of_the_phase() {
        use fsbench_model::measurement::SteadyState;
        let mut r = SuiteResult::for_tests();
        // Five runs: three unsettled, one settled, one too short to analyse.
        for (run, reached) in [Some(false), Some(true), Some(false), None, Some(false)]
            .into_iter()
            .enumerate()
        {
            let steady = reached.map(|reached| {
                serde_json::json!({"reached": reached, "warmup_secs": 1.0, "rate": 10.0,
                    "batches": 8, "truncated_batches": if reached { 1 } else { 6 }})
            });
            let mut record: fsbench_model::results::RunRecord =
                serde_json::from_value(serde_json::json!({
                    "run": run + 1, "position": 1, "config_key": 0, "workload_key": 0,
                    "config": "ext4", "workload": "command:x", "started_at": "",
                    "status": "ok", "source": "", "mount_options": "", "phases": []
                }))
                .unwrap();
            let mut phase: fsbench_model::results::PhaseRecord =
                serde_json::from_value(serde_json::json!({"name": "upload", "elapsed_ns": 1,
                    "ops": 1, "bytes": 0, "cpu_user_ns": 0, "cpu_system_ns": 0,
                    "caches_dropped": true, "progress": [], "latency": {}, "errors": {}}))
                .unwrap();
            phase.shape.steady = steady.map(|s| serde_json::from_value::<SteadyState>(s).unwrap());
            record.phases.push(phase);
            r.runs.push(record);
        }
        let warnings = super::steady_state_warnings(&r);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0]
                .message
                .contains("upload: no steady state in 3 of 5 run(s), 1 too short to tell"),
            "{}",
            warnings[0].message
        );
    }

    fn info(direct_io: bool) -> LoopInfo {
        LoopInfo {
            device: "/dev/loop9".into(),
            direct_io,
            logical_block_size: Some(512),
            fallback: None,
        }
    }

    #[test]
    fn runs_are_described_by_what_was_read_back() {
        assert_eq!(describe_runs([]), None);
        let all = describe_runs(&[info(true), info(true)]).unwrap();
        assert!(
            all.contains("direct I/O") && all.contains("2 run(s)"),
            "{all}"
        );
        let mixed = describe_runs(&[info(true), info(false)]).unwrap();
        assert!(
            mixed.contains("BUFFERED") && mixed.contains("1 of 2"),
            "{mixed}"
        );
    }
}

//! The terminal report at a fixed width: every line fits, the answer comes first, the long
//! tables only when asked for.

use super::fit::View;
use super::table::{Style, render};
use fsbench_model::results::{ConfigInfo, MetricSummary, SuiteResult};
use fsbench_workloads::Params;

/// Three configurations of the tree workload, every phase's time, rate and throughput over
/// four runs, ext4 a little faster than the others.
fn three_filesystems() -> SuiteResult {
    let mut r = SuiteResult::for_tests();
    r.id = Some(7);
    let spec = Params::parse("tree:quick-shallow").unwrap();
    r.suite.workloads = vec![spec.spec()];
    fsbench_workloads::record_workloads(&mut r).unwrap();
    for (i, fs) in ["ext4", "xfs", "btrfs"].into_iter().enumerate() {
        r.configurations.push(ConfigInfo {
            config: fsbench_model::config::FsConfig::for_tests(fs),
            mkfs_version: None,
            fsck_version: None,
            mkfs_command: None,
            mount_options: None,
            crash: Vec::new(),
        });
        for p in spec.phases().iter() {
            let time = 12.345 + i as f64;
            let mut figures = vec![
                ("time", "s", false, time),
                ("rate", "dirs/s", true, 127_551.0 / time),
            ];
            if p.moves_data {
                figures.push(("throughput", "KiB/s", true, 510_204.0 / time));
            }
            for (metric, unit, higher_is_better, value) in figures {
                let values: Vec<f64> = [0.98, 1.0, 1.01, 1.02].map(|f| f * value).to_vec();
                r.summaries.push(MetricSummary {
                    config: fs.into(),
                    workload: spec.label(),
                    phase: p.name.to_string(),
                    metric: metric.into(),
                    dims: Vec::new(),
                    unit: unit.into(),
                    higher_is_better,
                    summary: fsbench_stats::summarize(&values).unwrap(),
                });
            }
        }
    }
    r
}

fn terminal(width: Option<u16>, verbose: bool) -> View {
    View {
        style: Style::Terminal,
        width,
        verbose,
    }
}

#[test]
fn every_line_fits_80_and_120_columns() {
    let r = three_filesystems();
    for width in [80, 120] {
        let text = render(&r, &terminal(Some(width), false));
        let wide: Vec<&str> = text
            .lines()
            .filter(|l| l.chars().count() > usize::from(width))
            .collect();
        assert!(wide.is_empty(), "wider than {width}: {wide:#?}\n{text}");
        assert!(text.contains("dir-create"), "{text}");
    }
    // Without a width (a pipe, a file), the full layout: a configuration per row.
    let full = render(&r, &terminal(None, false));
    assert!(
        full.lines()
            .any(|l| l.chars().count() > 80 && l.contains("ext4") && l.contains('±')),
        "{full}"
    );
}

#[test]
fn verdicts_lead_and_all_figures_wait_for_verbose() {
    let r = three_filesystems();
    let text = render(&r, &terminal(Some(80), false));
    let verdicts = text.find("Verdicts, every pair").expect("verdicts");
    let times = text.find("Phase times").expect("phase times");
    assert!(verdicts < times, "{text}");
    // The answer first, a headline per workload: ext4's times are the shortest.
    let answer = text.find("== Answer ==").expect("answer");
    assert!(answer < verdicts, "{text}");
    // The system and storage details after the tables, not before the answer.
    let system = text.find("System:").expect("system");
    assert!(times < system, "{text}");
    assert!(text[..answer].lines().count() <= 3, "{text}");
    let answer = text[answer..verdicts]
        .split_whitespace()
        .collect::<Vec<_>>();
    assert!(
        answer
            .join(" ")
            .contains("ext4 is fastest overall (leads in 4 of 4 phases)"),
        "{text}"
    );
    // One suite: its configurations need no `#ID` to tell them apart.
    let lines = &text[verdicts..times];
    assert!(lines.contains(" ext4") && !lines.contains('#'), "{lines}");
    assert!(!text.contains("All figures"), "{text}");
    let verbose = render(&r, &terminal(Some(80), true));
    assert!(verbose.contains("All figures"), "{verbose}");
    // Throughput in MiB/s: 510,204 KiB/s ÷ 12.345 s ≈ 40.4 MiB/s.
    let full = render(&r, &terminal(None, false));
    assert!(
        full.contains("(MiB/s)") && !full.contains("(KiB/s)"),
        "{full}"
    );
}

/// Every line of `text` fits `width` characters.
fn assert_fits(text: &str, width: usize) {
    let wide: Vec<&str> = (text.lines())
        .filter(|l| l.chars().count() > width)
        .collect();
    assert!(wide.is_empty(), "wider than {width}: {wide:#?}\n{text}");
}

#[test]
fn compare_and_rank_fit_80_columns_and_keep_their_full_layout_in_a_pipe() {
    use fsbench_stats::compare::{compare, suite_columns};
    use fsbench_stats::rank::{Placing, rank};
    let r = three_filesystems();
    let columns = suite_columns(&r);
    let comparison = compare(std::slice::from_ref(&r), &columns, 0, 2.0);
    let narrow = super::compare::render(&columns, &comparison, Some(80), true);
    assert_fits(&narrow, 80);
    // One row per configuration, each with its verdict against ext4.
    assert!(
        narrow.contains("baseline") && narrow.contains("btrfs"),
        "{narrow}"
    );
    let full = super::compare::render(&columns, &comparison, None, true);
    assert!(full.lines().any(|l| l.chars().count() > 80), "{full}");
    let ranking = rank(std::slice::from_ref(&r), columns, Placing::Significance);
    let narrow = super::ranking::render(&ranking, Some(80));
    assert_fits(&narrow, 80);
    assert!(
        narrow.contains("Total points") && narrow.contains("1. ext4"),
        "{narrow}"
    );
}

/// Four configurations with long labels and a command workload's many figures per phase.
fn long_labels_and_many_figures() -> (SuiteResult, Vec<String>) {
    let mut r = SuiteResult::for_tests();
    let spec = Params::parse_list("command:tar").unwrap().remove(0);
    r.suite.workloads = vec![spec.spec()];
    fsbench_workloads::record_workloads(&mut r).unwrap();
    let labels = [
        "ext4-noatime",
        "xfs-logbsize-256k",
        "btrfs-compress-zstd",
        "ext4-journal-data",
    ];
    let figures = [
        "cpu user (s)",
        "cpu system (s)",
        "block read (MiB)",
        "block written (MiB)",
        "chars read (MiB)",
        "chars written (MiB)",
        "peak memory (MiB)",
    ];
    for (i, label) in labels.iter().enumerate() {
        let fs = ["ext4", "xfs", "btrfs", "ext4"][i];
        let config = format!("{fs}:label={label}");
        r.configurations.push(ConfigInfo {
            config: fsbench_testbed::define::parse_fs(&config)
                .unwrap()
                .remove(0),
            mkfs_version: None,
            fsck_version: None,
            mkfs_command: None,
            mount_options: None,
            crash: Vec::new(),
        });
        let mut phases = Vec::new();
        for p in spec.phases().iter() {
            let mut phase = serde_json::json!({"name": p.name, "elapsed_ns": 1, "ops": 1,
                "bytes": 0, "cpu_user_ns": 0, "cpu_system_ns": 0, "caches_dropped": true,
                "progress": [], "latency": {}, "errors": {}, "figures": []});
            for (k, f) in figures.iter().enumerate() {
                let (name, unit) = f.rsplit_once(" (").unwrap();
                phase["figures"]
                    .as_array_mut()
                    .unwrap()
                    .push(serde_json::json!({
                    "name": name, "unit": unit.trim_end_matches(')'), "higher_is_better": false,
                    "value": 1.0 + k as f64}));
                let values: Vec<f64> = [0.98, 1.0, 1.01]
                    .map(|x| x * 1234.5 / (k + 1) as f64)
                    .to_vec();
                r.summaries.push(MetricSummary {
                    config: label.to_string(),
                    workload: spec.label(),
                    phase: p.name.to_string(),
                    metric: name.into(),
                    dims: Vec::new(),
                    unit: unit.trim_end_matches(')').into(),
                    higher_is_better: false,
                    summary: fsbench_stats::summarize(&values).unwrap(),
                });
            }
            phases.push(phase);
        }
        let run = serde_json::json!({"run": 1, "position": 1, "config_key": i,
            "workload_key": 0, "config": label, "workload": spec.label(), "started_at": "",
            "status": "ok", "source": "", "mount_options": "", "phases": phases});
        r.runs.push(serde_json::from_value(run).unwrap());
    }
    (r, labels.map(String::from).to_vec())
}

#[test]
fn no_word_of_a_table_is_broken_at_80_columns() {
    let (r, labels) = long_labels_and_many_figures();
    for width in [80, 100] {
        let text = render(&r, &terminal(Some(width), false));
        assert_fits(&text, usize::from(width));
        let figures = text.split("Workload figures").nth(1).expect("figures");
        for whole in labels
            .iter()
            .map(String::as_str)
            .chain(["written", "(MiB)", "memory"])
        {
            assert!(
                figures.contains(whole),
                "{width}: `{whole}` broken:\n{figures}"
            );
        }
    }
}

#[test]
fn compare_leads_with_the_phases_verdicts_and_keeps_what_its_header_promises() {
    use fsbench_stats::compare::{compare, suite_columns};
    let r = three_filesystems();
    let columns = suite_columns(&r);
    let comparison = compare(std::slice::from_ref(&r), &columns, 0, 2.0);
    let summary = super::compare::render(&columns, &comparison, Some(80), false);
    let details = super::compare::render(&columns, &comparison, Some(80), true);
    assert_fits(&summary, 80);
    // The phases' rates only; the times and throughputs on request.
    assert!(!summary.contains("time (s)"), "{summary}");
    assert!(details.contains("time (s)"), "{details}");
    assert!(
        summary.contains("more figures") && summary.contains("--details"),
        "{summary}"
    );
    assert!(
        summary.lines().count() < details.lines().count(),
        "{summary}"
    );
    // The header promises the 95% CI of the mean: the narrow cells carry it.
    assert!(
        summary.replace('\n', " ").contains("[95% CI of the mean]"),
        "{summary}"
    );
    let rate = (comparison.rows.iter())
        .find(|r| r.key.metric == "rate")
        .unwrap();
    let ci = rate.cells[0].as_ref().unwrap().summary.ci95_low.unwrap();
    assert!(
        summary.contains(&format!("[{} –", super::figure(ci))),
        "{summary}"
    );
}

/// One unit rule for data rates wherever people read them: the terminal's tables, `compare`
/// and the HTML report's tables and charts all say MiB/s (the data keep KiB/s).
#[test]
fn throughput_is_mib_per_second_in_every_view() {
    use fsbench_stats::compare::{compare, suite_columns};
    let r = three_filesystems();
    let columns = suite_columns(&r);
    let comparison = compare(std::slice::from_ref(&r), &columns, 0, 2.0);
    let views = [
        render(&r, &terminal(None, true)),
        super::compare::render(&columns, &comparison, None, true),
        super::html::render(std::slice::from_ref(&r), &columns, 2.0),
    ];
    // 510,204 KiB/s ÷ 12.345 s = 41,329.6 KiB/s = 40.36 MiB/s for ext4's file-create.
    for text in &views {
        assert!(text.contains("MiB/s") && !text.contains("KiB/s"), "{text}");
        assert!(text.contains("40.3") || text.contains("40.4"), "{text}");
    }
}

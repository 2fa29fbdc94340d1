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
    let verdicts = text.find("Verdicts against ext4").expect("verdicts");
    let times = text.find("Phase times").expect("phase times");
    assert!(verdicts < times, "{text}");
    // The answer first, in one line per workload: ext4's times are the shortest.
    let answer = text.find("== Answer ==").expect("answer");
    assert!(answer < verdicts, "{text}");
    let answer = text[answer..verdicts]
        .split_whitespace()
        .collect::<Vec<_>>();
    assert!(
        answer
            .join(" ")
            .contains("ext4 is fastest overall (ahead in 4 of 4 phases"),
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
    let narrow = super::compare::render(&columns, &comparison, Some(80));
    assert_fits(&narrow, 80);
    // One row per configuration, each with its verdict against ext4.
    assert!(
        narrow.contains("baseline") && narrow.contains("btrfs"),
        "{narrow}"
    );
    let full = super::compare::render(&columns, &comparison, None);
    assert!(full.lines().any(|l| l.chars().count() > 80), "{full}");
    let ranking = rank(std::slice::from_ref(&r), columns, Placing::Significance);
    let narrow = super::ranking::render(&ranking, Some(80));
    assert_fits(&narrow, 80);
    assert!(
        narrow.contains("Total points") && narrow.contains("1. ext4"),
        "{narrow}"
    );
}

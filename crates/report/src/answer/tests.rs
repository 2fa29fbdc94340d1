//! The answer against the verdicts it rests on: every kind of phase (a leader, a tie, one
//! pair decided among undecided ones, the same, undecided, too noisy to bound), short or not,
//! in workloads whose headlines differ; each line's every claim is checked against the
//! pairwise verdicts `show` prints.

use super::*;
use fsbench_model::results::{ConfigInfo, MetricSummary};
use fsbench_stats::compare::{Pairwise, Verdict};

const CONFIGS: [&str; 3] = ["ext4", "xfs", "btrfs"];

/// Five runs' rates of one configuration in one phase.
type Rates = [f64; 5];
const BASE: Rates = [100.0, 101.0, 99.0, 100.5, 99.5];
const LOW: Rates = [80.0, 81.0, 79.0, 80.5, 79.5];
const FAST: Rates = [150.0, 151.0, 149.0, 150.5, 149.5];
const NEAR: Rates = [100.3, 100.9, 99.2, 100.4, 99.6];
const NEAR_TOO: Rates = [99.8, 101.2, 99.4, 100.2, 99.9];
const NOISY: Rates = [60.0, 140.0, 90.0, 130.0, 80.0];
const NOISY_TOO: Rates = [130.0, 70.0, 120.0, 85.0, 95.0];
const WILD: Rates = [10.0, 300.0, 40.0, 250.0, 20.0];
const WIDE: Rates = [60.0, 190.0, 90.0, 170.0, 115.0];

/// The kinds of phase the matrix walks: each configuration's rates.
const KINDS: [(&str, [Rates; 3]); 7] = [
    ("leader", [BASE, FAST, LOW]),
    ("other-leader", [BASE, LOW, FAST]),
    ("tie", [BASE, FAST, FAST]),
    ("one-pair", [BASE, WIDE, FAST]),
    ("same", [BASE, NEAR, NEAR_TOO]),
    ("undecided", [BASE, NOISY, NOISY_TOO]),
    ("unbounded", [BASE, WILD, NOISY]),
];

/// A suite of one workload whose phases are `(kind, short)`: a rate and a time per
/// configuration (a short phase's time is under the suite's 1 s).
fn suite(phases: &[(&str, bool)]) -> SuiteResult {
    suite_of(phases, 5)
}

/// [`suite`] of the first `runs` runs of each configuration.
fn suite_of(phases: &[(&str, bool)], runs: usize) -> SuiteResult {
    let mut s = SuiteResult::for_tests();
    s.id = Some(1);
    for (i, (kind, short)) in phases.iter().enumerate() {
        let rates = KINDS.iter().find(|(k, _)| k == kind).expect("a kind").1;
        let phase = format!("{kind}{}-{i}", if *short { "-short" } else { "" });
        for (config, rates) in CONFIGS.iter().zip(rates) {
            let secs = if *short { 0.5 } else { 5.0 };
            let rates = &rates[..runs];
            let times: Vec<f64> = rates.iter().map(|r| secs * 100.0 / r).collect();
            for (metric, unit, higher, values) in [
                ("rate", "files/s", true, rates.to_vec()),
                ("time", "s", false, times),
            ] {
                s.summaries.push(MetricSummary {
                    config: config.to_string(),
                    workload: "tree:x".into(),
                    phase: phase.clone(),
                    metric: metric.into(),
                    dims: Vec::new(),
                    unit: unit.into(),
                    higher_is_better: higher,
                    summary: fsbench_stats::summarize(&values).unwrap(),
                });
            }
        }
    }
    for config in CONFIGS {
        s.configurations.push(ConfigInfo {
            config: fsbench_testbed::define::parse_fs(config).unwrap().remove(0),
            mkfs_version: None,
            fsck_version: None,
            mkfs_command: None,
            mount_options: None,
            crash: Vec::new(),
        });
    }
    s
}

/// The verdict on `b` against `a` in `phase`, as `show` prints it.
fn verdict(pairs: &Pairwise, phase: &str, a: &str, b: &str) -> Verdict {
    let index = |c: &str| CONFIGS.iter().position(|x| *x == c).expect("a config");
    let row = (pairs.by_baseline[index(a)].rows.iter())
        .find(|r| r.key.phase == phase && r.key.metric == "rate")
        .expect("the phase's rate");
    row.cells[index(b)].as_ref().expect("a cell").verdict
}

/// The phase's verdicts as text: `ext4–xfs ▼, ext4–btrfs ?, xfs–btrfs ▲` (the second
/// against the first).
fn verdicts_text(pairs: &Pairwise, phase: &str) -> String {
    let mut out = Vec::new();
    for (i, a) in CONFIGS.iter().enumerate() {
        for b in &CONFIGS[i + 1..] {
            let v = verdict(pairs, phase, a, b);
            out.push(format!("{b} vs {a} {}", v.symbol()));
        }
    }
    out.join(", ")
}

/// `a`, `a and b`, `a, b and c` read back.
fn names(list: &str) -> Vec<String> {
    list.split(", ")
        .flat_map(|part| part.split(" and "))
        .map(|n| n.trim().to_string())
        .collect()
}

/// Checks every claim of a phase's line against its verdicts.
fn check_phase_line(pairs: &Pairwise, line: &str, short: bool, runs: usize) {
    let (phase, said) = line.split_once(": ").expect("PHASE: …");
    let rough = " (rough: under 1 s)";
    assert_eq!(said.ends_with(rough), short, "{line}");
    let said = said.trim_end_matches(rough);
    let beats = |a: &str, b: &str| verdict(pairs, phase, a, b) == Verdict::Worse;
    let decided = |a: &str, b: &str| beats(a, b) || beats(b, a);
    let all_pairs = || (0..3).flat_map(|i| (i + 1..3).map(move |j| (CONFIGS[i], CONFIGS[j])));
    if let Some((who, rest)) = said
        .split_once(" leads, ")
        .or_else(|| said.split_once(" share the lead, "))
    {
        let leaders = names(who);
        let behind = names(rest.split_once(" faster than ").expect("faster than").1);
        assert_eq!(leaders.len() + behind.len(), 3, "{line}");
        for l in &leaders {
            for b in &behind {
                assert!(beats(l, b), "{line}: {l} does not beat {b}");
            }
            for m in &leaders {
                assert!(l == m || !decided(l, m), "{line}: {l} and {m} are decided");
            }
        }
    } else if let Some((decided_text, apart)) = said.split_once("; not told apart: ") {
        let mut covered = 0;
        for claim in decided_text.split(", ") {
            let (a, b) = claim.split_once(" is ").expect("A is F × faster than B");
            let b = b.split_once(" faster than ").expect("faster than").1;
            assert!(beats(a, b), "{line}: {a} does not beat {b}");
            covered += 1;
        }
        for pair in apart.split(", ") {
            let (a, b) = pair.split_once(" and ").expect("A and B");
            assert!(!decided(a, b), "{line}: {a} and {b} are decided");
            covered += 1;
        }
        assert_eq!(covered, 3, "{line}: every pair said");
    } else if said.contains(" perform the same (within ±") {
        for (a, b) in all_pairs() {
            assert_eq!(verdict(pairs, phase, a, b), Verdict::Same, "{line}");
        }
    } else if let Some((_, tail)) = said.split_once(" runs each cannot tell them apart") {
        assert!(said.contains(&format!(": {runs} runs each")), "{line}");
        assert!(all_pairs().all(|(a, b)| !decided(a, b)), "{line}");
        assert!(
            all_pairs().any(|(a, b)| verdict(pairs, phase, a, b) == Verdict::Undecided),
            "{line}"
        );
        match tail.split_once("(about ") {
            Some((_, more)) => {
                let n: usize = more.split(' ').next().unwrap().parse().unwrap();
                assert!(
                    n > runs,
                    "{line}: {n} runs would resolve it, {runs} were made"
                );
            }
            None => assert!(tail.contains("would take over 1000 runs each"), "{line}"),
        }
    } else {
        panic!("a line the checks do not know: {line}");
    }
}

/// The answer of a workload of `phases`, every phase line checked; its lines, each after
/// its verdicts, for the matrix.
fn walk(phases: &[(&str, bool)]) -> Vec<String> {
    let s = suite(phases);
    let pairs = pairwise(&s, DEFAULT_NOISE_PERCENT);
    let lines = lines(&s);
    assert_eq!(lines.len(), phases.len() + 1, "{lines:?}");
    assert_eq!(lines[0].0, 0);
    let mut matrix = vec![lines[0].1.clone()];
    for ((level, line), (_, short)) in lines[1..].iter().zip(phases) {
        assert_eq!(*level, 1);
        check_phase_line(&pairs, line, *short, 5);
        let phase = line.split_once(": ").unwrap().0;
        matrix.push(format!(
            "  {line}\n      [{}]",
            verdicts_text(&pairs, phase)
        ));
    }
    matrix
}

#[test]
fn every_kind_of_phase_short_or_not_says_what_its_verdicts_say() {
    let mut phases = Vec::new();
    for (kind, _) in KINDS {
        phases.push((kind, false));
        phases.push((kind, true));
    }
    let matrix = walk(&phases);
    // Two leaders in different phases, and a tie: no one is fastest overall.
    assert!(
        matrix[0].contains("no configuration is fastest overall: xfs leads in 2, btrfs leads in 2, xfs and btrfs share the lead in 2 of 14 phases"),
        "{}",
        matrix[0]
    );
    eprintln!("{}", matrix.join("\n"));
}

#[test]
fn each_headline_follows_from_the_phases() {
    let cases: [(&[(&str, bool)], &str); 7] = [
        (
            &[("leader", false), ("leader", true), ("undecided", false)],
            "xfs is fastest overall (leads in 2 of 3 phases)",
        ),
        // Tied for the lead where it does not lead alone: still ahead of everyone overall.
        (
            &[("leader", false), ("leader", true), ("tie", false)],
            "xfs is fastest overall (leads in 2 of 3 phases, shares the lead in 1)",
        ),
        (
            &[("leader", false), ("other-leader", false), ("tie", true)],
            "no configuration is fastest overall: xfs leads in 1, btrfs leads in 1, xfs and btrfs share the lead in 1 of 3 phases",
        ),
        // A leader in half the phases only, or beside a pair decided elsewhere: not overall.
        (
            &[("leader", false), ("undecided", false)],
            "no configuration is fastest overall: xfs leads in 1 of 2 phases",
        ),
        (
            &[("one-pair", false), ("undecided", true)],
            "some pairs differ, but no configuration leads a phase",
        ),
        (
            &[("undecided", false), ("unbounded", false), ("same", true)],
            "no difference shown: 5 runs each cannot tell ext4, xfs and btrfs apart on this machine",
        ),
        (
            &[("same", false), ("same", true)],
            "ext4, xfs and btrfs perform the same in every phase",
        ),
    ];
    for (phases, headline) in cases {
        let matrix = walk(phases);
        assert_eq!(
            matrix[0],
            format!("tree:x (5 runs each): {headline}"),
            "{phases:?}"
        );
        eprintln!("{}\n", matrix.join("\n"));
    }
}

#[test]
fn the_bound_is_said_as_a_factor_beyond_100_percent() {
    let matrix = walk(&[("unbounded", false), ("undecided", false)]);
    assert!(matrix[1].contains("may differ by up to"), "{}", matrix[1]);
    assert!(
        matrix[2].contains("% of each other: 5 runs each"),
        "{}",
        matrix[2]
    );
}

#[test]
fn seconds_keep_two_significant_digits() {
    let shown: Vec<String> = [21.4, 4.34, 0.193, 0.00712, 0.0].map(super::seconds).into();
    assert_eq!(shown, ["21", "4.3", "0.19", "0.0071", "0"]);
}

/// One run each has no spread: the headline says there is no verdict, once for every phase,
/// and claims no bound (it said "within 0% of each other: 1 runs each cannot tell them
/// apart … about 0 runs each would resolve 3%", of a 1.5 × difference).
#[test]
fn one_run_each_gives_no_verdict_and_no_bound() {
    let said = lines(&suite_of(&[("leader", false), ("undecided", true)], 1));
    assert_eq!(
        said,
        [(
            0,
            "tree:x (1 run each): no verdict: one run gives no spread (--runs 3 or more \
             gives one)"
                .to_string()
        )]
    );
}

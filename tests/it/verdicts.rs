//! Verdicts on synthetic suites: runs with known differences and spreads are saved through
//! the results database (no filesystem is run), loaded back and compared.

use fsbench_measure::sysinfo::SystemInfoExt;
use fsbench_model::config::FsConfig;
use fsbench_model::measurement::{Dim, DimValue, Figure, PhaseMeasurement};
use fsbench_model::results::{
    ConfigInfo, ConfigKey, PhaseRecord, RunRecord, RunStatus, SCHEMA_VERSION, SuiteResult,
    SuiteStatus, TargetInfo, WorkloadKey,
};
use fsbench_model::suite::Suite;
use fsbench_model::system::SystemInfo;
use fsbench_stats::compare::{ALPHA, Column, Role, Verdict, compare, suite_columns};
use fsbench_store::Store;
use fsbench_workloads::Params;

/// Deterministic standard normal draws (SplitMix64 and Box–Muller): independent streams for
/// nearby seeds, so failures reproduce and runs are not correlated.
fn normals(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut uniform = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| (-2.0 * uniform().ln()).sqrt() * (2.0 * std::f64::consts::PI * uniform()).cos())
        .collect()
}

/// `n` values with exactly this mean and coefficient of variation (draws standardized).
pub(crate) fn exact_sample(seed: u64, n: usize, mean: f64, cv_percent: f64) -> Vec<f64> {
    let z = normals(seed, n);
    let m = z.iter().sum::<f64>() / n as f64;
    let sd = (z.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    z.iter()
        .map(|v| mean * (1.0 + cv_percent / 100.0 * (v - m) / sd))
        .collect()
}

const OPS: u64 = 100_000;

/// A phase of `secs` seconds with OPS units done, and the workload's own `figures`.
pub(crate) fn phase(name: &str, secs: f64, figures: Vec<Figure>) -> PhaseRecord {
    PhaseRecord {
        name: name.into(),
        measurement: PhaseMeasurement {
            elapsed_ns: (secs * 1e9) as u64,
            ops: OPS,
            bytes: 0,
            cpu_user_ns: (secs * 0.3e9) as u64,
            cpu_system_ns: (secs * 0.2e9) as u64,
            latency: Default::default(),
            errors: Default::default(),
            refused: 0,
            failures: Vec::new(),
            latency_timeline: Default::default(),
            jobs: Vec::new(),
            logs: Default::default(),
        },
        caches_dropped: true,
        sync_after_ns: None,
        rank_progress: Vec::new(),
        progress: Vec::new(),
        figures,
        notes: Vec::new(),
        unsupported: None,
        idle: None,
        shape: Default::default(),
    }
}

/// Saves a suite of configurations `a`, `b`, … (up to `e`) whose runs have these phases
/// (`runs[config][round]`), and loads it back.
pub(crate) fn saved_suite(db: &std::path::Path, runs: &[Vec<Vec<PhaseRecord>>]) -> SuiteResult {
    let configs: Vec<FsConfig> = ["a", "b", "c", "d", "e"][..runs.len()]
        .iter()
        .map(|c| FsConfig::existing(c))
        .collect();
    let suite = Suite {
        runs: runs[0].len() as u32,
        workloads: vec![Params::parse("tree:quick-shallow").unwrap().spec()],
        ..Suite::default()
    };
    let mut result = SuiteResult {
        schema_version: SCHEMA_VERSION,
        id: None,
        started_at: "now".into(),
        finished_at: String::new(),
        status: SuiteStatus::Running,
        error: None,
        suite,
        system: SystemInfo::collect(),
        target: TargetInfo {
            description: "synthetic".into(),
            image_size: None,
            device: None,
        },
        configurations: configs
            .iter()
            .map(|c| ConfigInfo {
                config: c.clone(),
                mkfs_version: None,
                fsck_version: None,
                mkfs_command: None,
                mount_options: None,
                crash: Vec::new(),
            })
            .collect(),
        skipped: Vec::new(),
        runs: Vec::new(),
        summaries: Vec::new(),
        warnings: Vec::new(),
        testbed: None,
        ceilings: Vec::new(),
        workload_records: Vec::new(),
    };
    fsbench_workloads::record_workloads(&mut result).unwrap();
    let mut store = Store::open(db).unwrap();
    let id = store.begin_suite(&result, "synthetic").unwrap();
    for (c, config_runs) in runs.iter().enumerate() {
        for (round, phases) in config_runs.iter().enumerate() {
            let record = RunRecord {
                run: round as u32 + 1,
                position: c as u32 + 1,
                config_key: ConfigKey(c as u32),
                workload_key: WorkloadKey(0),
                config: configs[c].label.clone(),
                workload: result.workload_records[0].label.clone(),
                started_at: "now".into(),
                status: RunStatus::Ok,
                error: None,
                source: "none".into(),
                mkfs_secs: None,
                mount_options: String::new(),
                phases: phases.clone(),
                unmount_secs: None,
                fsck: None,
                incomplete: None,
                loop_device: None,
                testbed: None,
                preparation: None,
                probe_after: None,
                output: Vec::new(),
            };
            store.record_run(id, &record, None).unwrap();
        }
    }
    result.status = SuiteStatus::Completed;
    store.finish_suite(id, &result).unwrap();
    crate::common::load_suite(db, id)
}

/// The verdict on `b` against `a` for the phase `dir-create` (its rate, the primary figure).
fn verdict_of(a_secs: &[f64], b_secs: &[f64], noise: f64) -> (Verdict, Verdict) {
    let dir = tempfile::tempdir().unwrap();
    let runs = [a_secs, b_secs].map(|secs| {
        secs.iter()
            .map(|&s| vec![phase("dir-create", s, Vec::new())])
            .collect::<Vec<_>>()
    });
    let suite = saved_suite(&dir.path().join("r.db"), &runs);
    let columns = suite_columns(&suite);
    let comparison = compare(std::slice::from_ref(&suite), &columns, 0, noise);
    let find = |metric: &str| {
        let row = comparison
            .rows
            .iter()
            .find(|r| r.key.phase == "dir-create" && r.key.metric == metric)
            .unwrap();
        (row.role, row.cells[1].as_ref().unwrap().verdict)
    };
    let (rate_role, rate) = find("rate");
    let (time_role, time) = find("time");
    assert_eq!((rate_role, time_role), (Role::Primary, Role::Derived));
    (rate, time)
}

#[test]
fn three_percent_with_one_percent_noise_over_ten_runs_is_decided() {
    let a = exact_sample(1, 10, 10.0, 1.0);
    let faster = exact_sample(2, 10, 10.0 / 1.03, 1.0);
    assert_eq!(
        verdict_of(&a, &faster, 2.0),
        (Verdict::Better, Verdict::Better)
    );
    let slower = exact_sample(3, 10, 10.0 * 1.03, 1.0);
    assert_eq!(
        verdict_of(&a, &slower, 2.0),
        (Verdict::Worse, Verdict::Worse)
    );
}

#[test]
fn fifty_percent_over_two_noisy_runs_is_undecided_not_same() {
    let a = exact_sample(4, 2, 10.0, 40.0);
    let b = exact_sample(5, 2, 15.0, 40.0);
    assert_eq!(
        verdict_of(&a, &b, 2.0),
        (Verdict::Undecided, Verdict::Undecided)
    );
}

#[test]
fn half_a_percent_with_half_a_percent_noise_over_twenty_runs_is_the_same() {
    let a = exact_sample(6, 20, 10.0, 0.5);
    let b = exact_sample(7, 20, 10.05, 0.5);
    assert_eq!(verdict_of(&a, &b, 2.0), (Verdict::Same, Verdict::Same));
    // Under a 0.1% threshold the same data cannot say "same".
    assert_ne!(verdict_of(&a, &b, 0.1).0, Verdict::Same);
}

#[test]
fn a_thousand_null_matrix_cells_make_few_false_discoveries() {
    const CELLS: usize = 1000;
    const RUNS: usize = 5;
    let dir = tempfile::tempdir().unwrap();
    // Both configurations draw every cell from one distribution: every discovery is false.
    let runs: Vec<Vec<Vec<PhaseRecord>>> = (0..2u64)
        .map(|c| {
            (0..RUNS as u64)
                .map(|round| {
                    let z = normals(1000 * c + round, CELLS);
                    let figures = (0..CELLS)
                        .map(|i| {
                            // One throughput cell of IOzone's matrix: test × file × record.
                            Figure::new("throughput", "KiB/s", true, 1e5 * (1.0 + 0.05 * z[i])).at(
                                &[
                                    Dim::new("test", DimValue::Text("write".into())),
                                    Dim::new("file size", DimValue::Bytes((i as u64 + 1) << 10)),
                                    Dim::new("record size", DimValue::Bytes(4 << 10)),
                                ],
                            )
                        })
                        .collect();
                    vec![phase("matrix", 10.0, figures)]
                })
                .collect()
        })
        .collect();
    let suite = saved_suite(&dir.path().join("r.db"), &runs);
    let columns: Vec<Column> = suite_columns(&suite);
    let comparison = compare(std::slice::from_ref(&suite), &columns, 0, 0.0);
    let cells: Vec<_> = comparison
        .rows
        .iter()
        .filter(|r| r.role == Role::MatrixCell)
        .filter_map(|r| r.cells[1].as_ref())
        .collect();
    assert_eq!(cells.len(), CELLS);
    let family = comparison
        .families
        .iter()
        .find(|f| f.role == Role::MatrixCell)
        .unwrap();
    assert_eq!(family.tests, CELLS);
    let uncorrected = cells
        .iter()
        .filter(|c| c.difference.as_ref().unwrap().p_value < ALPHA)
        .count();
    let discoveries = cells
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Better | Verdict::Worse))
        .count();
    // Uncorrected, about ALPHA × 1000 = 50 cells would be "significant"; with BH at 5% the
    // chance of even one false discovery among only true nulls is at most 5%.
    assert!(
        (25..=80).contains(&uncorrected),
        "{uncorrected} uncorrected p < {ALPHA}"
    );
    assert!(discoveries <= 1, "{discoveries} false discoveries");
}

/// Three configurations where one pair is decided and the noisy third is told apart from
/// neither: the answer names that pair, never a shared lead, and `show` prints every pair's
/// verdict it rests on.
#[test]
fn show_answers_from_the_pairwise_verdicts_it_prints() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let config = |seed, secs, cv| {
        exact_sample(seed, 5, secs, cv)
            .iter()
            .map(|&s| vec![phase("dir-create", s, Vec::new())])
            .collect::<Vec<_>>()
    };
    let suite = saved_suite(
        &db,
        &[
            config(11, 15.0, 1.0),
            config(12, 12.0, 45.0),
            config(13, 10.0, 1.0),
        ],
    );
    let id = suite.id.unwrap().to_string();
    let state = crate::common::tempdir();
    let out = crate::common::run(
        crate::common::fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["show", &id]),
    );
    let show = crate::common::text(&out.stdout);
    let section = |name: &str| {
        let start = show
            .find(&format!("== {name} =="))
            .unwrap_or_else(|| panic!("{show}"));
        let rest = &show[start + name.len() + 6..];
        rest[..rest.find("\n== ").unwrap_or(rest.len())].to_string()
    };
    let (a, b, c) = ("a (existing dir)", "b (existing dir)", "c (existing dir)");
    let answer = section("Answer");
    assert!(
        answer.contains(&format!(
            "dir-create: {c} is 1.50 × faster than {a}; not told apart: {a} and {b}, {b} and {c}"
        )),
        "{answer}"
    );
    assert!(!answer.contains("share the lead"), "{answer}");
    let verdicts = section("Verdicts, every pair");
    for (who, sign) in [
        (format!("{b} "), "?"),
        (format!("{c} "), "▲"),
        (format!("{c} "), "?"),
    ] {
        assert!(
            verdicts
                .lines()
                .any(|l| l.contains(sign) && l.contains(&who)),
            "{who}{sign}: {verdicts}"
        );
    }
    assert!(
        verdicts.contains(&format!("▲ {c} 1.50")) && verdicts.contains(&format!("than {a}")),
        "{verdicts}"
    );
    assert!(
        verdicts.contains("Holm over 3 phase verdicts"),
        "{verdicts}"
    );
}

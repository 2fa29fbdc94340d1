use super::{REPORTS, named};
use fsbench_workloads::WORKLOADS;

#[test]
fn an_unknown_format_is_refused_naming_the_known_ones() {
    let e = named("nope")
        .expect_err("no report is called nope")
        .to_string();
    assert!(e.contains("unknown report format `nope`"), "{e}");
    for r in REPORTS {
        assert!(e.contains(r.name()), "{e}");
    }
    assert_eq!(named("fio-json").unwrap().name(), "fio-json");
}

#[test]
fn every_format_a_workload_names_is_a_report_and_every_name_is_one_rows() {
    for workload in WORKLOADS {
        for name in workload.reports {
            assert!(
                named(name).is_ok(),
                "{}: no report `{name}`",
                workload.kind.name
            );
        }
    }
    let mut names: Vec<&str> = REPORTS.iter().map(|r| r.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), REPORTS.len(), "a name twice");
    assert!(
        REPORTS
            .iter()
            .all(|r| r.exported() || r.on_stdout().is_some())
    );
}

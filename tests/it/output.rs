//! What a person reads: exports written at the end of a run, as `fsbench export` writes them.

use crate::common::*;

#[test]
fn run_writes_the_exports_that_export_writes() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let files = ["run.json", "run.csv", "run.md"].map(|f| state.path().join(f));
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["run", "-q", "-w", "tree:dirs=2,files=2,size=1,levels=1"])
        .args(["--runs", "2", "--purpose", "exports", "--dir"])
        .arg(dir.path())
        .arg("--export-json")
        .arg(&files[0])
        .arg("--export-csv")
        .arg(&files[1])
        .arg("--export-markdown")
        .arg(&files[2]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = files.clone().map(|f| std::fs::read_to_string(f).unwrap());
    let doc: serde_json::Value = serde_json::from_str(&written[0]).unwrap();
    let id = doc["id"].as_i64().expect("the suite's ID");
    let export = |format: &str| {
        let out = run(fsbench(state.path()).arg("--db").arg(&db).args([
            "export",
            &id.to_string(),
            "--format",
            format,
        ]));
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert_eq!(written[1], export("csv"));
    assert_eq!(written[2], export("markdown"));
    assert!(written[2].contains("All figures"), "{}", written[2]);
    let exported: serde_json::Value = serde_json::from_str(&export("json")).unwrap();
    assert_eq!(doc["runs"], exported["runs"]);
    assert_eq!(doc["summaries"], exported["summaries"]);
}

#[test]
fn db_is_refused_by_commands_that_store_nothing() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["fdtree", "-d", "1", "-f", "1", "-s", "1", "-l", "1", "-o"])
        .arg(dir.path()));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("`fsbench fdtree` stores nothing"),
        "{}",
        text(&out.stderr)
    );
    // Refused before anything ran or was stored.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert!(!db.exists());
}

/// The names clap lists after refusing `nope` for `flag` of `command ID`.
fn known_formats(
    state: &std::path::Path,
    db: &std::path::Path,
    command: &str,
    flag: &str,
) -> Vec<String> {
    let out = run(fsbench(state)
        .arg("--db")
        .arg(db)
        .args([command, "1", flag, "nope"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let list = err
        .split_once("[possible values: ")
        .and_then(|(_, rest)| rest.split_once(']'))
        .unwrap_or_else(|| panic!("no known formats named: {err}"))
        .0;
    list.split(", ").map(String::from).collect()
}

/// Every report format (`export --format`, `show --output-format`) renders a suite that has
/// its workload; a workload's own format is refused, clearly, for the suites without it; an
/// unknown name is refused naming the known ones.
#[test]
fn every_report_renders_a_suite_with_its_workload() {
    use fsbench_workloads::{Params, WORKLOADS};
    let (dir, state) = (tempdir(), tempdir());
    let db = state.path().join("results.db");
    let job = state.path().join("read.fio");
    std::fs::write(&job, "[read]\nrw=randread\nbs=4k\nsize=1m\n").unwrap();
    let profile = state.path().join("read.ffsb");
    std::fs::write(
        &profile,
        "time=1\n[filesystem]\n\tnum_files=10\n\tnum_dirs=1\n\tmin_filesize=4k\n\
         \tmax_filesize=16k\n[end]\n[threadgroup]\n\tnum_threads=1\n\tread_weight=1\n\
         \tread_size=4k\n\tread_blocksize=4k\n[end]\n",
    )
    .unwrap();
    // One suite per workload that has formats of its own: its kind, how it is run.
    let suites = [
        ("io", vec!["fio".into(), job.into_os_string()]),
        ("ffsb", vec!["ffsb".into(), profile.into_os_string()]),
        (
            "iozone",
            vec![
                "run".into(),
                "-w".into(),
                "iozone:sizes=64k,records=4k,tests=0".into(),
            ],
        ),
        (
            "personality",
            vec![
                "run".into(),
                "-w".into(),
                "personality:varmail,nfiles=50,nthreads=2,runtime=1".into(),
            ],
        ),
    ];
    let mut ids = Vec::new();
    for (_, args) in &suites {
        // fsbench's document in a file: `fsbench fio --output-format json` is fio's JSON.
        let exported = state.path().join("suite.json");
        let out = run(fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(args)
            .args(["-q", "--runs", "1", "--export-json"])
            .arg(&exported)
            .arg("--dir")
            .arg(dir.path()));
        assert!(out.status.success(), "{}", text(&out.stderr));
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&exported).unwrap()).unwrap();
        ids.push(doc["id"].as_i64().expect("the suite's ID").to_string());
    }
    // The terminal leads with the own text reports of the suite's workloads.
    for (id, lead) in ids
        .iter()
        .zip([
            "read: (g=0): rw=randread, bs=(R) 4096B-4096B",
            "FFSB's report: ",
            "",
            "filebench's summary: ",
        ])
        .filter(|(_, lead)| !lead.is_empty())
    {
        let out = run(fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["show", id]));
        assert!(text(&out.stdout).starts_with(lead), "{}", text(&out.stdout));
    }
    let owned: Vec<&str> = WORKLOADS
        .iter()
        .flat_map(|k| k.reports.iter().copied())
        .collect();
    for (command, flag) in [("export", "--format"), ("show", "--output-format")] {
        let names = known_formats(state.path(), &db, command, flag);
        assert!(names.contains(&"json".to_string()), "{names:?}");
        if command == "export" {
            assert!(
                owned.iter().all(|o| names.iter().any(|n| n == o)),
                "{names:?}"
            );
        }
        for name in &names {
            for ((kind, _), id) in suites.iter().zip(&ids) {
                let own = Params::parse(kind).unwrap().reports();
                let out = run(fsbench(state.path())
                    .arg("--db")
                    .arg(&db)
                    .args([command, id, flag, name]));
                if own.contains(&name.as_str()) || !owned.contains(&name.as_str()) {
                    assert!(
                        out.status.success(),
                        "{name} of {kind}: {}",
                        text(&out.stderr)
                    );
                    assert!(!out.stdout.is_empty(), "{name} of {kind}: nothing");
                } else {
                    assert_eq!(out.status.code(), Some(2), "{name} of {kind}");
                    let err = text(&out.stderr);
                    assert!(err.contains("this suite has no"), "{name} of {kind}: {err}");
                }
            }
        }
    }
}

#[test]
fn a_phase_counted_only_at_its_end_has_no_steady_column() {
    let dir = tempdir();
    let state = tempdir();
    // Over the 4 s the steady-state analysis needs, its items counted at the end.
    let commands = state.path().join("wait.toml");
    std::fs::write(
        &commands,
        "[[phase]]\nname = \"wait\"\nrun = \"sleep 4.5\"\nitems = 10\n",
    )
    .unwrap();
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(state.path().join("results.db"))
        .args([
            "run",
            "-q",
            "--runs",
            "2",
            "--purpose",
            "counted at the end",
            "--dir",
        ])
        .arg(dir.path())
        .arg("-w")
        .arg(format!("command:file={}", commands.display())));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.contains("wait (items/s)"), "{table}");
    assert!(!table.contains("steady"), "{table}");
}

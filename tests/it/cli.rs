//! The command line without root: bad input, suite-file typos, JSON output, few runs, atomic.

use crate::common::*;

#[test]
fn bad_input_gets_a_clear_error_and_exit_code() {
    let cases: &[(&[&str], i32, &str)] = &[
        (&["run", "--fs", "minix"], 2, "unknown filesystem `minix`"),
        (
            &["run", "--dir", ".", "--runs", "0"],
            2,
            "--runs must be at least 1",
        ),
        (&["run", "--runs", "-3"], 2, "unexpected argument"),
        (&["run", "--dir", ".", "-w", "tree:dirs=0"], 2, "at least 1"),
        (
            &["run", "--dir", ".", "-w", "tree:files=0"],
            2,
            "at least 1",
        ),
        (
            &["run", "--dir", ".", "-w", "tree:dirs=-2"],
            2,
            "not a non-negative integer",
        ),
        (
            &["run", "--dir", ".", "-w", "tree:dirs=10000,levels=100"],
            2,
            "absurdly large",
        ),
        (
            &["run", "--dir", ".", "-w", "tree:huge"],
            2,
            "unknown tree preset `huge`",
        ),
        (
            &["run", "--dir", ".", "-w", "bogus"],
            2,
            "unknown workload `bogus`",
        ),
        (
            &["run", "--dir", ".", "-w", "archive:hosts=0"],
            2,
            "at least 1",
        ),
        (
            &["run", "--dir", ".", "--archive", "/nonexistent.tar"],
            2,
            "No such file",
        ),
        (&["run", "--image-size", "12Q"], 2, "unknown suffix"),
        (
            &["run", "--dir", "/etc/passwd", "-w", "tree:quick-shallow"],
            2,
            "is not a directory",
        ),
        (&["run", "--dir", "/nonexistent/x"], 2, "No such file"),
        (
            &["run", "--dir", ".", "--device", "/dev/null"],
            2,
            "cannot be used with",
        ),
        (
            &["run", "--dir", ".", "--force"],
            2,
            "--force applies only to --device",
        ),
        (&["run", "no-such-suite.toml"], 2, "cannot read suite file"),
        (&["fdtree", "-d", "0"], 2, "at least 1"),
        (&["fdtree", "-o", "/etc/passwd"], 2, "not a directory"),
        (&["fdtree", "-d", "x"], 2, "invalid value"),
        (
            &["archive", "extract", "/etc/passwd", "-C", "/nonexistent"],
            2,
            "No such file",
        ),
    ];
    for (args, code, needle) in cases {
        fails_with(args, *code, needle);
    }
    if is_root() {
        let root_cases: &[(&[&str], i32, &str)] = &[
            (
                &["run", "--image-size", "1P", "--fs", "ext4"],
                2,
                "does not fit",
            ),
            (
                &["run", "--image-size", "1M", "--fs", "xfs"],
                2,
                "too small for xfs",
            ),
            (
                &["run", "--image-dir", "/etc/passwd", "--fs", "ext4"],
                2,
                "is not a directory",
            ),
            (
                &["run", "--device", "/dev/null", "--fs", "ext4"],
                3,
                "neither a block device nor an image file",
            ),
        ];
        for (args, code, needle) in root_cases {
            fails_with(args, *code, needle);
        }
    }
}

#[test]
fn suite_file_typos_name_the_key() {
    let dir = tempdir();
    let suite = dir.path().join("typo.toml");
    std::fs::write(
        &suite,
        "purpose = \"x\"\n[[workload]]\nkind = \"tree\"\ndirz = 3\n",
    )
    .unwrap();
    fails_with(&["run", suite.to_str().unwrap()], 2, "dirz");
    std::fs::write(&suite, "runs = \"three\"\n").unwrap();
    fails_with(&["run", suite.to_str().unwrap()], 2, "runs");
}

#[test]
fn json_output_is_one_versioned_document_on_stdout() {
    let dir = tempdir();
    let state = tempdir();
    let out = run(json_run(state.path())
        .args([
            "--purpose",
            "test <json>",
            "-w",
            "tree:dirs=2,files=3,size=1,levels=2",
            "--runs",
            "3",
            "--dir",
        ])
        .arg(dir.path()));
    assert!(out.status.success());
    let doc = json(&out);
    assert_eq!(doc["schema_version"], 3);
    assert_eq!(doc["suite"]["purpose"], "test <json>");
    assert_eq!(doc["runs"].as_array().unwrap().len(), 3);
    let phase = &doc["runs"][0]["phases"][1];
    assert_eq!(phase["name"], "file-create");
    assert_eq!(phase["ops"], 21);
    assert_eq!(phase["bytes"], 21 * 4096);
    assert!(phase["elapsed_ns"].as_u64().unwrap() > 0);
    assert!(phase["cpu_system_ns"].is_u64());
    for op in ["create", "write", "close", "open-dir"] {
        let l = &phase["latency"][op];
        assert!(l["count"].as_u64().unwrap() > 0, "{op}");
        assert!(l["p50_ns"].as_u64().unwrap() <= l["p99_ns"].as_u64().unwrap());
        assert!(l["p99_ns"].as_u64().unwrap() <= l["max_ns"].as_u64().unwrap());
    }
    assert_eq!(phase["latency"]["write"]["count"], 21);
    assert!(phase["progress"].as_array().unwrap().last().unwrap()[1] == 21);
    let rate = doc["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["phase"] == "file-create" && s["metric"] == "rate")
        .unwrap();
    assert_eq!(rate["unit"], "files/s");
    assert_eq!(rate["higher_is_better"], true);
    assert_eq!(rate["n"], 3);
    for key in [
        "mean",
        "stddev",
        "min",
        "max",
        "median",
        "cv_percent",
        "ci95_low",
        "ci95_high",
    ] {
        assert!(rate[key].is_f64(), "{key} missing");
    }
    // Phases this small are flagged, not silently printed.
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w["kind"] == "short-phase"),
        "{warnings:?}"
    );
    assert!(
        doc["system"]["kernel_release"]
            .as_str()
            .is_some_and(|k| !k.is_empty())
    );
    assert!(doc["system"]["cpus"].as_u64().unwrap() >= 1);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the work directory was left"
    );
}

#[test]
fn few_runs_are_flagged() {
    let dir = tempdir();
    let state = tempdir();
    let out = run(fsbench(state.path())
        .args([
            "run",
            "-q",
            "-w",
            "tree:dirs=2,files=2,size=0,levels=1",
            "--runs",
            "1",
            "--dir",
        ])
        .arg(dir.path()));
    assert!(out.status.success());
    let table = text(&out.stdout);
    assert!(table.contains("only 1 run(s) per configuration"), "{table}");
    assert!(table.contains("too short to measure"), "{table}");
}

#[test]
fn atomic_loops_count_and_time_every_operation() {
    let dir = tempdir();
    let state = tempdir();
    let out = run(json_run(state.path())
        .args(["--runs", "1", "--dir"])
        .arg(dir.path())
        .args(["-w", "atomic:count=200,dd-count=20,dd-blocks=2,dd-bs=8k"]));
    assert!(out.status.success());
    let doc = json(&out);
    let phases = doc["runs"][0]["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["mkdir", "touch", "echo", "cat", "dd", "rm", "rmdir"]
    );
    let ops: Vec<u64> = phases.iter().map(|p| p["ops"].as_u64().unwrap()).collect();
    assert_eq!(ops, [200, 200, 200, 200, 20, 220, 200]);
    let line = "fsbench atomic echo\n".len() as u64;
    assert_eq!(
        phases[2]["bytes"],
        200 * line,
        "echo appends one line to each file"
    );
    assert_eq!(phases[3]["bytes"], 200 * line, "cat reads each file whole");
    assert_eq!(phases[4]["bytes"], 20 * 2 * 8192);
    for (phase, op) in [
        (0, "mkdir"),
        (1, "create"),
        (2, "write"),
        (3, "read"),
        (4, "write"),
        (5, "unlink"),
        (6, "rmdir"),
    ] {
        let l = &phases[phase]["latency"][op];
        assert!(l["count"].as_u64().unwrap() >= 20, "{op}: {l}");
        assert!(l["p50_ns"].as_u64().unwrap() <= l["max_ns"].as_u64().unwrap());
    }
    let rate = doc["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["phase"] == "rmdir" && s["metric"] == "rate")
        .unwrap();
    assert_eq!(rate["unit"], "dirs/s");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the loops' directories were left"
    );
}

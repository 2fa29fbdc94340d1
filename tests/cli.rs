//! The command line without root: bad input, fdtree compatibility, JSON output, directory runs.

mod common;

use std::path::Path;

use common::*;

fn fails_with(args: &[&str], code: i32, needle: &str) {
    let state = tempdir();
    let out = run(fsbench(state.path()).args(args));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: expected `{needle}` in:\n{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "{args:?}: an error printed data on stdout"
    );
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_code() {
    let cases: &[(&[&str], i32, &str)] = &[
        (&["run", "--fs", "zfs"], 2, "unknown filesystem `zfs`"),
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

fn tree_root(dir: &Path) -> std::path::PathBuf {
    let entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(
        entries[0]
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("LEVEL0.")
    );
    entries[0].clone()
}

/// Directories (the root included), files and bytes below `root`.
fn walk(root: &Path) -> (u64, u64, u64) {
    let (mut dirs, mut files, mut bytes) = (1, 0, 0);
    for e in std::fs::read_dir(root).unwrap().flatten() {
        let meta = e.metadata().unwrap();
        if meta.is_dir() {
            let (d, f, b) = walk(&e.path());
            dirs += d;
            files += f;
            bytes += b;
        } else {
            files += 1;
            bytes += meta.len();
        }
    }
    (dirs, files, bytes)
}

/// A directory for big trees: tmpfs when there is one, else the disk.
fn tree_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::Builder::new()
            .prefix("fsbench-test.")
            .tempdir_in(shm)
            .unwrap()
    } else {
        tempdir()
    }
}

#[test]
fn presets_counts_hold_on_a_created_tree() {
    use fsbench::workload::tree::TreeParams;
    for preset in [
        "small-shallow",
        "small-deep",
        "medium-shallow",
        "medium-deep",
        "quick",
        "quick-shallow",
        "quick-deep",
    ] {
        let p = TreeParams::parse(preset).unwrap();
        // The medium presets write 12-16 GB; their shape is checked with empty files and
        // their data volume by the formula fdtree uses (KiB = 4 × files × blocks).
        let size = if p.size > 1 { 0 } else { p.size };
        let dir = tree_dir();
        let state = tempdir();
        let out = run(fsbench(state.path())
            .args([
                "fdtree",
                "-C",
                "-d",
                &p.dirs.to_string(),
                "-f",
                &p.files.to_string(),
            ])
            .args(["-s", &size.to_string(), "-l", &p.levels.to_string(), "-o"])
            .arg(dir.path()));
        assert!(out.status.success(), "{preset}");
        let root = tree_root(dir.path());
        let (dirs, files, bytes) = walk(&root);
        assert_eq!((dirs, files), (p.total_dirs(), p.total_files()), "{preset}");
        assert_eq!(bytes, files * size as u64 * 4096, "{preset}");
        assert_eq!(
            p.total_kib(),
            4 * p.total_files() * p.size as u64,
            "{preset}"
        );
        // fdtree's names: the root's children are L<levels>D<n>, its files L<levels>F<n>.
        let top = format!("L{}D{}", p.levels, p.dirs);
        assert!(
            root.join(&top).is_dir() || p.levels == 0,
            "{preset}: no {top}"
        );
        assert!(root.join(format!("L{}F1", p.levels)).is_file(), "{preset}");
        let out = run(fsbench(state.path())
            .args(["fdtree", "-R", "-o"])
            .arg(dir.path()));
        assert!(out.status.success(), "{preset}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{preset}: -R left entries"
        );
    }
}

/// `(IN, OUT, TOTAL)` of a "TIME IN, OUT, TOTAL = a, b, c" line.
fn times(line: &str) -> (f64, f64, f64) {
    let v: Vec<f64> = line
        .split("= ")
        .nth(1)
        .unwrap()
        .split(", ")
        .map(|x| x.trim().parse().unwrap())
        .collect();
    (v[0], v[1], v[2])
}

fn rate(line: &str) -> f64 {
    line.split('=').nth(1).unwrap().trim().parse().unwrap()
}

#[test]
fn fdtree_prints_fdtrees_report_with_real_numbers() {
    let dir = tempdir();
    let state = tempdir();
    // In Berlin, `date` names the zone CET or CEST, never an offset.
    let out = run(fsbench(state.path())
        .env("TZ", "Europe/Berlin")
        .args(["fdtree", "-d", "4", "-f", "5", "-s", "2", "-l", "2", "-o"])
        .arg(dir.path()));
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("fdtree-1.0.2: starting at ") && lines[0].contains("LEVEL0."),
        "{stdout}"
    );
    assert_eq!(
        lines[1],
        "\tcreating/deleting 2 directory levels with 4 directories at each level"
    );
    assert_eq!(lines[2], "\tfor a total of 21 directories");
    assert_eq!(lines[3], "\twith 5 files of size 8KiB per directory");
    assert_eq!(lines[4], "\tfor a total of 105 files and 840KiB");
    let blocks = [
        (
            "DIRECTORY CREATE TIME IN, OUT, TOTAL = ",
            "\tDirectory creates per second =  ",
            21.0,
        ),
        (
            "FILE CREATE TIME IN, OUT, TOTAL      = ",
            "\tFile creates per second      =  ",
            105.0,
        ),
        (
            "FILE REMOVE TIME IN, OUT, TOTAL      = ",
            "\tFile removals per second     =  ",
            105.0,
        ),
        (
            "DIRECTORY REMOVE TIME IN, OUT, TOTAL = ",
            "\tDirectory removals per second =  ",
            21.0,
        ),
    ];
    let mut last_out = 0.0;
    for (head, rate_line, units) in blocks {
        let i = lines
            .iter()
            .position(|l| l.starts_with(head))
            .unwrap_or_else(|| panic!("no `{head}`:\n{stdout}"));
        let (tin, tout, total) = times(lines[i]);
        assert!(tin >= last_out - 0.0005 && tout >= tin, "{}", lines[i]);
        assert!((tout - tin - total).abs() < 0.002, "{}", lines[i]);
        assert!(
            lines[i]
                .split("= ")
                .nth(1)
                .unwrap()
                .split(", ")
                .all(|v| v.contains('.')),
            "ms precision: {}",
            lines[i]
        );
        assert!(lines[i + 1].starts_with(rate_line), "{}", lines[i + 1]);
        let r = rate(lines[i + 1]);
        assert!(
            r > 0.0,
            "fdtree printed 0 for fast phases; fsbench must not"
        );
        // The rate is units over the unrounded time; the printed time has 3 decimals.
        let implied = units / r;
        assert!(
            (implied - total).abs() <= 0.0006 + total * 0.01,
            "{} vs {}",
            implied,
            total
        );
        last_out = tout;
    }
    let kib = lines
        .iter()
        .find(|l| l.starts_with("\tKiB per second"))
        .unwrap();
    let create = lines
        .iter()
        .find(|l| l.starts_with("\tFile creates per second"))
        .unwrap();
    assert!(
        (rate(kib) / rate(create) - 8.0).abs() < 0.01,
        "KiB/s = 8 KiB × files/s"
    );
    // Dates before and after each phase, as fdtree's `date` calls.
    // `Mon Nov 23 05:50:01 UTC 2026`: six words, a clock in the fourth, a year last (a rate
    // line may contain " 20" too).
    let is_date = |l: &&&str| {
        let words: Vec<&str> = l.split_whitespace().collect();
        words.len() == 6
            && words[3].matches(':').count() == 2
            && words[5].len() == 4
            && words[5].parse::<u32>().is_ok()
    };
    let dates: Vec<&&str> = lines.iter().filter(is_date).collect();
    assert_eq!(dates.len(), 8, "{stdout}");
    assert!(
        dates
            .iter()
            .all(|l| l.contains(" CET ") || l.contains(" CEST ")),
        "the zone as `date` prints it: {dates:?}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn fdtree_create_then_remove() {
    let dir = tempdir();
    let state = tempdir();
    let out = run(fsbench(state.path())
        .args([
            "fdtree", "-C", "-d", "2", "-f", "2", "-s", "1", "-l", "2", "-o",
        ])
        .arg(dir.path()));
    assert!(out.status.success());
    let s = text(&out.stdout);
    assert!(
        s.contains("DIRECTORY CREATE") && s.contains("FILE CREATE") && !s.contains("REMOVE"),
        "{s}"
    );
    assert_eq!(walk(&tree_root(dir.path())), (7, 14, 14 * 4096));
    let out = run(fsbench(state.path())
        .args(["fdtree", "-R", "-d", "2", "-f", "2", "-l", "2", "-o"])
        .arg(dir.path()));
    assert!(out.status.success());
    let s = text(&out.stdout);
    assert!(
        s.contains("FILE REMOVE") && s.contains("DIRECTORY REMOVE") && !s.contains("CREATE TIME"),
        "{s}"
    );
    assert!(s.contains("File removals per second"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    fails_with(
        &["fdtree", "-R", "-o", dir.path().to_str().unwrap()],
        2,
        "no LEVEL0.* tree",
    );
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
    assert_eq!(doc["schema_version"], 2);
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
fn fdtree_remove_with_other_parameters_fails_loudly() {
    let dir = tempdir();
    let state = tempdir();
    let create = || {
        let out = run(fsbench(state.path())
            .args([
                "fdtree", "-C", "-d", "2", "-f", "2", "-s", "1", "-l", "2", "-o",
            ])
            .arg(dir.path()));
        assert!(out.status.success());
    };
    create();
    // Parameters read back from the tree: nothing given, everything removed.
    let out = run(fsbench(state.path())
        .args(["fdtree", "-R", "-o"])
        .arg(dir.path()));
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("\tfor a total of 7 directories"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // Parameters that do not match the tree (3 files per directory, not 2): the missing files
    // are counted and the command fails instead of printing rates of work not done.
    create();
    let out = run(fsbench(state.path())
        .args([
            "fdtree", "-R", "-d", "2", "-f", "3", "-s", "1", "-l", "2", "-o",
        ])
        .arg(dir.path()));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("7 failed calls (ENOENT)") && err.contains("does not match"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
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

/// Runs `args` with stdout a pipe whose reader has already gone (as after `| head -1` read
/// its line): every write to it fails with EPIPE.
fn with_closed_stdout(state: &Path, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = fsbench(state)
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_drained_within(child, std::time::Duration::from_secs(120))
}

/// Ended by SIGPIPE, as `cat` is, without a panic or an error message.
fn assert_ended_by_sigpipe(args: &[&str], out: &std::process::Output) {
    use std::os::unix::process::ExitStatusExt;
    let err = text(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{args:?}: {:?}: {err}",
        out.status
    );
    assert!(
        !err.contains("panicked") && !err.contains("error"),
        "{args:?}: not quiet: {err}"
    );
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let db = db.to_str().unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    let run_args = [
        "--db",
        db,
        "run",
        "-q",
        "--purpose",
        "pipes",
        "-w",
        "tree:dirs=2,files=2,size=1,levels=2",
        "--runs",
        "2",
        "--dir",
        dir_arg,
    ];
    for format in ["table", "json"] {
        let args = [&run_args[..], &["--output-format", format]].concat();
        let out = with_closed_stdout(state.path(), &args);
        assert_ended_by_sigpipe(&args, &out);
        // The run completed and was saved before the output was written.
        assert!(
            text(&out.stderr).contains("completed; see it again"),
            "{args:?}"
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let report_args = ["--db", db, "report", "1", "2", "-o", "-"];
    let commands: &[&[&str]] = &[
        &["--db", db, "list"],
        &["--db", db, "show", "1"],
        &["--db", db, "show", "1", "--output-format", "json"],
        &["--db", db, "export", "1"],
        &["--db", db, "export", "1", "--format", "csv"],
        &["--db", db, "export", "1", "--format", "markdown"],
        &["--db", db, "compare", "1", "2"],
        &["--db", db, "compare", "1", "2", "--output-format", "json"],
        &["--db", db, "rank", "1", "2"],
        &report_args,
        &[
            "fdtree", "-d", "2", "-f", "2", "-s", "1", "-l", "2", "-o", dir_arg,
        ],
        &[
            "archive",
            "extract",
            "generated:tiny",
            "--remove",
            "-C",
            dir_arg,
        ],
    ];
    for args in commands {
        assert_ended_by_sigpipe(args, &with_closed_stdout(state.path(), args));
    }
    // The report really goes to stdout with `-o -`.
    let html = run(fsbench(state.path()).args(report_args));
    assert!(html.status.success() && text(&html.stdout).starts_with("<!DOCTYPE html>"));
}

#[test]
fn a_run_on_a_loop_mount_cleans_up_before_a_closed_stdout_ends_it() {
    if !can_run(
        "a_run_on_a_loop_mount_cleans_up_before_a_closed_stdout_ends_it",
        &["mkfs.ext4"],
    ) {
        return;
    }
    let images = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let args = [
        "--db",
        db.to_str().unwrap(),
        "run",
        "-q",
        "--purpose",
        "pipes",
        "--fs",
        "ext4",
        "-w",
        "tree:dirs=2,files=2,size=1,levels=2",
        "--runs",
        "1",
        "--image-dir",
        images.path().to_str().unwrap(),
    ];
    let out = with_closed_stdout(state.path(), &args);
    assert_ended_by_sigpipe(&args, &out);
    assert_nothing_left(images.path());
    let state_files: Vec<_> = std::fs::read_dir(state.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert!(state_files.is_empty(), "state left: {state_files:?}");
    let shown = json(&run(fsbench(state.path()).args([
        "--db",
        db.to_str().unwrap(),
        "show",
        "1",
        "--output-format",
        "json",
    ])));
    assert_eq!(shown["status"], "completed");
    assert_eq!(shown["runs"][0]["status"], "ok");
    assert_eq!(shown["runs"][0]["fsck"]["clean"], true);
}

#[test]
fn tree_stat_and_read_phases_visit_every_file_as_mdtest_does() {
    let dir = tempdir();
    let state = tempdir();
    let out = run(json_run(state.path())
        .args(["--runs", "1"])
        .args([
            "-w",
            "tree:dirs=3,files=4,size=2,levels=2,stat,read",
            "--dir",
        ])
        .arg(dir.path()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let phases = doc["runs"][0]["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "dir-create",
            "file-create",
            "file-stat",
            "file-read",
            "file-remove",
            "dir-remove"
        ]
    );
    // 1 + 3 + 9 directories with 4 files each; every file stat'ed once and read whole.
    let files = 13 * 4;
    let (stat, read) = (&phases[2], &phases[3]);
    assert_eq!(stat["ops"], files);
    assert_eq!(stat["latency"]["stat"]["count"], files);
    assert_eq!(read["ops"], files);
    assert_eq!(read["bytes"], files * 2 * 4096);
    // One read call per block, as mdtest reads the bytes it wrote.
    assert_eq!(read["latency"]["read"]["count"], files * 2);
    let summaries = doc["summaries"].as_array().unwrap();
    let rate = |phase: &str| {
        summaries
            .iter()
            .find(|s| s["phase"] == phase && s["metric"] == "rate")
            .map(|s| s["unit"].clone())
    };
    assert_eq!(rate("file-stat"), Some(serde_json::json!("files/s")));
    assert_eq!(rate("file-read"), Some(serde_json::json!("files/s")));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "tree removed"
    );
}

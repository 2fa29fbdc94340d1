//! `fsbench fdtree`: fdtree.bash's report, its trees and counts, create then remove, and
//! the tree's mdtest phases (stat, read) visiting every file.

use std::path::Path;

use crate::common::*;

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

#[test]
fn presets_counts_hold_on_a_created_tree() {
    use fsbench_workloads::tree::TreeParams;
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
        let dir = tmpfs_tempdir();
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
        // The rate is units over the unrounded time; the printed TOTAL is OUT − IN as
        // printed, two times of 3 decimals each, so it is off by up to 0.001 s.
        let implied = units / r;
        assert!(
            (implied - total).abs() <= 0.0011 + total * 0.01,
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

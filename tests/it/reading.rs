//! What runs leave for a reader, on real (tmpfs) mounts: a phase with nothing to do has no
//! rate, latency over time is recorded, stored and drawn, IOzone's cells get a harness %, and
//! a report of suites of different workloads compares only what they share.

use crate::common::*;
use serde_json::Value;

/// `fsbench run` on fresh tmpfs mounts (two configurations) with `workload`, 2 runs, into
/// `db`: its JSON document.
fn tmpfs_suite(state: &std::path::Path, db: &std::path::Path, workload: &str) -> Value {
    let dir = tempdir();
    let out = run(json_run(state)
        .arg("--db")
        .arg(db)
        .arg("--image-dir")
        .arg(dir.path())
        .args([
            "--fs",
            "tmpfs",
            "--fs",
            "tmpfs:mount=noatime:label=tmpfs-noatime",
        ])
        .args(["-w", workload, "--runs", "2"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    json(&out)
}

fn phases<'a>(doc: &'a Value, name: &'a str) -> impl Iterator<Item = &'a Value> {
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["phases"].as_array().unwrap())
        .filter(move |p| p["name"] == name)
}

#[test]
fn an_empty_file_set_prints_no_rate_and_advice_names_size() {
    if !can_run("empty FFSB file set", &[]) {
        return;
    }
    let state = tempdir();
    let db = state.path().join("results.db");
    let doc = tmpfs_suite(state.path(), &db, "ffsb-large-write:threads=2,size=1m");
    for setup in phases(&doc, "setup") {
        assert_eq!(setup["idle"], "no files: the file set is empty", "{setup}");
    }
    let summaries = doc["summaries"].as_array().unwrap();
    assert!(
        !summaries.iter().any(|s| s["phase"] == "setup"),
        "no figure of a phase with nothing to do"
    );
    assert!(
        summaries
            .iter()
            .any(|s| s["phase"] == "run" && s["metric"] == "rate")
    );
    // Its phases are short: the advice names what large-write has, not a preset.
    let short: Vec<&str> = (doc["warnings"].as_array().unwrap().iter())
        .filter(|w| w["kind"] == "short-phase")
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert!(!short.is_empty());
    for w in &short {
        assert!(w.contains("`size=`") && !w.contains("preset"), "{w}");
    }
    // The tables, read back from the database: no setup column, the reason in a note.
    let shown = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["show", "1"]));
    let table = text(&shown.stdout);
    assert!(!table.contains("setup (files/s)"), "{table}");
    assert!(
        table.contains("setup: nothing to measure (no files: the file set is empty)"),
        "{table}"
    );
}

#[test]
fn latency_over_time_is_recorded_stored_and_drawn() {
    if !can_run("latency over time", &[]) {
        return;
    }
    let state = tempdir();
    let db = state.path().join("results.db");
    let doc = tmpfs_suite(state.path(), &db, "tree:dirs=6,files=4,size=1,levels=3");
    for p in phases(&doc, "file-create") {
        let timeline = &p["latency_timeline"];
        assert_eq!(timeline["interval_ms"], 100, "{p}");
        let points = timeline["points"].as_array().unwrap();
        assert!(!points.is_empty());
        // Every call timed is in exactly one interval.
        let calls: u64 = points.iter().map(|t| t["calls"].as_u64().unwrap()).sum();
        let counted: u64 = (p["latency"].as_object().unwrap().values())
            .map(|l| l["count"].as_u64().unwrap())
            .sum();
        assert_eq!(calls, counted);
        for t in points.iter().filter(|t| t["calls"].as_u64() > Some(0)) {
            let (p50, p99, max) = (
                t["p50_ns"].as_u64(),
                t["p99_ns"].as_u64(),
                t["max_ns"].as_u64(),
            );
            assert!(p50 <= p99 && p99 <= max && p50 > Some(0), "{t}");
        }
    }
    // Stored: the database gives the same series back.
    let export = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["export", "1", "--format", "json"]));
    let stored = json(&export);
    assert_eq!(
        phases(&stored, "dir-remove").next().unwrap()["latency_timeline"],
        phases(&doc, "dir-remove").next().unwrap()["latency_timeline"]
    );
    // Drawn: under each phase's progress curve, one latency chart per configuration.
    let page = state.path().join("report.html");
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["report", "1", "-o"])
        .arg(&page));
    assert!(out.status.success());
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("class=\"chart latency-chart\"").count(), 4 * 2);
    let progress = html.find("class=\"chart progress-chart\"").unwrap();
    let latency = html.find("class=\"chart latency-chart\"").unwrap();
    assert!(progress < latency);
}

#[test]
fn iozone_cells_get_a_harness_percent_and_reports_compare_only_what_suites_share() {
    if !can_run("IOzone harness % and a report of several workloads", &[]) {
        return;
    }
    let state = tempdir();
    let db = state.path().join("results.db");
    let iozone = tmpfs_suite(
        state.path(),
        &db,
        "iozone:sizes=64k+256k,records=4k+64k,tests=0+1",
    );
    // Every cell's throughput has a harness % beside it, against the same cell on tmpfs.
    let matrix = phases(&iozone, "matrix").next().unwrap();
    let figures = matrix["figures"].as_array().unwrap();
    let cells = |name: &str| -> Vec<&Value> {
        (figures.iter())
            .filter(|f| f["name"] == name)
            .map(|f| &f["dims"])
            .collect()
    };
    let throughput = cells("throughput");
    assert_eq!(
        throughput.len(),
        4 * 4,
        "4 cells × write, rewrite, read, reread"
    );
    assert_eq!(cells("harness %"), throughput);
    let ceilings = iozone["ceilings"].as_array().unwrap();
    assert_eq!(
        ceilings[0]["phases"][0]["cells"].as_array().unwrap().len(),
        16
    );

    tmpfs_suite(
        state.path(),
        &db,
        "atomic:count=50,dd-count=5,dd-blocks=2,dd-bs=4k",
    );
    let page = state.path().join("report.html");
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["report", "1", "2", "-o"])
        .arg(&page));
    assert!(out.status.success());
    let html = std::fs::read_to_string(&page).unwrap();
    // The comparison section, up to the suites' details that follow it.
    let comparison =
        &html[html.find("id=\"comparison\"").unwrap()..html.find("id=\"suite-").unwrap()];
    // A table per workload, each with its own suite's two configurations only.
    assert_eq!(comparison.matches("<table>").count(), 2, "{comparison}");
    for table in comparison.split("<table>").skip(1) {
        let header = table.split("</tr>").next().unwrap();
        assert_eq!(header.matches("class=\"swatch\"").count(), 2, "{header}");
        let suites = ["#1 ", "#2 "].map(|id| header.contains(id));
        assert!(suites[0] != suites[1], "one suite's columns: {header}");
    }
    assert!(!comparison.contains("<td>-</td>"), "{comparison}");
}

/// `rank --group`: each named group of workloads ranked on its own, its totals the sums of
/// its members' disciplines, so the groups' points add up to the total's.
#[test]
fn rank_ranks_named_groups_of_workloads_and_refuses_an_unknown_member() {
    if !can_run("rank --group", &[]) {
        return;
    }
    let (state, dir) = (tempdir(), tempdir());
    let db = state.path().join("results.db");
    let out = run(json_run(state.path())
        .arg("--db")
        .arg(&db)
        .arg("--image-dir")
        .arg(dir.path())
        .args(["--fs", "tmpfs", "--fs", "tmpfs:mount=noatime:label=b"])
        .args(["-w", "atomic:count=50,dd-count=5,dd-blocks=2,dd-bs=4k"])
        .args(["-w", "tree:quick-shallow", "--runs", "2"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rank = |args: &[&str]| {
        run(fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["rank", "1"])
            .args(args))
    };
    let out = rank(&["--group", "loops=atomic", "--group", "trees=tree"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    // Each section's points per configuration, from its "N. CONFIG — P points" lines.
    let points = |section: &str| -> Vec<(String, f64)> {
        let body = page.split(&format!("== {section} ==\n")).nth(1).unwrap();
        let body = body.split("\n== ").next().unwrap();
        let mut out: Vec<(String, f64)> = (body.lines())
            .filter_map(|l| {
                let (head, tail) = l.trim().split_once(" — ")?;
                let config = head.split_once(". ")?.1.to_string();
                Some((config, tail.strip_suffix(" points")?.parse().ok()?))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    };
    let (loops, trees, all) = (points("loops"), points("trees"), points("All workloads"));
    assert_eq!(all.len(), 2, "{page}");
    for i in 0..2 {
        assert_eq!(loops[i].0, all[i].0, "{page}");
        assert!((loops[i].1 + trees[i].1 - all[i].1).abs() < 1e-9, "{page}");
        assert!(loops[i].1 > 0.0 && trees[i].1 > 0.0, "{page}");
    }
    let loops_section = page.split("== trees ==").next().unwrap();
    assert!(!loops_section.contains("file-create"), "{page}");
    let out = rank(&["--group", "x=iozone"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no ranked workload is"),
        "{}",
        text(&out.stderr)
    );
}

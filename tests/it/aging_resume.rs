//! A suite of aged filesystems interrupted and resumed: the resume starts from the template
//! images the first attempt kept (no mkfs, no aging again) when their checksums match what
//! the runs recorded, makes a template again when it differs, and leaves nothing behind.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use crate::common::*;
use fsbench_testbed::testbed::scratch::MARKER;

/// Runs of suite 1 committed as ok so far, read straight from the database.
fn committed_runs(db: &Path) -> i64 {
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    conn.query_row(
        "SELECT COUNT(*) FROM runs WHERE suite_id = 1 AND status = 'ok'",
        [],
        |r| r.get(0),
    )
    .unwrap_or(0)
}

/// Every file below `dir`, one level of directories down, but the marker fsbench writes into
/// each directory it makes (which every such directory must carry).
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        match std::fs::read_dir(entry.path()) {
            Ok(inner) => {
                assert!(entry.path().join(MARKER).is_file(), "{:?}", entry.path());
                out.extend(
                    inner
                        .flatten()
                        .map(|e| e.path())
                        .filter(|p| !p.ends_with(MARKER)),
                );
            }
            Err(_) => out.push(entry.path()),
        }
    }
    out
}

#[test]
fn a_resumed_suite_starts_from_the_templates_its_first_attempt_kept() {
    if !can_run("resuming aged templates", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let (dir, state, data) = (tempdir(), tempdir(), tempdir());
    let db = data.path().join("results.db");
    let child = fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["run", "-q", "--fs", "ext4:age=light"])
        .args(["--fs", "ext4:age=light:label=second", "--runs", "4"])
        .args(["-w", "tree:dirs=10,files=10,size=1,levels=2"])
        .args(["--image-size", "512M", "--image-dir"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted (Ctrl-C) once both configurations have a run: both templates are made.
    let deadline = Instant::now() + limit();
    while committed_runs(&db) < 2 {
        assert!(Instant::now() < deadline, "no runs were committed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let first = wait_drained_within(child, limit());
    assert!(!first.status.success(), "the suite ended before Ctrl-C");
    let stderr = text(&first.stderr);
    assert!(stderr.contains("kept the template images in"), "{stderr}");
    // Only the kept templates are left: no mounts, loop devices or scratch directory.
    assert!(mounts_below(dir.path()).is_empty() && loops_below(dir.path()).is_empty());
    let mut kept = files_below(dir.path());
    kept.sort();
    let names: Vec<_> = kept.iter().map(|p| p.file_name().unwrap()).collect();
    assert_eq!(names, ["template-c0.img", "template-c1.img"], "{kept:?}");
    assert!(
        kept[0]
            .parent()
            .unwrap()
            .to_string_lossy()
            .contains("fsbench-templates.")
    );
    // The second configuration's template is changed behind fsbench's back.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&kept[1])
        .unwrap();
    std::io::Write::write_all(&mut f, &[0xff; 8]).unwrap();
    drop(f);

    let out = run(json_run(state.path())
        .arg("--db")
        .arg(&db)
        .args(["--resume", "1"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("reusing the template image").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("second: making the template image again") && stderr.contains("not the"),
        "{stderr}"
    );
    // Aged again only for the changed template.
    assert_eq!(stderr.matches("aging (light").count(), 1, "{stderr}");
    let doc = json(&out);
    assert_eq!(doc["status"], "completed");
    let runs: Vec<&serde_json::Value> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "ok")
        .collect();
    assert_eq!(runs.len(), 8);
    for (config, makes) in [("ext4 age=light", 1), ("second", 2)] {
        let of: Vec<_> = runs.iter().filter(|r| r["config"] == config).collect();
        assert_eq!(of.len(), 4, "{config}");
        // mkfs (and aging) once per template made: by the first attempt, and for the
        // changed one again by the resume.
        let mkfs = of.iter().filter(|r| r["mkfs_secs"].is_f64()).count();
        let made = of
            .iter()
            .filter(|r| r["preparation"]["template"]["made_here"] == true)
            .count();
        assert_eq!((mkfs, made), (makes, makes), "{config}");
        let digest = &of[0]["preparation"]["tree_digest"];
        assert!(digest.is_string());
        for r in &of {
            assert_eq!(
                &r["preparation"]["tree_digest"], digest,
                "{config}: a run started from another tree"
            );
        }
    }
    let checksums = |config: &str| -> Vec<String> {
        let mut c: Vec<String> = runs
            .iter()
            .filter(|r| r["config"] == config)
            .map(|r| r["preparation"]["template"]["checksum"].to_string())
            .collect();
        c.sort();
        c.dedup();
        c
    };
    assert_eq!(checksums("ext4 age=light").len(), 1, "the template changed");
    assert_eq!(
        checksums("second").len(),
        2,
        "the changed template was used"
    );
    // Completed: the templates are gone with the suite.
    assert_all_undone(dir.path(), state.path());
}

//! What a workload had to reduce is recorded as a note, said on the console as it happens,
//! and shown again by every output (JSON, the database, the terminal tables).

use std::path::Path;
use std::time::Duration;

use crate::common::*;

/// A tmpfs of `size` at `dir/small`, unmounted when dropped.
struct SmallTmpfs(std::path::PathBuf);

impl SmallTmpfs {
    fn mount(dir: &Path, size: &str) -> SmallTmpfs {
        let path = dir.join("small");
        std::fs::create_dir(&path).unwrap();
        let out = output_within(
            std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
                .arg(&path),
            Duration::from_secs(30),
        );
        assert!(out.status.success());
        SmallTmpfs(path)
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = output_within(
            std::process::Command::new("umount").arg(&self.0),
            Duration::from_secs(30),
        );
    }
}

/// Runs `workload` once per run on a tmpfs of `size`; returns the run's JSON, the same suite
/// as `fsbench show` gives it back from the database, its table and the run's stderr.
fn run_small(
    workload: &str,
    size: &str,
    runs: &str,
) -> (serde_json::Value, serde_json::Value, String, String) {
    let dir = tempdir();
    let state = tempdir();
    let db = dir.path().join("results.db");
    let small = SmallTmpfs::mount(dir.path(), size);
    let limit = Duration::from_secs(300);
    let out = output_within(
        json_run(state.path())
            .arg("--db")
            .arg(&db)
            .args(["--runs", runs, "--dir"])
            .arg(&small.0)
            .args(["-w", workload, "--purpose", "notes test"]),
        limit,
    );
    assert!(out.status.success());
    let doc = json(&out);
    let id = doc["id"].as_i64().expect("saved").to_string();
    let shown = output_within(
        fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["show", &id, "--output-format", "json"]),
        limit,
    );
    let table = output_within(
        fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["show", &id]),
        limit,
    );
    assert!(shown.status.success() && table.status.success());
    (doc, json(&shown), text(&table.stdout), text(&out.stderr))
}

/// The notes of every run's first phase.
fn first_phase_notes(doc: &serde_json::Value) -> Vec<String> {
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["phases"][0]["notes"].as_array().unwrap().clone())
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn alloc_shrinking_its_file_to_fit_is_a_note_everywhere_and_said_in_order() {
    if !can_run("alloc on a small tmpfs", &[]) {
        return;
    }
    let (doc, shown, table, err) = run_small("alloc:quick,methods=fallocate", "64m", "2");
    let notes = first_phase_notes(&doc);
    let shrink =
        "files of 51.0 MiB (the 256.0 MiB asked for do not fit in 80% of the 64.0 MiB free)";
    assert_eq!(
        notes.iter().filter(|n| *n == shrink).count(),
        2,
        "one per run: {notes:?}"
    );
    assert_eq!(
        first_phase_notes(&shown),
        notes,
        "the database keeps the notes"
    );
    assert!(table.contains(shrink), "{table}");
    // The console says it when the phase ends, once for the suite: after the suite's start,
    // before the first run's line, and not again.
    let position = |needle: &str| {
        err.lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` in\n{err}"))
    };
    let order = [
        position("suite ID"),
        position("suite `"),
        position(&format!(
            "[1/2] tmpfs (existing dir) alloc:size=256M,methods=fallocate fallocate: {shrink} \
             (said once for the suite)"
        )),
        position("run 1 ·"),
        position("run 2 ·"),
        position("completed; see it again"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{err}");
    assert_eq!(err.matches(shrink).count(), 1, "{err}");
}

#[test]
fn iozone_cells_that_do_not_fit_are_one_note_everywhere() {
    if !can_run("iozone on a small tmpfs", &[]) {
        return;
    }
    let (doc, shown, table, err) =
        run_small("iozone:sizes=1m+28m+64m,records=1m,tests=0", "32m", "1");
    // 28 MiB fits in IOzone's former 90% of 32 MiB but not in the shared 80%.
    let skipped = "skipping files of 28.0 MiB and larger (2 of 3 cells, file sizes 28M+64M): \
                   1 thread(s)' files of that size do not fit in 80% of the 32.0 MiB free";
    assert_eq!(first_phase_notes(&doc), [skipped]);
    assert_eq!(first_phase_notes(&shown), [skipped]);
    assert!(table.contains(skipped), "{table}");
    assert!(err.contains(skipped), "{err}");
    let sizes: Vec<u64> = matrix_cells(&doc)
        .iter()
        .map(|c| c["file_size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [1 << 20, 1 << 20], "write and rewrite of 1 MiB only");
}

#[test]
fn a_command_suite_says_each_note_once_not_once_per_run_and_phase() {
    let dir = tempdir();
    let state = tempdir();
    let runs = 6;
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(state.path().join("results.db"))
        .args(["run", "-q", "--output-format", "json", "--dir"])
        .arg(dir.path())
        .args(["--runs", &runs.to_string(), "--purpose", "notes once"])
        .args(["--command-phase", "write=head -c 100000 /dev/zero > f"])
        .args(["--command-phase", "read=cat f > /dev/null"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let doc = json(&out);
    let notes: Vec<&str> = (doc["runs"].as_array().unwrap().iter())
        .flat_map(|r| r["phases"].as_array().unwrap())
        .flat_map(|p| p["notes"].as_array().unwrap())
        .map(|n| n.as_str().unwrap())
        .collect();
    let mut distinct = notes.clone();
    distinct.sort();
    distinct.dedup();
    for note in &distinct {
        assert!(err.matches(note).count() <= 1, "said again: {note}\n{err}");
    }
    // The suite's three lines, a line per run, and each distinct note once (besides the
    // warnings about a machine others load).
    let lines = (err.lines())
        .filter(|l| !l.starts_with("fsbench: warning:"))
        .count();
    assert!(lines <= 3 + runs + distinct.len(), "{lines} lines:\n{err}");
}

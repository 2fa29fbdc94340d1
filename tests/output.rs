//! What a person reads: exports written at the end of a run, as `fsbench export` writes them.

mod common;

use common::*;

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

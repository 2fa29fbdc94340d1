//! The xattr workload: attributes really set, read back, listed and removed on every file;
//! a filesystem that cannot hold them says why instead of timing failures.

use crate::common::*;

/// Per phase of the run's first configuration's first run: (name, ops, bytes, unsupported).
fn phases(doc: &serde_json::Value, config: &str) -> Vec<(String, u64, u64, Option<String>)> {
    let run = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["config"] == config)
        .unwrap_or_else(|| panic!("no run of {config}: {doc}"));
    run["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["ops"].as_u64().unwrap(),
                p["bytes"].as_u64().unwrap(),
                p["unsupported"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn every_file_gets_its_attributes_set_read_back_listed_and_removed() {
    let (dir, state) = (tempdir(), tempdir());
    let db = state.path().join("results.db");
    let out = run(json_run(state.path())
        .args(["--runs", "1", "--dir"])
        .arg(dir.path())
        .args(["-w", "xattr:files=1200,attrs=3,size=100", "--db"])
        .arg(&db));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let config = doc["runs"][0]["config"].as_str().unwrap().to_string();
    let got = phases(&doc, &config);
    let want = [
        ("create", 1200, 0),
        ("set", 3600, 3600 * 100),
        // Every value read back at its full length (a missing one is an error, counted).
        ("get", 3600, 3600 * 100),
        ("list", 1200, 0),
        ("remove", 3600, 0),
        ("unlink", 1200, 0),
    ];
    for ((name, ops, bytes, unsupported), (w_name, w_ops, w_bytes)) in got.iter().zip(want) {
        assert_eq!(
            (name.as_str(), *ops, *bytes, unsupported),
            (w_name, w_ops, w_bytes, &None),
            "{got:?}"
        );
    }
    // One latency per attribute call, none failed.
    let run = &doc["runs"][0];
    for p in run["phases"].as_array().unwrap()[1..5].iter() {
        assert_eq!(p["errors"], serde_json::json!({}), "{p}");
        assert!(p["latency"]["xattr"].is_object(), "{p}");
    }
    assert_empty(dir.path());
}

#[test]
fn a_filesystem_that_cannot_hold_the_values_says_why_and_another_measures_them() {
    if !can_run("xattr limits of ext4", &["mkfs.ext4", "mkfs.xfs"]) {
        return;
    }
    let (images, state) = (tempdir(), tempdir());
    let db = state.path().join("results.db");
    // 2 × 3000 B on one file: past ext4's inode and one block, unless ea_inode stores
    // large values in inodes of their own; xfs keeps them in blocks of their own.
    let (out, doc) = image_run_json(
        images.path(),
        state.path(),
        &[
            "--runs",
            "1",
            "--fs",
            "ext4",
            "--fs",
            "ext4:mkfs=-O ea_inode:label=ea",
            "--fs",
            "xfs",
            "-w",
            "xattr:files=40,attrs=2,size=3000",
            "--db",
            db.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ext4 = phases(&doc, "ext4");
    for (name, ops, _, unsupported) in &ext4[1..5] {
        let why = unsupported
            .as_deref()
            .unwrap_or_else(|| panic!("{name}: {ext4:?}"));
        assert!(why.contains("ENOSPC") && why.contains("ea_inode"), "{why}");
        assert_eq!(*ops, 0, "{name}");
    }
    assert_eq!((ext4[0].1, ext4[5].1), (40, 40), "{ext4:?}");
    for config in ["ea", "xfs"] {
        let got = phases(&doc, config);
        assert_eq!(
            got.iter().map(|p| (p.1, &p.3)).collect::<Vec<_>>(),
            [40, 80, 80, 40, 80, 40]
                .iter()
                .map(|n| (*n, &None))
                .collect::<Vec<_>>(),
            "{config}: {got:?}"
        );
    }
    assert_nothing_left(images.path());
}

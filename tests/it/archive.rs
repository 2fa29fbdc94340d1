//! The archive workload: GNU tar compatibility, refused malicious members, a real EMLINK,
//! removal, and bounded memory on a million entries.

use std::process::Command;

use crate::common::*;
use crate::traces::with_peak;

fn tar_available() -> bool {
    has_tool("tar") && status(Command::new("tar").arg("--version")).success()
}

#[test]
fn gnu_tar_and_fsbench_extract_the_same_tree() {
    if !tar_available() {
        skip("GNU tar comparison: tar is not installed");
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    // Long pool paths, links, empty files, a few regular files and a popular pool file.
    let shape = "tiny,popular=300,regular=20,empty=50";
    // fsbench writes plain, gzip and zstd; the compressors themselves write the others.
    let compressors = [
        ("a.tar.xz", "xz"),
        ("a.tar.bz2", "bzip2"),
        ("a.tar.lzo", "lzop"),
    ];
    for name in [
        "a.tar",
        "a.tar.gz",
        "a.tar.zst",
        "a.tar.xz",
        "a.tar.bz2",
        "a.tar.lzo",
    ] {
        let tarball = dir.path().join(name);
        let compressor = compressors.iter().find(|c| c.0 == name).map(|c| c.1);
        if compressor.is_some_and(|tool| !has_tool(tool)) {
            skip(&format!(
                "{name}: {} is not installed (scripts/test.sh installs it)",
                compressor.unwrap_or_default()
            ));
            continue;
        }
        let generated = match compressor {
            Some(_) => dir.path().join("plain.tar"),
            None => tarball.clone(),
        };
        let out = run(fsbench(state.path())
            .args(["archive", "generate", shape, "-o"])
            .arg(&generated));
        assert!(out.status.success(), "{name}");
        if let Some(tool) = compressor {
            let compressed = run(Command::new(tool).arg("-c").arg(&generated));
            assert!(compressed.status.success(), "{tool}");
            std::fs::write(&tarball, compressed.stdout).unwrap();
            std::fs::remove_file(&generated).unwrap();
        }
        let (gnu, ours) = (dir.path().join("gnu"), dir.path().join("ours"));
        std::fs::create_dir(&gnu).unwrap();
        std::fs::create_dir(&ours).unwrap();
        let mut tar = Command::new("tar");
        tar.arg("-xf").arg(&tarball).arg("-C").arg(&gnu);
        let gnu_ran = if name.ends_with(".zst") && !has_tool("zstd") {
            println!("zstd is not installed; the .zst archive is checked by fsbench alone");
            false
        } else {
            assert!(status(&mut tar).success(), "GNU tar failed on {name}");
            true
        };
        let out = run(fsbench(state.path())
            .args(["archive", "extract"])
            .arg(&tarball)
            .arg("-C")
            .arg(&ours));
        assert!(out.status.success(), "{name}");
        let records: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ours_tree = tree(&ours);
        if gnu_ran {
            assert_eq!(ours_tree, tree(&gnu), "{name}: the trees differ");
        }
        assert_eq!(
            records[0]["ops"].as_u64().unwrap() as usize,
            ours_tree.len(),
            "one unit per entry"
        );
        // BackupPC's shape: pool files at cpool/X/Y/Z/<32 hex>, linked from the backups.
        assert!(
            ours_tree
                .keys()
                .any(|p| p.len() == "cpool/0/0/0/".len() + 32 && p.starts_with("cpool/0/0/0/000"))
        );
        let popular = ours_tree.values().map(|v| v.2).max().unwrap();
        assert!(popular > 300, "the popular pool file has {popular} links");
        std::fs::remove_dir_all(&gnu).unwrap();
        std::fs::remove_dir_all(&ours).unwrap();
        std::fs::remove_file(&tarball).unwrap();
    }
    // The generated stream (no tar in between) makes the same tree, and removal empties it.
    let out = run(fsbench(state.path())
        .args([
            "archive",
            "extract",
            &format!("generated:{shape}"),
            "--remove",
            "-C",
        ])
        .arg(dir.path()));
    assert!(out.status.success());
    let records: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        records[0]["ops"], records[1]["ops"],
        "removed as many entries as extracted"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "removal left entries"
    );
}

/// A tar member with a raw name, bypassing the tar crate's path checks.
fn raw_member(
    builder: &mut tar::Builder<Vec<u8>>,
    name: &str,
    kind: tar::EntryType,
    link: &str,
    data: &[u8],
) {
    let mut h = tar::Header::new_gnu();
    h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
    h.as_gnu_mut().unwrap().linkname[..link.len()].copy_from_slice(link.as_bytes());
    h.set_entry_type(kind);
    h.set_mode(0o644);
    h.set_size(data.len() as u64);
    h.set_cksum();
    builder.append(&h, data).unwrap();
}

#[test]
fn malicious_members_are_refused_and_counted() {
    let dir = tempdir();
    let state = tempdir();
    let (target, outside) = (dir.path().join("target"), dir.path().join("outside"));
    std::fs::create_dir(&target).unwrap();
    std::fs::create_dir(&outside).unwrap();
    let absolute = format!("{}/absolute", outside.display());
    let mut b = tar::Builder::new(Vec::new());
    raw_member(&mut b, "fine", tar::EntryType::Regular, "", b"ok");
    raw_member(&mut b, "../climb", tar::EntryType::Regular, "", b"x");
    raw_member(&mut b, &absolute, tar::EntryType::Regular, "", b"x");
    raw_member(
        &mut b,
        "evil",
        tar::EntryType::Symlink,
        &outside.display().to_string(),
        b"",
    );
    raw_member(&mut b, "evil/through", tar::EntryType::Regular, "", b"x");
    raw_member(&mut b, "sneaky", tar::EntryType::Link, "../outside/x", b"");
    let tarball = dir.path().join("evil.tar");
    std::fs::write(&tarball, b.into_inner().unwrap()).unwrap();

    let out = run(fsbench(state.path())
        .args(["archive", "extract"])
        .arg(&tarball)
        .arg("-C")
        .arg(&target));
    assert!(out.status.success());
    let records: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(records[0]["refused"], 4, "{}", records[0]);
    assert_eq!(
        records[0]["ops"], 2,
        "the file and the symlink itself are fine"
    );
    let failures = records[0]["failures"].as_array().unwrap();
    assert!(
        failures
            .iter()
            .any(|f| f.as_str().unwrap().contains("path through a symlink")),
        "{failures:?}"
    );
    assert!(text(&out.stderr).contains("INCOMPLETE TREE"));
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "something was written outside"
    );
    assert!(!dir.path().join("climb").exists());
    assert_eq!(std::fs::read(target.join("fine")).unwrap(), b"ok");
}

#[test]
fn emlink_is_counted_and_the_run_marked_incomplete() {
    if !can_run("EMLINK on ext4", &["mkfs.ext4"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    // ext4 allows 65,000 links to one inode; the popular pool file gets 66,000 more.
    let out = run(json_run(state.path())
        .arg("--db")
        .arg(&db)
        .args(["--fs", "ext4", "--runs", "1", "--image-dir"])
        .arg(dir.path())
        .args([
            "-w",
            "archive:pool=10,hosts=1,backups=1,files=10,popular=66000",
        ]));
    assert!(out.status.success(), "EMLINK must not abort the run");
    let doc = json(&out);
    let run0 = &doc["runs"][0];
    assert_eq!(run0["status"], "ok");
    let emlink = run0["phases"][0]["errors"]["EMLINK"].as_u64().unwrap();
    assert!(
        (1_000..=1_010).contains(&emlink),
        "{emlink} EMLINK failures"
    );
    assert!(run0["incomplete"].as_str().unwrap().contains("EMLINK"));
    assert!(
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["kind"] == "incomplete-tree")
    );
    assert!(
        run0["phases"][0]["failures"][0]
            .as_str()
            .unwrap()
            .starts_with("EMLINK: pc/popular/")
    );
    assert_eq!(run0["fsck"]["clean"], true);
    // Every output says so: the table, the CSV, the HTML report.
    let shown = text(
        &run(fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["show", "1"]))
        .stdout,
    );
    assert!(
        shown.contains("INCOMPLETE TREE") && shown.contains("EMLINK"),
        "{shown}"
    );
    let csv = text(
        &run(fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["export", "1", "--format", "csv"]))
        .stdout,
    );
    assert!(csv.contains("ok (incomplete tree)"));
    let page = dir.path().join("r.html");
    assert!(
        run(fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["report", "1", "-o"])
            .arg(&page))
        .status
        .success()
    );
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .contains("incomplete tree: extract: EMLINK")
    );
    std::fs::remove_file(&page).unwrap();
    assert_nothing_left(dir.path());
}

#[test]
fn a_million_entries_in_bounded_memory() {
    let dir = tmpfs_tempdir();
    let state = tempdir();
    // The peak is fsbench's own memory's (`VmHWM`), not wait4's `ru_maxrss`, which starts
    // from this test process's resident size (212.9 MiB reported once in CI).
    let (out, peak) = with_peak(
        fsbench(state.path())
            .args([
                "archive",
                "extract",
                "generated:seed-10pct",
                "--remove",
                "-C",
            ])
            .arg(dir.path()),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let records: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let entries = records[0]["ops"].as_u64().unwrap();
    assert!(entries > 1_000_000, "{entries}");
    assert_eq!(records[1]["ops"].as_u64().unwrap(), entries);
    let rss_mib = peak as f64 / (1 << 20) as f64;
    println!("peak RSS for {entries} entries extracted and removed: {rss_mib:.1} MiB");
    assert!(rss_mib > 1.0 && rss_mib < 32.0, "peak RSS {rss_mib:.1} MiB");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_damaged_compressed_archive_is_a_clear_error() {
    let dir = tempdir();
    let state = tempdir();
    for (name, head) in [
        ("bad.tar.xz", &b"\xfd7zXZ\0garbage"[..]),
        ("bad.tar.bz2", b"BZh9garbage"),
        ("bad.tar.lzo", b"\x89LZO\0\r\n\x1a\ngarbage"),
    ] {
        if name.ends_with(".lzo") && !has_tool("lzop") {
            skip("damaged .lzo archive: lzop is not installed (scripts/test.sh installs it)");
            continue;
        }
        let bad = dir.path().join(name);
        std::fs::write(&bad, head).unwrap();
        let out_dir = dir.path().join(format!("{name}.out"));
        std::fs::create_dir(&out_dir).unwrap();
        let out = run(fsbench(state.path())
            .args(["archive", "extract"])
            .arg(&bad)
            .arg("-C")
            .arg(&out_dir));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: {stderr}");
        assert!(
            stderr.contains("cannot read") && stderr.contains(name),
            "{name}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
}

#[test]
fn an_archive_whose_name_holds_commas_is_read_as_a_file_name() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let tarball = dir.path().join("my,archive.tar");
    let out = run(fsbench(state.path())
        .args(["archive", "generate", "tiny", "-o"])
        .arg(&tarball));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let out = run(fsbench(state.path())
        .args(["archive", "extract"])
        .arg(&tarball)
        .arg("-C")
        .arg(&target));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(json(&out)[0]["ops"].as_u64().unwrap() > 0);
    // The same name given to `run --archive`: a run of that file, named after it.
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = run(json_run(state.path())
        .arg("--db")
        .arg(state.path().join("results.db"))
        .args(["--runs", "1", "--dir"])
        .arg(&work)
        .arg("--archive")
        .arg(&tarball));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("my,archive.tar"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_pax_record_too_short_for_its_newline_is_an_error_in_a_run_too() {
    use crate::common::tarball::{end, file, member};
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // `2 ` panicked the reader (exit 101) in `archive extract` and in `run --archive`.
    let tarball = dir.path().join("pax.tar");
    std::fs::write(
        &tarball,
        end(vec![member("PaxHeader", b'x', b"2 ", ""), file("a", "x")]),
    )
    .unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = run(json_run(state.path())
        .arg("--db")
        .arg(state.path().join("results.db"))
        .args(["--runs", "1", "--dir"])
        .arg(&work)
        .arg("--archive")
        .arg(&tarball));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("bad PAX record length"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_empty(&work);
}

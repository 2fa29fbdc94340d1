//! Hostile archives: a corpus of tar files built by hand (so malformed ones are possible),
//! each extracted with `fsbench archive extract` into a target beside a canary directory.
//! Nothing outside the target may change; every refusal is counted and named; malformed
//! archives are errors that say what is wrong. The symlink cases run on tmpfs and on ext4,
//! xfs and btrfs loop mounts.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::tarball::*;
use crate::common::*;

/// What extracting an archive must do.
enum Expect {
    /// Exit 0; these many members refused, each reason containing the text.
    Refused(u64, &'static str),
    /// Exit 0, nothing refused: everything inside the target.
    Clean,
    /// Exit 0, nothing refused, but calls failed: a failure sample contains the text, and
    /// every sample is short (long paths shortened).
    Failed(&'static str),
    /// A failure exit, stderr containing the text.
    Error(&'static str),
}

fn corpus() -> Vec<(&'static str, Vec<u8>, Expect)> {
    use Expect::*;
    let long = "d/".repeat(60) + "f";
    vec![
        (
            "absolute path",
            end(vec![file("/tmp/escape", "x")]),
            Refused(1, "absolute or climbing"),
        ),
        (
            "dot-dot path",
            end(vec![file("../canary/evil", "x")]),
            Refused(1, "absolute or climbing"),
        ),
        (
            "dot-dot inside",
            end(vec![file("a/../../canary/evil", "x")]),
            Refused(1, "absolute or climbing"),
        ),
        (
            "dot-slash root",
            end(vec![directory("./"), file("./a", "x")]),
            Clean,
        ),
        (
            "dot root",
            end(vec![directory("."), directory("./sub/")]),
            Clean,
        ),
        (
            "symlink up then file",
            end(vec![symlink("s", ".."), file("s/canary/evil", "x")]),
            Refused(1, "through a symlink"),
        ),
        (
            "symlink abs then file",
            end(vec![symlink("s", "/tmp"), file("s/evil", "x")]),
            Refused(1, "through a symlink"),
        ),
        (
            "symlink to canary then file",
            end(vec![
                symlink("s", "../canary"),
                file("s/keep", "overwritten"),
            ]),
            Refused(1, "through a symlink"),
        ),
        (
            "symlink then overwrite it",
            end(vec![symlink("s", "../canary/keep"), file("s", "replaced")]),
            Clean,
        ),
        (
            "hardlink through relative symlink",
            end(vec![symlink("s", ".."), hardlink("h", "s/canary/keep")]),
            Refused(1, "through a symlink"),
        ),
        (
            "hardlink through absolute symlink",
            end(vec![symlink("s", "CANARY_ABS"), hardlink("h", "s/keep")]),
            Refused(1, "through a symlink"),
        ),
        (
            "hardlink through nested symlink",
            end(vec![
                directory("a"),
                symlink("a/s", "../.."),
                hardlink("h", "a/s/canary/keep"),
            ]),
            Refused(1, "through a symlink"),
        ),
        (
            "hardlink absolute",
            end(vec![hardlink("h", "/etc/hostname")]),
            Refused(1, "link to an absolute"),
        ),
        (
            "hardlink climbing",
            end(vec![hardlink("h", "../canary/keep")]),
            Refused(1, "link to an absolute"),
        ),
        (
            "hardlink to a symlink",
            end(vec![symlink("s", "../canary/keep"), hardlink("h", "s")]),
            Clean,
        ),
        (
            "symlink chain",
            end(vec![
                symlink("a", "b"),
                symlink("b", ".."),
                file("a/canary/evil", "x"),
            ]),
            Refused(1, "through a symlink"),
        ),
        (
            "symlink to dir then dir",
            end(vec![symlink("s", ".."), directory("s/canary/newdir")]),
            Refused(1, "through a symlink"),
        ),
        (
            "symlink then fifo through it",
            end(vec![
                symlink("s", ".."),
                member("s/canary/fifo", b'6', b"", ""),
            ]),
            Refused(1, "through a symlink"),
        ),
        ("fifo", end(vec![member("pipe", b'6', b"", "")]), Clean),
        (
            "character device",
            end(vec![member("null", b'3', b"", "")]),
            Refused(1, "character device"),
        ),
        (
            "block device",
            end(vec![member("sda", b'4', b"", "")]),
            Refused(1, "block device"),
        ),
        (
            "old GNU sparse",
            end(vec![member("sparse", b'S', b"data", "")]),
            Refused(1, "GNU sparse"),
        ),
        (
            "PAX sparse 0.1",
            end(vec![
                pax(&[("GNU.sparse.map", "0,4"), ("GNU.sparse.size", "4")]),
                file("sparse", "data"),
            ]),
            Refused(1, "GNU sparse"),
        ),
        (
            "PAX sparse 1.0",
            end(vec![
                pax(&[
                    ("GNU.sparse.major", "1"),
                    ("GNU.sparse.minor", "0"),
                    ("GNU.sparse.name", "f"),
                ]),
                file("GNUSparseFile.0/f", "1\n0\n4\ndata"),
            ]),
            Refused(1, "GNU sparse"),
        ),
        (
            "unknown type",
            end(vec![member("odd", b'Z', b"", "")]),
            Refused(1, "unknown member type"),
        ),
        (
            "PAX path override up",
            end(vec![
                pax(&[("path", "../canary/evil")]),
                file("innocent", "x"),
            ]),
            Refused(1, "absolute or climbing"),
        ),
        (
            "PAX path override absolute",
            end(vec![pax(&[("path", "/tmp/evil")]), file("innocent", "x")]),
            Refused(1, "absolute or climbing"),
        ),
        (
            "PAX linkpath override",
            end(vec![
                pax(&[("linkpath", "../canary/keep")]),
                hardlink("h", "innocent"),
            ]),
            Refused(1, "link to an absolute"),
        ),
        (
            "GNU long name up",
            end(vec![
                gnu_long(b'L', "../canary/evil"),
                file("innocent", "x"),
            ]),
            Refused(1, "absolute or climbing"),
        ),
        (
            "GNU long link up",
            end(vec![
                gnu_long(b'K', "../canary/keep"),
                hardlink("h", "innocent"),
            ]),
            Refused(1, "link to an absolute"),
        ),
        (
            "GNU long name deep",
            end(vec![gnu_long(b'L', &long), file("x", "deep")]),
            Clean,
        ),
        (
            "long name 200 KB",
            end(vec![gnu_long(b'L', &"n".repeat(200_000)), file("x", "x")]),
            Failed("ENAMETOOLONG"),
        ),
        (
            "PAX path 600 KB",
            end(vec![
                pax(&[("path", &format!("a/{}", "b".repeat(600_000)))]),
                file("x", "x"),
            ]),
            Failed("ENAMETOOLONG"),
        ),
        (
            "name too long",
            end(vec![gnu_long(b'L', &"n".repeat(5000)), file("x", "x")]),
            Failed("ENAMETOOLONG"),
        ),
        (
            "bad checksum first",
            end(vec![header(b"a", b'0', &octal_size(0), b"", true)]),
            Error("does not look like a tar archive"),
        ),
        (
            "bad checksum later",
            end(vec![
                file("a", "x"),
                header(b"b", b'0', &octal_size(0), b"", true),
            ]),
            Error("checksum mismatch"),
        ),
        ("empty file", Vec::new(), Error("empty")),
        (
            "not a tar",
            b"this is a text file, not a tar archive\n".repeat(20),
            Error("does not look like a tar archive"),
        ),
        (
            "short non-tar",
            b"hello".to_vec(),
            Error("does not look like a tar archive"),
        ),
        (
            "truncated data",
            file("a", &"x".repeat(2000))[..1024].to_vec(),
            Error("archive ends inside member a at byte"),
        ),
        (
            "truncated header",
            [file("a", "x"), vec![b'z'; 100]].concat(),
            Error("archive ends inside a header"),
        ),
        (
            "negative base-256 size",
            end(vec![header(b"a", b'0', &[0xff; 12], b"", false)]),
            Error("negative"),
        ),
        (
            "huge base-256 size",
            end(vec![header(
                b"a",
                b'0',
                &[0x80, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                b"",
                false,
            )]),
            Error("64 bits"),
        ),
        (
            "huge octal size",
            end(vec![header(b"a", b'0', b"77777777777", b"", false)]),
            Error("archive ends inside member a"),
        ),
        (
            "bad octal",
            end(vec![header(b"a", b'0', b"9999", b"", false)]),
            Error("bad octal"),
        ),
        (
            "PAX record `2 `",
            end(vec![member("PaxHeader", b'x', b"2 ", ""), file("a", "x")]),
            Error("bad PAX record length"),
        ),
        ("NUL in name", end(vec![file("a\0b", "x")]), Clean),
        (
            "replace canary link",
            end(vec![symlink("c", "../canary"), file("c", "x")]),
            Clean,
        ),
    ]
    .into_iter()
    .chain(huge_sized_members())
    .collect()
}

/// A member of size 2^64 − 1 that has no data (a directory, link, global or volume header)
/// followed by a block that is a valid header: wrapping size arithmetic once read that
/// header and extracted the smuggled member.
fn huge_sized_members() -> Vec<(&'static str, Vec<u8>, Expect)> {
    let size = [
        0x80, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    ];
    [
        ("2^64-1 directory", b'5'),
        ("2^64-1 global header", b'g'),
        ("2^64-1 volume header", b'V'),
        ("2^64-1 hard link", b'1'),
        ("2^64-1 symlink", b'2'),
    ]
    .into_iter()
    .map(|(name, kind)| {
        let bytes = end(vec![
            header(b"d", kind, &size, b"x", false),
            file("smuggled", "x"),
        ]);
        (name, bytes, Expect::Error("more than any archive holds"))
    })
    .collect()
}

struct Outcome {
    code: Option<i32>,
    stderr: String,
    refused: u64,
    failures: Vec<String>,
}

fn extract(archive: &Path, target: &Path, state: &Path) -> Outcome {
    let out = run(fsbench(state)
        .args(["archive", "extract"])
        .arg(archive)
        .arg("-C")
        .arg(target));
    let (mut refused, mut failures) = (0, Vec::new());
    if out.status.success() {
        for phase in json(&out).as_array().unwrap() {
            refused += phase["refused"].as_u64().unwrap_or(0);
            for f in phase["failures"].as_array().into_iter().flatten() {
                failures.push(f.as_str().unwrap().to_string());
            }
        }
    }
    Outcome {
        code: out.status.code(),
        stderr: text(&out.stderr),
        refused,
        failures,
    }
}

/// Every path below `dir` with its kind, size, link count and content: what "unchanged" means.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u32, u64, u64, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = p.symlink_metadata().unwrap();
            let content = if m.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            if m.is_dir() {
                stack.push(p.clone());
            }
            out.insert(p, (m.mode(), m.len(), m.nlink(), content));
        }
    }
    out
}

/// Runs the corpus in `base` (a directory on the filesystem under test); returns the count.
fn run_corpus(base: &Path, only_symlinks: bool) -> usize {
    let state = tempdir();
    let canary = base.join("canary");
    std::fs::create_dir(&canary).unwrap();
    std::fs::write(canary.join("keep"), "precious").unwrap();
    let mut ran = 0;
    for (i, (name, bytes, expect)) in corpus().into_iter().enumerate() {
        if only_symlinks && !name.contains("symlink") {
            continue;
        }
        let bytes = replace(&bytes, b"CANARY_ABS", canary.to_str().unwrap().as_bytes());
        let work = base.join(format!("case{i}"));
        let target = work.join("target");
        std::fs::create_dir_all(&target).unwrap();
        let archive = work.join("a.tar");
        std::fs::write(&archive, &bytes).unwrap();
        let before = snapshot(&canary);
        let base_before: Vec<_> = std::fs::read_dir(base)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let got = extract(&archive, &target, state.path());
        assert_eq!(snapshot(&canary), before, "{name}: the canary changed");
        let base_after: Vec<_> = std::fs::read_dir(base)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            base_after, base_before,
            "{name}: something appeared beside the target"
        );
        assert_eq!(
            std::fs::read_dir(&work).unwrap().count(),
            2,
            "{name}: something appeared beside the target"
        );
        match expect {
            Expect::Clean => {
                assert_eq!(got.code, Some(0), "{name}: {}", got.stderr);
                assert_eq!(got.refused, 0, "{name}: {:?}", got.failures);
            }
            Expect::Refused(n, why) => {
                assert_eq!(got.code, Some(0), "{name}: {}", got.stderr);
                assert_eq!(got.refused, n, "{name}: {:?}", got.failures);
                assert!(
                    got.failures
                        .iter()
                        .any(|f| f.starts_with("refused:") && f.contains(why)),
                    "{name}: refusal not named `{why}`: {:?}",
                    got.failures
                );
            }
            Expect::Failed(what) => {
                assert_eq!(got.code, Some(0), "{name}: {}", got.stderr);
                assert_eq!(got.refused, 0, "{name}: {:?}", got.failures);
                assert!(
                    got.failures.iter().any(|f| f.contains(what)),
                    "{name}: {:?}",
                    got.failures
                );
                assert!(
                    got.failures.iter().all(|f| f.len() < 400),
                    "{name}: a long failure"
                );
                assert!(
                    got.stderr.len() < 8192,
                    "{name}: a {}-byte stderr",
                    got.stderr.len()
                );
            }
            Expect::Error(what) => {
                assert_ne!(got.code, Some(0), "{name}: accepted");
                assert!(got.stderr.contains(what), "{name}: {}", got.stderr);
                assert!(
                    got.stderr.len() < 4096,
                    "{name}: a {}-byte message",
                    got.stderr.len()
                );
                assert!(!got.stderr.contains("panicked"), "{name}: {}", got.stderr);
            }
        }
        std::fs::remove_dir_all(&work).unwrap();
        ran += 1;
    }
    assert_eq!(snapshot(&canary).len(), 1);
    ran
}

fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    // Only inside a header's link field (fixed 100 bytes); the checksum is recomputed.
    let Some(at) = bytes.windows(from.len()).position(|w| w == from) else {
        return bytes.to_vec();
    };
    let block = at / 512 * 512;
    let mut h = bytes[block..block + 512].to_vec();
    let field = at - block;
    h[field..field + 100 - (field - 157)].fill(0);
    h[field..field + to.len()].copy_from_slice(to);
    set_checksum(&mut h);
    [&bytes[..block], &h[..], &bytes[block + 512..]].concat()
}

#[test]
fn hostile_archives_change_nothing_outside_the_target() {
    let base = tmpfs_tempdir();
    let ran = run_corpus(base.path(), false);
    assert!(ran >= 40, "only {ran} archives");
    println!("hostile archives: {ran} extracted, 0 escaped");
}

#[test]
fn symlink_escapes_are_refused_on_every_filesystem() {
    if !can_run(
        "symlink_escapes_are_refused_on_every_filesystem",
        &["mkfs.ext4", "mkfs.xfs", "mkfs.btrfs"],
    ) {
        return;
    }
    for fs in ["ext4", "xfs", "btrfs"] {
        let dir = tempdir();
        let image = dir.path().join("fs.img");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(320 << 20)
            .unwrap();
        let out = run(Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&image));
        let dev = text(&out.stdout).trim().to_string();
        let force = if fs == "ext4" { "-F" } else { "-f" };
        assert!(status(Command::new(format!("mkfs.{fs}")).args([force, "-q", &dev])).success());
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        assert!(status(Command::new("mount").arg(&dev).arg(&mnt)).success());
        let ran = std::panic::catch_unwind(|| run_corpus(&mnt, true));
        status(Command::new("umount").arg(&mnt));
        status(Command::new("losetup").args(["-d", &dev]));
        let ran = ran.unwrap_or_else(|e| std::panic::resume_unwind(e));
        assert!(ran >= 10, "{fs}: only {ran}");
    }
}

#[test]
fn remove_refuses_a_directory_that_holds_other_files() {
    let (dir, state) = (tempdir(), tempdir());
    std::fs::write(dir.path().join("precious"), "x").unwrap();
    let out = run(fsbench(state.path())
        .args(["archive", "extract", "generated:tiny", "--remove", "-C"])
        .arg(dir.path()));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not empty"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("precious")).unwrap(),
        "x"
    );
}

#[test]
fn remove_of_a_tree_deeper_than_the_recursion_limit() {
    let (dir, state) = (tempdir(), tempdir());
    // 300 levels of `d/`, each with a file: deeper than the recursive walk goes.
    let mut parts = Vec::new();
    for depth in 1..=300 {
        let path = "d/".repeat(depth);
        parts.push(gnu_long(b'L', &path));
        parts.push(directory("long-name"));
        parts.push(gnu_long(b'L', &format!("{path}f")));
        parts.push(file("long-name", "x"));
    }
    let archive = dir.path().join("deep.tar");
    std::fs::write(&archive, end(parts)).unwrap();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let out = run(fsbench(state.path())
        .args(["archive", "extract"])
        .arg(&archive)
        .args(["--remove", "-C"])
        .arg(&target));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let phases = json(&out);
    assert_eq!(phases[0]["ops"].as_u64(), Some(600));
    assert_eq!(phases[1]["ops"].as_u64(), Some(600));
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
}

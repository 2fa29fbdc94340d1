//! Filesystems beyond ext, xfs, btrfs and tmpfs: refused before anything is made where the
//! kernel lacks them, run for real where it has them.

use crate::common::*;

/// (filesystem, the kernel option its refusal names, the Debian package of its tools)
const KERNEL_DEPENDENT: [(&str, &str, &str); 5] = [
    ("nilfs2", "CONFIG_NILFS2_FS", "nilfs-tools"),
    ("jfs", "CONFIG_JFS_FS", "jfsutils"),
    ("reiserfs", "CONFIG_REISERFS_FS", "reiserfsprogs"),
    ("f2fs", "CONFIG_F2FS_FS", "f2fs-tools"),
    ("bcachefs", "CONFIG_BCACHEFS_FS", "bcachefs-tools"),
];

#[test]
fn a_filesystem_the_kernel_lacks_is_refused_before_anything_is_made() {
    if !can_run("kernel refusals", &[]) {
        return;
    }
    for (fs, option, package) in KERNEL_DEPENDENT {
        let dir = tempdir();
        let state = tempdir();
        let db_dir = tempdir();
        let db = db_dir.path().join("results.db");
        let out = run(fsbench(state.path())
            .args([
                "run",
                "-q",
                "--fs",
                fs,
                "-w",
                "tree:quick",
                "-n",
                "1",
                "--db",
            ])
            .arg(&db)
            .arg("--image-dir")
            .arg(dir.path()));
        let err = text(&out.stderr);
        if err.contains("the kernel has no") {
            assert_eq!(out.status.code(), Some(4), "{fs}: {err}");
            for want in [
                format!("no `{fs}` filesystem"),
                option.into(),
                format!("`{package}`"),
            ] {
                assert!(err.contains(&want), "{fs}: `{want}` missing from: {err}");
            }
        } else if !out.status.success() {
            // The kernel has it: the only acceptable failure is a missing tool, named by package.
            assert!(err.contains(&format!("`{package}`")), "{fs}: {err}");
        }
        assert_all_undone(dir.path(), state.path());
    }
}

/// Two runs of each of `workloads` on `fs` (a `--fs` value), on loop images in a directory
/// of their own; asserts they succeeded, timed their unmount and left nothing behind, and
/// returns the JSON document.
fn two_runs(fs: &str, workloads: &[&str]) -> serde_json::Value {
    let dir = tempdir();
    let state = tempdir();
    let db_dir = tempdir();
    let db = db_dir.path().join("results.db");
    let mut args = vec!["--fs", fs, "-n", "2", "--db", db.to_str().unwrap()];
    args.extend(workloads.iter().flat_map(|w| ["-w", w]));
    let (out, doc) = image_run_json(dir.path(), state.path(), &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * workloads.len());
    for r in runs {
        assert_eq!(r["status"], "ok", "{r}");
        assert!(r["unmount_secs"].as_f64().unwrap() > 0.0);
    }
    assert_all_undone(dir.path(), state.path());
    doc
}

/// ntfs through ntfs-3g runs for real: fresh mkntfs per run, FUSE mount, fsck clean after
/// the daemon let go of the device, the daemon's version recorded, nothing left behind.
#[test]
fn ntfs_runs_through_its_fuse_daemon() {
    if !can_run("ntfs", &["mkntfs", "ntfs-3g", "ntfsfix"]) {
        return;
    }
    let doc = two_runs("ntfs", &["tree:quick"]);
    for r in doc["runs"].as_array().unwrap() {
        assert_eq!(r["fsck"]["clean"], true, "{r}");
        assert!(
            r["mount_options"].as_str().unwrap().contains("allow_other"),
            "{r}"
        );
    }
    let config = &doc["configurations"][0];
    let version = config["mkfs_version"].as_str().unwrap();
    assert!(
        version.contains("mkntfs") && version.contains("ntfs-3g"),
        "{version}"
    );
    assert!(
        config["mkfs_command"]
            .as_str()
            .unwrap()
            .contains("mkntfs -F -Q -q /dev/loop")
    );
}

/// zfs through zfs-fuse runs for real: a daemon and pool per run with the configuration's
/// properties, recorded with the run, no fsck (said), fragments unsupported, the pool
/// destroyed and the daemon stopped, nothing left behind.
#[test]
fn zfs_runs_through_zfs_fuse() {
    let Some(_machine) = can_run_zfs("zfs") else {
        return;
    };
    let doc = two_runs(
        "zfs:pool=ashift=12:dataset=recordsize=16k,compression=on",
        &["tree:quick", "alloc:size=8m,methods=chunk-4096"],
    );
    for r in doc["runs"].as_array().unwrap() {
        assert!(r["fsck"].is_null(), "{r}");
        let options = r["mount_options"].as_str().unwrap();
        for want in [
            "ashift=12",
            "recordsize=16K",
            "compression=on",
            "cachefile=none",
        ] {
            assert!(options.contains(want), "{want} missing from {options}");
        }
        // No FIEMAP through FUSE: said, never a count of 0.
        for p in r["phases"].as_array().unwrap() {
            assert!(
                !p["figures"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|f| f["name"] == "extents"),
                "{p}"
            );
        }
        if r["workload"].as_str().unwrap().starts_with("alloc") {
            let notes = r["phases"][0]["notes"].to_string();
            assert!(notes.contains("extents: unsupported"), "{notes}");
        }
    }
    let config = &doc["configurations"][0];
    assert!(
        config["mkfs_version"]
            .as_str()
            .unwrap()
            .starts_with("zfs-fuse "),
        "{config}"
    );
    assert!(config["fsck_version"].as_str().unwrap().starts_with("none"));
    let command = config["mkfs_command"].as_str().unwrap();
    assert!(
        command.contains("zpool create -f -o cachefile=none -o ashift=12 -O recordsize=16k"),
        "{command}"
    );
    assert_no_zfs_daemon();
}

/// Properties fsbench sets itself, and mkfs=/mount= for zfs, are refused before anything runs.
#[test]
fn zfs_properties_fsbench_sets_are_refused() {
    for (fs, want) in [
        ("zfs:dataset=mountpoint=/home", "fsbench sets"),
        ("zfs:pool=cachefile=/etc/passwd", "fsbench sets"),
        ("zfs:mkfs=-o ashift=12", "takes `pool=`"),
        ("ext4:pool=ashift=12", "is for zfs"),
    ] {
        fails_with(&["run", "--fs", fs, "-w", "tree:quick"], 2, want);
    }
}

/// Two user-defined drivers of a suite file: ext4 through its own commands and ntfs through
/// ntfs-3g's FUSE command, run for real by name in `--fs`.
const USER_DRIVERS: &str = r#"
[[driver]]
name = "myext4"
package = "e2fsprogs"
mkfs = "mkfs.ext4 -F -q {options} {device}"
mount_type = "ext4"
fsck = "e2fsck -f -n {device}"

[[driver]]
name = "myntfs"
package = "ntfs-3g"
mkfs = "mkntfs -F -Q -q {device}"
mount = "ntfs-3g {device} {mountpoint}"
fsck = "ntfsfix -n {device}"
unmount = "fusermount -u {mountpoint}"
fiemap = false
fallocate = false
"#;

#[test]
fn user_drivers_run_for_real() {
    if !can_run(
        "user drivers",
        &["mkfs.ext4", "mkntfs", "ntfs-3g", "ntfsfix"],
    ) {
        return;
    }
    let doc = user_driver_json(
        USER_DRIVERS,
        &[
            "--fs",
            "myext4:mkfs=-O ^has_journal",
            "--fs",
            "myntfs",
            "-w",
            "tree:quick",
            "-n",
            "1",
        ],
    );
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["fsck"]["clean"], true, "{r}");
        assert!(r["unmount_secs"].as_f64().unwrap() > 0.0);
    }
    let configs = doc["configurations"].as_array().unwrap();
    let command = configs[0]["mkfs_command"].as_str().unwrap();
    assert!(
        command.contains("mkfs.ext4 -F -q -O ^has_journal /dev/loop"),
        "{command}"
    );
    assert_eq!(configs[1]["label"], "myntfs");
    assert_eq!(
        configs[1]["driver"]["mount"],
        "ntfs-3g {device} {mountpoint}"
    );
    let version = configs[1]["mkfs_version"].as_str().unwrap();
    assert!(
        version.contains("no FIEMAP, no fallocate, O_DIRECT"),
        "{version}"
    );
}

/// `fsbench run` of `workload` on loop images with `--fs NAME`, where `suite` (a suite
/// file's text) defines the driver; asserts that nothing is left behind, returns the exit
/// status and stderr.
fn run_user_driver(suite: &str, name: &str, workload: &str) -> (Option<i32>, String) {
    let (dir, state, files) = (tempdir(), tempdir(), tempdir());
    let path = files.path().join("drivers.toml");
    std::fs::write(&path, suite).unwrap();
    let out = run(fsbench(state.path())
        .args(["run", "-q", path.to_str().unwrap(), "--fs", name])
        .args(["-w", workload, "-n", "1", "--image-dir"])
        .arg(dir.path()));
    assert_all_undone(dir.path(), state.path());
    (out.status.code(), text(&out.stderr))
}

/// `fsbench run` with `args`, results as JSON, on loop images, where `suite` (a suite file's
/// text) defines the drivers; asserts it succeeded and left nothing behind.
fn user_driver_json(suite: &str, args: &[&str]) -> serde_json::Value {
    let (dir, state, files) = (tempdir(), tempdir(), tempdir());
    let path = files.path().join("drivers.toml");
    std::fs::write(&path, suite).unwrap();
    let db = files.path().join("results.db");
    let mut all = vec![path.to_str().unwrap(), "--db", db.to_str().unwrap()];
    all.extend(args);
    let (out, doc) = image_run_json(dir.path(), state.path(), &all);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_all_undone(dir.path(), state.path());
    doc
}

/// A driver whose template lacks `{device}` or takes a built-in's name is refused before
/// anything is made; one whose mkfs fails or whose mount never appears fails clearly and
/// leaves nothing behind.
#[test]
fn bad_user_drivers_are_refused_and_leave_nothing() {
    if !can_run("bad user drivers", &["mkfs.ext4"]) {
        return;
    }
    let cases = [
        (
            "mkfs = \"mkfs.ext4 -F\"\nmount_type = \"ext4\"",
            2,
            "lacks {device}",
        ),
        (
            "mkfs = \"false {device}\"\nmount_type = \"ext4\"",
            1,
            "false /dev/loop",
        ),
        (
            "mkfs = \"mkfs.ext4 -F -q {device}\"\nmount = \"true {device} {mountpoint}\"",
            1,
            "mounted nothing",
        ),
    ];
    for (driver, code, want) in cases {
        let suite = format!("[[driver]]\nname = \"bad\"\n{driver}\n");
        let (status, err) = run_user_driver(&suite, "bad", "tree:quick");
        assert_eq!(status, Some(code), "{driver}: {err}");
        assert!(err.contains(want), "{driver}: `{want}` missing from {err}");
    }
    let state = tempdir();
    let files = tempdir();
    let suite = files.path().join("clash.toml");
    std::fs::write(
        &suite,
        "[[driver]]\nname = \"ext4\"\nmkfs = \"m {device}\"\nmount_type = \"ext4\"\n",
    )
    .unwrap();
    let out = run(fsbench(state.path()).args(["run", suite.to_str().unwrap(), "--fs", "ext4"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("built-in"));
}

/// ext4 through a user driver that declares it lacks everything it may lack.
const LEAN_DRIVER: &str = r#"
[[driver]]
name = "lean"
package = "e2fsprogs"
mkfs = "mkfs.ext4 -F -q {options} {device}"
mount_type = "ext4"
fiemap = false
fallocate = false
o_direct = false
hard_links = false
"#;

/// Each workload setting that needs what the driver declares it lacks is refused before
/// anything is made, naming the driver, its flag and the setting.
#[test]
fn a_user_driver_lacking_a_capability_refuses_the_workloads_that_need_it() {
    let cases = [
        (
            "io:rw=read,size=4m,direct",
            "`o_direct = false`",
            "io's `direct`",
        ),
        (
            "iozone:quick,direct",
            "`o_direct = false`",
            "iozone's `direct`",
        ),
        (
            "alloc:size=8m,methods=chunk-4096+fallocate",
            "`fallocate = false`",
            "alloc's `methods=fallocate`",
        ),
        (
            "archive:tiny",
            "`hard_links = false`",
            "archive's generated archive",
        ),
        ("replay", "`hard_links = false`", "replay's `trace`"),
    ];
    for (workload, flag, setting) in cases {
        let (status, err) = run_user_driver(LEAN_DRIVER, "lean", workload);
        assert_eq!(status, Some(2), "{workload}: {err}");
        for want in ["user driver `lean`", flag, setting] {
            assert!(
                err.contains(want),
                "{workload}: `{want}` missing from {err}"
            );
        }
    }
}

/// With `fiemap = false` fragments are "unsupported", never counted (ext4 has FIEMAP: the
/// declaration is what is obeyed), and the free-space probe is not run.
#[test]
fn fragments_are_unsupported_on_a_user_driver_without_fiemap() {
    if !can_run("user driver without FIEMAP", &["mkfs.ext4"]) {
        return;
    }
    let doc = user_driver_json(
        LEAN_DRIVER,
        &[
            "--fs",
            "lean",
            "-w",
            "alloc:size=8m,methods=chunk-4096",
            "-n",
            "1",
            "--probe-after-run",
        ],
    );
    let run = &doc["runs"][0];
    assert_eq!(run["status"], "ok", "{run}");
    assert!(run["probe_after"].is_null(), "{run}");
    let phase = &run["phases"][0];
    let figures = phase["figures"].as_array().into_iter().flatten();
    for f in figures {
        assert!(f["name"] != "extents" && f["name"] != "fragments", "{f}");
    }
    let notes = phase["notes"].to_string();
    assert!(notes.contains("extents: unsupported"), "{notes}");
}

//! Fresh-filesystem lifecycle on real loop devices: mkfs → mount → phases → unmount → fsck,
//! and the safety refusals (cleanup on interruption: `tests/interrupts.rs`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;

const TINY: &str = "tree:dirs=3,files=2,size=1,levels=3";

fn check_fresh_runs(fs: &str, tool: &str) {
    if !can_run(&format!("{fs} lifecycle"), &[tool]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let (out, doc) = image_run_json(
        dir.path(),
        state.path(),
        &["--fs", fs, "-w", TINY, "--runs", "2"],
    );
    assert!(out.status.success(), "exit {:?}", out.status);
    assert_eq!(doc["schema_version"], 3);
    assert_eq!(doc["status"], "completed");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["status"], "ok");
        assert_eq!(r["fsck"]["clean"], true, "{r}");
        assert!(r["fsck"]["secs"].as_f64().unwrap() > 0.0);
        assert!(r["unmount_secs"].as_f64().unwrap() > 0.0);
        assert!(r["mkfs_secs"].as_f64().unwrap() > 0.0);
        assert!(r["mount_options"].as_str().unwrap().contains("rw"));
        // 3 levels of 3: 1 + 3 + 9 + 27 = 40 directories, 2 files in each.
        let ops: Vec<u64> = r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["ops"].as_u64().unwrap())
            .collect();
        assert_eq!(ops, [40, 80, 80, 40]);
        assert_eq!(r["phases"][1]["bytes"], 80 * 4096);
        for p in r["phases"].as_array().unwrap() {
            assert_eq!(p["caches_dropped"], true);
            assert!(p["errors"].as_object().unwrap().is_empty());
        }
    }
    let config = &doc["configurations"][0];
    assert!(
        config["mkfs_version"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
    assert!(
        config["mkfs_command"]
            .as_str()
            .unwrap()
            .contains(&format!("mkfs.{fs}"))
    );
    let time = doc["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["phase"] == "file-create" && s["metric"] == "time")
        .expect("a file-create time summary");
    assert_eq!(time["n"], 2);
    assert!(time["ci95_low"].as_f64().unwrap() <= time["mean"].as_f64().unwrap());
    assert_all_undone(dir.path(), state.path());
}

#[test]
fn ext4_runs_are_fresh_and_fsck_clean() {
    check_fresh_runs("ext4", "mkfs.ext4");
}

#[test]
fn xfs_runs_are_fresh_and_fsck_clean() {
    check_fresh_runs("xfs", "mkfs.xfs");
}

#[test]
fn btrfs_runs_are_fresh_and_fsck_clean() {
    check_fresh_runs("btrfs", "mkfs.btrfs");
}

#[test]
fn several_configurations_of_one_filesystem() {
    if !can_run("several configurations", &["mkfs.ext4"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let (out, doc) = image_run_json(
        dir.path(),
        state.path(),
        &[
            "--fs",
            "ext4:mkfs=-O ^has_journal",
            "--fs",
            "ext3:mount=data=writeback:label=ext3-wb",
            "--fs",
            "tmpfs",
            "-w",
            TINY,
            "--runs",
            "2",
        ],
    );
    assert!(out.status.success());
    let labels: Vec<&str> = doc["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["ext4 -O ^has_journal", "ext3-wb", "tmpfs"]);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    // Interleaved and rotated: round 1 is ext4, ext3, tmpfs; round 2 starts with ext3.
    let order: Vec<&str> = runs.iter().map(|r| r["config"].as_str().unwrap()).collect();
    assert_eq!(
        order,
        [
            "ext4 -O ^has_journal",
            "ext3-wb",
            "tmpfs",
            "ext3-wb",
            "tmpfs",
            "ext4 -O ^has_journal"
        ]
    );
    let ext3 = runs.iter().find(|r| r["config"] == "ext3-wb").unwrap();
    assert!(
        ext3["mount_options"]
            .as_str()
            .unwrap()
            .contains("data=writeback"),
        "{ext3}"
    );
    let ext4 = &doc["configurations"][0];
    assert!(
        ext4["mkfs_command"]
            .as_str()
            .unwrap()
            .contains("-O ^has_journal")
    );
    let tmpfs = runs.iter().find(|r| r["config"] == "tmpfs").unwrap();
    assert!(tmpfs["fsck"].is_null());
    let target = doc["target"]["description"].as_str().unwrap();
    assert!(
        target.contains("loop image")
            && target.contains("tmpfs configurations mount a fresh tmpfs"),
        "{target}"
    );
    assert!(tmpfs["mount_options"].as_str().unwrap().contains("size="));
    assert_nothing_left(dir.path());
}

#[test]
fn suite_file_states_its_purpose() {
    if !can_run("suite file", &["mkfs.ext4"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let suite = dir.path().join("mail.toml");
    std::fs::write(
        &suite,
        format!(
            "purpose = \"Which filesystem for a maildir server?\"\nruns = 2\n\
             [target]\nkind = \"image\"\ndir = \"{}\"\n\
             [[config]]\nfs = \"ext4\"\nmount = \"noatime\"\n\
             [[workload]]\nkind = \"tree\"\ndirs = 2\nfiles = 3\nsize = 1\nlevels = 2\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let out = run(fsbench(state.path()).args(["run", "-q"]).arg(&suite));
    assert!(out.status.success());
    let table = text(&out.stdout);
    assert!(table.contains("suite `mail`"), "{table}");
    assert!(table.contains("Purpose: Which filesystem for a maildir server?"));
    assert!(table.contains("noatime"));
    assert!(table.contains("Phase times in s") && table.contains("dir-create"));
    assert!(table.contains("file-create (MiB/s)"));
    std::fs::remove_file(&suite).unwrap();
    assert_nothing_left(dir.path());
}

fn make_ext4_image(path: &Path) {
    let f = std::fs::File::create(path).unwrap();
    f.set_len(64 << 20).unwrap();
    let ok = status(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(path));
    assert!(ok.success());
}

fn blkid_uuid(path: &Path) -> String {
    text(
        &run(Command::new("blkid")
            .args(["-p", "-s", "UUID", "-o", "value"])
            .arg(path))
        .stdout,
    )
}

#[test]
fn image_holding_a_filesystem_is_refused_without_force() {
    if !can_run("device refusal", &["mkfs.ext4", "blkid"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let image = dir.path().join("precious.img");
    make_ext4_image(&image);
    let uuid = blkid_uuid(&image);
    let out = run(fsbench(state.path())
        .args([
            "run", "-q", "--fs", "ext4", "-w", TINY, "--runs", "1", "--device",
        ])
        .arg(&image));
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(
        err.contains("refusing") && err.contains("ext4 filesystem") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(blkid_uuid(&image), uuid, "the refused image was modified");

    let out = run(fsbench(state.path())
        .args([
            "run", "-q", "--fs", "ext2", "-w", TINY, "--runs", "1", "--force", "--device",
        ])
        .arg(&image));
    assert!(out.status.success());
    assert_ne!(
        blkid_uuid(&image),
        uuid,
        "--force must re-make the filesystem"
    );
    assert!(loops_below(dir.path()).is_empty());
    assert!(mounts_below(dir.path()).is_empty());
}

#[test]
fn mounted_and_root_devices_are_refused() {
    if !can_run("mounted device refusal", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let image = dir.path().join("busy.img");
    make_ext4_image(&image);
    let dev = attach(&image);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    assert!(status(Command::new("mount").arg(&dev).arg(&mnt)).success());
    let out = run(fsbench(state.path()).args([
        "run", "-q", "--force", "--fs", "ext4", "-w", TINY, "--device", &dev,
    ]));
    let mounted_err = text(&out.stderr);
    status(Command::new("umount").arg(&mnt));
    detach(&dev);
    assert_eq!(out.status.code(), Some(3));
    assert!(mounted_err.contains("mounted at"), "{mounted_err}");

    let root = fsbench_testbed::testbed::mounts::mount_containing(Path::new("/")).unwrap();
    if root.source.starts_with("/dev/") {
        let out = run(fsbench(state.path()).args([
            "run",
            "-q",
            "--force",
            "--fs",
            "ext4",
            "-w",
            TINY,
            "--device",
            &root.source,
        ]));
        assert_eq!(out.status.code(), Some(3));
        assert!(text(&out.stderr).contains("root filesystem"));
    } else {
        println!(
            "root filesystem source {} is not a device; root refusal not checked",
            root.source
        );
    }
}

#[test]
fn non_root_cannot_make_filesystems_but_can_run_in_a_directory() {
    if !is_root() || !has_tool("setpriv") {
        skip("non-root behaviour: needs root (to become nobody) and setpriv");
        return;
    }
    let dir = tempdir();
    let as_nobody = |args: &[&str]| {
        run(Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                env!("CARGO_BIN_EXE_fsbench"),
            ])
            .args(args)
            .env("FSBENCH_STATE_DIR", dir.path().join("state"))
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .current_dir(dir.path()))
    };
    std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
    let out = as_nobody(&["run", "-q", "--fs", "ext4", "-w", TINY]);
    assert_eq!(out.status.code(), Some(4));
    assert!(text(&out.stderr).contains("needs root"));

    let out = as_nobody(&["run", "-q", "-w", TINY, "--runs", "2"]);
    assert!(out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("not root, so no filesystems can be made"),
        "{err}"
    );
    let table = text(&out.stdout);
    assert!(table.contains("(existing dir)"), "{table}");
    assert!(table.contains("caches were not dropped"), "{table}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "state" && n != "data")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Attaches `image` to a loop device; the device.
fn attach(image: &Path) -> String {
    let out = run(Command::new("losetup")
        .args(["--find", "--show"])
        .arg(image));
    assert!(out.status.success());
    text(&out.stdout).trim().to_string()
}

fn detach(dev: &str) {
    status(Command::new("losetup").args(["-d", dev]));
}

#[test]
fn devices_named_in_mkfs_options_go_through_the_device_checks() {
    if !can_run(
        "devices_named_in_mkfs_options_go_through_the_device_checks",
        &["mkfs.ext4", "mkfs.xfs"],
    ) {
        return;
    }
    let (dir, state, images) = (tempdir(), tempdir(), tempdir());
    let image = images.path().join("victim.img");
    make_ext4_image(&image);
    let uuid = blkid_uuid(&image);
    let dev = attach(&image);
    let fs = format!("xfs:mkfs=-l logdev={dev},size=64m");
    let out = run(fsbench(state.path())
        .args([
            "run",
            "-q",
            "--runs",
            "1",
            "-w",
            TINY,
            "--fs",
            &fs,
            "--image-dir",
        ])
        .arg(dir.path()));
    let log_file = run(fsbench(state.path())
        .args(["run", "-q", "--runs", "1", "-w", TINY])
        .args([
            "--fs",
            "xfs:mkfs=-l logdev=/etc/hostname,size=64m",
            "--image-dir",
        ])
        .arg(dir.path()));
    detach(&dev);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("named in the mkfs or mount options") && err.contains("ext4 filesystem"),
        "{err}"
    );
    assert_eq!(blkid_uuid(&image), uuid, "the victim's filesystem changed");
    assert_eq!(
        log_file.status.code(),
        Some(3),
        "{}",
        text(&log_file.stderr)
    );
    assert_nothing_left(dir.path());
}

#[test]
fn an_empty_partition_is_refused_saying_what_blkid_found() {
    if !can_run(
        "an_empty_partition_is_refused_saying_what_blkid_found",
        &["mkfs.ext4", "sfdisk", "partx"],
    ) {
        return;
    }
    let (dir, state) = (tempdir(), tempdir());
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let mut sfdisk = Command::new("sfdisk");
    sfdisk.arg("-q").arg(&image).stdin(Stdio::piped());
    let mut child = sfdisk
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"label: gpt\n,32M\n").unwrap();
    assert!(
        wait_drained_within(child, Duration::from_secs(60))
            .status
            .success()
    );
    let out = run(Command::new("losetup")
        .args(["-P", "--find", "--show"])
        .arg(&image));
    let dev = text(&out.stdout).trim().to_string();
    let part = format!("{dev}p1");
    if !Path::new(&part).exists() {
        // The scan at attach can miss the table (no udev here): ask the kernel again.
        status(Command::new("partx").args(["-a", &dev]));
    }
    let exists = Path::new(&part).exists();
    let out = exists.then(|| {
        run(fsbench(state.path()).args([
            "run", "-q", "--runs", "1", "-w", TINY, "--fs", "ext4", "--device", &part,
        ]))
    });
    detach(&dev);
    assert!(exists, "{part} did not appear");
    let out = out.unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("entry 1 of a gpt partition table") && !err.contains("ambiguous"),
        "{err}"
    );
}

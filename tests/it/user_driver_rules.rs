//! A suite file's `[[driver]]` is held to the built-ins' rules: every word of its templates
//! and options that may name a device or a file is resolved and refused unless it is the
//! target (on real loop devices: the other device is left as it was, the refusal names the
//! word), and Ctrl-C during its fsck ends the suite as interrupted, not as a finding.

use std::hash::{Hash, Hasher};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;

/// What must not change on the victim: its signature and its first MiB.
fn fingerprint(dev: &str) -> (String, u64) {
    let blkid = text(&run(Command::new("blkid").args(["-p", "-o", "export", dev])).stdout);
    let mut bytes = vec![0; 1 << 20];
    std::fs::File::open(dev)
        .unwrap()
        .read_exact(&mut bytes)
        .unwrap();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    (blkid, hasher.finish())
}

/// `fsbench run` of driver `mine` (its table's lines in `driver`) with `--fs fs`.
fn run_driver(driver: &str, fs: &str, cwd: &Path) -> std::process::Output {
    let (images, state, files) = (tempdir(), tempdir(), tempdir());
    let suite = files.path().join("drivers.toml");
    std::fs::write(&suite, format!("[[driver]]\nname = \"mine\"\n{driver}\n")).unwrap();
    let out = run(fsbench(state.path())
        .current_dir(cwd)
        .arg("run")
        .arg("-q")
        .arg(&suite)
        .args(["--fs", fs, "-w", "tree:quick", "-n", "1", "--image-dir"])
        .arg(images.path()));
    assert_all_undone(images.path(), state.path());
    out
}

/// Each way a driver may name `dev` (whose UUID is `uuid`): the driver's table lines, the
/// `--fs` word, and the token its refusal must name.
fn cases(dev: &str, uuid: &str) -> Vec<(String, String, String)> {
    let up = "../".repeat(12);
    let relative = format!("{up}{}", dev.trim_start_matches('/'));
    let options = "mkfs = \"mkfs.ext4 -F -q {options} {device}\"\nmount_type = \"ext4\"";
    let mkfs = |template: &str| format!("mkfs = \"{template}\"\nmount_type = \"ext4\"");
    vec![
        (
            mkfs(&format!("mkfs.ext4 -F -q -J device={dev} {{device}}")),
            "mine".to_string(),
            dev.to_string(),
        ),
        (
            mkfs(&format!("mkfs.ext4 -F -q -Jdevice={dev} {{device}}")),
            "mine".into(),
            dev.into(),
        ),
        (
            options.into(),
            format!("mine:mkfs=-J device={dev}"),
            dev.into(),
        ),
        (
            options.into(),
            format!("mine:mkfs=-Jdevice={dev}"),
            dev.into(),
        ),
        (
            options.into(),
            format!("mine:mkfs=-J device=UUID={uuid}"),
            format!("UUID={uuid}"),
        ),
        (
            mkfs(&format!("mkfs.ext4 -F -q -J device={relative} {{device}}")),
            "mine".into(),
            relative.clone(),
        ),
        (
            format!(
                "mkfs = \"mkfs.ext4 -F -q {{device}}\"\nmount = \"mount -t ext4 -o journal_path={dev} {{device}} {{mountpoint}}\""
            ),
            "mine".into(),
            dev.into(),
        ),
        (
            format!(
                "mkfs = \"mkfs.ext4 -F -q {{device}}\"\nmount_type = \"ext4\"\nfsck = \"e2fsck -f -n {dev} {{device}}\""
            ),
            "mine".into(),
            dev.into(),
        ),
        (
            mkfs("mkfs.ext4 -F -q {device}1"),
            "mine".into(),
            "{device}1".into(),
        ),
    ]
}

#[test]
fn a_user_driver_naming_another_device_is_refused_and_leaves_it_unchanged() {
    if !can_run(
        "user driver device rule",
        &["mkfs.ext4", "blkid", "losetup"],
    ) {
        return;
    }
    let victim = LoopDevice::blank(64);
    let uuid = format!("{:08x}-0000-4000-8000-00000000d5e1", std::process::id());
    let made = status(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-U", &uuid])
            .arg(&victim.dev),
    );
    assert!(made.success());
    let before = fingerprint(&victim.dev);
    let cases = cases(&victim.dev, &uuid);
    for (driver, fs, token) in &cases {
        let out = run_driver(driver, fs, Path::new("/"));
        let err = text(&out.stderr);
        let case = format!("{driver} / {fs}");
        assert!(matches!(out.status.code(), Some(2 | 3)), "{case}: {err}");
        assert!(
            err.contains(&format!("`{token}`")),
            "{case}: the refusal names no `{token}`: {err}"
        );
        assert!(err.contains("user driver `mine`"), "{case}: {err}");
        assert_eq!(
            fingerprint(&victim.dev),
            before,
            "{case}: the victim was written"
        );
    }
}

#[test]
fn ctrl_c_during_a_user_drivers_fsck_is_an_interruption() {
    if !can_run("Ctrl-C during a user driver's fsck", &["mkfs.ext4"]) {
        return;
    }
    let (images, state, files) = (tempdir(), tempdir(), tempdir());
    let started = files.path().join("fsck-started");
    let driver = format!(
        "[[driver]]\nname = \"slowfsck\"\nmkfs = \"mkfs.ext4 -F -q {{device}}\"\n\
         mount_type = \"ext4\"\nfsck = \"sh -c 'touch {}; sleep 600' sh {{device}}\"\n",
        started.display()
    );
    let suite = files.path().join("drivers.toml");
    std::fs::write(&suite, driver).unwrap();
    let mut child = fsbench(state.path())
        .arg("run")
        .arg("-q")
        .arg(&suite)
        .args([
            "--fs",
            "slowfsck",
            "-w",
            "tree:quick",
            "-n",
            "1",
            "--image-dir",
        ])
        .arg(images.path())
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_running_until(&mut child, "starting fsck", || started.exists());
    // Ctrl-C: the terminal signals the whole foreground process group.
    let group = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process_group(group, rustix::process::Signal::INT).unwrap();
    let out = wait_drained_within(child, Duration::from_secs(120));
    let (said, err) = (text(&out.stdout), text(&out.stderr));
    assert!(started.exists(), "fsck never started: {err}");
    assert_eq!(out.status.code(), Some(130), "{said}{err}");
    assert!(!err.to_lowercase().contains("inconsistent"), "{err}");
    assert!(!said.contains("suite completed"), "{said}");
    assert_all_undone(images.path(), state.path());
}

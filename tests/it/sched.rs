//! The I/O scheduler as a configuration's dimension: set on the run's loop device or the
//! given device for each run, recorded with the run, put back after it; unknown ones refused.

use crate::common::*;

const TINY: &str = "tree:dirs=3,files=2,size=1,levels=3";

fn scheduler(dev: &str) -> String {
    let name = dev.trim_start_matches("/dev/");
    std::fs::read_to_string(format!("/sys/block/{name}/queue/scheduler")).unwrap()
}

#[test]
fn each_configuration_runs_under_each_scheduler_and_records_it() {
    if !can_run("I/O schedulers on loop images", &["mkfs.ext4"]) {
        return;
    }
    let (images, state) = (tempdir(), tempdir());
    let (out, doc) = image_run_json(
        images.path(),
        state.path(),
        &[
            "--fs", "ext4", "--sched", "none,bfq", "--runs", "1", "-w", TINY,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let runs = doc["runs"].as_array().unwrap();
    let configs: Vec<&str> = runs.iter().map(|r| r["config"].as_str().unwrap()).collect();
    assert_eq!(configs, ["ext4 sched=none", "ext4 sched=bfq"]);
    for (run, name) in runs.iter().zip(["none", "bfq"]) {
        let said = run["testbed"]["scheduler"].as_str().unwrap_or_default();
        assert!(
            said.starts_with(&format!("{name} on /dev/loop")),
            "{said}: {run}"
        );
    }
}

#[test]
fn a_device_gets_its_scheduler_back_and_unknown_ones_are_named() {
    if !can_run("I/O scheduler on a device", &["mkfs.ext4"]) {
        return;
    }
    let device = LoopDevice::blank(64);
    let before = scheduler(&device.dev);
    let (state, seen) = (tempdir(), tempdir());
    // What the state file says during the run: the queue to put back after a crash.
    let peek = seen.path().join("state");
    let phase = format!(
        "peek=cat {}/*.json > {}",
        state.path().display(),
        peek.display()
    );
    let out = run(json_run(state.path()).args([
        "--device",
        &device.dev,
        "--force",
        "--fs",
        "ext4:sched=kyber",
        "--runs",
        "1",
        "--command-phase",
        &phase,
        "--command-space",
        "8M",
    ]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&peek).unwrap()).unwrap();
    let queue = &recorded["queues"][0];
    assert!(
        queue["file"].as_str().unwrap().ends_with("queue/scheduler"),
        "{recorded}"
    );
    assert_eq!(queue["previous"], active(&before), "{recorded}");
    let doc = json(&out);
    let said = doc["runs"][0]["testbed"]["scheduler"].as_str().unwrap();
    assert!(
        said.starts_with(&format!("kyber on {}", device.dev)),
        "{said}"
    );
    assert_eq!(
        scheduler(&device.dev),
        before,
        "the device's scheduler is put back"
    );

    let out = device_run(state.path(), &device.dev, "ext4:sched=cfq", TINY);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("`cfq` cannot be set") && stderr.contains("mq-deadline"),
        "{stderr}"
    );
    assert_eq!(scheduler(&device.dev), before);
    // tmpfs and directories have no queue: refused before anything runs.
    let dir = tempdir();
    let out = run(json_run(state.path())
        .args(["--sched", "bfq", "--dir"])
        .arg(dir.path())
        .args(["-w", TINY]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--sched needs a block device"));
}

/// The `queue/scheduler` file of the whole disk holding `dir`'s filesystem.
fn disk_scheduler_file(dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let mut node = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).unwrap();
    if node.join("partition").exists() {
        node.pop();
    }
    node.join("queue/scheduler")
}

fn active(text: &str) -> &str {
    let word = text.split_whitespace().find(|w| w.starts_with('['));
    word.unwrap_or_default().trim_matches(['[', ']'])
}

#[test]
fn the_backing_disk_is_changed_only_with_consent_and_always_put_back() {
    if !can_run("the backing disk's I/O scheduler", &["mkfs.ext4"]) {
        return;
    }
    let _machine = machine_wide();
    let (images, state, seen) = (tempdir(), tempdir(), tempdir());
    let file = disk_scheduler_file(images.path());
    if !file.exists() {
        // CI's image directory is on a disk; this one is on tmpfs or overlay.
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is on no disk",
            images.path().display()
        );
        skip("the backing disk's I/O scheduler: the image directory is on no disk");
        return;
    }
    let before = std::fs::read_to_string(&file).unwrap();
    // A scheduler other than the disk's own, so that a change shows.
    let wanted = if active(&before) == "bfq" {
        "mq-deadline"
    } else {
        "bfq"
    };
    let peek = seen.path().join("during");
    let phase = format!("peek=cat {} > {}", file.display(), peek.display());
    let fs = format!("ext4:sched={wanted}");
    let args = ["--fs", &fs, "--runs", "1", "--command-phase", &phase];

    // Without consent: the loop device's queue is set, the disk's is not, and both say so.
    let (out, doc) = image_run_json(images.path(), state.path(), &args);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        active(&std::fs::read_to_string(&peek).unwrap()),
        active(&before)
    );
    let testbed = &doc["runs"][0]["testbed"];
    let said = testbed["backing_scheduler"].as_str().unwrap();
    assert!(
        said.starts_with("not set: /dev/") && said.contains("--sched-backing"),
        "{said}"
    );
    assert!(
        stderr.contains(&format!("I/O scheduler {wanted} on /dev/loop"))
            && stderr.contains("backing disk: not set"),
        "{stderr}"
    );

    // With consent: the disk runs under it during the run and gets its own back after.
    let mut consenting = args.to_vec();
    consenting.push("--sched-backing");
    let (out, doc) = image_run_json(images.path(), state.path(), &consenting);
    let after = std::fs::read_to_string(&file).unwrap();
    assert_eq!(after, before, "the backing disk's scheduler is put back");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(active(&std::fs::read_to_string(&peek).unwrap()), wanted);
    let said = doc["runs"][0]["testbed"]["backing_scheduler"]
        .as_str()
        .unwrap();
    let was = format!("(was {})", active(&before));
    assert!(
        said.starts_with(&format!("{wanted} on /dev/")) && said.ends_with(&was),
        "{said}"
    );
    assert_no_state_left(state.path());

    // Consent where there is no backing disk, or nothing to set: refused before any run.
    let dir = tempdir();
    let dir = dir.path().to_str().unwrap();
    fails_with(
        &["run", "--dir", dir, "--sched-backing", "-w", TINY],
        2,
        "--sched-backing needs a loop image",
    );
    fails_with(
        &["run", "--sched-backing", "-w", TINY],
        2,
        "give --sched or FS:sched=NAME",
    );
}

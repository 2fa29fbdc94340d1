//! The I/O scheduler as a configuration's dimension: set on the run's loop device or the
//! given device for each run, recorded with the run, put back after it; unknown ones refused.

mod common;

use common::*;

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
    let state = tempdir();
    let out = run(json_run(state.path()).args([
        "--device",
        &device.dev,
        "--force",
        "--fs",
        "ext4:sched=kyber",
        "--runs",
        "1",
        "-w",
        TINY,
    ]));
    assert!(out.status.success(), "{}", text(&out.stderr));
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

    let out = run(json_run(state.path()).args([
        "--device",
        &device.dev,
        "--force",
        "--fs",
        "ext4:sched=cfq",
        "--runs",
        "1",
        "-w",
        TINY,
    ]));
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

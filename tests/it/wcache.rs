//! The write cache as a configuration's dimension (`wcache=on|off`): set on a `--device`'s
//! queue for each run and put back after it; refused on loop images with the reason.

use crate::common::*;

const TINY: &str = "tree:dirs=3,files=2,size=1,levels=3";

fn write_cache(dev: &str) -> String {
    let name = dev.trim_start_matches("/dev/");
    std::fs::read_to_string(format!("/sys/block/{name}/queue/write_cache")).unwrap()
}

#[test]
fn a_device_runs_with_its_write_cache_off_and_gets_it_back() {
    if !can_run("write cache on a device", &["mkfs.ext4"]) {
        return;
    }
    let device = LoopDevice::blank(64);
    let before = write_cache(&device.dev);
    let state = tempdir();
    let out = device_run(state.path(), &device.dev, "ext4:wcache=off", TINY);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let run = &doc["runs"][0];
    assert_eq!(run["config"], "ext4 wcache=off");
    let said = run["testbed"]["write_cache"].as_str().unwrap();
    let want = format!("write through on {} (was {})", device.dev, before.trim());
    assert_eq!(said, want);
    assert_eq!(
        write_cache(&device.dev),
        before,
        "the write cache is put back"
    );
    assert_no_state_left(state.path());
}

#[test]
fn a_loop_image_is_refused_with_the_reason() {
    if !can_run("write cache refused on a loop image", &["mkfs.ext4"]) {
        return;
    }
    let (images, state) = (tempdir(), tempdir());
    let args = ["--fs", "ext4:wcache=off", "--runs", "1", "-w", TINY];
    let out = run(json_run(state.path())
        .arg("--image-dir")
        .arg(images.path())
        .args(args));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a loop device has no write cache of its own; the backing disk's is"),
        "{stderr}"
    );
    assert_empty(images.path());
}

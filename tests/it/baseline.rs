//! The raw-device baseline (`--baseline`): the loop image written and then read with
//! O_DIRECT 1 MiB requests before the first mkfs, recorded with the suite's stack.

use crate::common::*;

const TINY: &str = "tree:dirs=3,files=2,size=1,levels=3";
const MIB: u64 = 1 << 20;

#[test]
fn a_loop_image_is_written_and_read_before_the_first_mkfs() {
    if !can_run("raw-device baseline on a loop image", &["mkfs.ext4"]) {
        return;
    }
    let (images, state) = (tempdir(), tempdir());
    let args = [
        "--fs",
        "ext4",
        "--baseline",
        "1s",
        "--runs",
        "1",
        "-w",
        TINY,
    ];
    let (out, doc) = image_run_json(images.path(), state.path(), &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let baseline = &doc["testbed"]["baseline"];
    assert!(
        baseline["device"]
            .as_str()
            .unwrap()
            .starts_with("/dev/loop"),
        "{baseline}"
    );
    for pass in ["read", "write"] {
        let p = &baseline[pass];
        let requests = p["requests"].as_u64().unwrap();
        assert!(requests > 0, "{pass}: {p}");
        assert_eq!(p["bytes"].as_u64().unwrap(), requests * MIB, "{pass}: {p}");
        // At least the second asked for: the pass stops at the first request past it.
        assert!(p["secs"].as_f64().unwrap() >= 1.0, "{pass}: {p}");
    }
    assert_all_undone(images.path(), state.path());

    // A directory has no device to measure: refused before anything runs.
    let dir = tempdir();
    let dir = dir.path().to_str().unwrap();
    fails_with(
        &["run", "--dir", dir, "--baseline", "-w", TINY],
        2,
        "--baseline needs a block device",
    );
}

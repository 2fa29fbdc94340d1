//! A queue setting is one run's at a time: recorded in the state file before it is changed,
//! put back by `fsbench clean` after a SIGKILL, and refused to a second run while the first
//! holds it, naming the first; the first's phases run under the setting its label names.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::*;
use fsbench_testbed::testbed::scratch::State;

/// The active scheduler of a `queue/scheduler` file's text.
fn active(text: &str) -> String {
    let word = text.split_whitespace().find(|w| w.starts_with('['));
    word.unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_string()
}

fn scheduler(file: &Path) -> String {
    active(&std::fs::read_to_string(file).unwrap_or_default())
}

/// A scheduler other than `current` that every kernel with blk-mq has.
fn other_than(current: &str) -> &'static str {
    if current == "mq-deadline" {
        "none"
    } else {
        "mq-deadline"
    }
}

/// Starts a run of `fs` on a loop image in `images` (more arguments in `extra`) whose phase
/// writes `ready`, waits for `go` (a minute at most) and copies `peek` to `seen`.
fn start_holding_run(
    images: &Path,
    state: &Path,
    files: &Path,
    fs: &str,
    extra: &[&str],
    peek: &Path,
) -> Child {
    let (ready, go, seen) = (files.join("ready"), files.join("go"), files.join("seen"));
    let phase = format!(
        "held=echo $$ > {r}; i=0; while [ ! -e {g} ] && [ $i -lt 600 ]; do sleep 0.1; \
         i=$((i+1)); done; cat {p} > {s}",
        r = ready.display(),
        g = go.display(),
        p = peek.display(),
        s = seen.display()
    );
    fsbench(state)
        .args(["run", "-q", "--fs", fs, "--runs", "1", "--image-dir"])
        .arg(images)
        .args(["--command-space", "16M", "--command-phase", &phase])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The one state file in `state`, read.
fn the_state(state: &Path) -> State {
    let file = std::fs::read_dir(state)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a state file");
    serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap()
}

#[test]
fn kill_9_then_clean_puts_the_loop_devices_scheduler_back() {
    if !can_run("kill -9 and a loop device's scheduler", &["mkfs.ext4"]) {
        return;
    }
    let (images, state, files) = (tempdir(), tempdir(), tempdir());
    // Which loop device the run gets is known once it has it: the wanted scheduler is one
    // no loop device has now.
    let loops: Vec<String> = (std::fs::read_dir("/sys/block").unwrap().flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with("loop"))
        .map(|e| scheduler(&e.path().join("queue/scheduler")))
        .collect();
    let Some(wanted) = ["mq-deadline", "kyber", "bfq"]
        .into_iter()
        .find(|s| !loops.iter().any(|l| l == s))
    else {
        return skip("kill -9 and a loop device's scheduler: loop devices run every scheduler");
    };
    let fs = format!("ext4:sched={wanted}");
    let peek = PathBuf::from("/proc/self/stat");
    let mut child = start_holding_run(images.path(), state.path(), files.path(), &fs, &[], &peek);
    let ready = pid_written(&files.path().join("ready"));
    let device = loops_below(images.path()).first().cloned();
    let record = the_state(state.path());
    child.kill().unwrap();
    wait_drained_within(child, Duration::from_secs(60));
    assert!(ready > 0, "the phase never started");
    let device = device.expect("the run's loop device");
    let name = device.file_name().unwrap().to_string_lossy().into_owned();
    let file = PathBuf::from(format!("/sys/block/{name}/queue/scheduler"));
    let queue = (record.queues.iter())
        .find(|q| q.loop_device.as_deref() == Some(device.as_path()))
        .unwrap_or_else(|| panic!("{device:?}'s scheduler is not in the state file: {record:?}"));
    assert_eq!(scheduler(&file), wanted, "the killed run left it set");
    let previous = queue.previous.clone();
    assert_ne!(previous, wanted);
    let out = run(fsbench(state.path()).arg("clean"));
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(said.contains(&format!("put `{previous}` back")), "{said}");
    assert_eq!(scheduler(&file), previous, "{said}");
    assert_all_undone(images.path(), state.path());
}

/// The `queue/scheduler` file of the whole disk holding `dir`'s filesystem, if it is on one.
fn disk_scheduler_file(dir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let mut node = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    if node.join("partition").exists() {
        node.pop();
    }
    Some(node.join("queue/scheduler")).filter(|f| f.exists())
}

#[test]
fn two_overlapping_sched_backing_runs_one_is_refused_naming_the_other() {
    if !can_run("overlapping --sched-backing runs", &["mkfs.ext4"]) {
        return;
    }
    let _machine = machine_wide();
    let (images, state, files) = (tempdir(), tempdir(), tempdir());
    let Some(disk) = disk_scheduler_file(images.path()) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "the images are on no disk"
        );
        return skip("overlapping --sched-backing runs: the image directory is on no disk");
    };
    let before = scheduler(&disk);
    let first_wants = other_than(&before);
    let second_wants = if first_wants == "none" {
        "kyber"
    } else {
        "none"
    };
    let first_fs = format!("ext4:sched={first_wants}");
    let first = start_holding_run(
        images.path(),
        state.path(),
        files.path(),
        &first_fs,
        &["--sched-backing"],
        &disk,
    );
    let ready = pid_written(&files.path().join("ready"));
    let (other_images, other_state) = (tempdir(), tempdir());
    let second = run(fsbench(other_state.path())
        .args([
            "run",
            "-q",
            "--runs",
            "1",
            "--sched-backing",
            "-w",
            "tree:quick",
        ])
        .args(["--fs", &format!("ext4:sched={second_wants}"), "--image-dir"])
        .arg(other_images.path()));
    let during = scheduler(&disk);
    std::fs::write(files.path().join("go"), b"").unwrap();
    let first_pid = first.id();
    let out = wait_drained_within(first, limit());
    let seen = active(&std::fs::read_to_string(files.path().join("seen")).unwrap_or_default());
    let err = text(&second.stderr);
    assert!(ready > 0, "the first run's phase never started");
    assert_eq!(second.status.code(), Some(3), "{err}");
    assert!(
        err.contains("held by another fsbench run") && err.contains(&format!("pid {first_pid}")),
        "{err}"
    );
    assert_eq!(
        during, first_wants,
        "the second run changed the disk's scheduler"
    );
    assert_eq!(
        seen, first_wants,
        "the first run's phase ran under another scheduler"
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        scheduler(&disk),
        before,
        "the disk did not get its scheduler back"
    );
    assert_nothing_left(images.path());
    assert_all_undone(other_images.path(), state.path());
    assert_no_state_left(other_state.path());
}

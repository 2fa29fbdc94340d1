//! `fsbench clean` against stale and damaged state files: it undoes only what a state file's
//! own run made (a directory carrying fsbench's marker, the loop devices of the images it
//! made or recorded, its own mounts), reports the rest, and goes on past a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use fsbench_testbed::testbed::scratch::{AttachedLoop, MARKER, QueueRecord, State};

/// A state file for `base/fsbench.<n>` whose owner is gone (no lock file, no such pid), and
/// the directory itself, marked as fsbench marks the directories it makes.
fn stale(state_dir: &Path, base: &Path, n: u32) -> State {
    let scratch = base.join(format!("fsbench.{n}"));
    std::fs::create_dir(&scratch).unwrap();
    let token = format!("token-{n}");
    std::fs::write(scratch.join(MARKER), &token).unwrap();
    std::fs::write(scratch.join("left-by-the-run"), b"scratch data").unwrap();
    let state = State {
        pid: u32::MAX - n,
        start_ticks: 0,
        pid_namespace: None,
        base: Some(base.to_path_buf()),
        scratch,
        attached_files: Vec::new(),
        marker: Some(token),
        device: None,
        loops: Vec::new(),
        zfs: Vec::new(),
        queues: Vec::new(),
        cgroup_parent: None,
        made_by: None,
        recorders: Vec::new(),
    };
    save(state_dir, &state);
    state
}

fn save(state_dir: &Path, state: &State) {
    let name = state.scratch.file_name().unwrap().to_str().unwrap();
    let file = state_dir.join(format!("{name}.json"));
    std::fs::write(file, serde_json::to_vec(state).unwrap()).unwrap();
}

fn clean(state_dir: &Path) -> (std::process::Output, Duration) {
    let start = Instant::now();
    let out = output_within(fsbench(state_dir).arg("clean"), Duration::from_secs(120));
    (out, start.elapsed())
}

/// Attaches `file` to a free loop device, as a user would; returns the device.
fn losetup(file: &Path) -> PathBuf {
    let out = output_within(
        Command::new("losetup").args(["-f", "--show"]).arg(file),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "losetup: {}", text(&out.stderr));
    PathBuf::from(text(&out.stdout).trim())
}

/// A 64 MiB image at `image`, attached as a user would and made ext4; returns the device.
fn ext4_on_loop(image: &Path) -> PathBuf {
    sparse_file(image, 64 << 20);
    let device = losetup(image);
    assert!(status(Command::new("mkfs.ext4").arg("-q").arg(&device)).success());
    device
}

fn backing_file(device: &Path) -> Option<String> {
    let sys = Path::new("/sys/block")
        .join(device.file_name().unwrap())
        .join("loop/backing_file");
    std::fs::read_to_string(sys)
        .ok()
        .map(|s| s.trim().to_string())
}

fn sparse_file(path: &Path, size: u64) {
    std::fs::File::create(path).unwrap().set_len(size).unwrap();
}

fn mount(args: &[&str], target: &Path) {
    std::fs::create_dir_all(target).unwrap();
    assert!(status(Command::new("mount").args(args).arg(target)).success());
}

/// Undoes a user's mount (best effort: a clean that wrongly unmounted it fails the test later).
fn umount(target: &Path) {
    status(Command::new("umount").arg(target));
}

/// Detaches a user's loop device (best effort, as [`umount`]) and waits for it to go: udev
/// may still hold it a moment.
fn detach(device: &Path) {
    status(Command::new("losetup").arg("-d").arg(device));
    let deadline = Instant::now() + Duration::from_secs(10);
    while backing_file(device).is_some() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_user_directory_named_like_scratch_survives_a_damaged_state_file() {
    let (base, state_dir) = (tempdir(), tempdir());
    let user = base.path().join("fsbench.99999");
    std::fs::create_dir(&user).unwrap();
    std::fs::write(user.join("thesis.tex"), b"years of work").unwrap();
    // A state file without a base (the check that it sits in its base was skipped then).
    let mut state = State {
        pid: u32::MAX,
        start_ticks: 0,
        pid_namespace: None,
        base: None,
        scratch: user.clone(),
        attached_files: Vec::new(),
        marker: None,
        device: None,
        loops: Vec::new(),
        zfs: Vec::new(),
        queues: Vec::new(),
        cgroup_parent: None,
        made_by: None,
        recorders: Vec::new(),
    };
    save(state_dir.path(), &state);
    let (out, _) = clean(state_dir.path());
    let err = text(&out.stderr);
    assert!(user.join("thesis.tex").exists(), "{err}");
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("names no base directory"), "{err}");

    // With a base, but no marker of its state file in the directory (or another one's).
    state.base = Some(base.path().to_path_buf());
    state.marker = Some("forged".into());
    save(state_dir.path(), &state);
    let (out, _) = clean(state_dir.path());
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("no marker") && err.contains("fsbench.99999"),
        "{err}"
    );
    assert!(err.contains("clean left"), "no summary: {err}");
    assert_eq!(
        std::fs::read(user.join("thesis.tex")).unwrap(),
        b"years of work"
    );
}

#[test]
fn a_loop_device_fsbench_never_attached_stays_attached() {
    if !can_run(
        "a_loop_device_fsbench_never_attached_stays_attached",
        &["losetup"],
    ) {
        return;
    }
    let (base, state_dir, user) = (tempdir(), tempdir(), tempdir());
    // The user's own image, attached by the user, named as an attached file of a stale run.
    let image = user.path().join("mine.img");
    sparse_file(&image, 64 << 20);
    let device = losetup(&image);
    let mut state = stale(state_dir.path(), base.path(), 1);
    state.attached_files.push(image.clone());
    save(state_dir.path(), &state);
    // An image in the scratch directory, but not where fsbench makes them (run<N>/image).
    let inside = state.scratch.join("other.img");
    sparse_file(&inside, 64 << 20);
    let inside_device = losetup(&inside);
    // A second state that recorded another device for the user's file.
    let mut other = stale(state_dir.path(), base.path(), 2);
    other.attached_files.push(image.clone());
    other.loops.push(AttachedLoop {
        device: PathBuf::from("/dev/loop-none"),
        file: image.clone(),
    });
    save(state_dir.path(), &other);

    let (out, _) = clean(state_dir.path());
    let err = text(&out.stderr);
    let still = (backing_file(&device), backing_file(&inside_device));
    detach(&device);
    detach(&inside_device);
    assert_eq!(still.0.as_deref(), image.to_str(), "{err}");
    assert_eq!(still.1.as_deref(), inside.to_str(), "{err}");
    assert!(!out.status.success());
    assert!(
        err.contains(device.to_str().unwrap()) && err.contains("not the loop device"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{} kept", state.scratch.display())),
        "{err}"
    );
    assert!(image.exists() && inside.exists());
    // Once the user has detached them, the stale runs are cleaned.
    assert_clean_undoes_all(state_dir.path(), base.path());
}

#[test]
fn a_user_filesystem_mounted_below_a_scratch_dir_stays_mounted() {
    if !can_run(
        "a_user_filesystem_mounted_below_a_scratch_dir_stays_mounted",
        &["losetup", "mkfs.ext4", "mount"],
    ) {
        return;
    }
    let (base, state_dir, user) = (tempdir(), tempdir(), tempdir());
    let state = stale(state_dir.path(), base.path(), 3);
    // A tmpfs of the user's below the directory, and the user's ext4 where fsbench would mount
    // its own (run1/mnt), from an image outside it.
    let tmpfs = state.scratch.join("userfs");
    mount(&["-t", "tmpfs", "tmpfs"], &tmpfs);
    std::fs::write(tmpfs.join("notes"), b"keep me").unwrap();
    let device = ext4_on_loop(&user.path().join("user.img"));
    let run_mnt = state.scratch.join("run1/mnt");
    mount(&[device.to_str().unwrap()], &run_mnt);

    let (out, _) = clean(state_dir.path());
    let err = text(&out.stderr);
    let mounted = mounts_below(&state.scratch);
    let notes = std::fs::read(tmpfs.join("notes"));
    umount(&tmpfs);
    umount(&run_mnt);
    detach(&device);
    assert!(
        mounted.contains(&tmpfs) && mounted.contains(&run_mnt),
        "{err}"
    );
    assert_eq!(notes.unwrap(), b"keep me");
    assert!(!out.status.success());
    assert!(err.contains("not by fsbench; left mounted"), "{err}");
    assert_clean_undoes_all(state_dir.path(), base.path());
}

#[test]
fn a_busy_loop_device_is_reported_and_the_other_state_files_are_cleaned() {
    if !can_run(
        "a_busy_loop_device_is_reported_and_the_other_state_files_are_cleaned",
        &["losetup", "mkfs.ext4", "mount"],
    ) {
        return;
    }
    let (base, state_dir, elsewhere) = (tempdir(), tempdir(), tempdir());
    // A killed run's image, loop device and mount, where fsbench makes them; the device is
    // also mounted outside the directory, so it cannot be detached.
    let busy = stale(state_dir.path(), base.path(), 10);
    let image = busy.scratch.join("run1/image");
    std::fs::create_dir(image.parent().unwrap()).unwrap();
    let device = ext4_on_loop(&image);
    let run_mnt = busy.scratch.join("run1/mnt");
    mount(&[device.to_str().unwrap()], &run_mnt);
    let user_mnt = elsewhere.path().join("mnt");
    mount(&[device.to_str().unwrap()], &user_mnt);
    let others: Vec<State> = (11..16)
        .map(|n| stale(state_dir.path(), base.path(), n))
        .collect();

    let (out, took) = clean(state_dir.path());
    let err = text(&out.stderr);
    let said = text(&out.stdout);
    let attached = backing_file(&device);
    umount(&user_mnt);
    let stuck = !mounts_below(&busy.scratch).is_empty();
    if stuck {
        umount(&run_mnt);
    }
    if attached.is_some() {
        detach(&device);
    }
    assert!(!stuck, "its own mount was not unmounted: {err}");
    assert_eq!(attached.as_deref(), image.to_str(), "{err}");
    for other in &others {
        assert!(
            !other.scratch.exists(),
            "{} was not cleaned",
            other.scratch.display()
        );
    }
    assert!(
        said.contains(&format!("unmounted {}", run_mnt.display())),
        "{said}"
    );
    assert!(!out.status.success());
    assert!(
        err.contains(device.to_str().unwrap())
            && err.contains(&format!("mounted at {}", user_mnt.display())),
        "{err}"
    );
    assert!(took < Duration::from_secs(8), "clean took {took:?}");
    // Only the busy run's state file is kept, and the next clean finishes it.
    let kept: Vec<_> = std::fs::read_dir(state_dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(kept, ["fsbench.10.json"]);
    assert_clean_undoes_all(state_dir.path(), base.path());
}

#[test]
fn clean_detaches_the_loop_device_a_killed_run_recorded_for_a_given_image() {
    if !can_run(
        "clean_detaches_the_loop_device_a_killed_run_recorded_for_a_given_image",
        &["mkfs.ext4"],
    ) {
        return;
    }
    let (user, state_dir) = (tempdir(), tempdir());
    let image = user.path().join("given.img");
    // Room for tree:small-deep, whose run lasts long enough to be killed mid-way.
    sparse_file(&image, 4 << 30);
    let mut child = fsbench(state_dir.path())
        .args([
            "run",
            "-q",
            "--fs",
            "ext4",
            "-w",
            "tree:small-deep",
            "--runs",
            "1",
        ])
        .arg("--device")
        .arg(&image)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // After the harness ceiling's run on tmpfs: the given image attached and mounted.
    let deadline = Instant::now() + limit();
    let mounted = || {
        loops_below(user.path()).into_iter().find(|device| {
            fsbench_testbed::testbed::mounts::mounts()
                .iter()
                .any(|m| Path::new(&m.source) == device)
        })
    };
    let device = loop {
        if let Some(device) = mounted() {
            break device;
        }
        assert!(Instant::now() < deadline, "the run never mounted the image");
        if child.try_wait().unwrap().is_some() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            panic!("the run ended early: {err}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    child.kill().unwrap();
    wait_drained_within(child, Duration::from_secs(60));
    let (out, _) = clean(state_dir.path());
    let said = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        said.contains(&format!(
            "detached {} ({})",
            device.display(),
            image.display()
        )),
        "{said}"
    );
    assert!(loops_below(user.path()).is_empty());
    assert!(image.exists(), "the given image is the user's");
    assert_no_state_left(state_dir.path());
}

/// Puts a queue's scheduler back when dropped, whatever the test did.
struct Restore(PathBuf, String);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, &self.1);
    }
}

#[test]
fn a_crashed_suites_backing_disk_scheduler_is_put_back() {
    use std::os::unix::fs::MetadataExt;
    if !can_run("clean puts a disk's I/O scheduler back", &[]) {
        return;
    }
    let _machine = machine_wide();
    let (base, state_dir) = (tempdir(), tempdir());
    let dev = std::fs::metadata(base.path()).unwrap().dev();
    let node = format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
    let Ok(mut node) = std::fs::canonicalize(node) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "the test directory is on no disk"
        );
        return skip("clean puts a disk's I/O scheduler back: the test directory is on no disk");
    };
    if node.join("partition").exists() {
        node.pop();
    }
    let file = node.join("queue/scheduler");
    let before = std::fs::read_to_string(&file).unwrap();
    let active = |t: &str| {
        let w = t.split_whitespace().find(|w| w.starts_with('['));
        w.unwrap().trim_matches(['[', ']']).to_string()
    };
    let previous = active(&before);
    let _restore = Restore(file.clone(), previous.clone());
    // What a suite killed mid-run with --sched-backing leaves: the disk under its scheduler.
    let other = if previous == "bfq" {
        "mq-deadline"
    } else {
        "bfq"
    };
    std::fs::write(&file, other).unwrap();
    let mut state = stale(state_dir.path(), base.path(), 7);
    state.queues.push(QueueRecord {
        file: file.clone(),
        previous: previous.clone(),
        loop_device: None,
    });
    save(state_dir.path(), &state);
    let (out, _) = clean(state_dir.path());
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{said}");
    assert_eq!(
        active(&std::fs::read_to_string(&file).unwrap()),
        previous,
        "{said}"
    );
    assert!(said.contains(&format!("put `{previous}` back")), "{said}");
}

/// A loop device that something else holds open when a run detaches it: that run fails
/// with a `RunLost` error (which the runner takes for the run's failure alone, as a lost
/// FUSE daemon), saying so; the device goes once its holder lets go.
#[test]
fn a_loop_device_that_detaches_late_fails_its_run_not_the_suite() {
    if !can_run("a loop device that detaches late", &["losetup"]) {
        return;
    }
    let device = LoopDevice::blank(16);
    let dev = PathBuf::from(&device.dev);
    let holder = std::fs::File::open(&dev).unwrap();
    let started = Instant::now();
    let e = fsbench_testbed::testbed::scratch::detach_loop_within(&dev, Duration::from_millis(500))
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(
        matches!(
            e.downcast_ref(),
            Some(fsbench_measure::error::FsbenchError::RunLost(_))
        ),
        "{e:#}"
    );
    let text = format!("{e:#}");
    assert!(
        text.contains("still attached") && text.contains("this run fails, the suite goes on"),
        "{text}"
    );
    drop(holder);
    let backing = Path::new("/sys/block")
        .join(dev.file_name().unwrap())
        .join("loop/backing_file");
    let gone = Instant::now();
    while backing.exists() && gone.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!backing.exists(), "{} still attached", dev.display());
}

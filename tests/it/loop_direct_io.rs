//! Loop devices fsbench attaches: direct I/O by default (seen in sysfs while the filesystem is
//! mounted, and as `losetup --list` shows it), buffered on request, and the fallback where the
//! backing filesystem refuses direct I/O — recorded, and said in every output.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::*;

const TINY: &str = "tree:dirs=6,files=4,size=1,levels=3";

/// What the test saw of a loop device while the filesystem on it was mounted.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    device: PathBuf,
    sysfs_dio: String,
    /// `losetup --list --noheadings --output DIO,LOG-SEC DEVICE`, whitespace-joined.
    losetup: String,
}

/// Runs fsbench with `args` (JSON on stdout), watching sysfs from another thread for loop
/// devices backed by files below `dir` while something is mounted below it.
fn run_watching(dir: &Path, state: &Path, args: &[&str]) -> (std::process::Output, Vec<Seen>) {
    let done = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Vec::<Seen>::new()));
    let watcher = {
        let (done, seen, dir) = (done.clone(), seen.clone(), dir.to_path_buf());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                for device in loops_below(&dir) {
                    if mounts_below(&dir).is_empty()
                        || seen.lock().unwrap().iter().any(|s| s.device == device)
                    {
                        continue;
                    }
                    let name = device.file_name().unwrap().to_string_lossy().into_owned();
                    let Ok(dio) = std::fs::read_to_string(format!("/sys/block/{name}/loop/dio"))
                    else {
                        continue;
                    };
                    let listed = output_within(
                        Command::new(fsbench_measure::tools::find("losetup").unwrap())
                            .args(["--list", "--noheadings", "--output", "DIO,LOG-SEC"])
                            .arg(&device),
                        limit(),
                    );
                    // Still mounted after losetup answered: both describe the mounted state.
                    if !mounts_below(&dir).is_empty() {
                        seen.lock().unwrap().push(Seen {
                            device,
                            sysfs_dio: dio.trim().to_string(),
                            losetup: text(&listed.stdout)
                                .split_whitespace()
                                .collect::<Vec<_>>()
                                .join(" "),
                        });
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    let child = fsbench(state)
        .args([
            "run",
            "--runs",
            "1",
            "-q",
            "--output-format",
            "json",
            "--image-dir",
        ])
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_drained_within(child, limit());
    done.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    let seen = seen.lock().unwrap().clone();
    (out, seen)
}

/// The backing device's logical block size, from sysfs, for the disk holding `dir`.
fn backing_logical_block_size(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let dev = dir.metadata().unwrap().dev();
    let node = PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(dev),
        libc::minor(dev)
    ))
    .canonicalize()
    .unwrap();
    let disk = if node.join("partition").exists() {
        node.parent().unwrap().to_path_buf()
    } else {
        node
    };
    std::fs::read_to_string(disk.join("queue/logical_block_size"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn check_direct_io(fs: &str, tool: &str) {
    if !can_run(&format!("{fs} loop direct I/O"), &[tool, "losetup"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let (out, seen) = run_watching(dir.path(), state.path(), &["--fs", fs, "-w", TINY]);
    assert!(out.status.success(), "exit {:?}", out.status);
    let doc = json(&out);
    let first = &doc["runs"][0];
    let block = backing_logical_block_size(dir.path());
    assert_eq!(first["loop_device"]["direct_io"], true, "{first}");
    assert_eq!(first["loop_device"]["logical_block_size"], block, "{first}");
    assert!(first["loop_device"].get("fallback").is_none(), "{first}");
    // The test's own look at the kernel while the filesystem was mounted.
    assert!(!seen.is_empty(), "never saw the loop device while mounted");
    for s in &seen {
        assert_eq!(s.sysfs_dio, "1", "{s:?}");
        assert_eq!(s.losetup, format!("1 {block}"), "{s:?}");
    }
    assert_eq!(
        first["loop_device"]["device"],
        seen[0].device.display().to_string()
    );
    assert!(
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["kind"] != "loop-buffered")
    );
    assert_all_undone(dir.path(), state.path());
}

#[test]
fn ext4_loop_images_use_direct_io() {
    check_direct_io("ext4", "mkfs.ext4");
}

#[test]
fn xfs_loop_images_use_direct_io() {
    check_direct_io("xfs", "mkfs.xfs");
}

#[test]
fn btrfs_loop_images_use_direct_io() {
    check_direct_io("btrfs", "mkfs.btrfs");
}

#[test]
fn loop_cache_asks_for_buffered_loops_and_says_so() {
    if !can_run("loop cache", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let (out, seen) = run_watching(
        dir.path(),
        state.path(),
        &["--fs", "ext4", "-w", TINY, "--loop-cache"],
    );
    assert!(out.status.success(), "exit {:?}", out.status);
    let doc = json(&out);
    let first = &doc["runs"][0];
    assert_eq!(first["loop_device"]["direct_io"], false, "{first}");
    assert!(
        !seen.is_empty() && seen.iter().all(|s| s.sysfs_dio == "0"),
        "{seen:?}"
    );
    let warning = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "loop-buffered");
    let message = warning.expect("a loop-buffered warning")["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("--loop-cache"), "{message}");
    assert!(
        doc["target"]["description"]
            .as_str()
            .unwrap()
            .contains("BUFFERED")
    );
    assert_nothing_left(dir.path());
}

/// A filesystem the test mounts, unmounted when the test ends however it ends; the images
/// go to its `images` directory (the mount point itself is a mount below any directory).
struct TestMount(PathBuf);

impl TestMount {
    fn images(&self) -> PathBuf {
        let images = self.0.join("images");
        std::fs::create_dir_all(&images).unwrap();
        images
    }

    fn new(fstype: &str, options: &str) -> TestMount {
        let dir = tempdir().keep();
        let ok = status(
            Command::new("mount")
                .args(["-t", fstype, "-o", options, fstype])
                .arg(&dir),
        );
        assert!(ok.success(), "cannot mount {fstype}");
        TestMount(dir)
    }
}

impl Drop for TestMount {
    fn drop(&mut self) {
        status(Command::new("umount").arg(&self.0));
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Whether a file on `dir`'s filesystem can be opened with O_DIRECT (the test's own probe).
fn o_direct_works(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = dir.join("probe");
    std::fs::write(&probe, b"").unwrap();
    let works = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok();
    std::fs::remove_file(&probe).unwrap();
    works
}

#[test]
fn a_backing_filesystem_refusing_direct_io_falls_back_and_every_output_says_so() {
    if !can_run("loop direct I/O fallback", &["mkfs.ext4", "losetup"]) {
        return;
    }
    // ramfs has no O_DIRECT at all, so the loop cannot bypass the page cache.
    let ramfs = TestMount::new("ramfs", "mode=0755");
    assert!(
        !o_direct_works(&ramfs.0),
        "ramfs accepted O_DIRECT: the fallback cannot be tested here"
    );
    let state = tempdir();
    let db = state.path().join("results.db");
    let images = ramfs.images();
    let (out, seen) = run_watching(
        &images,
        state.path(),
        &["--fs", "ext4", "-w", TINY, "--db", db.to_str().unwrap()],
    );
    assert!(out.status.success(), "exit {:?}", out.status);
    let doc = json(&out);
    let first = &doc["runs"][0];
    assert_eq!(first["loop_device"]["direct_io"], false, "{first}");
    let fallback = first["loop_device"]["fallback"]
        .as_str()
        .expect("the fallback recorded");
    assert!(
        fallback.contains("ramfs") && fallback.contains("direct I/O"),
        "{fallback}"
    );
    assert!(
        !seen.is_empty() && seen.iter().all(|s| s.sysfs_dio == "0"),
        "{seen:?}"
    );
    // The terminal, JSON, database (show) and HTML report all say it.
    assert!(
        text(&out.stderr).contains("BUFFERED"),
        "the console did not say it"
    );
    let warning = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "loop-buffered");
    assert!(
        warning.expect("a loop-buffered warning")["message"]
            .as_str()
            .unwrap()
            .contains("ramfs")
    );
    let id = doc["id"].as_i64().unwrap().to_string();
    let show = run(fsbench(state.path()).args(["--db", db.to_str().unwrap(), "show", &id]));
    assert!(show.status.success());
    assert!(
        text(&show.stdout).contains("refuses direct I/O"),
        "{}",
        text(&show.stdout)
    );
    assert!(text(&show.stdout).contains("BUFFERED"));
    let report =
        run(fsbench(state.path()).args(["--db", db.to_str().unwrap(), "report", &id, "-o", "-"]));
    assert!(report.status.success());
    assert!(text(&report.stdout).contains("refuses direct I/O"));
    assert_nothing_left(&images);
}

#[test]
fn a_tmpfs_image_dir_records_what_the_kernel_did() {
    if !can_run("loop on tmpfs", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let tmpfs = TestMount::new("tmpfs", "size=2g");
    // tmpfs takes O_DIRECT since Linux 6.6; before, the loop falls back to buffered.
    let direct = o_direct_works(&tmpfs.0);
    let state = tempdir();
    let images = tmpfs.images();
    let (out, seen) = run_watching(&images, state.path(), &["--fs", "ext4", "-w", TINY]);
    assert!(out.status.success(), "exit {:?}", out.status);
    let doc = json(&out);
    let first = &doc["runs"][0];
    assert_eq!(first["loop_device"]["direct_io"], direct, "{first}");
    assert_eq!(
        first["loop_device"].get("fallback").is_some(),
        !direct,
        "{first}"
    );
    let expected = if direct { "1" } else { "0" };
    assert!(
        !seen.is_empty() && seen.iter().all(|s| s.sysfs_dio == expected),
        "{seen:?}"
    );
    assert_nothing_left(&images);
}

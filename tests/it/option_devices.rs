//! Devices and files named inside mkfs arguments and mount options: whatever the form (absolute
//! path, path relative to the working directory, `UUID=`, `LABEL=`) and whether or not the
//! target was given with `--force`, a device that is neither the target nor consented to with
//! `--extra-device` is refused before anything is written, and the refusal names the option.

use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::common::*;

const TINY: &str = "tree:dirs=3,files=2,size=1,levels=3";
const TOOLS: &[&str] = &["mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "blkid", "losetup"];

/// What fsbench must not have touched on a device.
trait Untouched {
    /// `blkid -p` of the device: its signature, UUID and label.
    fn signature(&self) -> String;
    /// The device's first MiB, hashed.
    fn first_mib(&self) -> u64;
}

impl Untouched for LoopDevice {
    fn signature(&self) -> String {
        text(&run(Command::new("blkid").args(["-p", "-o", "export", &self.dev])).stdout)
    }

    fn first_mib(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut bytes = vec![0; 1 << 20];
        std::fs::File::open(&self.dev)
            .unwrap()
            .read_exact(&mut bytes)
            .unwrap();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        bytes.hash(&mut hasher);
        hasher.finish()
    }
}

/// A victim: a loop device holding an ext4 filesystem with a UUID and label of its own.
struct Victim {
    device: LoopDevice,
    uuid: String,
    label: String,
}

fn victim() -> Victim {
    static COUNT: AtomicU32 = AtomicU32::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let uuid = format!("{pid:08x}-{n:04x}-4000-8000-00000000fb25");
    let label = format!("fsbv{pid}.{n}");
    let device = LoopDevice::blank(64);
    let made = status(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-U", &uuid, "-L", &label])
            .arg(&device.dev),
    );
    assert!(made.success());
    Victim {
        device,
        uuid,
        label,
    }
}

/// Each driver's option that names a device (`{}` where the device goes) and how the refusal
/// names the option. tmpfs's `mpol=` names no device: a value resolving to one is refused all
/// the same.
const OPTIONS: &[(&str, &str)] = &[
    ("ext2:mount=journal_path={}", "`journal_path="),
    ("ext3:mkfs=-J device={}", "`-J device="),
    ("ext4:mkfs=-J device={}", "`-J device="),
    ("ext4:mount=journal_path={}", "`journal_path="),
    ("xfs:mkfs=-l logdev={},size=64m", "`-l logdev="),
    ("xfs:mkfs=-l name={}", "`-l name="),
    ("xfs:mkfs=-r rtdev={}", "`-r rtdev="),
    ("xfs:mkfs=-d name={}", "`-d name="),
    ("xfs:mount=logdev={}", "`logdev="),
    ("xfs:mount=rtdev={}", "`rtdev="),
    ("btrfs:mkfs=-d single -m single {}", "the device argument `"),
    ("btrfs:mount=device={}", "`device="),
    ("tmpfs:mount=mpol={}", "`mpol="),
];

/// An empty 1 GiB image file in `dir`, for `--device FILE --force`.
fn empty_target(dir: &Path) -> std::path::PathBuf {
    let target = dir.join("target.img");
    let file = std::fs::File::create(&target).unwrap();
    file.set_len(1 << 30).unwrap();
    target
}

/// `fsbench run` of `config` from /dev, on loop images in `images` or, with `force`, on the
/// device `forced_target` given with --force.
fn refused_run(config: &str, images: &Path, forced_target: Option<&Path>) -> std::process::Output {
    let state = tempdir();
    let mut cmd = fsbench(state.path());
    cmd.current_dir("/dev")
        .args(["run", "-q", "--runs", "1", "-w", TINY, "--fs", config]);
    match forced_target {
        Some(target) => cmd.arg("--device").arg(target).arg("--force"),
        None => cmd.arg("--image-dir").arg(images),
    };
    let out = run(&mut cmd);
    assert_no_state_left(state.path());
    out
}

#[test]
fn every_device_naming_option_of_every_driver_is_refused_in_every_form() {
    if !can_run("option devices", TOOLS) {
        return;
    }
    let victim = victim();
    let (images, targets) = (tempdir(), tempdir());
    let forced_target = empty_target(targets.path());
    let (signature, first_mib) = (victim.device.signature(), victim.device.first_mib());
    assert!(signature.contains(&victim.uuid), "{signature}");
    let dev = victim.device.dev.as_str();
    let forms = [
        ("absolute", dev.to_string(), false),
        (
            "relative to /dev",
            dev.trim_start_matches("/dev/").to_string(),
            false,
        ),
        ("UUID=", format!("UUID={}", victim.uuid), false),
        ("LABEL=", format!("LABEL={}", victim.label), false),
        ("--force on the target", dev.to_string(), true),
    ];
    for (template, option) in OPTIONS {
        for (form, token, force) in &forms {
            let config = template.replace("{}", token);
            let target = force.then_some(forced_target.as_path());
            let out = refused_run(&config, images.path(), target);
            let err = text(&out.stderr);
            let case = format!("{config} ({form})");
            assert_eq!(out.status.code(), Some(3), "{case}: {err}");
            assert!(
                err.contains(&format!("refusing {dev}:")) && err.contains(option),
                "{case}: the refusal names neither the device nor the option:\n{err}"
            );
            assert!(err.contains("ext4 filesystem"), "{case}: {err}");
            assert!(err.contains(token.as_str()), "{case}: {err}");
            assert_eq!(victim.device.signature(), signature, "{case}");
            assert_eq!(
                victim.device.first_mib(),
                first_mib,
                "{case}: victim written"
            );
        }
    }
    // ext4's journal device by number, as the kernel encodes it.
    let rdev = std::os::unix::fs::MetadataExt::rdev(&Path::new(dev).metadata().unwrap());
    let (major, minor) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
    let number = (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12);
    let out = refused_run(
        &format!("ext4:mount=journal_dev={number}"),
        images.path(),
        None,
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("refusing {dev}:")) && err.contains("`journal_dev="),
        "{err}"
    );
    assert_eq!(victim.device.first_mib(), first_mib);
    assert_nothing_left(images.path());
}

#[test]
fn mkfs_options_that_write_files_are_refused_and_write_nothing() {
    if !can_run("options writing files", TOOLS) {
        return;
    }
    let (images, files, targets) = (tempdir(), tempdir(), tempdir());
    let forced_target = empty_target(targets.path());
    let undo = files.path().join("undo");
    let xfs_image = files.path().join("x.img");
    let cases = [
        (format!("ext4:mkfs=-z {}", undo.display()), "`-z "),
        ("ext4:mkfs=-zundo".to_string(), "`-z undo`"),
        (
            format!("xfs:mkfs=-d file,name={},size=400m", xfs_image.display()),
            "`-d file`",
        ),
        (
            format!("xfs:mkfs=-l file,name={},size=64m", xfs_image.display()),
            "`-l file`",
        ),
    ];
    for (config, option) in &cases {
        for force in [false, true] {
            let state = tempdir();
            let mut cmd = fsbench(state.path());
            cmd.current_dir(files.path())
                .args(["run", "-q", "--runs", "1", "-w", TINY, "--fs", config]);
            if force {
                cmd.arg("--device").arg(&forced_target).arg("--force");
            } else {
                cmd.arg("--image-dir").arg(images.path());
            }
            let out = run(&mut cmd);
            assert_no_state_left(state.path());
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{config}: {err}");
            assert!(
                err.contains(option) && err.contains("write a file"),
                "{config}: {err}"
            );
        }
    }
    let left: Vec<_> = std::fs::read_dir(files.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "written: {left:?}");
    // mount(8)'s `loop` would attach a loop device nobody detaches; a file mkfs only reads
    // must be named absolutely (mkfs runs in an empty directory).
    for (config, needle) in [
        ("ext4:mount=loop", "loop"),
        ("ext4:mkfs=-d tree", "absolute path"),
    ] {
        let out = refused_run(config, images.path(), None);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{config}: {err}");
        assert!(err.contains(needle), "{config}: {err}");
    }
    assert_nothing_left(images.path());
}

#[test]
fn a_consented_extra_device_holds_the_xfs_external_log() {
    if !can_run("consented extra device", TOOLS) {
        return;
    }
    let log = LoopDevice::blank(100);
    let images = tempdir();
    let state = tempdir();
    let config = format!("xfs:mkfs=-l logdev={0},size=64m:mount=logdev={0}", log.dev);
    let run_with = |extra: &[&str], config: &str| {
        run(json_run(state.path())
            .args(["--runs", "1", "-w", TINY, "--fs", config])
            .args(extra)
            .arg("--image-dir")
            .arg(images.path()))
    };
    let out = run_with(&["--extra-device", &log.dev], &config);
    let doc = json(&out);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "ok", "{}", runs[0]);
    // xfs_repair checked the filesystem with its external log.
    assert_eq!(runs[0]["fsck"]["clean"], true, "{}", runs[0]);
    assert_eq!(doc["suite"]["extra_device"][0]["path"], log.dev.as_str());
    assert!(
        log.signature().contains("xfs_external_log"),
        "{}",
        log.signature()
    );
    assert_nothing_left(images.path());
    // Now it carries a log: consent to the device is not consent to overwrite that.
    let out = run_with(&["--extra-device", &log.dev], &config);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("--force-extra-device"), "{err}");
    // Consent to a device no option names is a mistake, said so.
    let out = run_with(&["--force-extra-device", &log.dev], "xfs");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("named by no mkfs or mount option"), "{err}");
    assert_nothing_left(images.path());
}

#[test]
fn run_help_documents_the_extra_device_flags() {
    let state = tempdir();
    let out = run(fsbench(state.path()).args(["run", "--help"]));
    let help = text(&out.stdout);
    assert!(help.contains("--extra-device <DEVICE>"), "{help}");
    assert!(help.contains("--force-extra-device <DEVICE>"), "{help}");
}

//! The storage stack fsbench records, checked item by item against what the system says
//! (`/proc/sys/vm`, `/sys/block`, `findmnt`, `uname`), and `compare`'s warning when two
//! suites ran on different stacks.

use std::path::Path;
use std::process::Command;

use crate::common::*;

const TINY: &str = "tree:dirs=3,files=2,size=1,levels=2";

fn sys(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path.as_ref())
        .unwrap_or_else(|e| panic!("{}: {e}", path.as_ref().display()))
        .trim()
        .to_string()
}

fn tool_output(program: &str, args: &[&str]) -> String {
    let out = run(Command::new(fsbench_measure::tools::find(program).unwrap()).args(args));
    assert!(out.status.success(), "{program} {args:?} failed");
    text(&out.stdout).trim().to_string()
}

/// The active word of a sysfs choice: `always [madvise] never` → `madvise`.
fn active(choice: &str) -> &str {
    choice
        .split_whitespace()
        .find(|w| w.starts_with('['))
        .map_or(choice, |w| w.trim_matches(['[', ']']))
}

#[test]
fn the_recorded_stack_is_the_systems() {
    if !can_run("recorded stack", &["mkfs.ext4", "findmnt", "uname"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let out = run(fsbench(state.path())
        .args(["run", "--fs", "ext4", "-w", TINY, "--runs", "1", "-q"])
        .args(["--output-format", "json", "--image-dir"])
        .arg(dir.path()));
    assert!(out.status.success(), "exit {:?}", out.status);
    let doc = json(&out);
    let testbed = &doc["testbed"];
    let stack = &testbed["stack"];
    let hash = testbed["stack_hash"].as_str().unwrap();
    assert!(
        hash.len() == 12 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    assert_eq!(stack["kernel_release"], tool_output("uname", &["-r"]));
    for item in [
        "dirty_ratio",
        "dirty_background_ratio",
        "dirty_expire_centisecs",
        "dirty_writeback_centisecs",
        "swappiness",
    ] {
        let expected: u64 = sys(format!("/proc/sys/vm/{item}")).parse().unwrap();
        assert_eq!(stack["vm"][item], expected, "vm.{item}");
    }
    let thp = sys("/sys/kernel/mm/transparent_hugepage/enabled");
    assert_eq!(stack["transparent_hugepages"], active(&thp));
    let governor = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor";
    match std::fs::read_to_string(governor) {
        Ok(g) => assert_eq!(stack["cpu_governor"], g.trim()),
        Err(_) => assert!(stack["cpu_governor"].is_null()),
    }
    let hypervisor = sys("/proc/cpuinfo")
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    assert_eq!(
        stack["virtual_machine"] != "none",
        hypervisor,
        "{}",
        stack["virtual_machine"]
    );
    // The chain: the image directory's filesystem as findmnt sees it, then its devices.
    let backing = &stack["backing"];
    assert_eq!(backing["path"], dir.path().display().to_string());
    let target = dir.path().display().to_string();
    let findmnt = |column: &str| {
        tool_output(
            "findmnt",
            &["-n", "-o", column, "--target", &target, "--first-only"],
        )
    };
    assert_eq!(backing["fstype"], findmnt("FSTYPE"));
    assert_eq!(backing["mount_options"], findmnt("OPTIONS"));
    let devices = backing["devices"].as_array().unwrap();
    assert!(!devices.is_empty(), "{backing}");
    let mut checked = 0;
    for d in devices {
        let queue = Path::new("/sys/block")
            .join(d["name"].as_str().unwrap())
            .join("queue");
        if !queue.exists() {
            continue; // a partition: its disk follows
        }
        checked += 1;
        let number = |f: &str| sys(queue.join(f)).parse::<u64>().unwrap();
        assert_eq!(d["nr_requests"], number("nr_requests"), "{d}");
        assert_eq!(d["read_ahead_kb"], number("read_ahead_kb"), "{d}");
        assert_eq!(d["logical_block_size"], number("logical_block_size"), "{d}");
        assert_eq!(
            d["physical_block_size"],
            number("physical_block_size"),
            "{d}"
        );
        assert_eq!(d["rotational"], sys(queue.join("rotational")) == "1", "{d}");
        assert_eq!(d["write_cache"], sys(queue.join("write_cache")), "{d}");
        assert_eq!(d["scheduler"], active(&sys(queue.join("scheduler"))), "{d}");
    }
    assert!(checked > 0, "no whole disk in the chain: {backing}");
    for key in ["load_start", "load_end"] {
        let load = testbed[key].as_array().unwrap();
        assert_eq!(load.len(), 3, "{key}");
        assert!(load.iter().all(|v| v.as_f64().unwrap() >= 0.0));
    }
    // Every run saw the same stack, with its own load average.
    for r in doc["runs"].as_array().unwrap() {
        assert_eq!(r["testbed"]["stack_hash"], hash, "{r}");
        assert!(r["testbed"].get("changed").is_none(), "{r}");
        assert_eq!(r["testbed"]["load_end"].as_array().unwrap().len(), 3);
    }
    assert_nothing_left(dir.path());
}

/// Runs a tiny suite in a fresh subdirectory of `dir` (no root needed), saved in `db`; its ID.
fn suite_in(dir: &Path, state: &Path, db: &Path) -> String {
    let out = run(fsbench(state)
        .args([
            "--db",
            db.to_str().unwrap(),
            "run",
            "-w",
            TINY,
            "--runs",
            "1",
        ])
        .args([
            "-q",
            "--output-format",
            "json",
            "--purpose",
            "stack",
            "--dir",
        ])
        .arg(dir));
    assert!(out.status.success(), "exit {:?}", out.status);
    json(&out)["id"].as_i64().unwrap().to_string()
}

#[test]
fn compare_warns_when_suites_ran_on_different_stacks() {
    if !can_run("compare stacks", &[]) {
        return;
    }
    let state = tempdir();
    let db = state.path().join("results.db");
    let disk = tempdir();
    let tmpfs = tempdir();
    assert!(
        status(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=64m", "tmpfs"])
                .arg(tmpfs.path())
        )
        .success()
    );
    let on_disk = suite_in(disk.path(), state.path(), &db);
    let again = suite_in(disk.path(), state.path(), &db);
    let on_tmpfs = suite_in(tmpfs.path(), state.path(), &db);
    status(Command::new("umount").arg(tmpfs.path()));
    let compare = |a: &str, b: &str| {
        let out = run(fsbench(state.path()).args(["--db", db.to_str().unwrap(), "compare", a, b]));
        assert!(out.status.success());
        text(&out.stdout)
    };
    // Same directory, same machine: same stack, no warning.
    let same = compare(&on_disk, &again);
    assert!(!same.contains("different storage stacks"), "{same}");
    let different = compare(&on_disk, &on_tmpfs);
    let warning = different
        .lines()
        .find(|l| l.contains("different storage stacks"))
        .unwrap_or_else(|| panic!("no stack warning:\n{different}"));
    assert!(
        warning.contains("backing.fstype") && warning.contains("tmpfs"),
        "{warning}"
    );
}

//! Aged filesystems and fill levels on real loop images: the churn is deterministic and
//! reaches its utilisation on ext4, xfs and btrfs with fsck clean afterwards, the template is
//! made once per configuration and every run starts from the same tree, the free-space probe
//! sees aging, fill levels hold, and an FFSB `agefs=1` profile runs.

use std::os::fd::AsFd;
use std::path::Path;

use crate::common::*;
use fsbench_measure::measure::Progress;
use fsbench_model::config::FsConfig;
use fsbench_model::filesystem::FsType;
use fsbench_model::testbed::TargetSpec;
use fsbench_testbed::aging::{Usage, churn, digest, probe, profile};
use fsbench_testbed::drivers::FsTypeExt;
use fsbench_testbed::testbed::{FreshFs, Target, Teardown};
use fsbench_workloads::SpaceNeed;

/// A fresh `fs` on a loop image of `size` in `dir`, handed to `f`, then torn down (fsck run).
fn on_fresh<R>(dir: &Path, fs: FsType, size: u64, f: impl FnOnce(&FreshFs) -> R) -> (R, Teardown) {
    let spec = TargetSpec::Image {
        dir: dir.to_path_buf(),
        size: Some(size),
        loop_cache: false,
    };
    let mut target = Target::open(&spec, SpaceNeed::default(), &[fs]).unwrap();
    let config = FsConfig::new(fs, Vec::new(), String::new(), None);
    let tools = fs.driver().toolset().unwrap();
    let fresh = target.fresh(&config, &tools).unwrap();
    let out = f(&fresh);
    (out, fresh.finish().unwrap())
}

fn light() -> fsbench_model::aging::AgeProfile {
    profile::resolve("light").unwrap().unwrap()
}

#[test]
fn utilisation_reaches_the_target_on_ext4_xfs_and_btrfs_and_fsck_is_clean() {
    for (fs, tool) in [
        (FsType::Ext4, "mkfs.ext4"),
        (FsType::Xfs, "mkfs.xfs"),
        (FsType::Btrfs, "mkfs.btrfs"),
    ] {
        if !can_run(&format!("aging utilisation on {fs}"), &[tool, "losetup"]) {
            continue;
        }
        let dir = tempdir();
        let progress = Progress::default();
        let ((stats, usage), teardown) = on_fresh(dir.path(), fs, 512 << 20, |fresh| {
            let stats = churn::age(fresh.dir().as_fd(), &light(), &progress).unwrap();
            rustix::fs::syncfs(fresh.dir()).unwrap();
            (stats, Usage::of(fresh.dir()).unwrap())
        });
        let util = usage.percent();
        // Room for a workload's inodes is judged by this (btrfs: unlimited, not 0).
        assert!(usage.free_inodes > 10_000, "{fs}: {usage:?}");
        assert!((util - 50.0).abs() <= 2.0, "{fs}: {util}% used, {stats:?}");
        assert!((stats.util_percent - 50.0).abs() <= 2.0, "{fs}: {stats:?}");
        // The capacity written at least once, by creates, appends, overwrites and deletes.
        assert!(
            stats.bytes_written >= stats.capacity_bytes,
            "{fs}: {stats:?}"
        );
        assert!(
            stats.creates > 0 && stats.appends > 0 && stats.overwrites > 0 && stats.deletes > 0
        );
        assert!(progress.done.load(std::sync::atomic::Ordering::Relaxed) > 0);
        let fsck = teardown.fsck.unwrap();
        assert!(fsck.clean, "{fs}: {:?}", fsck.output);
        assert_nothing_left(dir.path());
    }
}

#[test]
fn the_same_seed_gives_the_same_tree_on_ext4_xfs_and_btrfs() {
    for (fs, tool) in [
        (FsType::Ext4, "mkfs.ext4"),
        (FsType::Xfs, "mkfs.xfs"),
        (FsType::Btrfs, "mkfs.btrfs"),
    ] {
        if !can_run(&format!("aging determinism on {fs}"), &[tool, "losetup"]) {
            continue;
        }
        let dir = tempdir();
        // The smallest image each takes (xfs needs 300 MiB), so the trees stay small.
        let size = fs.driver().min_size.max(256 << 20);
        let tree = |seed: u64| {
            let mut profile = light();
            profile.seed = seed;
            on_fresh(dir.path(), fs, size, |fresh| {
                churn::age(fresh.dir().as_fd(), &profile, &Progress::default()).unwrap();
                digest::tree_digest(fresh.dir().as_fd()).unwrap().unwrap()
            })
            .0
        };
        let (first, second, other) = (tree(7), tree(7), tree(8));
        assert_eq!(
            first, second,
            "{fs}: paths and sizes differ between two runs of one seed"
        );
        assert!(first.1 > 100, "{fs}: {first:?}");
        assert_ne!(first.0, other.0, "{fs}: another seed gave the same tree");
        assert_nothing_left(dir.path());
    }
}

#[test]
fn the_probe_finds_one_extent_on_a_fresh_ext4_and_more_after_aging() {
    if !can_run("free-space probe", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let dir = tempdir();
    let profile = profile::resolve("geriatrix-like").unwrap().unwrap();
    let ((fresh_probe, aged_probe), teardown) =
        on_fresh(dir.path(), FsType::Ext4, 1 << 30, |fresh| {
            let root = fresh.dir().as_fd();
            let before = probe::probe(root, &[]).unwrap().unwrap();
            churn::age(root, &profile, &Progress::default()).unwrap();
            (before, probe::probe(root, &[]).unwrap().unwrap())
        });
    assert_eq!(fresh_probe.fragments, 1, "{fresh_probe:?}");
    // Aged, the free space is in many pieces: half of it came in 36 to 104 against 3 fresh.
    // Not the tenth: ext4 may still find one free run that holds it (27 MiB in one piece in
    // 1 of 3 runs beside another test, 3 or 4 pieces in the others).
    assert!(
        aged_probe.half_fragments > 2 * fresh_probe.half_fragments,
        "{fresh_probe:?} {aged_probe:?}"
    );
    // Not `half_fragments >= fragments`: ext4's allocator serves a large request from its
    // largest free extents, a small one near its goal, so half the free space can come in
    // fewer pieces than a tenth (89 against 153 once here).
    assert!(aged_probe.half_bytes > aged_probe.bytes, "{aged_probe:?}");
    assert!(teardown.fsck.unwrap().clean);
    assert_nothing_left(dir.path());
}

#[test]
fn light_ages_a_1gib_ext4_by_the_probe_it_reports() {
    if !can_run("light aging on a 1 GiB ext4", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let dir = tempdir();
    let ((fresh_probe, aged_probe, stats), teardown) =
        on_fresh(dir.path(), FsType::Ext4, 1 << 30, |fresh| {
            let root = fresh.dir().as_fd();
            let before = probe::probe(root, &[]).unwrap().unwrap();
            let stats = churn::age(root, &light(), &Progress::default()).unwrap();
            (before, probe::probe(root, &[]).unwrap().unwrap(), stats)
        });
    // Churned straight to 50%, this left the back of the device one free run: 3 fragments
    // fresh, 1 aged at half the free space. The peak spreads files over all of it first.
    assert!(
        aged_probe.fragments > fresh_probe.fragments
            && aged_probe.half_fragments > fresh_probe.half_fragments,
        "{fresh_probe:?} {aged_probe:?}"
    );
    assert!((stats.util_percent - 50.0).abs() <= 2.0, "{stats:?}");
    assert!(teardown.fsck.unwrap().clean);
    assert_nothing_left(dir.path());
}

/// `fsbench run` with `args`, JSON out; the document.
fn suite(dir: &Path, state: &Path, args: &[&str]) -> serde_json::Value {
    let out = run(json_run(state)
        .arg("--image-dir")
        .arg(dir)
        .args(["--image-size", "512M"])
        .args(args));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_nothing_left(dir);
    json(&out)
}

const SMALL_TREE: &str = "tree:dirs=4,files=4,size=1,levels=2";

#[test]
fn the_template_is_made_once_per_configuration_and_every_run_starts_from_it() {
    if !can_run("aging templates", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let (dir, state) = (tempdir(), tempdir());
    let doc = suite(
        dir.path(),
        state.path(),
        &[
            "--fs",
            "ext4",
            "--fs",
            "ext4:age=light",
            "--runs",
            "3",
            "-w",
            SMALL_TREE,
        ],
    );
    let runs = doc["runs"].as_array().unwrap();
    let of = |config: &str| -> Vec<&serde_json::Value> {
        runs.iter().filter(|r| r["config"] == config).collect()
    };
    let (fresh, aged) = (of("ext4"), of("ext4 age=light"));
    assert_eq!((fresh.len(), aged.len()), (3, 3));
    // mkfs: once per fresh run, once for the aged configuration's template.
    let mkfs =
        |runs: &[&serde_json::Value]| runs.iter().filter(|r| r["mkfs_secs"].is_f64()).count();
    assert_eq!((mkfs(&fresh), mkfs(&aged)), (3, 1));
    assert!(fresh.iter().all(|r| r.get("preparation").is_none()));
    // Not asked for: no probe after the runs.
    assert!(runs.iter().all(|r| r.get("probe_after").is_none()));
    let preps: Vec<&serde_json::Value> = aged.iter().map(|r| &r["preparation"]).collect();
    let made = preps
        .iter()
        .filter(|p| p["template"]["made_here"] == true)
        .count();
    assert_eq!(made, 1);
    for p in &preps {
        assert_eq!(p["template"]["checksum"], preps[0]["template"]["checksum"]);
        assert_eq!(
            p["tree_digest"], preps[0]["tree_digest"],
            "runs started from different trees"
        );
        assert!(["reflink", "sparse copy"].contains(&p["template"]["copy"].as_str().unwrap()));
        let util = p["aging"]["util_percent"].as_f64().unwrap();
        assert!((util - 50.0).abs() <= 2.0, "{util}");
    }
    assert!(preps[0]["tree_digest"].is_string());
    // The filesystem's own view of its free space, where e2freefrag is installed.
    if has_tool("e2freefrag") {
        let native = &preps[0]["native"][0];
        assert!(
            native["command"]
                .as_str()
                .unwrap()
                .starts_with("e2freefrag")
        );
        assert!(
            native["output"].as_str().unwrap().contains("Free blocks"),
            "{native}"
        );
    }
}

#[test]
fn the_free_space_probe_runs_after_every_run_when_asked() {
    if !can_run("free-space probe after each run", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let (dir, state, data) = (tempdir(), tempdir(), tempdir());
    let db = data.path().join("results.db");
    let out = run(json_run(state.path())
        .arg("--db")
        .arg(&db)
        .arg("--image-dir")
        .arg(dir.path())
        .args(["--image-size", "512M", "--probe-after-run", "--runs", "2"])
        .args(["--fs", "ext4", "--fs", "ext4:age=light", "-w", SMALL_TREE]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_nothing_left(dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("free space after the run in").count(),
        4,
        "{stderr}"
    );
    let doc = json(&out);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let free = |r: &serde_json::Value| r["probe_after"]["bytes"].as_u64().unwrap();
    for r in runs {
        let p = &r["probe_after"];
        let n = |k: &str| p[k].as_u64().unwrap_or_else(|| panic!("{k}: {r}"));
        assert!(n("extents") >= 1 && n("fragments") >= 1, "{p}");
        assert!(n("fragments") <= n("extents"), "{p}");
        // A tenth and a half of what the run left free, in whole MiB, on a 512 MiB image.
        assert!(n("bytes") >= 10 << 20 && n("bytes") % (1 << 20) == 0, "{p}");
        assert!(
            n("half_bytes") >= 4 * n("bytes") && n("half_bytes") < 256 << 20,
            "{p}"
        );
        assert!(n("half_fragments") >= 1, "{p}");
    }
    // Each on its run's own filesystem: half full once aged, so a smaller probe.
    let of = |c: &'static str| runs.iter().filter(move |r| r["config"] == c);
    let fresh_min = of("ext4").map(free).min().unwrap();
    let aged_max = of("ext4 age=light").map(free).max().unwrap();
    assert!(aged_max * 3 / 2 < fresh_min, "{aged_max} {fresh_min}");
    // Stored and read back: the terminal, the JSON export and the report show it.
    let id = doc["id"].as_i64().unwrap().to_string();
    let db_args = |c: &mut std::process::Command| {
        c.arg("--db").arg(&db);
    };
    let mut show = fsbench(state.path());
    db_args(&mut show);
    let shown = text(&run(show.args(["show", &id])).stdout);
    assert!(shown.contains("Free space after the runs"), "{shown}");
    assert!(
        shown.contains("ext4 age=light · tree:")
            && shown.contains("prepared → after each of 2 run(s)"),
        "{shown}"
    );
    let mut export = fsbench(state.path());
    db_args(&mut export);
    let exported = json(&run(export.args(["export", &id])));
    for (stored, measured) in exported["runs"].as_array().unwrap().iter().zip(runs) {
        assert_eq!(stored["probe_after"], measured["probe_after"]);
    }
    let mut report = fsbench(state.path());
    db_args(&mut report);
    let html = text(&run(report.args(["report", &id, "-o", "-"])).stdout);
    assert!(html.contains("Free space after the runs"));
}

#[test]
fn a_device_is_aged_before_every_run_and_the_output_says_so() {
    if !can_run("aging a device", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let (dir, state) = (tempdir(), tempdir());
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(512 << 20)
        .unwrap();
    let out = run(json_run(state.path()).arg("--device").arg(&image).args([
        "--fs", "ext4", "--age", "light", "--runs", "2", "-w", SMALL_TREE,
    ]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("every run is prepared again").count(),
        2,
        "{stderr}"
    );
    let doc = json(&out);
    for r in doc["runs"].as_array().unwrap() {
        assert_eq!(r["preparation"]["in_place"], true, "{r}");
        assert!(r["preparation"].get("template").is_none());
        assert!(r["mkfs_secs"].is_f64());
    }
    std::fs::remove_file(&image).unwrap();
    assert_nothing_left(dir.path());
}

#[test]
fn fill_levels_run_at_their_utilisation_and_a_workload_too_big_is_refused() {
    if !can_run("fill levels", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let (dir, state) = (tempdir(), tempdir());
    let db = state.path().join("results.db");
    let doc = suite(
        dir.path(),
        state.path(),
        &[
            "--db",
            db.to_str().unwrap(),
            "--fs",
            "ext4",
            "--fill",
            "0,60",
            "--runs",
            "1",
            "-w",
            SMALL_TREE,
            "-w",
            "alloc:size=200m,methods=fallocate",
        ],
    );
    let labels: Vec<&str> = doc["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["ext4 @ 0%", "ext4 @ 60%"]);
    let runs = doc["runs"].as_array().unwrap();
    let at60: Vec<_> = runs
        .iter()
        .filter(|r| r["config"] == "ext4 @ 60%")
        .collect();
    // The tree runs at 60%; the 200 MiB allocation does not fit what 60% leaves of 512 MiB.
    assert_eq!(at60.len(), 1, "{at60:?}");
    let fill = &at60[0]["preparation"]["fill"];
    let util = fill["util_percent"].as_f64().unwrap();
    assert!((58.0..=61.0).contains(&util), "{fill}");
    let skipped = doc["skipped"].as_array().unwrap();
    assert!(
        skipped.iter().any(
            |s| s["label"].as_str().unwrap().starts_with("ext4 @ 60% alloc")
                && s["reason"]
                    .as_str()
                    .unwrap()
                    .contains("refused at 60% used")
        ),
        "{skipped:?}"
    );
    assert_eq!(
        runs.iter().filter(|r| r["config"] == "ext4 @ 0%").count(),
        2
    );
    // Saved and read back: the terminal's fill-level table and the report's curves.
    let id = doc["id"].as_i64().unwrap().to_string();
    let show = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["show", &id]));
    let shown = text(&show.stdout);
    assert!(
        shown.contains("Fill levels (mean rate per phase)"),
        "{shown}"
    );
    assert!(
        shown.contains("ext4 · tree:") && shown.contains("60%"),
        "{shown}"
    );
    assert!(shown.contains("filled to 60%"), "{shown}");
    let report = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["report", &id, "-o", "-"]));
    let html = text(&report.stdout);
    assert!(
        html.contains("Aged and filled filesystems") && html.contains("against the fill level")
    );
}

#[test]
fn an_agefs_ffsb_profile_runs() {
    if !can_run("ffsb agefs", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let (dir, state) = (tempdir(), tempdir());
    let profile = state.path().join("aged.ffsb");
    std::fs::write(
        &profile,
        "time=1\n[filesystem]\n\tnum_files=20\n\tnum_dirs=2\n\tmin_filesize=4k\n\tmax_filesize=256k\n\
         \tagefs=1\n\tdesired_util=0.30\n\t[threadgroup]\n\t\tnum_threads=2\n\t\tcreate_weight=10\n\
         \t\tappend_weight=10\n\t\tdelete_weight=1\n\t\twrite_size=64k\n\t\twrite_blocksize=4k\n\t[end]\n[end]\n\
         [threadgroup]\n\tnum_threads=2\n\tread_weight=1\n\tread_size=4k\n\tread_blocksize=4k\n[end]\n",
    )
    .unwrap();
    let out = run(fsbench(state.path())
        .arg("ffsb")
        .arg(&profile)
        .args([
            "--fs",
            "ext4",
            "--runs",
            "1",
            "-q",
            "--output-format",
            "json",
            "--image-dir",
        ])
        .arg(dir.path())
        .args(["--image-size", "512M"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_nothing_left(dir.path());
    let doc = json(&out);
    let run = &doc["runs"][0];
    assert_eq!(run["status"], "ok");
    let aging = &run["preparation"]["aging"];
    assert!(
        aging["profile"].as_str().unwrap().starts_with("ffsb agefs"),
        "{aging}"
    );
    let util = aging["util_percent"].as_f64().unwrap();
    assert!((28.0..=32.0).contains(&util), "{aging}");
    assert!(
        text(&out.stderr).contains("aging (ffsb agefs"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn clean_removes_a_killed_suite_s_template() {
    if !can_run(
        "clean after SIGKILL with a template",
        &["mkfs.ext4", "losetup"],
    ) {
        return;
    }
    let (dir, state) = (tempdir(), tempdir());
    let mut child = fsbench(state.path())
        .args([
            "run",
            "-q",
            "--fs",
            "ext4",
            "--age",
            "light",
            "-w",
            "tree:quick",
        ])
        .args(["--runs", "2", "--image-size", "1G", "--image-dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let template = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .any(|kept| kept.path().join("template-c0.img").exists())
    };
    // Killed once the template is kept and a run's copy is mounted.
    wait_running_until(
        &mut child,
        "keeping its template and mounting a copy",
        || template() && !mounts_below(dir.path()).is_empty(),
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_clean_undoes_all(state.path(), dir.path());
}

//! FFSB's workers as processes (the default) and as threads: they share one file set, every
//! worker's figures arrive, a worker that dies fails the run naming it, and no worker
//! outlives a killed fsbench.

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::workers::{killing_a_worker_fails_the_run, killing_fsbench_leaves_no_worker, start_run};

/// Four workers of 50 transactions each on a set of 20 files in 2 directories: creates,
/// deletes and stats of files the others make and delete.
const SHARED_SET: &str = "[filesystem0]
\tnum_files=20
\tnum_dirs=2
\tmin_filesize=4096
\tmax_filesize=16384
[end0]
[threadgroup0]
\tnum_threads=4
\tnum_ops=50
\tcreate_weight=2
\tdelete_weight=1
\tstat_weight=1
\twrite_blocksize=4096
[end0]
";

/// A minute of reads by three workers.
const LONG_READS: &str = "time=60
[filesystem0]
\tnum_files=4
\tnum_dirs=1
\tmin_filesize=4096
\tmax_filesize=4096
[end0]
[threadgroup0]
\tnum_threads=3
\tread_weight=1
\tread_size=4096
\tread_blocksize=4096
[end0]
";

fn profile(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn ffsb_workers_share_the_set_and_every_workers_figures_arrive() {
    let (state, profiles) = (tempdir(), tempdir());
    let shared_set = profile(profiles.path(), "shared.ffsb", SHARED_SET);
    for mode in ["processes", "threads"] {
        let dir = tmpfs_tempdir();
        let out = run(json_run(state.path())
            .args(["--runs", "1", "--dir"])
            .arg(dir.path())
            .arg("-w")
            .arg(format!(
                "ffsb:profile={},workers={mode}",
                shared_set.display()
            )));
        assert!(out.status.success(), "{mode}: {}", text(&out.stderr));
        let doc = json(&out);
        let run = &doc["runs"][0];
        assert_eq!(run["workers"]["mode"], mode);
        assert_eq!(run["workers"]["count"], 4);
        let phase = |name: &str| {
            (run["phases"].as_array().unwrap().iter())
                .find(|p| p["name"] == name)
                .unwrap_or_else(|| panic!("{mode}: no phase {name}"))
                .clone()
        };
        let ran = phase("run");
        let count = |op: &str| ran["latency"][op]["count"].as_u64().unwrap_or(0);
        let (creates, deletes, stats) = (count("create"), count("delete"), count("stat"));
        // Every transaction of every worker, each in its operation's latencies.
        assert_eq!(ran["ops"], 4 * 50, "{mode}");
        assert_eq!(creates + deletes + stats, 4 * 50, "{mode}");
        // Workers that did not share the set would make a number another had made, and
        // delete or stat files another had deleted.
        assert!(
            ran["errors"].as_object().is_none_or(|e| e.is_empty()),
            "{mode}: {}",
            ran["errors"]
        );
        // What is left is the set and what the workers made less what they deleted: data/,
        // meta/, the two directories and the files.
        assert_eq!(
            phase("remove")["ops"].as_u64(),
            Some(4 + 20 + creates - deletes),
            "{mode}"
        );
        assert_empty(dir.path());
    }
}

/// A run of [`LONG_READS`] in `dir`.
fn start_long_ffsb(dir: &Path, state: &Path, profiles: &Path) -> std::process::Child {
    let long = profile(profiles, "long.ffsb", LONG_READS);
    start_run(state, &format!("ffsb:profile={}", long.display()), dir)
}

#[test]
fn a_killed_ffsb_worker_fails_the_run_naming_it_and_leaves_no_worker() {
    let (dir, state, profiles) = (tmpfs_tempdir(), tempdir(), tempdir());
    let child = start_long_ffsb(dir.path(), state.path(), profiles.path());
    killing_a_worker_fails_the_run(child, 3, dir.path());
}

#[test]
fn no_ffsb_worker_outlives_a_killed_fsbench() {
    let (dir, state, profiles) = (tmpfs_tempdir(), tempdir(), tempdir());
    let child = start_long_ffsb(dir.path(), state.path(), profiles.path());
    killing_fsbench_leaves_no_worker(child, 3);
}

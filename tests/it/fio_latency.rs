//! fio's `latency_target` through `fsbench fio`: the search for the deepest queue whose
//! I/Os meet a latency, on tmpfs with libaio, each job against fio 3.33 on the same job.

use std::process::Command;

use crate::common::*;
use crate::fio_control::{fio_json, ran};

/// A libaio job at iodepth 8 with `latency` options, time-based for `runtime`.
fn job(latency: &str, runtime: &str) -> String {
    format!(
        "[lat]\nioengine=libaio\niodepth=8\nrw=randread\nbs=4k\nsize=16m\ntime_based\nruntime={runtime}\n{latency}\n"
    )
}

/// The first job of fio's JSON (fsbench's or fio's).
fn first(doc: &serde_json::Value) -> &serde_json::Value {
    &doc["jobs"][0]
}

/// The search's figures of a job: depth, target (ns), window (µs), percentile.
fn search(j: &serde_json::Value) -> (u64, u64, u64, f64) {
    let int = |k: &str| j[k].as_u64().unwrap_or_else(|| panic!("{k}: {j}"));
    (
        int("latency_depth"),
        int("latency_target"),
        int("latency_window"),
        j["latency_percentile"].as_f64().unwrap(),
    )
}

/// A target no I/O misses: the depth doubles each window up to iodepth, a final window runs
/// there (its figures alone reported, all at depth 8) and ends the job long before its
/// runtime, in fsbench as in fio.
#[test]
fn a_loose_target_climbs_to_iodepth_and_ends_after_a_final_window() {
    if !has_tool("fio") {
        return skip("latency target: fio is not installed");
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let loose = job(
        "latency_target=10s\nlatency_window=50ms\nlatency_percentile=99.5",
        "20s",
    );
    let (ours, _) = ran(state.path(), dir.path(), "loose.fio", &loose, &[]);
    let fio_dir = tmpfs_tempdir();
    std::fs::write(fio_dir.path().join("loose.fio"), &loose).unwrap();
    let theirs = fio_json(fio_dir.path(), &fio_dir.path().join("loose.fio"));
    for (who, doc) in [("fsbench", &ours), ("fio", &theirs)] {
        let j = first(doc);
        assert_eq!(search(j), (8, 10_000_000_000, 50_000, 99.5), "{who}: {j}");
        // Five windows of 50 ms, not the 20 s runtime; the final one's time alone reported.
        let runtime = j["job_runtime"].as_u64().unwrap();
        assert!(
            (40..2000).contains(&runtime),
            "{who}: job_runtime {runtime}"
        );
        let at_8 = j["iodepth_level"]["8"].as_f64().unwrap();
        assert!(at_8 > 90.0, "{who}: the final window at depth 8: {at_8}%");
    }
    assert_nothing_left(dir.path());
}

/// A target almost no I/O meets, at 99.9%: the search stays at depth 1 for the whole
/// runtime (the depth limit holds the engine's queue to one I/O) in fsbench as in fio;
/// at 100% (fio's default) the first I/O that misses it at depth 1 fails the job with
/// fio's message.
#[test]
fn an_unreachable_target_keeps_depth_1_and_at_100_percent_fails_the_job() {
    if !has_tool("fio") {
        return skip("latency target: fio is not installed");
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let tight = job(
        "latency_target=1\nlatency_window=20ms\nlatency_percentile=99.9",
        "1s",
    );
    let fio_dir = tmpfs_tempdir();
    std::fs::write(fio_dir.path().join("tight.fio"), &tight).unwrap();
    let theirs = fio_json(fio_dir.path(), &fio_dir.path().join("tight.fio"));
    for engine in ["libaio", "io_uring", "posixaio"] {
        let job = tight.replace("libaio", engine);
        let (ours, _) = ran(state.path(), dir.path(), "tight.fio", &job, &[]);
        for (who, doc) in [(engine, &ours), ("fio", &theirs)] {
            let j = first(doc);
            assert_eq!(search(j), (1, 1000, 20_000, 99.9), "{who}: {j}");
            let runtime = j["job_runtime"].as_u64().unwrap();
            assert!(runtime >= 990, "{who}: the whole runtime: {runtime}");
            let at_1 = j["iodepth_level"]["1"].as_f64().unwrap();
            assert!(at_1 >= 99.9, "{who}: one I/O at a time: {at_1}%");
        }
    }
    let strict = job("latency_target=1", "1s");
    let jobfile = state.path().join("strict.fio");
    std::fs::write(&jobfile, &strict).unwrap();
    let out = fio_output(state.path(), dir.path(), &jobfile, "json");
    assert!(!out.status.success());
    let needle = "exceeds specified max (1000 nsec)";
    assert!(text(&out.stderr).contains(needle), "{}", text(&out.stderr));
    let out = run(Command::new("fio")
        .current_dir(fio_dir.path())
        .arg("--output-format=json")
        .arg(&jobfile));
    let both = text(&out.stdout) + &text(&out.stderr);
    assert!(both.contains(needle), "fio: {both}");
    assert!(both.contains("\"error\" : 110"), "fio: ETIMEDOUT: {both}");
    assert_nothing_left(dir.path());
}

/// The options fsbench does not take with a latency target are refused with the line.
#[test]
fn a_latency_target_with_a_rate_or_a_file_engine_is_refused() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for (lines, needle) in [
        ("rate_iops=100", "with `rate` or `rate-iops`"),
        ("ioengine=filestat", "each file's operation is made once"),
        ("latency_percentile=101", "a percentage from 0 to 100"),
    ] {
        let job = format!("[j]\nrw=read\nsize=1m\nlatency_target=1ms\n{lines}\n");
        let jobfile = state.path().join("refused.fio");
        std::fs::write(&jobfile, &job).unwrap();
        let out = fio_output(state.path(), dir.path(), &jobfile, "json");
        assert!(!out.status.success(), "{lines}");
        assert!(
            text(&out.stderr).contains(needle),
            "{lines}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("refused.fio:"),
            "the line: {}",
            text(&out.stderr)
        );
    }
}

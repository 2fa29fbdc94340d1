//! fio job files (`fsbench fio`): jobs at the same time until a `stonewall`, each job's own
//! figures and fio's summary of them (each job's header naming its process), a job file
//! on standard input scaled by `--cap`.

use crate::common::*;

#[test]
fn a_job_file_s_jobs_run_at_the_same_time_until_a_stonewall() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("jobs.fio");
    // Two paced jobs of one second side by side, then one after a stonewall.
    std::fs::write(
        &jobfile,
        "[global]\nsize=4m ; per job\nrw=randread\nrate_iops=200\ntime_based\nruntime=1\n\n[a]\n[b]\nreadwrite=randwrite\n[c]\nstonewall\nruntime=500ms\n",
    )
    .unwrap();
    let db = state.path().join("results.db");
    let exported = state.path().join("suite.json");
    let out = run(fsbench(state.path())
        .args(["fio", "-q", "--runs", "1", "--export-json"])
        .arg(&exported)
        .arg("--db")
        .arg(&db)
        .arg(&jobfile)
        .arg("--dir")
        .arg(dir.path()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = exported_json(&exported);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "a and b are one workload, c another");
    let io = &runs[0]["phases"][1];
    let secs = io["elapsed_ns"].as_f64().unwrap() / 1e9;
    assert!((0.95..1.8).contains(&secs), "side by side: {secs} s");
    let own = |job: &str, dir: &str| {
        io["figures"].as_array().unwrap().iter().find_map(|f| {
            let dims = f["dims"].as_array()?;
            (f["name"] == "iops" && dims[0]["text"] == job && dims[1]["text"] == dir)
                .then(|| f["value"].as_f64())?
        })
    };
    for (job, dir) in [("a", "read"), ("b", "write")] {
        let iops = own(job, dir).unwrap_or(0.0);
        assert!((180.0..=210.0).contains(&iops), "{job}: {iops} IO/s");
    }
    assert!(io["latency"]["b: write clat"]["count"].as_u64() > Some(150));
    let summary = run(fsbench(state.path())
        .args(["export", "1", "--format", "fio", "--db"])
        .arg(&db));
    let summary = text(&summary.stdout);
    assert!(summary.contains("a: (groupid=0, jobs=1)"), "{summary}");
    assert!(summary.contains("b: (groupid=0, jobs=1)"), "{summary}");
    assert!(summary.contains("c: (groupid=1, jobs=1)"), "{summary}");
    // One status per group, after its jobs, before its direction lines.
    assert_eq!(
        summary.matches("Run status group 0").count(),
        1,
        "{summary}"
    );
    let group = summary.split("Run status group 0").nth(1).unwrap();
    assert!(
        group.contains("   READ: bw=") && group.contains("  WRITE: bw="),
        "{summary}"
    );
    assert_nothing_left(dir.path());
}

#[test]
fn a_job_file_on_stdin_scaled_by_the_cap_says_so() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("jobs.fio");
    // As written the job would move 1 GiB for an hour; the cap makes it 1 MiB, at most 1 s.
    std::fs::write(&jobfile, "[big]\nsize=1g\nrw=write\nruntime=1h\n").unwrap();
    let exported = state.path().join("suite.json");
    let out = run(fsbench(state.path())
        .args(["fio", "-", "-q", "--runs", "1", "--export-json"])
        .arg(&exported)
        .args(["--cap", "size=1m,runtime=1s", "--dir"])
        .arg(dir.path())
        .stdin(std::fs::File::open(&jobfile).unwrap()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--cap size=1M,runtime=1s"),
        "{}",
        text(&out.stderr)
    );
    let doc = exported_json(&exported);
    assert!(
        doc["suite"]["purpose"].as_str().unwrap().contains("--cap"),
        "{}",
        doc["suite"]
    );
    let io = &doc["runs"][0]["phases"][1];
    assert_eq!(io["bytes"].as_u64(), Some(1 << 20), "the capped size");
    fails_with(
        &[
            "fio",
            jobfile.to_str().unwrap(),
            "--cap",
            "iodepth=2",
            "--dir",
            "/nonexistent",
        ],
        2,
        "--cap `iodepth=2`",
    );
    assert_nothing_left(dir.path());
}

/// fsbench's own document (`--export-json FILE`): under `fsbench fio`, `--output-format
/// json` is fio's.
fn exported_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn each_job_s_header_names_the_process_or_thread_that_ran_it() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("pids.fio");
    // Two copies as processes, then two as threads (fio's `thread`).
    std::fs::write(
        &jobfile,
        "[global]\nsize=1m\nrw=read\n\n[p]\nnumjobs=2\n[t]\nstonewall\nthread\nnumjobs=2\n",
    )
    .unwrap();
    let out = run(fsbench(state.path())
        .args(["fio", "--runs", "1", "--db"])
        .arg(state.path().join("results.db"))
        .arg(&jobfile)
        .arg("--dir")
        .arg(dir.path()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let normal = text(&out.stdout);
    let pids: Vec<(String, u32)> = (normal.lines())
        .filter(|l| l.contains("(groupid="))
        .map(|l| {
            let pid = l.split(" pid=").nth(1).and_then(|r| r.split(':').next());
            let job = l.split(':').next().unwrap_or_default().to_string();
            (job, pid.and_then(|p| p.parse().ok()).unwrap_or(0))
        })
        .collect();
    let jobs: Vec<&str> = pids.iter().map(|(j, _)| j.as_str()).collect();
    assert_eq!(jobs, ["p", "p", "t", "t"], "{normal}");
    let mut ids: Vec<u32> = pids.iter().map(|(_, pid)| *pid).collect();
    assert!(ids.iter().all(|pid| *pid > 0), "{normal}");
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(
        ids.len(),
        4,
        "each copy its own process or thread: {normal}"
    );
}

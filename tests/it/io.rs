//! The io workload (fio's data path): real runs on tmpfs and on a loop-image ext4 with
//! O_DIRECT for every engine, counts of I/Os and bytes, the open-loop rate, repeatable
//! offsets (read back with strace), and the refusals before any I/O.

use std::path::Path;
use std::process::Command;

use crate::common::seccomp::{knows_this_arch, refuse_calls};
use crate::common::*;

const ENGINES: [&str; 4] = [
    "ioengine=psync",
    "ioengine=pvsync2",
    "ioengine=io_uring,iodepth=16,iodepth_batch_submit=4",
    "ioengine=libaio,iodepth=16,iodepth_batch_submit=4",
];

/// One run of `workload` in `dir` (or on an ext4 image there with `fs`), its JSON document.
fn io_run(
    dir: &Path,
    fs: Option<&str>,
    workload: &str,
) -> (std::process::Output, serde_json::Value) {
    let state = tempdir();
    let mut cmd = json_run(state.path());
    cmd.args(["--runs", "1", "-w", workload]);
    match fs {
        Some(fs) => cmd.args(["--fs", fs, "--image-dir"]).arg(dir),
        None => cmd.arg("--dir").arg(dir),
    };
    let out = run(&mut cmd);
    let doc = json(&out);
    assert_nothing_left(dir);
    (out, doc)
}

/// The figure `name` of direction `dir` (and percentile `pct`), from the first run's phase.
fn figure(doc: &serde_json::Value, name: &str, dir: &str, pct: Option<&str>) -> Option<f64> {
    let phase = &doc["runs"][0]["phases"][1];
    phase["figures"].as_array()?.iter().find_map(|f| {
        let dims = f["dims"].as_array()?;
        let dim = |n: &str| {
            dims.iter()
                .find(|d| d["name"] == n)
                .map(|d| d["text"].clone())
        };
        (f["name"] == name
            && dim("direction") == Some(dir.into())
            && pct.is_none_or(|p| dim("percentile") == Some(p.into())))
        .then(|| f["value"].as_f64())?
    })
}

/// Checks a finished run's counts: `ios` I/Os of 4 KiB, split between reads and writes as
/// the figures say, with fio's percentiles in order.
fn check_counts(doc: &serde_json::Value, ios: u64, what: &str) {
    let phase = &doc["runs"][0]["phases"][1];
    assert_eq!(phase["name"], "io", "{what}");
    assert_eq!(phase["ops"].as_u64(), Some(ios), "{what}");
    assert_eq!(phase["bytes"].as_u64(), Some(ios * 4096), "{what}");
    let latency = &phase["latency"];
    let count = |k: &str| latency[k]["count"].as_u64().unwrap_or(0);
    assert_eq!(count("read") + count("write"), ios, "{what}");
    assert_eq!(count("read clat") + count("write clat"), ios, "{what}");
    let secs = phase["elapsed_ns"].as_f64().unwrap() / 1e9;
    let iops = figure(doc, "iops", "read", None).unwrap_or(0.0)
        + figure(doc, "iops", "write", None).unwrap_or(0.0);
    // The figures count the jobs' time only, the phase a little more.
    assert!(iops >= ios as f64 / secs * 0.99, "{what}: {iops} IO/s");
    let p50 = figure(doc, "clat", "read", Some("p50")).unwrap();
    let p99 = figure(doc, "clat", "read", Some("p99")).unwrap();
    let max = figure(doc, "clat", "read", Some("max")).unwrap();
    assert!(
        0.0 < p50 && p50 <= p99 && p99 <= max,
        "{what}: {p50} {p99} {max}"
    );
}

#[test]
fn every_engine_moves_its_bytes_on_tmpfs_with_its_syncs() {
    let dir = tmpfs_tempdir();
    // The ramp's I/O is not counted: the timed phase starts a pass of its own.
    let sqpoll = "ioengine=io_uring,iodepth=8,sqpoll,ramp_time=300ms";
    for engine in ENGINES.into_iter().chain([sqpoll]) {
        // 2 jobs × 8 MiB of 4 KiB I/Os, half of them writes, an fsync every 64 writes.
        let workload =
            format!("io:rw=randrw,bs=4k,size=8m,nrfiles=2,numjobs=2,fsync=64,end_fsync,{engine}");
        let (out, doc) = io_run(dir.path(), None, &workload);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        check_counts(&doc, 2 * 2048, engine);
        let latency = &doc["runs"][0]["phases"][1]["latency"];
        let writes = latency["write"]["count"].as_u64().unwrap();
        // Each job's writes / 64 syncs, and one end_fsync per written file (2 per job).
        let syncs = latency["fsync"]["count"].as_u64().unwrap();
        assert!(
            (writes / 64..=writes / 64 + 2 + 4).contains(&syncs),
            "{engine}: {syncs} syncs for {writes} writes"
        );
        // The layout is its own phase before `io`: 4 files, read ones written in full.
        let layout = &doc["runs"][0]["phases"][0];
        assert_eq!(layout["name"], "layout", "{engine}");
        assert_eq!(layout["ops"].as_u64(), Some(4), "{engine}");
        assert_eq!(layout["bytes"].as_u64(), Some(4 * (4 << 20)), "{engine}");
        assert!(layout["elapsed_ns"].as_u64().unwrap() > 0, "{engine}");
        let queued = engine.contains("io_uring") || engine.contains("libaio");
        assert_eq!(latency.get("read slat").is_some(), queued, "{engine}");
    }
}

/// The `fsync` calls fio makes on its file for `rw=write,bs=4k,size=256k,fsync=16,end_fsync`.
fn fio_fsyncs(dir: &Path) -> usize {
    let state = tempdir();
    let log = state.path().join("strace.log");
    let out = run(Command::new("strace")
        .args(["-f", "-qq", "-y", "-e", "trace=fsync", "-o"])
        .arg(&log)
        .args(["fio", "--name=sync", "--rw=write", "--bs=4k", "--size=256k"])
        .args(["--fsync=16", "--end_fsync=1", "--ioengine=psync"])
        .arg(format!("--directory={}", dir.display())));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(&log).unwrap();
    log.lines().filter(|l| l.contains("sync.0.0>")).count()
}

#[test]
fn fsync_every_n_writes_syncs_before_the_next_write_never_after_the_last() {
    let dir = tmpfs_tempdir();
    // 64 writes, a sync after every 16th that another write follows (3), and end_fsync.
    for engine in [ENGINES[0], ENGINES[2], ENGINES[3]] {
        let workload = format!("io:rw=write,bs=4k,size=256k,fsync=16,end_fsync,{engine}");
        let (out, doc) = io_run(dir.path(), None, &workload);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        let latency = &doc["runs"][0]["phases"][1]["latency"];
        assert_eq!(latency["fsync"]["count"], 4, "{engine}: {latency}");
    }
    if !has_tool("fio") || !has_tool("strace") {
        skip("fsync count against fio's: fio or strace is not installed");
        return;
    }
    assert_eq!(fio_fsyncs(dir.path()), 4, "fio's own count");
    for f in std::fs::read_dir(dir.path()).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
}

#[test]
fn every_engine_does_direct_io_on_an_ext4_loop_image() {
    if !can_run("io with O_DIRECT on ext4", &["mkfs.ext4"]) {
        return;
    }
    let dir = tempdir();
    for engine in ENGINES {
        let workload = format!("io:rw=randread,bs=4k,size=8m,direct,loops=2,{engine}");
        let (out, doc) = io_run(dir.path(), Some("ext4"), &workload);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        check_counts(&doc, 2 * 2048, engine);
        assert_eq!(doc["suite"]["workload"][0]["direct"], true);
    }
}

#[test]
fn rate_iops_is_kept_and_latency_counts_from_the_schedule() {
    let dir = tmpfs_tempdir();
    for engine in [ENGINES[0], ENGINES[2], ENGINES[3]] {
        let workload =
            format!("io:rw=randread,size=16m,rate_iops=1000,runtime=2,time_based,{engine}");
        let (out, doc) = io_run(dir.path(), None, &workload);
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        // Never over the rate; under it only by what a busy machine's late wake-ups leave
        // past the end of a 2 s phase (962 IO/s seen at load 2 on 2 CPUs): a limiter that
        // lost its schedule would fall far lower.
        let iops = figure(&doc, "iops", "read", None).unwrap();
        assert!(
            (900.0..=1010.0).contains(&iops),
            "{engine}: {iops} IO/s for 1000"
        );
        // The lateness of the issues is measured beside the latency that includes it.
        let phase = &doc["runs"][0]["phases"][1];
        let lag = phase["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "issue lag");
        assert!(
            lag.is_some_and(|f| f["value"].as_f64() > Some(0.0)),
            "{engine}"
        );
        let notes = phase["notes"].to_string();
        assert!(notes.contains("scheduled time"), "{notes}");
    }
}

/// The offsets of the `pread64` calls on `io.0.0` of one run, read by strace.
fn offsets(extra: &str) -> Vec<u64> {
    let dir = tmpfs_tempdir();
    let state = tempdir();
    let log = state.path().join("strace.log");
    let workload = format!("io:rw=randread,bs=4k,size=1m,norandommap{extra}");
    let out = run(Command::new("strace")
        .args(["-f", "-qq", "-y", "-e", "trace=pread64", "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .env("FSBENCH_STATE_DIR", state.path())
        .env("XDG_DATA_HOME", test_data_home())
        .args(["run", "-q", "--runs", "1", "--dir"])
        .arg(dir.path())
        .args(["-w", &workload]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(&log).unwrap();
    // `PID pread64(FD</.../io.0.0>, "..."..., 4096, OFFSET) = 4096`: the job's reads, not
    // the results database's.
    let found: Vec<u64> = log
        .lines()
        .filter(|l| l.contains("/io.0.0>") && l.ends_with("= 4096"))
        .filter_map(|l| l.rsplit_once(", ")?.1.split(')').next()?.parse().ok())
        .collect();
    assert_eq!(found.len(), 256, "{log}");
    found
}

#[test]
fn randrepeat_gives_the_same_offsets_and_its_absence_others() {
    if !has_tool("strace") {
        skip("randrepeat offsets: strace is not installed (scripts/test.sh installs it)");
        return;
    }
    let first = offsets("");
    assert_eq!(first, offsets(""));
    assert_ne!(first, offsets(",randseed=42"));
    assert_ne!(first, offsets(",randrepeat=0"));
}

/// A ramfs mounted for a test, unmounted when dropped.
struct Ramfs(tempfile::TempDir);

impl Drop for Ramfs {
    fn drop(&mut self) {
        status(Command::new("umount").arg(self.0.path()));
    }
}

#[test]
fn direct_refused_by_the_filesystem_is_refused_before_any_io_naming_it() {
    // tmpfs takes O_DIRECT since Linux 6.6; ramfs still refuses it.
    if !can_run("io: O_DIRECT on ramfs", &[]) {
        return;
    }
    let ramfs = Ramfs(tempdir());
    assert!(
        status(
            Command::new("mount")
                .args(["-t", "ramfs", "ramfs"])
                .arg(ramfs.0.path())
        )
        .success()
    );
    let state = tempdir();
    let out = run(json_run(state.path())
        .args(["--runs", "1", "-w", "io:size=1m,direct", "--dir"])
        .arg(ramfs.0.path()));
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("ramfs refuses O_DIRECT"), "{err}");
    assert!(doc["runs"][0]["phases"].as_array().unwrap().is_empty());
    let left: Vec<_> = std::fs::read_dir(ramfs.0.path()).unwrap().collect();
    assert!(left.is_empty(), "no file laid out: {left:?}");
}

#[test]
fn a_block_size_off_the_logical_block_and_hipri_without_polling_are_errors() {
    if !can_run("io: unaligned direct I/O on ext4", &["mkfs.ext4"]) {
        return;
    }
    let dir = tempdir();
    let (out, _) = io_run(dir.path(), Some("ext4"), "io:size=1m,bs=1000,direct");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("bs must be a multiple of ext2/3/4's logical block size")
            && err.contains("1000 is not"),
        "{err}"
    );
    // Loop devices do not poll.
    let (out, _) = io_run(
        dir.path(),
        Some("ext4"),
        "io:size=1m,direct,hipri,ioengine=io_uring",
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("`hipri` needs a device that polls"), "{err}");
}

#[test]
fn io_uring_forbidden_is_refused_before_any_io_naming_the_cause() {
    if !knows_this_arch("io_uring refusal") {
        return;
    }
    let dir = tmpfs_tempdir();
    let state = tempdir();
    let mut cmd = json_run(state.path());
    cmd.args(["--runs", "1", "--dir"])
        .arg(dir.path())
        .args(["-w", "io:size=1m,ioengine=io_uring"]);
    // io_uring_setup fails with EPERM, as container runtimes' filters make it.
    refuse_calls(&mut cmd, &[425], libc::EPERM);
    let out = run(&mut cmd);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("io_uring is refused (EPERM)") && err.contains("kernel.io_uring_disabled"),
        "{err}"
    );
    assert!(
        json(&out)["runs"][0]["phases"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_nothing_left(dir.path());
}

/// Every path of `value` down to its leaves, with the leaf's JSON type (`read.iops: number`).
fn shape(value: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                shape(v, &format!("{at}.{k}"), out);
            }
        }
        serde_json::Value::Number(_) => out.push(format!("{at}: number")),
        serde_json::Value::String(_) => out.push(format!("{at}: string")),
        other => out.push(format!(
            "{at}: {}",
            if other.is_array() { "array" } else { "other" }
        )),
    }
}

/// The paths fio's JSON consumers read (fio_jsonplus_clat2csv, fio-plot, dashboards).
const READ_BY_CONSUMERS: &[&str] = &[
    ".jobname: string",
    ".groupid: number",
    ".error: number",
    ".read.iops: number",
    ".read.bw: number",
    ".read.bw_bytes: number",
    ".read.total_ios: number",
    ".read.clat_ns.min: number",
    ".read.clat_ns.max: number",
    ".read.clat_ns.mean: number",
    ".read.clat_ns.N: number",
    ".read.lat_ns.mean: number",
    ".read.slat_ns.mean: number",
    ".write.iops: number",
    ".job options.rw: string",
];

#[test]
fn a_fio_job_file_runs_prints_fio_s_summary_and_exports_fio_s_json() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("jobs.fio");
    std::fs::write(
        &jobfile,
        "[global]\nsize=4m\nbs=4k\n\n[rand]\nrw=randread\nioengine=io_uring\niodepth=8\n\n[seq]\nstonewall\nrw=write\nbs=64k\nend_fsync=1\n",
    )
    .unwrap();
    let db = state.path().join("results.db");
    let out = run(fsbench(state.path())
        .args(["fio", "-q", "--runs", "2", "--db"])
        .arg(&db)
        .arg(&jobfile)
        .arg("--dir")
        .arg(dir.path()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    for line in [
        "rand: (groupid=0, jobs=1)",
        "  read: IOPS=",
        "    clat percentiles (",
        "     |  1.00th=[",
        "   READ: bw=",
        "seq: (groupid=1, jobs=1)",
        "  WRITE: bw=",
    ] {
        assert!(summary.contains(line), "`{line}` in:\n{summary}");
    }
    let export = run(fsbench(state.path())
        .args(["export", "1", "--format", "fio-json", "--db"])
        .arg(&db));
    assert!(export.status.success(), "{}", text(&export.stderr));
    let ours = json(&export);
    let jobs = ours["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["read"]["total_ios"], 2 * 1024, "both runs' I/Os");
    assert_eq!(jobs[1]["write"]["total_ios"], 2 * 64);
    let mut paths = Vec::new();
    shape(&jobs[0], "", &mut paths);
    for p in READ_BY_CONSUMERS {
        assert!(
            paths.iter().any(|have| have == p),
            "{p} missing in {paths:?}"
        );
    }
    // fio's own output, where fio is installed: the same percentile keys, the same types at
    // every path a consumer reads.
    if !has_tool("fio") {
        skip("fio-json against fio's own: fio is not installed (scripts/test.sh installs it)");
        return;
    }
    let fio = run(Command::new("fio")
        .args([
            "--name=rand",
            "--size=4m",
            "--bs=4k",
            "--rw=randread",
            "--ioengine=io_uring",
        ])
        .args(["--iodepth=8", "--output-format=json"])
        .arg(format!("--directory={}", dir.path().display())));
    assert!(fio.status.success(), "{}", text(&fio.stderr));
    let theirs: serde_json::Value = serde_json::from_slice(&fio.stdout).unwrap();
    let mut their_paths = Vec::new();
    shape(&theirs["jobs"][0], "", &mut their_paths);
    for p in READ_BY_CONSUMERS {
        assert!(their_paths.iter().any(|have| have == p), "fio has no {p}");
    }
    let keys = |v: &serde_json::Value| -> Vec<String> {
        v["read"]["clat_ns"]["percentile"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(keys(&jobs[0]), keys(&theirs["jobs"][0]));
    for f in std::fs::read_dir(dir.path()).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
}

#[test]
fn a_job_file_s_unknown_option_is_refused_with_its_line() {
    let state = tempdir();
    let jobfile = state.path().join("jobs.fio");
    std::fs::write(&jobfile, "[a]\nsize=1m\nverify_offset=16\n").unwrap();
    fails_with(
        &["fio", jobfile.to_str().unwrap(), "--dir", "/nonexistent"],
        2,
        "jobs.fio:3: fio option `verify_offset` is not implemented",
    );
}

#[test]
fn the_layout_is_an_untimed_phase_shown_but_never_compared() {
    if !can_run("io's untimed layout across two tmpfs configurations", &[]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let cli = |args: &[&str]| {
        let out = run(fsbench(state.path()).arg("--db").arg(&db).args(args));
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let image_dir = dir.path().to_str().unwrap();
    cli(&[
        "run",
        "-q",
        "--image-dir",
        image_dir,
        "--fs",
        "tmpfs",
        "--fs",
        "tmpfs:mount=noatime",
        "-w",
        "io:rw=randread,bs=4k,size=4m,nrfiles=2",
        "--runs",
        "2",
    ]);
    assert_nothing_left(dir.path());
    // Shown: its time and rates in the tables, marked untimed.
    let show = cli(&["show", "1"]);
    assert!(show.contains("layout (untimed)"), "{show}");
    assert!(show.contains("layout (files/s)"), "{show}");
    // Nor warned about: a layout shorter than a second is no measurement to redo.
    let warnings = show.split("== Warnings ==").nth(1).unwrap();
    let warnings = warnings.split("\n== ").next().unwrap();
    assert!(warnings.contains(" io"), "{warnings}");
    assert!(!warnings.contains("layout"), "{warnings}");
    // Compared: never. Its cells carry no difference and the verdict `untimed`.
    let doc: serde_json::Value =
        serde_json::from_str(&cli(&["compare", "1", "--output-format", "json"])).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    let phase_rows = |phase: &'static str| rows.iter().filter(move |r| r["phase"] == phase);
    assert!(phase_rows("layout").count() >= 3, "time, rate, throughput");
    for row in phase_rows("layout") {
        assert_eq!(row["role"], "untimed", "{row}");
        let other = &row["cells"][1];
        assert_eq!(other["verdict"], "untimed", "{row}");
        assert!(other["difference"].is_null(), "{row}");
    }
    assert!(phase_rows("io").any(|r| r["role"] == "primary"));
    let answers = doc["answers"].as_array().unwrap();
    assert!(answers.iter().all(|a| a["phase"] == "io"), "{answers:?}");
    // Ranked: only io's rate is a discipline.
    let rank = cli(&["rank", "1"]);
    assert!(rank.contains("io rate (ios/s)"), "{rank}");
    assert!(!rank.contains("layout"), "{rank}");
    // The answer and the phase verdicts (up to the workload's tables) name io only.
    let verdicts = show.split("== Answer ==").nth(1).unwrap();
    let verdicts = verdicts.split("== io:").next().unwrap();
    assert!(verdicts.contains(" io"), "{verdicts}");
    assert!(!verdicts.contains("layout"), "{verdicts}");
}

//! fio's job control through `fsbench fio`: `continue_on_error` and `ignore_error` past a
//! full filesystem, `exit_what=all`; each against fio 3.33 on the same job where fio is
//! installed.

use std::path::Path;
use std::process::Command;

use crate::common::*;

/// fio's JSON of `job` (written into `state` as `name`) run by `fsbench fio` in `dir` (its
/// working directory `state`, where log files go), one run, with `more` arguments, and how
/// long the command took.
pub(crate) fn ran(
    state: &Path,
    dir: &Path,
    name: &str,
    job: &str,
    more: &[&str],
) -> (serde_json::Value, f64) {
    let jobfile = state.join(name);
    std::fs::write(&jobfile, job).unwrap();
    let started = std::time::Instant::now();
    let out = run(fsbench(state)
        .current_dir(state)
        .args(["fio", "-q", "--runs", "1", "--output-format", "json"])
        .args(more)
        .arg("--dir")
        .arg(dir)
        .arg(&jobfile));
    assert!(out.status.success(), "{job}: {}", text(&out.stderr));
    (json(&out), started.elapsed().as_secs_f64())
}

/// fio on `jobfile` in `dir` (its working directory), JSON on stdout.
pub(crate) fn fio_json(dir: &Path, jobfile: &Path) -> serde_json::Value {
    let out = run(Command::new("fio")
        .current_dir(dir)
        .arg("--output-format=json")
        .arg(jobfile));
    assert!(out.status.success(), "fio: {}", text(&out.stderr));
    // A job that `exitall` stops prints "fio: terminating on signal 15" on stdout first
    // when it was still running (a race fio's own output has).
    let stdout = text(&out.stdout);
    let at = stdout.find("\n{").filter(|_| !stdout.starts_with('{'));
    let doc = &stdout[at.map_or(0, |i| i + 1)..];
    serde_json::from_str(doc)
        .unwrap_or_else(|e| panic!("fio's stdout is not JSON ({e}):\n{stdout}"))
}

/// A tmpfs of `size` mounted on a fresh directory for `test`, unmounted whatever happens.
fn on_small_tmpfs(name: &str, size: &str, test: impl FnOnce(&Path)) {
    if !can_run(name, &[]) {
        return;
    }
    let dir = tempdir();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let options = format!("size={size}");
    let mounted = status(
        Command::new("mount")
            .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
            .arg(&mnt),
    );
    assert!(mounted.success());
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&mnt)));
    status(Command::new("umount").arg(&mnt));
    outcome.unwrap_or_else(|e| std::panic::resume_unwind(e));
}

#[test]
fn continue_on_error_goes_past_a_full_filesystem_as_fio_does() {
    // 16 MiB of 4 KiB writes into 4 MiB: a quarter is written, the rest meets ENOSPC.
    let job = "[fill]\nfilename=data\nrw=write\nbs=4k\nsize=16m\nfallocate=none\n\
               continue_on_error=write\nignore_error=,ENOSPC\nerror_dump=0\n";
    let name = "continue_on_error_goes_past_a_full_filesystem_as_fio_does";
    on_small_tmpfs(name, "4m", |mnt| {
        let state = tempdir();
        let jobfile = state.path().join("fill.fio");
        std::fs::write(&jobfile, job).unwrap();
        let out = fio_output(state.path(), mnt, &jobfile, "json");
        assert!(out.status.success(), "{}", text(&out.stderr));
        let ours = json(&out)["jobs"][0].clone();
        let written = ours["write"]["io_bytes"].as_u64().unwrap();
        assert!(written > 0 && written < 4 << 20, "{ours}");
        let errors = ours["total_err"].as_u64().unwrap();
        assert_eq!(
            written / 4096 + errors,
            4096,
            "every write done or counted: {ours}"
        );
        assert_eq!(
            ours["write"]["total_ios"].as_u64(),
            Some(4096),
            "issued, as fio counts"
        );
        assert_eq!(ours["first_error"].as_i64(), Some(28), "ENOSPC: {ours}");
        assert_eq!(ours["error"].as_i64(), Some(28), "{ours}");
        let out = fio_output(state.path(), mnt, &jobfile, "normal");
        let normal = text(&out.stdout);
        assert!(
            normal.contains(&format!(
                "     errors    : total={errors}, first_error=28/<No space left on device>"
            )) && normal.contains(
                "err=28 (file:engines/sync.c:126, func=xfer, error=No space left on device)"
            ),
            "{normal}"
        );
        assert_empty(mnt);
        if has_tool("fio") {
            // fsbench's marker of its scratch directory takes a page of the tmpfs: fio gets
            // a file of the same size beside it, so both have the same room.
            std::fs::write(mnt.join("marker"), [0u8; 32]).unwrap();
            let theirs = fio_json(mnt, &jobfile)["jobs"][0].clone();
            for file in ["data", "marker"] {
                std::fs::remove_file(mnt.join(file)).unwrap();
            }
            for key in ["total_err", "first_error", "error"] {
                assert_eq!(ours[key], theirs[key], "{key}: fio's {theirs}");
            }
            for key in ["io_bytes", "total_ios"] {
                assert_eq!(ours["write"][key], theirs["write"][key], "{key}");
            }
        }
        // Without them the job needs the room its file takes, as every job does: refused.
        let plain = job.replace("continue_on_error=write\nignore_error=,ENOSPC\n", "");
        std::fs::write(&jobfile, plain).unwrap();
        let out = fio_output(state.path(), mnt, &jobfile, "json");
        assert_eq!(out.status.code(), Some(2));
        let err = text(&out.stderr);
        assert!(err.contains("free but the workloads need about"), "{err}");
        assert_empty(mnt);
    });
}

#[test]
fn exit_what_all_stops_every_job_and_starts_none_after() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let job = "[global]\nsize=1m\nexitall\n[a]\nrw=read\n[b]\nstonewall\nrw=read\n\
               number_ios=16\nexit_what=all\n[c]\nrw=randread\ntime_based\nruntime=20\n\
               [d]\nstonewall\nrw=read\n";
    let (doc, secs) = ran(state.path(), dir.path(), "all.fio", job, &[]);
    assert!(secs < 15.0, "`c` stops when `b` ends: {secs} s");
    let names: Vec<&str> = (doc["jobs"].as_array().unwrap().iter())
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c", "d"], "`d` listed, as fio lists it");
    assert_eq!(doc["jobs"][1]["read"]["total_ios"].as_u64(), Some(16));
    assert_eq!(
        doc["jobs"][3]["read"]["io_bytes"].as_u64(),
        Some(0),
        "`d` never starts"
    );
    let out = fio_output(
        state.path(),
        dir.path(),
        &state.path().join("all.fio"),
        "normal",
    );
    let normal = text(&out.stdout);
    assert!(normal.contains("d: (g=2): rw=read"), "{normal}");
    assert!(
        !normal.contains("d: (groupid=2"),
        "no stat of its own: {normal}"
    );
    assert!(
        normal.contains("Run status group 2 (all jobs):\n"),
        "{normal}"
    );
    if has_tool("fio") {
        let fio_dir = tmpfs_tempdir();
        let theirs = fio_json(fio_dir.path(), &state.path().join("all.fio"));
        let d = (theirs["jobs"].as_array().unwrap().iter())
            .find(|j| j["jobname"] == "d")
            .unwrap();
        assert_eq!(d["read"]["io_bytes"].as_u64(), Some(0), "fio's `d`: {d}");
    }
    assert_nothing_left(dir.path());
}

/// The times (ms) of a job's I/Os from its latency log (`p_clat.1.log`), written in the
/// working directory, `state`, by `fsbench fio` running `job` in `dir`.
fn logged_times(state: &Path, dir: &Path, job: &str) -> Vec<f64> {
    ran(state, dir, "rate.fio", job, &[]);
    let log = std::fs::read_to_string(state.join("p_clat.1.log")).unwrap();
    (log.lines())
        .map(|l| l.split(',').next().unwrap().trim().parse().unwrap())
        .collect()
}

/// The gaps' mean and their coefficient of variation.
fn gaps(times: &[f64]) -> (f64, f64) {
    let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    (mean, var.sqrt() / mean)
}

#[test]
fn poisson_arrivals_keep_the_rate_with_gaps_drawn_apart() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let job = |process: &str| {
        format!(
            "[p]\nfilename=data\nsize=4m\nrw=randread\nioengine=libaio\niodepth=8\n\
             io_submit_mode=offload\nrate_iops=50\ntime_based\nruntime=4\n\
             rate_process={process}\nwrite_lat_log=p\n"
        )
    };
    // Gaps of 20 ms on average: a late wake-up of a loaded machine is small beside them.
    for (process, spread) in [("linear", 0.0..0.35), ("poisson", 0.6..2.0)] {
        let times = logged_times(state.path(), dir.path(), &job(process));
        // 50 IO/s for 4 s; a Poisson count's deviation is √200, about 14.
        assert!(
            (150..=250).contains(&times.len()),
            "{process}: {}",
            times.len()
        );
        let (mean, cv) = gaps(&times);
        assert!(
            (16.0..26.0).contains(&mean),
            "{process}: mean gap {mean} ms"
        );
        // Evenly spaced gaps hardly vary; exponential ones as much as their mean.
        assert!(
            spread.contains(&cv),
            "{process}: gaps vary by {cv} of their mean"
        );
    }
    assert_nothing_left(dir.path());
}

#[test]
fn jobs_of_a_flow_share_its_ios_by_weight() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // fio's flow.fio, scaled: the jobs are processes, their count in shared memory.
    let job = "[global]\nsize=4m\ntime_based\nruntime=1\nflow_sleep=100\nflow_watermark=10\n\
               [light]\nrw=write\nflow=1\n[heavy]\nrw=randread\nflow=8\n";
    let (doc, _) = ran(state.path(), dir.path(), "flow.fio", job, &[]);
    let ios = |j: usize, d: &str| doc["jobs"][j][d]["total_ios"].as_f64().unwrap();
    let (light, heavy) = (ios(0, "write"), ios(1, "read"));
    assert!(light > 100.0, "{light}");
    let ratio = heavy / light;
    assert!(
        (6.5..9.5).contains(&ratio),
        "8 : 1 as fio's: {heavy} : {light}"
    );
    assert_nothing_left(dir.path());
}

#[test]
fn a_steady_state_attained_ends_the_jobs_with_fio_s_report() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("ss.fio");
    // Any two seconds within 90% of their mean: attained at the third second, not the 30th.
    let job = "[global]\ngroup_reporting\ntime_based\nruntime=30\nsize=4m\n\
               [ss-read]\nfilename=data\nrw=randread\nnumjobs=2\nss=iops:90%\nss_dur=2\n";
    let (doc, secs) = ran(state.path(), dir.path(), "ss.fio", job, &[]);
    assert!(secs < 15.0, "both copies stop once attained: {secs} s");
    let ours = &doc["jobs"][0]["steadystate"];
    assert_eq!(ours["attained"].as_u64(), Some(1), "{ours}");
    assert_eq!(ours["ss"].as_str(), Some("iops:90.000000%"));
    assert_eq!(ours["data"]["iops"].as_array().unwrap().len(), 2);
    assert!(ours["data"]["iops_mean"].as_u64().unwrap() > 0, "{ours}");
    let out = fio_output(state.path(), dir.path(), &jobfile, "normal");
    assert!(
        text(&out.stdout).contains("  steadystate  : attained=yes, bw="),
        "{}",
        text(&out.stdout)
    );
    if has_tool("fio") {
        let fio_dir = tmpfs_tempdir();
        let theirs = fio_json(fio_dir.path(), &jobfile);
        let theirs = &theirs["jobs"][0]["steadystate"];
        let keys = |v: &serde_json::Value| -> Vec<String> {
            v.as_object().unwrap().keys().cloned().collect()
        };
        assert_eq!(keys(ours), keys(theirs), "fio's: {theirs}");
        assert_eq!(keys(&ours["data"]), keys(&theirs["data"]));
        assert_eq!(ours["ss"], theirs["ss"]);
    }
    assert_nothing_left(dir.path());
}

#[test]
fn butterfly_alternates_its_ends_under_the_cap() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // fio's butterfly.fio with a relative file and buffered I/O (tmpfs), sized by the cap.
    let job = "[global]\nfilename=testfile\nbs=4k\n[forward]\nrw=read\nflow=2\n\
               [backward]\nrw=read:-8k\nflow=2\n";
    let cap = ["--cap", "size=1m,runtime=20s"];
    let (doc, secs) = ran(state.path(), dir.path(), "butterfly.fio", job, &cap);
    // The first to end leaves the flow: the other is not held back for ever.
    assert!(secs < 15.0, "{secs} s");
    let ios = |j: usize| doc["jobs"][j]["read"]["total_ios"].as_u64().unwrap();
    assert!(ios(0) > 0 && ios(1) > 0, "{doc}");
    assert_nothing_left(dir.path());
}

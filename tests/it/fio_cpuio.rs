//! fio's cpuio engine through `fsbench fio`: a job that burns a share of a CPU beside the
//! jobs doing I/O, its CPU time against fio 3.33's on the same job, and what fsbench says
//! of a file whose jobs move no data.

use crate::common::*;
use crate::fio_control::{fio_json, ran};

/// Each job's share of its time spent burning (its burns' mean time × their count over its
/// time, in %), and its user CPU share, of fio's JSON (fsbench's or fio's).
fn burned(doc: &serde_json::Value) -> Vec<(f64, f64)> {
    (doc["jobs"].as_array().unwrap().iter())
        .map(|j| {
            let clat = &j["read"]["clat_ns"];
            let burning = clat["mean"].as_f64().unwrap() * clat["N"].as_f64().unwrap();
            let time = j["job_runtime"].as_f64().unwrap() * 1e6;
            (100.0 * burning / time, j["usr_cpu"].as_f64().unwrap())
        })
        .collect()
}

/// Two copies at 20% each, spinning, then two sorting: each burns for 20% of its time as
/// fio's do (each burn followed by fio's thinktime), and so its user CPU share is about
/// fio's (on a busy machine both burn less CPU than their burns last, and sleep late: the
/// bounds are loose; bench/fio_lat_cpu.py compares them on a quiet one). Every burn is one of fio's
/// I/Os of no bytes.
#[test]
fn cpuio_burns_its_share_of_a_cpu_as_fio_s() {
    if !has_tool("fio") {
        return skip("cpuio: fio is not installed");
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let burns = "[global]\nioengine=cpuio\ntime_based\nruntime=1\ncpuload=20\nnumjobs=2\n\
                 [noop]\ncpumode=noop\ncpuchunks=10000\n[qsort]\nstonewall\ncpumode=qsort\n";
    let (ours, _) = ran(state.path(), dir.path(), "burn.fio", burns, &[]);
    let fio_dir = tmpfs_tempdir();
    std::fs::write(fio_dir.path().join("burn.fio"), burns).unwrap();
    let theirs = fio_json(fio_dir.path(), &fio_dir.path().join("burn.fio"));
    let (mine, fios) = (burned(&ours), burned(&theirs));
    assert_eq!(mine.len(), 4, "{ours}");
    for ((duty, usr), (fio_duty, fio_usr)) in mine.iter().zip(&fios) {
        let all = format!("fsbench {mine:?}, fio {fios:?}");
        // A burn preempted lasts longer, a sleep wakes late: 20% within loose bounds.
        assert!((14.0..36.0).contains(duty), "burning: {all}");
        assert!((14.0..36.0).contains(fio_duty), "fio burning: {all}");
        assert!(*usr > 1.0 && *usr < 25.0, "usr_cpu: {all}");
        assert!((usr - fio_usr).abs() < 15.0, "usr_cpu: {all}");
    }
    for (who, doc) in [("fsbench", &ours), ("fio", &theirs)] {
        for j in doc["jobs"].as_array().unwrap() {
            assert_eq!(j["read"]["io_bytes"], 0, "{who}: {j}");
            assert_eq!(j["read"]["runtime"], 0, "{who}: no data, no run time");
            assert!(j["read"]["total_ios"].as_u64() > Some(0), "{who}: {j}");
            // Its time, and the last burn's sleep after it (a sort's, on a busy machine,
            // several seconds long).
            let runtime = j["job_runtime"].as_u64().unwrap();
            assert!((990..30_000).contains(&runtime), "{who}: {runtime}");
        }
    }
    assert_nothing_left(dir.path());
}

/// A file of cpuio jobs alone moves no filesystem data, and fsbench's own results say so
/// rather than show I/O figures; beside an I/O job a cpuio job is left out of the I/O
/// figures, and with `exit_on_io_done` it ends when the I/O job does.
#[test]
fn cpuio_jobs_move_no_data_and_fsbench_says_so() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let alone = "[burn]\nioengine=cpuio\ncpuload=10\nruntime=300ms\n";
    let out = fio_job_json(state.path(), dir.path(), alone);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let phase = &doc["runs"][0]["phases"][1];
    assert_eq!(phase["ops"], 0, "{phase}");
    let notes = phase["notes"].to_string();
    assert!(notes.contains("no filesystem data moved"), "{notes}");
    let figures = phase["figures"].to_string();
    assert!(!figures.contains("\"iops\""), "{figures}");
    let beside = "[io]\nrw=read\nsize=4m\nbs=4k\n\
                  [burn]\nioengine=cpuio\ncpuload=10\nruntime=20s\nexit_on_io_done=1\n";
    let started = std::time::Instant::now();
    let out = fio_job_json(state.path(), dir.path(), beside);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        started.elapsed().as_secs() < 15,
        "the cpuio job ended with the I/O job"
    );
    let doc = json(&out);
    let phase = &doc["runs"][0]["phases"][1];
    assert_eq!(phase["ops"], 1024, "the I/O job's reads alone");
    let notes = phase["notes"].to_string();
    assert!(notes.contains("left out of the I/O figures"), "{notes}");
    assert_nothing_left(dir.path());
}

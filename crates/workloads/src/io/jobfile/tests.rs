use std::path::PathBuf;

use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn globals_includes_environment_and_stonewalls_make_jobs() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "common.fio",
        "; shared\n[global]\nioengine=io_uring\niodepth=16\n",
    );
    // The environment is read, not written: other tests' threads run beside this one.
    let search = std::env::var("PATH").unwrap();
    assert_eq!(
        values::substitute("a${PATH}b", "x").unwrap(),
        format!("a{search}b")
    );
    let path = write(
        dir.path(),
        "job.fio",
        "include common.fio\n[global]\nsize=64M\nbs=4K\n\n[read]\nrw=randread\ndirect=1\n# a comment\n[write]\nstonewall\nrw=write\nbs=128k\nend_fsync=1\nthread\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].job.as_deref(), Some("read"));
    assert_eq!(
        (jobs[0].iodepth, jobs[0].size, jobs[0].direct),
        (16, 64 << 20, true)
    );
    assert_eq!(
        (jobs[1].rw, jobs[1].bssplit[0].0, jobs[1].end_fsync),
        (super::super::Rw::Write, 128 << 10, true)
    );
    assert!(jobs[1].name().starts_with("write"));
    // fio runs jobs as processes unless told `thread`.
    use fsbench_model::workload::WorkerMode;
    assert_eq!(
        (jobs[0].workers, jobs[1].workers),
        (WorkerMode::Processes, WorkerMode::Threads)
    );
}

#[test]
fn what_fsbench_does_not_do_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    for (text, needle) in [
        (
            "[a]\nsize=1m\nverify_offset=16\n",
            "job.fio:3: fio option `verify_offset` is not implemented",
        ),
        (
            "[a]\nsize=1m\nfilename=/dev/sda\n",
            "job.fio:3: job `a`: io: `filename=/dev/sda` is outside the run's directory",
        ),
        (
            "[a]\nsize=${IO_TEST_UNSET}\n",
            "job.fio:2: ${IO_TEST_UNSET} is not set",
        ),
        (
            "[a]\nsize=1m\nrw=trim\n",
            "job.fio:3: job `a`: io: `rw=trim`: fio's psync engine trims with ioctl(BLKDISCARD)",
        ),
        (
            "[a]\nsize=1m\nrw=trimwrite\nioengine=libaio\n",
            "job.fio:3: job `a`: io: `rw=trimwrite`: fio's libaio engine trims with ioctl(BLKDISCARD)",
        ),
        (
            "[a]\nsize=1m\nrw=write\nverify=md5\nioengine=filecreate\n",
            "job.fio:4: job `a`: io: `verify=md5`: ioengine=filecreate writes no data to check",
        ),
        (
            "[a]\nsize=1m\nexit_what=most\n",
            "job.fio:3: `exit_what=most`: fio takes `group`, `stonewall` or `all`",
        ),
        (
            "[a]\nsize=1m\nrw=randrw\nrate=1m,2m\n",
            "job.fio:4: job `a`: io: `rate` per direction (`write-rate`) differs",
        ),
        (
            "[a]\nsize=1m\nrw=randread:0\n",
            "job.fio:3: job `a`: io: `rw=randread:0`: a random pattern takes a count",
        ),
        ("[a]\nsize=1m\niodepth=lots\n", "job.fio:3: "),
        ("[a]\nrw=read\n", "job.fio:1: job `a` has no `size`"),
        (
            "[a]\nsize=1m\nrate=1m\nrate_iops=10\n",
            "job.fio:4: job `a`: io: give `rate` or `rate-iops`",
        ),
        (
            "[a]\nsize=$mb_memory/0\n",
            "job.fio:2: `$mb_memory/0`: division by zero",
        ),
        ("size=1m\n", "before any `[section]`"),
        (
            "[a]\nsize=1m\nignore_error=EIO,ENOSPC:EWHAT\n",
            "job.fio:3: job `a`: io: `ignore_error=EIO,ENOSPC:EWHAT`: unknown error `EWHAT`",
        ),
        (
            "[a]\nsize=1m\nignore_error=EIO,EIO,EIO,EIO\n",
            "Illegal error type",
        ),
        (
            "[a]\nsize=1m\niodepth=4\nio_submit_mode=offload\n",
            "job.fio:4: job `a`: io: `io_submit_mode=offload` with ioengine=psync",
        ),
        ("[a]\nsize=1m\ncontinue_on_error=some\n", "job.fio:3: "),
    ] {
        let path = write(dir.path(), "job.fio", text);
        let err = format!(
            "{:#}",
            read(&path, &Cap::default(), &Targets::default()).unwrap_err()
        );
        assert!(err.contains(needle), "{text:?}: {err}");
    }
    let path = write(dir.path(), "loop.fio", "include loop.fio\n");
    assert!(
        format!(
            "{:#}",
            read(&path, &Cap::default(), &Targets::default()).unwrap_err()
        )
        .contains("a cycle")
    );
}

#[test]
fn fio_s_other_spellings_read_as_fio_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "job.fio",
        "[global]\nblocksize=8k ; inline comment\nreadwrite=rw\nrwmixread=60\nrwmixwrite=30\nbuffered=0\nsize=(2*$pagesize*1024) # size\ngtod_reduce=1\n[j]\nbs=16k,16k\nnumjobs=($ncpus+1)\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    let j = &jobs[0];
    assert_eq!(j.bssplit, vec![(16 << 10, 100)]);
    assert_eq!(
        (j.rw, j.rwmixread, j.direct),
        (super::super::Rw::ReadWrite, 70, true)
    );
    let keywords = values::Keywords::of_this_machine();
    assert_eq!(j.size, 2 * keywords.pagesize * 1024);
    assert_eq!(u64::from(j.numjobs), keywords.ncpus + 1);
    assert!(keywords.mb_memory > 0);
    assert_eq!(
        keywords.expand("8*$mb_memory", "x").unwrap(),
        (8 * keywords.mb_memory).to_string()
    );
    assert_eq!(keywords.expand("((2^10-24)/10)", "x").unwrap(), "100");
    // Without a keyword or parentheses a dash is text, as in `bsrange=4k-4k`.
    assert_eq!(keywords.expand("4k-4k", "x").unwrap(), "4k-4k");
}

#[test]
fn jobs_without_a_stonewall_run_beside_the_one_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "job.fio",
        "[global]\nsize=1m\n[a]\nrw=read\n[b]\nrw=write\n[c]\nstonewall\n[d]\nwait_for_previous\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    let names =
        |p: &IoParams| -> Vec<String> { p.jobs().map(|j| j.job.clone().unwrap()).collect() };
    assert_eq!(jobs.len(), 3);
    assert_eq!(names(&jobs[0]), ["a", "b"]);
    assert_eq!(names(&jobs[1]), ["c"]);
    assert_eq!(names(&jobs[2]), ["d"]);
    assert_eq!(jobs[0].beside[0].rw, super::super::Rw::Write);
    assert!(jobs[0].name().ends_with("+1 beside"), "{}", jobs[0].name());
    assert_eq!(jobs[0].space_needed().unwrap().inodes, 8 + 2);
}

#[test]
fn bsrange_draws_each_multiple_of_its_minimum_and_io_size_moves_more_than_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "job.fio",
        "[a]\nsize=1m\nbsrange=4k-16k\nio_size=4m\n[b]\nsize=1m\nblocksize_range=1k-3k\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    let a = &jobs[0];
    let k = |n: u64| n << 10;
    assert_eq!(
        a.bssplit,
        vec![(k(4), 25), (k(8), 25), (k(12), 25), (k(16), 25)]
    );
    assert_eq!((a.size, a.filesize), (4 << 20, 1 << 20));
    assert_eq!(
        a.beside[0].bssplit,
        vec![(k(1), 34), (k(2), 33), (k(3), 33)]
    );
    let path = write(dir.path(), "job.fio", "[a]\nsize=1m\nbsrange=16k-4k\n");
    let err = format!(
        "{:#}",
        read(&path, &Cap::default(), &Targets::default()).unwrap_err()
    );
    assert!(
        err.contains("job.fio:3: `bsrange=16k-4k` is MIN-MAX"),
        "{err}"
    );
}

#[test]
fn wait_for_waits_for_a_job_alone_or_one_already_ended() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "job.fio",
        "[global]\nsize=1m\n[w]\nrw=write\n[r]\nwait_for=w\n[r2]\nwait_for=w\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    let names =
        |p: &IoParams| -> Vec<String> { p.jobs().map(|j| j.job.clone().unwrap()).collect() };
    // r waits for w, alone in its group; w ended before r2's group started.
    assert_eq!(jobs.len(), 2);
    assert_eq!(
        (names(&jobs[0]), names(&jobs[1])),
        (
            vec!["w".to_string()],
            vec!["r".to_string(), "r2".to_string()]
        )
    );
    assert_eq!(jobs[1].rw, super::super::Rw::Read, "fio's default rw");
    for (text, needle) in [
        (
            "[a]\n[b]\n[c]\nwait_for=a\n",
            "job.fio:6: `wait_for=a`: waiting for one of",
        ),
        (
            "[a]\nwait_for=z\n",
            "job.fio:4: `wait_for=z`: no job `z` before",
        ),
    ] {
        let path = write(dir.path(), "job.fio", &format!("[global]\nsize=1m\n{text}"));
        let err = format!(
            "{:#}",
            read(&path, &Cap::default(), &Targets::default()).unwrap_err()
        );
        assert!(err.contains(needle), "{text:?}: {err}");
    }
}

#[test]
fn a_cap_bounds_every_job_s_size_and_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "job.fio",
        "[a]\nsize=1g\nruntime=1h\nramp_time=1m\n[b]\nsize=4m\nrw=write\noffset_increment=1g\n",
    );
    let cap = Cap::parse("size=16m,runtime=2s").unwrap();
    let jobs = read(&path, &cap, &Targets::default()).unwrap();
    let a = &jobs[0];
    assert_eq!(
        (a.size, a.filesize, a.runtime_ms, a.ramp_ms),
        (16 << 20, 16 << 20, 2000, 2000)
    );
    let b = &a.beside[0];
    assert_eq!((b.size, b.runtime_ms), (4 << 20, 2000));
    assert_eq!(b.offset_increment, 16 << 20);
    assert!(
        cap.describe()
            .unwrap()
            .contains("--cap size=16M,runtime=2s")
    );
    assert_eq!(Cap::default().describe(), None);
    assert!(Cap::parse("iodepth=1").is_err());
}

#[test]
fn an_included_file_that_is_no_job_file_is_not_quoted() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "root:$6$s3cr3tHash:19000:0:99999:7:::";
    for text in [
        format!("{secret}\n"),
        "[unclosed s3cr3t\n".to_string(),
        "key with s3cr3t spaces=1\n".to_string(),
        "pass${s3cr3t=1\n".to_string(),
    ] {
        write(dir.path(), "shadow", &text);
        let path = write(dir.path(), "job.fio", "[a]\nsize=1m\ninclude shadow\n");
        let err = format!(
            "{:#}",
            read(&path, &Cap::default(), &Targets::default()).unwrap_err()
        );
        assert!(
            err.contains("shadow:1: not a job file's line") && !err.contains("s3cr3t"),
            "{text:?}: {err}"
        );
    }
}

#[test]
fn fio_s_percentages_alignments_and_per_direction_values_are_read_as_fio_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "job.fio",
        "[global]\nfilesize=64k\nnrfiles=2\n[a]\nsize=50%\noffset=25%\nba=8k\npercentage_sequential=30\nbs=4k\n\
         [b]\nrw=write\nsize=1m\nrate=1m,64k\nbssplit=4k/50:8k/50,16k/100\nthinktime=2ms\nthinktime_spin=500\n\
         file_service_type=random:4\n[c]\nrw=write\nsize=1m\nrate_iops=,10\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    let a = &jobs[0];
    // 50% of each 64 KiB file; 25% of the size a new file has: 0, as fio's.
    assert_eq!((a.offset, a.filesize, a.size), (0, 64 << 10, 64 << 10));
    assert_eq!((a.blockalign, a.percentage_random), (8 << 10, 70));
    let b = &a.beside[0];
    assert_eq!(
        (b.rate, a.beside[1].rate_iops),
        (64 << 10, 10),
        "the writes' rates"
    );
    assert_eq!(b.bssplit, [(4 << 10, 50), (8 << 10, 50)]);
    assert_eq!(b.write_bssplit, [(16 << 10, 100)]);
    assert_eq!((b.thinktime_us, b.thinktime_spin_us), (2000, 500));
    assert_eq!(b.file_service, super::super::FileService::Random(4));
    assert!(b.contents.scramble, "fio scrambles by default");
    // fio reads `kb_base` first, wherever it stands; its default takes KiB as 1000 bytes.
    let path = write(
        dir.path(),
        "base.fio",
        "[a]\nsize=1m\nbs=4KiB\n[b]\nsize=1m\nkb_base=1000\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    assert_eq!((jobs[0].size, jobs[0].bssplit[0].0), (1 << 20, 4000));
    assert_eq!(jobs[0].beside[0].size, 1_000_000);
    for (line, needle) in [
        ("size=50%", "needs `filesize`"),
        (
            "size=1m\nfile_service_type=normal",
            "file-service-type=normal",
        ),
        ("size=1m\nrw=randread\nba=2m", "`blockalign` ("),
        (
            "size=1m\nioengine=io_uring\nthinktime=1",
            "`thinktime` with ioengine=io_uring",
        ),
    ] {
        let path = write(dir.path(), "bad.fio", &format!("[a]\n{line}\n"));
        let err = format!(
            "{:#}",
            read(&path, &Cap::default(), &Targets::default()).unwrap_err()
        );
        assert!(err.contains(needle), "{line}: {err}");
    }
}

#[test]
fn exit_what_all_starts_no_job_after_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let text = |exitall: &str| {
        format!(
            "[global]\nsize=1m\n{exitall}\n[a]\n[b]\nstonewall\nexit_what=all\n[c]\n[d]\nstonewall\n[e]\nstonewall\n"
        )
    };
    let names = |jobs: &[IoParams]| -> Vec<Vec<String>> {
        (jobs.iter())
            .map(|g| g.jobs().map(|j| j.job.clone().unwrap()).collect())
            .collect()
    };
    let path = write(dir.path(), "all.fio", &text("exitall"));
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    assert_eq!(names(&jobs), [vec!["a"], vec!["b", "c"]]);
    assert!(jobs[1].exitall && jobs[1].beside[0].exitall);
    // Kept for fio's outputs, which list them.
    let never: Vec<_> = jobs[1]
        .never_started
        .iter()
        .map(|j| j.job.clone().unwrap())
        .collect();
    assert_eq!(never, ["d", "e"]);
    // Without `exitall` a job's end stops nothing, `exit_what` or not.
    let path = write(dir.path(), "none.fio", &text(""));
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    assert_eq!(jobs.len(), 4);
}

#[test]
fn continue_on_error_and_ignore_error_read_as_fio_reads_them() {
    use crate::io::params::ErrorKind;
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "job.fio",
        "[global]\nsize=1m\n[w]\ncontinue_on_error=write\nignore_error=,ENOSPC:28:-5\nerror_dump=0\n[r]\ncontinue_on_error=1\n[n]\ncontinue_on_error=none\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    let [w, r, n]: [&IoParams; 3] = jobs[0].jobs().collect::<Vec<_>>().try_into().unwrap();
    assert_eq!(w.errors.kinds, 2);
    assert_eq!(w.errors.ignore[1], [libc::ENOSPC, libc::ENOSPC, libc::EIO]);
    assert!(w.errors.continues(ErrorKind::Write, libc::ENOSPC));
    assert!(!w.errors.continues(ErrorKind::Read, libc::EIO));
    assert_eq!(r.errors.kinds, 7);
    assert!(r.errors.continues(ErrorKind::Read, libc::EIO));
    assert!(r.errors.continues(ErrorKind::Verify, libc::EILSEQ));
    assert!(!r.errors.continues(ErrorKind::Write, libc::ENOSPC));
    assert!(!n.errors.continues_any());
}

#[test]
fn steady_state_pacing_and_generators_read_as_fio_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "job.fio",
        "[global]\nsize=1m\n[a]\nsteadystate=bw_slope:2m\nss_dur=30s\nss_ramp=10\nrate_iops=50\nrate_process=poisson\n[b]\nss_dur=10\nrandom_generator=lfsr\nnorandommap\nflow=8\nflow_id=2\nflow_sleep=1000\nflow_watermark=5\n[c]\nss_dur=500ms\nrw=randread\nnorandommap\nrandom_generator=tausworthe64\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    let [a, b, c]: [&IoParams; 3] = jobs[0].jobs().collect::<Vec<_>>().try_into().unwrap();
    let ss = a.steady.unwrap();
    assert_eq!((ss.iops, ss.slope, ss.percent), (false, true, false));
    assert_eq!(
        (ss.limit, ss.seconds, ss.ramp_ms),
        (2.0 * 1048576.0, 30, 10_000)
    );
    assert_eq!(ss.text(), "bw_slope:2097152.000000");
    assert!(a.pacing.poisson && a.poisson_iops() == 50);
    let ss = b.steady.unwrap();
    assert_eq!(ss.text(), "iops_slope:0.010000%", "fio's default criterion");
    assert!(!b.norandommap, "lfsr visits every block once");
    assert_eq!(
        (b.pacing.flow, b.pacing.flow_id, b.pacing.flow_sleep_us),
        (8, 2, 1000)
    );
    assert!(
        c.steady.is_none(),
        "a window under a second is none, as fio's"
    );
    assert!(c.norandommap);
    for (text, needle) in [
        (
            "[a]\nsize=1m\nss=iops\nss_dur=5\n",
            "bad.fio:3: job `a`: io: `ss=iops`",
        ),
        ("[a]\nsize=1m\nss=lat:5\nss_dur=5\n", "fio's criteria are"),
        (
            "[global]\ngroup_reporting\nsize=1m\n[a]\nss_dur=5\n[b]\nss_dur=6\n",
            "job `b`: steadystate options must be consistent",
        ),
    ] {
        let path = write(dir.path(), "bad.fio", text);
        let err = format!(
            "{:#}",
            read(&path, &Cap::default(), &Targets::default()).unwrap_err()
        );
        assert!(err.contains(needle), "{text:?}: {err}");
    }
}

#[test]
fn a_cap_gives_its_size_to_a_job_without_one() {
    let dir = tempfile::tempdir().unwrap();
    // fio's butterfly.fio: no size (fio takes an existing file's).
    let path = write(
        dir.path(),
        "butterfly.fio",
        "[global]\nfilename=testfile\nbs=4k\n[forward]\nrw=read\nflow=2\n[backward]\nrw=read:-8k\nflow=2\n",
    );
    let cap = Cap::parse("size=1m").unwrap();
    let jobs = read(&path, &cap, &Targets::default()).unwrap();
    assert!(
        jobs[0]
            .jobs()
            .all(|j| j.size == 1 << 20 && j.pacing.flow == 2)
    );
    let err = read(&path, &Cap::default(), &Targets::default()).unwrap_err();
    assert!(format!("{err:#}").contains("has no `size`"), "{err:#}");
}

#[test]
fn sync_fill_device_dedupe_and_verify_only_read_as_fio_reads_them() {
    use super::super::params::SyncIo;
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "job.fio",
        "[global]\nfilename=data\nbs=4k\n[w]\nrw=write\nsize=64k\nsync=1\ndedupe_percentage=20\ndedupe_mode=working_set\ndedupe_global=1\nnumjobs=2\n[d]\nrw=write\nsize=64k\nsync=dsync\n[check]\nstonewall\nrw=write\nsize=64k\nverify=md5\nverify_only\n[fill]\nstonewall\nfilename=other\nrw=write\nfill_device=1\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    assert_eq!(jobs.len(), 3, "the check is a group of its own");
    let (w, d) = (&jobs[0], &jobs[0].beside[0]);
    assert_eq!((w.sync_io, d.sync_io), (SyncIo::Sync, SyncIo::Dsync));
    // Thread numbers 1 and 2 are `w`'s copies, 3 is `d`: the set spreads over all three.
    assert_eq!(w.contents.dedupe_threads, Some((1, 3)));
    assert_eq!(w.contents.dedupe_working_set, Some(5));
    // It writes nothing, reads back what it would write, on the files the group before it
    // wrote (that group runs again first).
    let check = &jobs[1];
    assert!(check.verify_only && check.existing_files);
    let before: Vec<_> = check
        .earlier_groups
        .iter()
        .map(|g| g.job.as_deref())
        .collect();
    assert_eq!(before, [Some("w")]);
    let fill = &jobs[2];
    assert!(fill.fill_device);
    assert_eq!(fill.size, crate::io::params::UNBOUNDED);
    let path = write(dir.path(), "range.fio", "[a]\nfilesize=1k-64k\n");
    let err = read(&path, &Cap::default(), &Targets::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("range.fio:2: `filesize=1k-64k`: each file's size drawn from a range"),
        "{err}"
    );
}

/// fio's latency target options: times in microseconds when bare (the target kept in
/// nanoseconds, as fio keeps it), the percentile 100 unless given.
#[test]
fn latency_target_options_read_as_fio_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "job.fio",
        "[global]\nsize=1m\nioengine=libaio\niodepth=128\n[a]\nlatency_target=500000\nlatency_window=5000000\nlatency_percentile=99.9\n[b]\nlatency_target=2ms\nlatency_run=1\n[c]\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    let [a, b, c]: [&IoParams; 3] = jobs[0].jobs().collect::<Vec<_>>().try_into().unwrap();
    let t = a.latency_target.unwrap();
    assert_eq!(
        (t.target_ns, t.window_us, t.percentile, t.keeps_searching),
        (500_000_000, 5_000_000, 99.9, false)
    );
    let t = b.latency_target.unwrap();
    assert_eq!(
        (t.target_ns, t.window_us, t.percentile, t.keeps_searching),
        (2_000_000, 0, 100.0, true)
    );
    assert!(c.latency_target.is_none());
}

/// fio's cpuio engine: its options (a load over 100 is 100), no `size` needed; without
/// `cpuload` or `runtime` it is refused, and its options with another engine too.
#[test]
fn cpuio_options_read_as_fio_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "job.fio",
        "[a]\nioengine=cpuio\ncpuload=150\nruntime=1\ncpumode=qsort\nexit_on_io_done=1\n",
    );
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    let burn = jobs[0].cpu_burn.unwrap();
    assert_eq!(
        (burn.load, burn.chunk_us, burn.qsort, burn.exit_on_io_done),
        (100, 50_000, true, true)
    );
    for (text, needle) in [
        ("[a]\nioengine=cpuio\nruntime=1\n", "needs `cpuload`"),
        ("[a]\nioengine=cpuio\ncpuload=5\n", "give `runtime`"),
        (
            "[a]\nsize=1m\ncpuload=5\n",
            "`cpuload` is an option of ioengine=cpuio",
        ),
    ] {
        let path = write(dir.path(), "bad.fio", text);
        let err = format!(
            "{:#}",
            read(&path, &Cap::default(), &Targets::default()).unwrap_err()
        );
        assert!(err.contains(needle), "{text:?}: {err}");
    }
}

#[test]
fn each_filename_line_adds_its_files_to_the_jobs_as_in_fio() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[global]\nfilename=ga\nsize=1m\nrw=write\n[own]\nfilename=jb\n[plain]\n[two]\nfilename=x1\nfilename=x2:x3\n";
    let path = write(dir.path(), "job.fio", text);
    let jobs = read(&path, &Cap::default(), &Targets::default()).unwrap();
    let files: Vec<_> = std::iter::once(&jobs[0])
        .chain(&jobs[0].beside)
        .map(|p| (p.filename.join(":"), p.nrfiles))
        .collect();
    assert_eq!(
        files,
        [
            ("ga:jb".to_string(), 2),
            ("ga".to_string(), 1),
            ("ga:x1:x2:x3".to_string(), 4)
        ]
    );
}

//! fio job files' options for files, offsets, block sizes, rates, thinking and buffers, run
//! through `fsbench fio` and, where offsets and calls matter, compared with fio's own calls
//! (read by strace); absolute names inside the directory fsbench was given.

use std::path::Path;

use crate::common::*;
use crate::fio_files::{traced_fio, traced_fsbench};

/// One traced `pread64` or `pwrite64`: the file's name (its last part), the offset, the
/// length, whether it writes, and the first bytes strace shows of a write's data.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Call {
    file: String,
    offset: u64,
    len: u64,
    write: bool,
    data: String,
}

/// The lines of a trace of several tasks, each call whole: strace splits a call another
/// task interrupted (`<unfinished ...>`, then `<... NAME resumed>`); without the pid.
fn whole_calls(log: &Path) -> Vec<String> {
    let log = std::fs::read_to_string(log).unwrap();
    let mut started = std::collections::HashMap::new();
    let mut lines = Vec::new();
    for raw in log.lines() {
        let (pid, rest) = raw.split_once(' ').unwrap_or(("", raw));
        let rest = rest.trim_start();
        if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            started.insert(pid, head);
        } else if let Some((_, tail)) = rest.split_once(" resumed>") {
            lines.push(format!("{}{tail}", started.remove(pid).unwrap_or_default()));
        } else {
            lines.push(rest.to_string());
        }
    }
    lines
}

/// The `pread64`/`pwrite64` calls of a traced command on files named in `names`.
fn calls(log: &Path, names: &[&str]) -> Vec<Call> {
    (whole_calls(log).iter())
        .filter_map(|line| {
            let write = line.contains("pwrite64(");
            if !write && !line.contains("pread64(") {
                return None;
            }
            let path = line.split_once('<')?.1.split_once('>')?.0;
            let file = path.rsplit('/').next()?.to_string();
            if !names.contains(&file.as_str()) {
                return None;
            }
            let (args, _) = line.rsplit_once(") = ")?;
            let mut tail = args.rsplitn(3, ", ");
            let offset = tail.next()?.parse().ok()?;
            let len = tail.next()?.parse().ok()?;
            let data = tail.next()?.split_once(", ").map_or("", |(_, d)| d);
            Some(Call {
                file,
                offset,
                len,
                write,
                data: data.to_string(),
            })
        })
        .collect()
}

fn fio_and_strace(what: &str) -> bool {
    if has_tool("fio") && has_tool("strace") {
        return true;
    }
    skip(&format!(
        "{what} against fio's: fio or strace is not installed"
    ));
    false
}

/// `job` run by fsbench (in `dir`) and by fio (in a fresh directory), each traced: their
/// `pread64`/`pwrite64` calls on the files `names`.
fn ours_and_fio_s(dir: &Path, state: &Path, job: &str, names: &[&str]) -> (Vec<Call>, Vec<Call>) {
    let jobfile = state.join("opts.fio");
    std::fs::write(&jobfile, job).unwrap();
    let log = state.join("opts.strace");
    let trace = "trace=pread64,pwrite64";
    let out = run(&mut traced_fsbench(trace, &log, state, dir, &jobfile));
    assert!(out.status.success(), "{job}: {}", text(&out.stderr));
    let ours = calls(&log, names);
    let fio_dir = tempdir();
    let out = run(&mut traced_fio(trace, &log, fio_dir.path(), &jobfile));
    assert!(out.status.success(), "{job}: fio: {}", text(&out.stderr));
    (ours, calls(&log, names))
}

/// The reads of a traced run, as (file, offset), in order.
fn reads(calls: &[Call]) -> Vec<(String, u64)> {
    (calls.iter())
        .filter(|c| !c.write)
        .map(|c| (c.file.clone(), c.offset))
        .collect()
}

#[test]
fn absolute_names_inside_the_directory_given_run_and_others_are_refused() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let d = dir.path().display();
    let job = format!(
        "[global]\nrw=read\nbs=4k\nsize=64k\n[in]\ndirectory={d}/sub\nfilename=data\n[at]\nfilename={d}/top\n"
    );
    let out = fio_job_json(state.path(), dir.path(), &job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let phases = &doc["runs"][0]["phases"];
    assert_eq!(phases[0]["ops"].as_u64(), Some(2), "two files laid out");
    assert_eq!(phases[1]["ops"].as_u64(), Some(32), "both read");
    assert_nothing_left(dir.path());
    for (line, needle) in [
        (
            "filename=/var/tmp/elsewhere".to_string(),
            "`filename=/var/tmp/elsewhere` is outside the run's directory".to_string(),
        ),
        (
            format!("directory={d}/../up"),
            format!("`directory={d}/../up`: an absolute name with `..`"),
        ),
        (
            "directory=/dev/null".into(),
            "`directory=/dev/null` moves no data through a filesystem".into(),
        ),
        (
            format!("filename={d}"),
            "is the directory fsbench was given, not a file in it".into(),
        ),
    ] {
        let out = fio_job_json(state.path(), dir.path(), &format!("[j]\nsize=1m\n{line}\n"));
        assert_eq!(out.status.code(), Some(2), "{line}");
        let err = text(&out.stderr);
        assert!(
            err.contains("job.fio:3:") && err.contains(&needle),
            "{line}: {err}"
        );
    }
}

#[test]
fn file_service_types_visit_the_files_in_fio_s_order() {
    if !fio_and_strace("file_service_type") {
        return;
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for service in ["roundrobin", "roundrobin:2", "sequential"] {
        let job = format!(
            "[fst]\nfilename=a:b\nioengine=psync\nrw=read\nbs=4k\nsize=32k\nfile_service_type={service}\n"
        );
        let (ours, theirs) = ours_and_fio_s(dir.path(), state.path(), &job, &["a", "b"]);
        assert_eq!(reads(&ours).len(), 8, "{service}: {ours:?}");
        assert_eq!(reads(&ours), reads(&theirs), "{service}");
    }
    // A file drawn by a skewed distribution: still every file's share of the pass.
    let job =
        "[fst]\nfilename=a:b:c:d\nrw=randread\nbs=4k\nsize=256k\nfile_service_type=zipf:1.2\n";
    let out = fio_job_json(state.path(), dir.path(), job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_nothing_left(dir.path());
}

#[test]
fn offsets_of_increments_percentages_and_sequential_shares_are_fio_s() {
    if !fio_and_strace("offset_increment, size=N%, offset=N%, percentage_random") {
        return;
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for (options, count) in [
        ("size=16k\noffset_increment=64k\nnumjobs=2\nthread", 8),
        ("filesize=64k\nsize=50%", 8),
        // A share of the size a file has before the job: 0 for a new one, in both.
        ("filesize=64k\noffset=25%\nsize=16k", 4),
        ("rw=randread\npercentage_random=0\nsize=32k", 8),
    ] {
        let job = format!("[off]\nfilename=data\nioengine=psync\nrw=read\nbs=4k\n{options}\n");
        let (ours, theirs) = ours_and_fio_s(dir.path(), state.path(), &job, &["data"]);
        let (mut ours, mut theirs) = (reads(&ours), reads(&theirs));
        // Two copies run at once: their reads interleave.
        ours.sort();
        theirs.sort();
        assert_eq!(ours.len(), count, "{options}: {ours:?}");
        assert_eq!(ours, theirs, "{options}");
    }
    assert_nothing_left(dir.path());
}

#[test]
fn blockalign_and_per_direction_block_sizes_shape_each_i_o_as_in_fio() {
    if !fio_and_strace("blockalign and bssplit=READ,WRITE") {
        return;
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let job =
        "[ba]\nfilename=data\nioengine=psync\nrw=randread\nbs=4k\nba=16k\nsize=64k\nnorandommap\n";
    let (ours, theirs) = ours_and_fio_s(dir.path(), state.path(), job, &["data"]);
    for (who, calls) in [("fsbench", &ours), ("fio", &theirs)] {
        let reads = reads(calls);
        assert_eq!(reads.len(), 16, "{who}");
        assert!(
            reads.iter().all(|r| r.1 % (16 << 10) == 0),
            "{who}: {reads:?}"
        );
    }
    let job =
        "[split]\nfilename=data\nioengine=psync\nrw=randrw\nbssplit=4k/100,16k/100\nsize=512k\n";
    let (ours, theirs) = ours_and_fio_s(dir.path(), state.path(), job, &["data"]);
    for (who, calls) in [("fsbench", &ours), ("fio", &theirs)] {
        // Not the layout's one write of the whole file.
        let timed: Vec<&Call> = (calls.iter())
            .filter(|c| !c.write || c.len != 512 << 10)
            .collect();
        assert!(
            timed.iter().any(|c| c.write) && timed.iter().any(|c| !c.write),
            "{who}"
        );
        assert!(
            timed
                .iter()
                .all(|c| c.len == if c.write { 16 << 10 } else { 4 << 10 }),
            "{who}: {timed:?}"
        );
    }
    assert_nothing_left(dir.path());
}

#[test]
fn rates_per_direction_thinktime_and_filename_format() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let seconds = |job: &str| {
        let out = fio_job_json(state.path(), dir.path(), job);
        assert!(out.status.success(), "{job}: {}", text(&out.stderr));
        json(&out)["runs"][0]["phases"][1]["elapsed_ns"]
            .as_f64()
            .unwrap()
            / 1e9
    };
    // A job that only writes takes the writes' rate: 16 writes of 4 KiB at 64 KiB/s.
    let secs = seconds("[w]\nrw=write\nbs=4k\nsize=64k\nrate=1m,64k\n");
    assert!(secs >= 0.9, "{secs} s");
    // 8 reads, a 100 ms think after every second: 4 thinks.
    let secs = seconds("[t]\nrw=read\nbs=4k\nsize=32k\nthinktime=100ms\nthinktime_blocks=2\n");
    assert!(secs >= 0.39, "{secs} s");
    let out = fio_job_json(
        state.path(),
        dir.path(),
        "[m]\nrw=randrw\nsize=64k\nrate=1m,2m\n",
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("job.fio:4:") && err.contains("rate"), "{err}");
    // The copies share the files the format names without `$jobnum`.
    let job = "[fmt]\nfilename_format=f.$jobname.$filenum\nnrfiles=2\nnumjobs=2\nrw=read\nbs=4k\nsize=64k\n";
    let out = fio_job_json(state.path(), dir.path(), job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(json(&out)["runs"][0]["phases"][0]["ops"].as_u64(), Some(2));
    let out = fio_job_json(
        state.path(),
        dir.path(),
        "[j]\nsize=1m\nfilename_format=../x\n",
    );
    assert!(text(&out.stderr).contains("leaves the run's directory"));
    if fio_and_strace("filename_format's names") {
        let names = ["f.fmt.0", "f.fmt.1"];
        let (ours, theirs) = ours_and_fio_s(dir.path(), state.path(), job, &names);
        let files = |calls: &[Call]| {
            let mut files: Vec<String> = reads(calls).into_iter().map(|r| r.0).collect();
            files.sort();
            files.dedup();
            files
        };
        assert_eq!(files(&ours), names);
        assert_eq!(files(&ours), files(&theirs));
        // Each copy reads its 64 KiB (fio 3.33's second copy of shared names reads none).
        assert_eq!(reads(&ours).len(), 32);
    }
    assert_nothing_left(dir.path());
}

#[test]
fn buffer_options_fill_what_is_written_and_pre_read_reads_first() {
    if !fio_and_strace("zero_buffers and pre_read") {
        return;
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let job = "[z]\nfilename=data\nioengine=psync\nrw=write\nbs=4k\nsize=16k\nzero_buffers=1\n";
    let (ours, theirs) = ours_and_fio_s(dir.path(), state.path(), job, &["data"]);
    for (who, calls) in [("fsbench", &ours), ("fio", &theirs)] {
        let writes: Vec<&Call> = calls.iter().filter(|c| c.write).collect();
        assert_eq!(writes.len(), 4, "{who}: {calls:?}");
        assert!(
            writes.iter().all(|c| c.data.starts_with("\"\\0\\0\\0\\0")),
            "{who}: {writes:?}"
        );
    }
    let job = "[r]\nfilename=data\nioengine=psync\nrw=write\nbs=4k\nsize=64k\npre_read=1\n";
    let (ours, _) = ours_and_fio_s(dir.path(), state.path(), job, &["data"]);
    let first_write = ours.iter().position(|c| c.write).unwrap();
    assert!(
        first_write > 0 && !ours[0].write,
        "read before the writes: {ours:?}"
    );
    assert_nothing_left(dir.path());
}

#[test]
fn unlink_each_loop_makes_the_files_anew_between_loops() {
    if !has_tool("strace") {
        skip("unlink_each_loop's calls: strace is not installed");
        return;
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("unlink.fio");
    let job = "[u]\nfilename=data\nrw=write\nbs=4k\nsize=16k\nloops=2\nunlink_each_loop=1\n";
    std::fs::write(&jobfile, job).unwrap();
    let log = state.path().join("unlink.strace");
    let trace = "trace=pwrite64,unlinkat";
    let out = run(&mut traced_fsbench(
        trace,
        &log,
        state.path(),
        dir.path(),
        &jobfile,
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let order: String = (whole_calls(&log).iter())
        .filter_map(
            |l| match (l.contains("/data>"), l.contains(", \"data\", ")) {
                (true, _) if l.starts_with("pwrite64(") => Some('w'),
                (_, true) if l.starts_with("unlinkat(") => Some('u'),
                _ => None,
            },
        )
        .collect();
    assert!(order.starts_with("wwwwuwwww"), "{order}");
    let out = fio_job_json(
        state.path(),
        dir.path(),
        "[u]\nsize=16k\nrw=randrw\nunlink_each_loop=1\n",
    );
    assert!(text(&out.stderr).contains("`unlink-each-loop` is taken for jobs that only write"));
    assert_nothing_left(dir.path());
}

#[test]
fn the_block_device_given_is_read_and_written_raw_and_no_other() {
    if !can_run("fio --target-device", &["losetup"]) {
        return;
    }
    let (disk, other) = (LoopDevice::blank(16), LoopDevice::blank(16));
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("dev.fio");
    let exported = state.path().join("dev.json");
    let fio_on = |job: &str, device: &str| {
        std::fs::write(&jobfile, job).unwrap();
        let _ = std::fs::remove_file(&exported);
        let mut out = run(fsbench(state.path())
            .args([
                "fio",
                "-q",
                "--runs",
                "1",
                "--target-device",
                device,
                "--export-json",
            ])
            .arg(&exported)
            .arg("--dir")
            .arg(dir.path())
            .arg(&jobfile));
        out.stdout = std::fs::read(&exported).unwrap_or_default();
        out
    };
    let job = format!(
        "[d]\nfilename={}\nrw=write\nbs=64k\nsize=4m\ndirect=1\n",
        disk.dev
    );
    let out = fio_on(&job, &disk.dev);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let phases = &doc["runs"][0]["phases"];
    assert_eq!(phases[0]["ops"].as_u64(), Some(0), "nothing laid out");
    assert_eq!(phases[1]["ops"].as_u64(), Some(64));
    let written = std::fs::read(&disk.dev).unwrap();
    assert!(
        written[..4 << 20].iter().any(|b| *b != 0),
        "the writes are on it"
    );
    assert!(
        written[4 << 20..].iter().all(|b| *b == 0),
        "and nowhere else"
    );
    // Without `size`, the device's, as fio's.
    let out = fio_on(
        &format!("[d]\nfilename={}\nrw=read\nbs=1m\n", disk.dev),
        &disk.dev,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(json(&out)["runs"][0]["phases"][1]["ops"].as_u64(), Some(16));
    // Another device than the one given stays refused, with its line.
    let out = fio_on(&job, &other.dev);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("dev.fio:2:") && err.contains("outside the run's directory"),
        "{err}"
    );
    assert_nothing_left(dir.path());
}

/// A suite file may give the io workload's fields as a stored suite keeps them (not as
/// options): its names are checked all the same, and it cannot make a job raw.
#[test]
fn a_suite_file_s_fields_cannot_name_a_file_outside_nor_a_raw_device() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let victim = state.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    // The stored form of a small io workload, as `fsbench run` keeps it.
    let exported = state.path().join("first.json");
    let out = run(fsbench(state.path())
        .args([
            "run",
            "-q",
            "--runs",
            "1",
            "-w",
            "io:rw=write,bs=4k,size=64k",
        ])
        .arg("--dir")
        .arg(dir.path())
        .arg("--export-json")
        .arg(&exported));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&exported).unwrap()).unwrap();
    let stored = doc["suite"]["workload"][0].clone();
    let v = victim.display().to_string();
    let cases: [(&str, serde_json::Value, &str); 4] = [
        (
            "filename",
            serde_json::json!([v]),
            "is outside the run's directory",
        ),
        (
            "directory",
            serde_json::json!("../.."),
            "leaves the run's directory",
        ),
        (
            "job",
            serde_json::json!("../../x"),
            "leaves the run's directory",
        ),
        (
            "raw_device",
            serde_json::json!(true),
            "read and written raw only under",
        ),
    ];
    for (field, value, needle) in cases {
        let mut w = stored.clone();
        w[field] = value;
        if field == "job" {
            w["filename_format"] = serde_json::json!("$jobname");
        }
        if field == "raw_device" {
            w["filename"] = serde_json::json!([v]);
        }
        let mut suite = toml::Table::new();
        suite.insert("runs".into(), toml::Value::Integer(1));
        let workload: toml::Value = serde_json::from_value(w).unwrap();
        suite.insert("workload".into(), toml::Value::Array(vec![workload]));
        let file = state.path().join("suite.toml");
        std::fs::write(&file, toml::to_string(&suite).unwrap()).unwrap();
        let out = run(fsbench(state.path())
            .args(["run", "-q"])
            .arg(&file)
            .arg("--dir")
            .arg(dir.path()));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{field}: {err}");
        assert!(err.contains(needle), "{field}: {err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
    assert_nothing_left(dir.path());
}

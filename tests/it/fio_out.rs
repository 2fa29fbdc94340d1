//! What fio's users read (`fsbench fio --output-format normal|json|json+|terse`, the
//! `write_*_log` files): laid out as fio 3.33 lays them out, compared with fio's own output
//! of the same job file where fio is installed, and read by fio's own tools
//! (fio_jsonplus_clat2csv, fio-plot, fiologparser.py, fiologparser_hist.py).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// Two jobs side by side for two seconds: a paced random mix on psync, a sequential write
/// with fsyncs on libaio (slat, sync latencies, queue depths).
const JOBS: &str = "[global]\nsize=8m\nruntime=2\ntime_based\n\n[mix]\nrw=randrw\nbs=4k\n\
                    ioengine=psync\nrate_iops=400\n\n[seq]\nrw=write\nbs=64k\nioengine=libaio\n\
                    iodepth=4\nfsync=8\n";

/// `fsbench fio JOBS` in `dir` with `--output-format format`; its stdout, its suite's ID.
fn fsbench_fio(state: &Path, dir: &Path, jobs: &str, format: &str, runs: &str) -> String {
    let jobfile = state.join("jobs.fio");
    std::fs::write(&jobfile, jobs).unwrap();
    let out = run(fsbench(state)
        .args([
            "fio",
            "-q",
            "--runs",
            runs,
            "--output-format",
            format,
            "--db",
        ])
        .arg(state.join("results.db"))
        .arg(&jobfile)
        .arg("--dir")
        .arg(dir)
        .current_dir(state));
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// `fsbench export 1 --format format` of the suite in `state`.
fn export(state: &Path, format: &str) -> String {
    let out = run(fsbench(state)
        .args(["export", "1", "--format", format, "--db"])
        .arg(state.join("results.db")));
    assert!(out.status.success(), "{format}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// fio itself on the same job file, in `dir`.
fn real_fio(dir: &Path, state: &Path, format: &str) -> String {
    let jobfile = state.join("jobs.fio");
    let out = run(Command::new("fio")
        .arg(format!("--output-format={format}"))
        .arg(format!("--directory={}", dir.display()))
        .arg(&jobfile)
        .current_dir(state));
    assert!(out.status.success(), "fio: {}", text(&out.stderr));
    text(&out.stdout)
}

/// A line's shape: what comes before its first figure (`  read: IOPS=`, `    clat (`),
/// without the padding of a number printed in a fixed width after `=` (fio's `min=%5llu`
/// pads 4-digit IOPS with one space, 5-digit with none).
fn shape(line: &str) -> String {
    let end = line
        .find(|c: char| c.is_ascii_digit() || c == '(')
        .unwrap_or(line.len());
    let before = &line[..end];
    match before.trim_end() {
        t if t.ends_with('=') => t.to_string(),
        _ => before.to_string(),
    }
}

/// The shapes of fio's per-job and per-group lines in order, repeats (percentile rows,
/// latency shares) folded; the lines only fio prints as it runs and its disk statistics
/// left out.
fn shapes(output: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let body = output.split("\n\n").skip(1).collect::<Vec<_>>().join("\n");
    for line in body.lines() {
        if line.trim().is_empty() || line.starts_with("Disk stats") || line.starts_with("  vd") {
            continue;
        }
        if line.starts_with("  sd") || line.starts_with("  nvme") || line.starts_with("fsbench:") {
            continue;
        }
        let s = shape(line);
        if out.last() != Some(&s) {
            out.push(s);
        }
    }
    out
}

/// Every key path of a JSON value with its kind, bins' values left out (they are latencies).
fn paths(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                if at.ends_with(".bins") {
                    continue;
                }
                paths(v, &format!("{at}.{k}"), out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| paths(v, &format!("{at}[]"), out)),
        serde_json::Value::Number(_) => out.push(format!("{at}: number")),
        serde_json::Value::String(_) => out.push(format!("{at}: string")),
        _ => out.push(format!("{at}: other")),
    }
}

#[test]
fn normal_json_and_terse_are_laid_out_as_fio_lays_them_out() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let plus = fsbench_fio(state.path(), dir.path(), JOBS, "json+", "1");
    let ours: serde_json::Value = serde_json::from_str(&plus).unwrap();
    // The stored run gives the same document again, and its other forms.
    assert_eq!(export(state.path(), "fio-json+"), plus);
    let normal = export(state.path(), "fio");
    let terse = export(state.path(), "fio-terse");
    let jobs = ours["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    let (mix, seq) = (&jobs[0], &jobs[1]);
    assert_eq!(mix["job options"]["rate_iops"], "400", "options as written");
    assert_eq!(ours["global options"]["size"], "8m");
    assert!(
        mix["read"]["bw_samples"].as_u64() >= Some(3),
        "a sample per 500 ms"
    );
    assert!(
        mix["read"]["clat_ns"]["bins"]
            .as_object()
            .is_some_and(|b| !b.is_empty())
    );
    assert!(
        seq["write"]["slat_ns"]["N"].as_u64() > Some(0),
        "libaio submits apart"
    );
    assert!(seq["sync"]["total_ios"].as_u64() > Some(0));
    assert!(
        seq["iodepth_level"]["4"].as_f64() > Some(0.0),
        "{}",
        seq["iodepth_level"]
    );
    let cpu = seq["usr_cpu"].as_f64().unwrap() + seq["sys_cpu"].as_f64().unwrap();
    assert!(cpu > 0.0 && cpu <= 100.0, "the thread's own CPU: {cpu}%");
    let ios = mix["read"]["total_ios"].as_u64().unwrap();
    let runtime = mix["read"]["runtime"].as_u64().unwrap();
    assert_eq!(
        mix["read"]["bw_bytes"].as_u64().unwrap(),
        mix["read"]["io_bytes"].as_u64().unwrap() * 1000 / runtime
    );
    assert!(
        (ios as f64 / runtime as f64 * 1000.0 - mix["read"]["iops"].as_f64().unwrap()).abs() < 1.0
    );
    for line in [
        "mix: (g=0): rw=randrw, bs=(R) 4096B-4096B",
        "  read: IOPS=",
        "  write: IOPS=",
    ] {
        assert!(normal.contains(line), "`{line}` in\n{normal}");
    }
    assert!(
        normal.contains("\nRun status group 0 (all jobs):\n   READ: bw="),
        "{normal}"
    );
    assert_eq!(terse.lines().count(), 2);
    assert_nothing_left(dir.path());
    if !has_tool("fio") {
        return skip(
            "fio's outputs against fio's own: fio is not installed (scripts/test.sh installs it)",
        );
    }
    let theirs = real_fio(dir.path(), state.path(), "normal");
    assert_eq!(
        shapes(&normal),
        shapes(&theirs),
        "ours:\n{normal}\nfio's:\n{theirs}"
    );
    let theirs: serde_json::Value =
        serde_json::from_str(&real_fio(dir.path(), state.path(), "json+")).unwrap();
    for (k, v) in theirs.as_object().unwrap() {
        if k == "jobs" {
            continue;
        }
        assert!(ours.get(k).is_some(), "top-level `{k}`");
        let mut want = Vec::new();
        paths(v, "", &mut want);
        // fio's own run is given the directory on its command line.
        want.retain(|p| !p.starts_with(".directory"));
        if k != "disk_util" {
            let mut have = Vec::new();
            paths(&ours[k], "", &mut have);
            assert_eq!(have, want, "{k}");
        }
    }
    for (mine, fio_s) in jobs.iter().zip(theirs["jobs"].as_array().unwrap()) {
        let (mut have, mut want) = (Vec::new(), Vec::new());
        paths(mine, "", &mut have);
        paths(fio_s, "", &mut want);
        for p in &want {
            assert!(have.contains(p), "{p} missing from ours");
        }
    }
    // Terse: the same fields in the same places (fio adds its disks' after them).
    let theirs = real_fio(dir.path(), state.path(), "terse");
    for (mine, fio_s) in terse.lines().zip(theirs.lines()) {
        let kind = |f: &str| match f {
            f if f.contains("%=") => "percentile",
            f if f.ends_with('%') => "percent",
            _ => "value",
        };
        let (mine, fio_s): (Vec<&str>, Vec<&str>) =
            (mine.split(';').collect(), fio_s.split(';').collect());
        assert!(
            fio_s.len() >= mine.len(),
            "{} fields, fio's {}",
            mine.len(),
            fio_s.len()
        );
        for (i, (a, b)) in mine.iter().zip(&fio_s).enumerate().skip(3) {
            assert_eq!(kind(a), kind(b), "field {i}: `{a}`, fio's `{b}`");
        }
    }
}

/// fio-plot's command: on the PATH, or where `scripts/install-deps.sh --tests` puts it.
fn fio_plot() -> Option<PathBuf> {
    let installed = Path::new("/usr/local/lib/fsbench-tests/fio-plot/bin/fio-plot");
    fsbench_measure::tools::find("fio-plot")
        .or_else(|| installed.is_file().then(|| installed.into()))
}

#[test]
fn fio_s_tools_read_fsbench_s_json_unchanged() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // fio-plot's bar charts read `rw`, `bs`, `iodepth` and `numjobs` from the job options,
    // as bench-fio writes them.
    let jobs = "[global]\nsize=4m\nioengine=psync\n[randread-1-1]\nrw=randread\nbs=4k\n\
                iodepth=1\nnumjobs=1\n";
    let plus = fsbench_fio(state.path(), dir.path(), jobs, "json+", "1");
    let out_dir = state.path().join("json");
    std::fs::create_dir(&out_dir).unwrap();
    std::fs::write(out_dir.join("randread-1-1.json"), &plus).unwrap();
    if has_tool("fio_jsonplus_clat2csv") {
        let csv = state.path().join("clat");
        for extra in [None, Some("--validate")] {
            let out = run(Command::new("fio_jsonplus_clat2csv")
                .arg(out_dir.join("randread-1-1.json"))
                .arg(&csv)
                .args(extra));
            assert!(out.status.success(), "{}", text(&out.stderr));
        }
        let rows = std::fs::read_to_string(state.path().join("clat_job0")).unwrap();
        assert!(rows.lines().count() > 2, "{rows}");
    } else {
        skip(
            "fio_jsonplus_clat2csv: not installed (Debian's fio has it; scripts/test.sh installs it)",
        );
    }
    let Some(plot) = fio_plot() else {
        return skip("fio-plot: not installed (scripts/install-deps.sh --tests installs it)");
    };
    let png = state.path().join("bars.png");
    let out = run(Command::new(plot)
        .arg("-i")
        .arg(&out_dir)
        .args([
            "-T", "fsbench", "-l", "-r", "randread", "-d", "1", "-n", "1", "-o",
        ])
        .arg(&png)
        .current_dir(state.path()));
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        std::fs::metadata(&png).is_ok_and(|m| m.len() > 1000),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn under_rate_iops_lat_counts_from_submission_as_fio_s() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // A rate no synchronous job keeps up with: the schedule falls behind by the second.
    let jobs = "[late]\nrw=randread\nbs=4k\nsize=4m\nruntime=2\ntime_based\nrate_iops=2000000\n";
    let doc: serde_json::Value =
        serde_json::from_str(&fsbench_fio(state.path(), dir.path(), jobs, "json", "1")).unwrap();
    let read = &doc["jobs"][0]["read"];
    let (lat, clat) = (&read["lat_ns"], &read["clat_ns"]);
    assert_eq!(lat["N"], clat["N"]);
    assert!(
        lat["max"].as_u64() < Some(200_000_000),
        "from submission: {lat}"
    );
    let suite = export(state.path(), "json");
    let suite: serde_json::Value = serde_json::from_str(&suite).unwrap();
    let late = &suite["runs"][0]["phases"][1]["latency"]["read from schedule"];
    assert!(
        late["max_ns"].as_u64() > Some(500_000_000),
        "its own name: {late}"
    );
}

/// Where fio's parsers are: where `scripts/install-deps.sh --tests` copies them from
/// Debian's fio source package, or a fio source tree's tools/.
const FIO_TOOLS: [&str; 3] = [
    "/usr/local/lib/fsbench-tests/fio-tools",
    "/work/fio-ref/tools",
    "/work/fio-ref/tools/hist",
];

/// A python3 that has `module` (the one on the PATH, else Debian's).
fn python_with(module: &str) -> Option<&'static str> {
    ["python3", "/usr/bin/python3"].into_iter().find(|py| {
        Command::new(py)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Runs fio's `tool` under `python` on `args` in `cwd`; `None` when it is not there.
fn fio_tool(python: &str, tool: &str, args: &[&Path], cwd: &Path) -> Option<std::process::Output> {
    let script = FIO_TOOLS
        .iter()
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())?;
    Some(run(Command::new(python)
        .arg(script)
        .args(args)
        .current_dir(cwd)))
}

#[test]
fn logs_are_fio_s_files_where_fio_writes_them() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobs = "[global]\nsize=4m\nruntime=2\ntime_based\nrate_iops=300\n\
                [each]\nrw=randrw\nbs=4k\nwrite_lat_log\nwrite_bw_log=each\nwrite_iops_log\n\
                write_hist_log\nlog_hist_msec=500\nlog_offset=1\n\
                [avg]\nrw=write\nbs=8k\nioengine=libaio\niodepth=2\nwrite_lat_log=logs/avg\n\
                write_bw_log=logs/avg\nlog_avg_msec=250\nlog_max_value=1\n";
    std::fs::create_dir(state.path().join("logs")).unwrap();
    fsbench_fio(state.path(), dir.path(), jobs, "terse", "1");
    let read = |name: &str| {
        std::fs::read_to_string(state.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    // Every I/O's entry with its offset: time, value, direction, block size, offset, prio.
    let lat = read("each_lat.1.log");
    let fields: Vec<&str> = lat.lines().next().unwrap().split(", ").collect();
    assert_eq!(fields.len(), 6, "{lat}");
    assert_eq!(fields[3], "4096");
    assert!(
        read("each_slat.1.log").is_empty(),
        "psync: no submission latency"
    );
    assert_eq!(read("each_iops.1.log").lines().count(), lat.lines().count());
    assert!(read("each_bw.1.log").lines().count() > 300);
    let hist = read("each_clat_hist.1.log");
    assert!(
        hist.lines().count() >= 4,
        "two directions every 500 ms: {hist}"
    );
    // Averaged: a window's maximum every 250 ms, no block size nor offset.
    let avg = read("logs/avg_lat.2.log");
    let entries: Vec<&str> = avg.lines().collect();
    assert!((6..=10).contains(&entries.len()), "{avg}");
    assert!(entries.iter().all(|e| e.ends_with(", 1, 0, 0")), "{avg}");
    assert!(
        !read("logs/avg_slat.2.log").is_empty(),
        "libaio: submission latency"
    );
    let target: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(
        target.is_empty(),
        "nothing written inside the target: {target:?}"
    );
    // fio's own parsers. fio 3.33's fiologparser.py reads four fields, which neither fio
    // 3.33's own logs nor these have: it must treat both alike.
    let ours = fio_tool(
        "python3",
        "fiologparser.py",
        &[Path::new("logs/avg_lat.2.log")],
        state.path(),
    );
    if let Some(ours) = ours {
        if has_tool("fio") {
            let fio_log = state.path().join("fio");
            std::fs::create_dir(&fio_log).unwrap();
            let job = "[f]\nsize=1m\nrw=read\nwrite_lat_log=f\nlog_avg_msec=10\n";
            std::fs::write(fio_log.join("f.fio"), job).unwrap();
            let made = run(Command::new("fio")
                .arg(format!("--directory={}", dir.path().display()))
                .arg("f.fio")
                .current_dir(&fio_log));
            assert!(made.status.success(), "{}", text(&made.stderr));
            let theirs = fio_tool(
                "python3",
                "fiologparser.py",
                &[Path::new("f_lat.1.log")],
                &fio_log,
            )
            .unwrap();
            assert_eq!(
                ours.status.success(),
                theirs.status.success(),
                "{}\n{}",
                text(&ours.stderr),
                text(&theirs.stderr)
            );
        }
    } else {
        skip("fiologparser.py: fio's tools are not installed (scripts/install-deps.sh --tests)");
    }
    let Some(python) = python_with("pandas") else {
        return skip(
            "fiologparser_hist.py: no python3 with pandas (scripts/install-deps.sh --tests)",
        );
    };
    let hist_log = [Path::new("each_clat_hist.1.log")];
    let Some(parsed) = fio_tool(python, "fiologparser_hist.py", &hist_log, state.path()) else {
        return skip(
            "fiologparser_hist.py: fio's tools are not installed (scripts/install-deps.sh --tests)",
        );
    };
    assert!(parsed.status.success(), "{}", text(&parsed.stderr));
    let rows = text(&parsed.stdout);
    assert!(
        rows.starts_with("end-time, samples, min, avg, median"),
        "{rows}"
    );
    assert!(rows.lines().count() >= 3, "{rows}");
}

#[test]
fn each_run_s_logs_have_a_directory_of_their_own() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobs = "[j]\nsize=1m\nrw=read\nbs=64k\nwrite_iops_log\n";
    fsbench_fio(state.path(), dir.path(), jobs, "terse", "2");
    // `CONFIG.runN`, the configuration's label made a file name.
    let mut runs: Vec<String> = (std::fs::read_dir(state.path()).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".run"))
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 2, "{runs:?}");
    for (run, name) in runs.iter().enumerate() {
        assert!(name.ends_with(&format!(".run{}", run + 1)), "{name}");
        let log = std::fs::read_to_string(state.path().join(name).join("j_iops.1.log"));
        assert!(log.is_ok_and(|l| l.lines().count() >= 16), "{name}");
    }
    assert!(!state.path().join("j_iops.1.log").exists());
}

#[test]
fn a_run_stored_before_thread_records_still_exports_fio_s_json() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobs = "[old]\nrw=randread\nbs=4k\nsize=2m\n";
    let now: serde_json::Value =
        serde_json::from_str(&fsbench_fio(state.path(), dir.path(), jobs, "json", "1")).unwrap();
    // What a database written before fsbench kept each job thread's record holds.
    let db = rusqlite::Connection::open(state.path().join("results.db")).unwrap();
    let cleared = db.execute("UPDATE phases SET jobs = NULL", []).unwrap();
    assert!(cleared > 0);
    drop(db);
    let before: serde_json::Value =
        serde_json::from_str(&export(state.path(), "fio-json")).unwrap();
    let (now, before) = (&now["jobs"][0]["read"], &before["jobs"][0]["read"]);
    assert_eq!(before["total_ios"], 512, "2 MiB in 4 KiB reads: {before}");
    assert_eq!(before["io_bytes"], now["io_bytes"]);
    assert_eq!(before["clat_ns"]["N"], now["clat_ns"]["N"]);
    assert_eq!(before["clat_ns"]["max"], now["clat_ns"]["max"]);
    assert!(export(state.path(), "fio").contains("  read: IOPS="));
}

#[test]
fn without_per_job_logs_a_job_s_threads_share_one_file() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobs = "[j]\nsize=1m\nrw=read\nbs=64k\nnumjobs=2\nwrite_iops_log\nper_job_logs=0\n";
    fsbench_fio(state.path(), dir.path(), jobs, "terse", "1");
    // fio's name without the thread's number; an entry per I/O of either thread.
    let log = std::fs::read_to_string(state.path().join("j_iops.log")).unwrap();
    assert_eq!(log.lines().count(), 32, "{log}");
    assert!(!state.path().join("j_iops.1.log").exists());
    assert!(!state.path().join("j_iops.2.log").exists());
}

//! fio's placement and priority options in job files (`cpus_allowed`, `numa_*`, `nice`,
//! `prio`, `prioclass`, `cmdprio_*`, `log_prio`) and `time_based` without a runtime: each
//! runs through `fsbench fio` and makes the calls fio 3.33 makes on the same job (strace),
//! logs the priorities fio logs, and refuses what fio refuses.

use std::path::Path;

use crate::common::*;
use crate::fio_engines::{fio_traced, traced_runs};

/// The arguments of each `name` call in a strace log (without the process number, and
/// whether the call was split by another thread's or not), in order.
fn args_of(log: &str, name: &str) -> Vec<String> {
    let open = format!("{name}(");
    log.lines()
        .filter_map(|l| {
            let call = &l[l.find(&open)? + open.len()..];
            // strace pads a complete call's `= RESULT` into a column.
            let args = match call.find(" <unfinished") {
                Some(end) => &call[..end],
                None => call[..call.rfind(" = ")?].trim_end().strip_suffix(')')?,
            };
            Some(args.to_string())
        })
        .collect()
}

/// The distinct values, sorted: fsbench's workers and fio's threads make the same calls,
/// not necessarily as many (fsbench's ramp has workers of its own) nor in one order.
fn distinct(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

#[test]
fn prio_prioclass_and_nice_are_set_on_each_job_thread_as_fio_sets_them() {
    if !fio_traced("ioprio_set and nice against fio's") {
        return;
    }
    let job =
        "[p]\nfilename=data\nrw=read\nbs=4k\nsize=64k\nnumjobs=2\nprio=4\nprioclass=2\nnice=3\n";
    let [(ours, _), (theirs, _)] = traced_runs(job, "trace=ioprio_set,setpriority");
    for call in ["ioprio_set", "setpriority"] {
        let (a, b) = (args_of(&ours, call), args_of(&theirs, call));
        // Once per job thread at least: two copies.
        assert!(a.len() >= 2, "{call}: {ours}");
        assert_eq!(distinct(a), distinct(b), "{call}");
    }
    assert!(ours.contains("IOPRIO_CLASS_BE, 4"), "{ours}");
}

#[test]
fn cpus_and_numa_nodes_place_each_thread_as_fio_places_it() {
    if !fio_traced("sched_setaffinity and set_mempolicy against fio's") {
        return;
    }
    // The CPU mask alone: fio names the thread by its id, fsbench by 0 (the caller).
    let masks = |log: &str| -> Vec<String> {
        (args_of(log, "sched_setaffinity").iter())
            .filter_map(|a| Some(a[a.rfind('[')?..].to_string()))
            .collect()
    };
    let two = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    let cpus = if two { "0-1" } else { "0" };
    for placement in [
        format!("cpus_allowed={cpus}\ncpus_allowed_policy=split"),
        format!("cpus_allowed={cpus}"),
        "cpumask=1".to_string(),
        "numa_cpu_nodes=0\nnuma_mem_policy=bind:0".to_string(),
        "numa_mem_policy=interleave:0".to_string(),
        "numa_mem_policy=local".to_string(),
    ] {
        let job = format!("[c]\nfilename=data\nrw=read\nbs=4k\nsize=64k\nnumjobs=2\n{placement}\n");
        let [(ours, _), (theirs, _)] =
            traced_runs(&job, "trace=sched_setaffinity,set_mempolicy,clone");
        // fio pins threads of its own to each CPU as it checks its clock, before it forks
        // the jobs: their calls are not the job's.
        let forked = theirs.find("SIGCHLD").unwrap_or(0);
        let theirs = &theirs[theirs[..forked].rfind('\n').unwrap_or(0)..];
        assert_eq!(
            distinct(masks(&ours)),
            distinct(masks(theirs)),
            "{placement}"
        );
        if placement.contains("split") && two {
            assert_eq!(distinct(masks(&ours)), ["[0]", "[1]"], "{placement}");
        }
        // The policy and its first nodes (libnuma's mask may be longer than fsbench's).
        let policy = |log: &str| -> Vec<String> {
            let calls = args_of(log, "set_mempolicy");
            let first = |a: &String| {
                a.split(", [")
                    .map(|p| p.split(',').next().unwrap_or(p))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            calls.iter().map(first).collect()
        };
        assert_eq!(
            distinct(policy(&ours)),
            distinct(policy(theirs)),
            "{placement}"
        );
    }
}

#[test]
fn a_cpu_or_node_this_machine_lacks_is_refused_as_fio_refuses_it() {
    let state = tempdir();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let nodes = std::fs::read_dir("/sys/devices/system/node")
        .map_or(1, |d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("node"))
                .count()
        })
        .max(1);
    for (option, says) in [
        (
            format!("cpus_allowed=0-{cpus}"),
            format!("CPU {cpus} too large"),
        ),
        (
            format!("numa_cpu_nodes=0-{nodes}"),
            "numa_parse_nodestring failed".to_string(),
        ),
        (
            format!("numa_mem_policy=bind:{nodes}"),
            "numa_parse_nodestring failed".to_string(),
        ),
    ] {
        let jobfile = state.path().join("bad.fio");
        let job = format!("[j]\nfilename=data\nrw=read\nsize=64k\n{option}\n");
        std::fs::write(&jobfile, &job).unwrap();
        let out = fio_output(state.path(), Path::new("/nonexistent"), &jobfile, "json");
        assert_eq!(out.status.code(), Some(2), "{option}");
        let err = text(&out.stderr);
        assert!(
            err.contains("bad.fio:5:") && err.contains(&says),
            "{option}: {err}"
        );
        if has_tool("fio") {
            let fio = run(std::process::Command::new("fio")
                .current_dir(state.path())
                .args(["--output=/dev/null"])
                .arg(&jobfile));
            assert!(!fio.status.success(), "fio ran {option}");
            let theirs = text(&fio.stderr) + &text(&fio.stdout);
            assert!(theirs.contains(&says), "fio: {option}: {theirs}");
        }
    }
}

/// The priority column of a latency log (`PREFIX_lat.1.log` in `dir`).
fn prio_column(dir: &Path) -> Vec<String> {
    let log = std::fs::read_to_string(dir.join("prio_lat.1.log")).unwrap();
    log.lines()
        .map(|l| l.rsplit(", ").next().unwrap().to_string())
        .collect()
}

#[test]
fn cmdprio_gives_libaio_and_io_uring_i_os_their_priority_as_fio_logs_it() {
    // The real-time class needs root.
    if !can_run("per-I/O priorities against fio's", &["fio", "strace"]) {
        return;
    }
    let job = |engine: &str, options: &str| {
        format!(
            "[q]\nfilename=data\nrw=randread\nbs=4k\nsize=256k\nioengine={engine}\niodepth=4\nwrite_lat_log=prio\nlog_prio=1\n{options}\n"
        )
    };
    for engine in ["libaio", "io_uring"] {
        // Every I/O real-time level 2; the job's own class (idle) without cmdprio.
        for (options, every) in [
            (
                "cmdprio_percentage=100\ncmdprio_class=1\ncmdprio=2",
                "0x2002",
            ),
            ("prioclass=3", "0x6000"),
        ] {
            let [(_, ours), (_, theirs)] = traced_runs(&job(engine, options), "trace=io_submit");
            let (ours, theirs) = (prio_column(ours.path()), prio_column(theirs.path()));
            assert_eq!(ours.len(), 64, "{engine}: {options}");
            assert!(
                ours.iter().all(|p| p == every),
                "{engine}: {options}: {ours:?}"
            );
            assert_eq!(distinct(ours), distinct(theirs), "{engine}: {options}");
        }
        // A share: about 30% of 256 I/Os, the others with no priority.
        let [(_, ours), _] = traced_runs(
            &job(engine, "cmdprio_percentage=30\nsize=1m"),
            "trace=io_submit",
        );
        let ours = prio_column(ours.path());
        let high = ours.iter().filter(|p| *p == "0x2000").count();
        assert!(
            (40..120).contains(&high),
            "{engine}: {high} of {}",
            ours.len()
        );
        assert!(
            ours.iter().all(|p| p == "0x2000" || p == "0x0000"),
            "{ours:?}"
        );
    }
    // libaio's iocbs carry the priority, flagged, as fio's.
    let [(ours, _), (theirs, _)] =
        traced_runs(&job("libaio", "cmdprio_percentage=100"), "trace=io_submit");
    let flagged = |log: &str| log.matches("IOCB_FLAG_IOPRIO").count();
    assert_eq!(flagged(&ours), 64, "{ours}");
    assert_eq!(flagged(&ours), flagged(&theirs));
}

#[test]
fn cmdprio_with_an_engine_that_has_none_is_refused() {
    let state = tempdir();
    let jobfile = state.path().join("bad.fio");
    std::fs::write(&jobfile, "[j]\nrw=read\nsize=64k\ncmdprio_percentage=20\n").unwrap();
    let out = fio_output(state.path(), Path::new("/nonexistent"), &jobfile, "json");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("libaio and io_uring"), "{err}");
}

#[test]
fn placement_is_stated_in_the_results() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let job = "[j]\nrw=read\nbs=4k\nsize=64k\ncpus_allowed=0\nprio=3\nnice=1\n";
    let out = fio_job_json(state.path(), dir.path(), job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let placement = &json(&out)["suite"]["workload"][0]["placement"];
    assert_eq!(placement["cpus"], serde_json::json!([0]), "{placement}");
    assert_eq!(placement["ioprio"], 0x4003, "{placement}");
    assert_eq!(placement["nice"], 1, "{placement}");
}

#[test]
fn time_based_without_a_runtime_runs_untimed_as_fio_says() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // `create_serialize` is taken too: fsbench lays out the files before the jobs anyway.
    let job = "[j]\nrw=read\nbs=4k\nsize=256k\ntime_based\ncreate_serialize=0\n";
    let out = fio_job_json(state.path(), dir.path(), job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let says = "time_based requires a runtime/timeout setting";
    assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["runs"][0]["phases"][1]["ops"].as_u64(), Some(64));
    assert_eq!(doc["suite"]["workload"][0]["time_based"], false);
    if has_tool("fio") {
        let jobfile = state.path().join("job.fio");
        let fio = run(std::process::Command::new("fio")
            .current_dir(dir.path())
            .args(["--output-format=json"])
            .arg(&jobfile));
        assert!(fio.status.success(), "{}", text(&fio.stderr));
        assert!(text(&fio.stderr).contains(says), "{}", text(&fio.stderr));
    }
}

#[test]
fn per_priority_latencies_are_reported_as_fio_reports_them() {
    // The real-time class needs root.
    if !can_run("per-priority latencies", &[]) {
        return;
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("prio.fio");
    let job = "[q]\nfilename=data\nrw=randread\nbs=4k\nsize=1m\nioengine=libaio\niodepth=4\nprioclass=2\nprio=5\ncmdprio_percentage=30\n";
    std::fs::write(&jobfile, job).unwrap();
    let prios = |doc: &serde_json::Value| -> Vec<(u64, u64)> {
        let read = &doc["jobs"][0]["read"];
        let prios = read["prios"].as_array().cloned().unwrap_or_default();
        let n: u64 = prios
            .iter()
            .map(|p| p["clat_ns"]["N"].as_u64().unwrap())
            .sum();
        assert_eq!(Some(n), read["total_ios"].as_u64(), "{read}");
        prios
            .iter()
            .map(|p| {
                (
                    p["prioclass"].as_u64().unwrap(),
                    p["prio"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let out = fio_output(state.path(), dir.path(), &jobfile, "json");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ours = prios(&json(&out));
    // The job's own first (best effort, 5), then cmdprio's (real-time, 0).
    assert_eq!(ours, [(2, 5), (1, 0)]);
    let normal = fio_output(state.path(), dir.path(), &jobfile, "normal");
    let normal = text(&normal.stdout);
    for line in [
        "clat prio 2/5 (",
        "clat prio 1/0 (",
        "% of IOs) percentiles",
    ] {
        assert!(normal.contains(line), "{line}: {normal}");
    }
    if has_tool("fio") {
        let fio_dir = tmpfs_tempdir();
        let fio = run(std::process::Command::new("fio")
            .current_dir(fio_dir.path())
            .arg("--output-format=json")
            .arg(&jobfile));
        assert!(fio.status.success(), "{}", text(&fio.stderr));
        assert_eq!(prios(&json(&fio)), ours);
    }
}

#[test]
fn strided_zones_read_the_offsets_fio_reads() {
    if !fio_traced("strided zones against fio's offsets") {
        return;
    }
    // The offsets of the reads of `data` (the layout writes it).
    let offsets = |log: &str| -> Vec<String> {
        (log.lines())
            .filter(|l| l.contains("pread64(") && l.contains("/data>"))
            .filter_map(|l| Some(l.rsplit_once(", ")?.1.split(')').next()?.to_string()))
            .collect()
    };
    for zones in [
        "zonemode=strided\nzonesize=8k\nzoneskip=16k",
        "zonemode=strided\nzonesize=12k\nzonerange=8k",
    ] {
        let job = format!("[z]\nfilename=data\nrw=read\nbs=4k\nsize=32k\n{zones}\n");
        let [(ours, _), (theirs, _)] = traced_runs(&job, "trace=pread64");
        let ours = offsets(&ours);
        assert_eq!(ours.len(), 8, "{zones}: {ours:?}");
        assert_eq!(ours, offsets(&theirs), "{zones}");
    }
    // At random within each zone: the same blocks as fio's (each zone's two, of 8k every
    // 16k), in an order of fsbench's own.
    let job = "[z]\nfilename=data\nrw=randread\nbs=4k\nsize=64k\nzonemode=strided\nzonesize=8k\nzoneskip=8k\n";
    let [(ours, _), (theirs, _)] = traced_runs(job, "trace=pread64");
    let (ours, theirs) = (offsets(&ours), offsets(&theirs));
    assert_eq!(ours.len(), 16, "{ours:?}");
    assert_eq!(distinct(ours.clone()), distinct(theirs), "{ours:?}");
    assert_eq!(distinct(ours).len(), 8);
}

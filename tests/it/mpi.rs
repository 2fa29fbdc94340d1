//! `mpirun --oversubscribe -np 4 fsbench run ...` on one machine, as root: the aggregate is the
//! ranks' sum over the slowest, shift acts on another rank's files, a slowed rank shows in the
//! stonewall counts, every tree is removed, one rank's failure ends them all. Only with the
//! `mpi` feature (`cargo test --features mpi`); without `mpirun` the tests say SKIPPED.
#![cfg(feature = "mpi")]

use std::time::Duration;

use crate::common::mpi::*;
use crate::common::*;

mod failures;

#[test]
fn aggregate_is_the_ranks_items_over_the_slowest_rank_and_every_tree_is_removed() {
    let Some(_one) = mpi_test("aggregate_is_the_ranks_items_over_the_slowest_rank", &[]) else {
        return;
    };
    let (state, target) = (tempdir(), Target::new());
    let out = output_within(
        &mut mpirun(4, state.path(), &target, "", &["-w", TREE]),
        LIMIT,
    );
    let doc = succeeded(&out);
    let phases = doc["runs"][0]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 6);
    for phase in phases {
        let name = phase["name"].as_str().unwrap();
        let items: Vec<f64> = (0..4)
            .map(|r| figure(phase, "rank-items", Some(r)))
            .collect();
        let times: Vec<f64> = (0..4)
            .map(|r| figure(phase, "rank-time", Some(r)))
            .collect();
        let per_rank = if name.starts_with("dir") {
            TREE_DIRS
        } else {
            TREE_FILES
        };
        assert_eq!(
            items, [per_rank; 4],
            "{name}: every rank did its whole tree"
        );
        let ops = phase["ops"].as_f64().unwrap();
        assert_eq!(
            items.iter().sum::<f64>(),
            ops,
            "{name}: Σ rank items = aggregate"
        );
        let elapsed = phase["elapsed_ns"].as_f64().unwrap() / 1e9;
        let slowest = times.iter().copied().fold(0.0, f64::max);
        let recomputed = items.iter().sum::<f64>() / slowest;
        let reported = ops / elapsed;
        assert!(
            (recomputed - reported).abs() <= reported * 1e-6,
            "{name}: Σ items ÷ slowest rank {recomputed} vs reported {reported}"
        );
        assert!(figure(phase, "rank-rate-min", None) <= figure(phase, "rank-rate-max", None));
        assert!(
            phase["errors"].as_object().unwrap().is_empty(),
            "{name}: {}",
            phase["errors"]
        );
    }
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
    // The report, made without MPI from rank 0's database, has a per-rank chart per phase.
    let db = target.dir.join("results.db");
    let report = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["report", "1", "-o", "-"]));
    assert!(report.status.success());
    let html = text(&report.stdout);
    assert!(html.contains("file-stat per rank, "), "no per-rank chart");
    assert!(html.contains("rank 3"));
    // And each phase's progress per rank, naming the first and the last rank done.
    assert!(
        html.contains("completed over time (one line per rank)"),
        "no per-rank progress chart"
    );
    assert!(html.contains(" done first at "), "no first-done caption");
    // Every rank's progress series is kept in the database, on the common start.
    let export = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["export", "1", "--format", "json"]));
    let stored = json(&export);
    let create = &stored["runs"][0]["phases"][1];
    let series = create["rank_progress"].as_array().unwrap();
    assert_eq!(series.len(), 4);
    for s in series {
        assert_eq!(s.as_array().unwrap().last().unwrap()[1], TREE_FILES as u64);
    }
}

#[test]
fn shift_makes_each_rank_stat_read_and_remove_the_next_ranks_files() {
    let Some(_one) = mpi_test(
        "shift_makes_each_rank_stat_the_next_ranks_files",
        &["strace"],
    ) else {
        return;
    };
    let (state, target, traces) = (tempdir(), Target::new(), tempdir());
    // Each rank's directory opens, by name, in a trace of its own.
    let wrapper = format!(
        "exec strace -f -qq -e trace=openat,mkdirat -o {}/trace.$OMPI_COMM_WORLD_RANK \"$@\"",
        traces.path().display()
    );
    let mut cmd = mpirun(
        4,
        state.path(),
        &target,
        &wrapper,
        &["-w", TREE, "--shift", "1"],
    );
    let doc = succeeded(&output_within(&mut cmd, LIMIT));
    for rank in 0..4u32 {
        let next = (rank + 1) % 4;
        let trace = std::fs::read_to_string(traces.path().join(format!("trace.{rank}"))).unwrap();
        let opened = |name: &str| trace.lines().any(|l| l.contains(&format!("\"{name}\"")));
        assert!(opened(&format!("rank.{rank}")) && opened(&format!("tree.r{rank}")));
        assert!(
            opened(&format!("rank.{next}")) && opened(&format!("tree.r{next}")),
            "rank {rank} never opened rank {next}'s tree"
        );
        let others = (0..4).filter(|r| *r != rank && *r != next);
        for other in others {
            assert!(
                !opened(&format!("tree.r{other}")),
                "rank {rank} opened tree.r{other}"
            );
        }
    }
    let stat = &doc["runs"][0]["phases"][2];
    assert_eq!(stat["name"], "file-stat");
    assert!(stat["notes"].to_string().contains("0→1, 1→2, 2→3, 3→0"));
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

#[test]
fn a_slowed_rank_shows_in_the_stonewall_counts_and_wear_out_equalises_them() {
    let Some(_one) = mpi_test("a_slowed_rank_shows_in_the_stonewall_counts", &["strace"]) else {
        return;
    };
    let (state, target) = (tempdir(), Target::new());
    // strace stops rank 1 at every system call: it creates files several times slower.
    let wrapper = "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then exec strace -f -o /dev/null \"$@\"; fi; exec \"$@\"";
    // 130,000 files per rank: no rank here makes them all in 0.5 s, so every rank stops.
    let tree = "tree:dirs=3,files=10000,levels=2,size=0,stat,read";
    let whole_tree = 130_000.0;
    let args = ["-w", tree, "--stonewall", "0.5"];
    let doc = succeeded(&output_within(
        &mut mpirun(4, state.path(), &target, wrapper, &args),
        LIMIT,
    ));
    let phases = doc["runs"][0]["phases"].as_array().unwrap();
    let create = &phases[1];
    assert_eq!(create["name"], "file-create");
    let min = figure(create, "stonewall-items-min", None);
    let max = figure(create, "stonewall-items-max", None);
    assert!(min < max, "stonewall counts min {min} max {max}");
    // The slowed rank really stopped at the deadline, short of its tree; so did the fastest.
    let slowed = figure(create, "rank-stonewall-items", Some(1));
    assert_eq!(slowed, min, "the straced rank is the slowest");
    assert!(max < whole_tree, "a rank made {max} files in 0.5 s");
    let stopped = figure(create, "stonewall-time", None);
    assert!(stopped >= 0.5, "stopped at {stopped} s");
    let reached: f64 = (0..4)
        .map(|r| figure(create, "rank-stonewall-items", Some(r)))
        .sum();
    let rate = figure(create, "rate-stonewall", None);
    assert!((rate - reached / stopped).abs() <= rate * 1e-9, "{rate}");
    // Wear-out: every rank made the maximum, within file create; the later phases acted on
    // exactly as many (the first ones of each rank's walk: no error for a file never made).
    assert_eq!(figure(create, "stonewall-items-wear-out", None), max);
    let file_phases = phases
        .iter()
        .filter(|p| p["name"].as_str().unwrap().starts_with("file"));
    assert_eq!(file_phases.clone().count(), 4);
    for phase in file_phases {
        for r in 0..4 {
            assert_eq!(
                figure(phase, "rank-items", Some(r)),
                max,
                "{} rank {r}",
                phase["name"]
            );
        }
        assert!(
            phase["errors"].as_object().unwrap().is_empty(),
            "{}: {}",
            phase["name"],
            phase["errors"]
        );
    }
    assert!(create["notes"].to_string().contains("wear-out"));
    // Nothing left: the directories were empty when dir-remove came.
    let dir_remove = phases.last().unwrap();
    assert_eq!(dir_remove["ops"].as_f64().unwrap(), 4.0 * TREE_DIRS);
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

/// The files a rank's trace touched by `syscall` (openat with `O_CREAT` as `create`), as the
/// owners' ranks in their names (`L2F20.r3`).
fn owners_touched(trace: &str, syscall: &str) -> Vec<u32> {
    trace
        .lines()
        .filter_map(|line| {
            let call = line.split_whitespace().nth(1)?;
            let creates = call.starts_with("openat(") && line.contains("O_CREAT");
            let wanted = match syscall {
                "create" => creates,
                "openat" => call.starts_with("openat(") && !creates,
                other => call.starts_with(&format!("{other}(")),
            };
            let name = line.split('"').nth(1)?;
            let owner = name.strip_prefix('L')?.split_once(".r")?.1;
            wanted.then(|| owner.parse().ok()).flatten()
        })
        .collect()
}

#[test]
fn a_shared_dir_is_one_tree_rank_0_makes_and_every_rank_fills_with_its_own_files() {
    let Some(_one) = mpi_test("a_shared_dir_is_one_tree", &["strace"]) else {
        return;
    };
    let (state, target, traces) = (tempdir(), Target::new(), tempdir());
    let wrapper = format!(
        "exec strace -f -qq -e trace=openat,mkdirat,newfstatat,statx,unlinkat -o {}/trace.$OMPI_COMM_WORLD_RANK \"$@\"",
        traces.path().display()
    );
    let args = ["-w", TREE, "--shared-dir", "--shift", "1"];
    let mut cmd = mpirun(4, state.path(), &target, &wrapper, &args);
    let doc = succeeded(&output_within(&mut cmd, LIMIT));
    for phase in doc["runs"][0]["phases"].as_array().unwrap() {
        let name = phase["name"].as_str().unwrap();
        let items: Vec<f64> = (0..4)
            .map(|r| figure(phase, "rank-items", Some(r)))
            .collect();
        if name.starts_with("dir") {
            // One tree: rank 0 alone makes and removes its directories.
            assert_eq!(items, [TREE_DIRS, 0.0, 0.0, 0.0], "{name}");
            assert!(
                phase["notes"].to_string().contains("one shared tree"),
                "{name}"
            );
        } else {
            assert_eq!(items, [TREE_FILES; 4], "{name}");
        }
        assert!(phase["errors"].as_object().unwrap().is_empty(), "{name}");
    }
    for rank in 0..4u32 {
        let next = (rank + 1) % 4;
        let trace = std::fs::read_to_string(traces.path().join(format!("trace.{rank}"))).unwrap();
        let made_dirs = trace.lines().any(|l| l.contains("mkdirat("));
        assert_eq!(made_dirs, rank == 0, "rank {rank} made directories");
        assert!(trace.contains("\"tree.shared\""), "rank {rank}");
        assert!(!trace.contains("tree.r"), "rank {rank}: a tree of its own");
        // Its own files created, rank r+1's stat'ed, read and removed, no one else's.
        let created = owners_touched(&trace, "create");
        assert_eq!(created.len(), TREE_FILES as usize, "rank {rank}");
        assert!(
            created.iter().all(|&o| o == rank),
            "rank {rank}: {created:?}"
        );
        let stats = [
            owners_touched(&trace, "newfstatat"),
            owners_touched(&trace, "statx"),
        ]
        .concat();
        let read = owners_touched(&trace, "openat");
        let removed = owners_touched(&trace, "unlinkat");
        for (phase, touched) in [("stat", stats), ("read", read), ("remove", removed)] {
            assert_eq!(touched.len(), TREE_FILES as usize, "rank {rank} {phase}");
            assert!(
                touched.iter().all(|&o| o == next),
                "rank {rank} {phase}: {touched:?}"
            );
        }
    }
    let stat = &doc["runs"][0]["phases"][2];
    assert_eq!(stat["name"], "file-stat");
    assert!(stat["notes"].to_string().contains("0→1, 1→2, 2→3, 3→0"));
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

#[test]
fn a_rank_that_cannot_write_ends_every_rank_with_its_name_and_error() {
    let Some(_one) = mpi_test("a_rank_that_cannot_write_ends_every_rank", &["unshare"]) else {
        return;
    };
    let (state, target) = (tempdir(), Target::new());
    // Rank 2 sees the shared directory read-only (its own mount namespace).
    let wrapper = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then exec unshare -m sh -c 'mount -o remount,bind,ro {} && exec \"$@\"' sh \"$@\"; fi; exec \"$@\"",
        target.dir.display()
    );
    let started = std::time::Instant::now();
    let out = output_within(
        &mut mpirun(4, state.path(), &target, &wrapper, &["-w", TREE]),
        LIMIT,
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("rank 2 on "), "{stderr}");
    assert!(
        stderr.contains("Read-only file system") || stderr.contains("EROFS"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(120));
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

#[test]
fn workloads_that_make_no_sense_under_mpi_are_refused_with_the_reason() {
    let Some(_one) = mpi_test("workloads_that_make_no_sense_under_mpi_are_refused", &[]) else {
        return;
    };
    let (state, target) = (tempdir(), Target::new());
    let out = output_within(
        &mut mpirun(2, state.path(), &target, "", &["-w", "alloc"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("cannot run under MPI: it measures how one filesystem"));
    assert!(out.stdout.is_empty());
    // The user's commands would run once per rank, unsynchronized.
    let out = output_within(
        &mut mpirun(2, state.path(), &target, "", &["--command-phase", "x=true"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("command:x cannot run under MPI: your commands"));
    // The stonewall stops tree's file create only; elsewhere it is refused, not just counted.
    let out = output_within(
        &mut mpirun(
            2,
            state.path(),
            &target,
            "",
            &["-w", "atomic", "--stonewall", "1"],
        ),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--stonewall: atomic")
            && text(&out.stderr).contains("only tree's file create"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_singleton_without_mpirun_runs_as_always() {
    // One MPI job at a time, this one too: an Open MPI singleton starting beside another
    // test's `mpirun -np 4` under strace made both stall (over 60 s each; the other ran past
    // its 180 s limit) on a loaded machine.
    let Some(_one) = mpi_test("a_singleton_without_mpirun_runs_as_always", &[]) else {
        return;
    };
    let (state, target) = (tempdir(), Target::new());
    let out = run(json_run(state.path())
        .args(["--runs", "1", "-w", TREE, "--dir"])
        .arg(&target.dir));
    let doc = succeeded(&out);
    let create = &doc["runs"][0]["phases"][1];
    assert_eq!(create["ops"], 260);
    assert!(
        create.get("figures").is_none(),
        "no rank figures without MPI"
    );
}

#[test]
fn threads_and_ranks_compose() {
    let Some(_one) = mpi_test("threads_and_ranks_compose", &[]) else {
        return;
    };
    let (state, target) = (tempdir(), Target::new());
    let tree = "tree:dirs=3,files=20,levels=2,threads=3";
    let out = output_within(
        &mut mpirun(2, state.path(), &target, "", &["-w", tree, "--shift", "1"]),
        LIMIT,
    );
    let doc = succeeded(&out);
    for phase in doc["runs"][0]["phases"].as_array().unwrap() {
        let per_thread = if phase["name"].as_str().unwrap().starts_with("dir") {
            TREE_DIRS
        } else {
            TREE_FILES
        };
        for rank in 0..2 {
            assert_eq!(figure(phase, "rank-items", Some(rank)), 3.0 * per_thread);
        }
        assert_eq!(phase["ops"].as_f64().unwrap(), 6.0 * per_thread);
        assert!(phase["errors"].as_object().unwrap().is_empty());
    }
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

#[test]
fn threads_and_ranks_share_one_tree_under_shared_dir() {
    let Some(_one) = mpi_test("threads_and_ranks_share_one_tree_under_shared_dir", &[]) else {
        return;
    };
    let (state, target) = (tempdir(), Target::new());
    let tree = "tree:dirs=3,files=20,levels=2,threads=3,stat";
    let args = ["-w", tree, "--shared-dir", "--shift", "1"];
    let doc = succeeded(&output_within(
        &mut mpirun(2, state.path(), &target, "", &args),
        LIMIT,
    ));
    for phase in doc["runs"][0]["phases"].as_array().unwrap() {
        let name = phase["name"].as_str().unwrap();
        let items: Vec<f64> = (0..2)
            .map(|r| figure(phase, "rank-items", Some(r)))
            .collect();
        // One tree's directories, by rank 0's thread 0; six threads' files in it, each
        // thread's stat'ed and removed by its peer on the other rank without a miss.
        let want = match name.starts_with("dir") {
            true => [TREE_DIRS, 0.0],
            false => [3.0 * TREE_FILES; 2],
        };
        assert_eq!(items, want, "{name}");
        assert!(phase["errors"].as_object().unwrap().is_empty(), "{name}");
    }
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

#[test]
fn io_ranks_use_their_own_files_and_aggregate_as_ior() {
    let Some(_one) = mpi_test("io_ranks_use_their_own_files_and_aggregate_as_ior", &[]) else {
        return;
    };
    let (state, target) = (tempdir(), Target::new());
    // Per rank: 2 jobs × 2 files × 1 MiB, written once in 4 KiB writes (512 I/Os).
    let io = "io:rw=write,bs=4k,size=2m,nrfiles=2,numjobs=2";
    let out = output_within(
        &mut mpirun(3, state.path(), &target, "", &["-w", io]),
        LIMIT,
    );
    let doc = succeeded(&out);
    let phases = doc["runs"][0]["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["layout", "io"]);
    let phase = &phases[1];
    let per_rank_bytes = 2 * (2 << 20) as u64;
    assert_eq!(phase["bytes"].as_u64(), Some(3 * per_rank_bytes));
    assert_eq!(phase["ops"].as_u64(), Some(3 * 1024));
    for r in 0..3 {
        assert_eq!(figure(phase, "rank-items", Some(r)), 1024.0, "rank {r}");
    }
    // IOR: Σ bytes (and I/Os) ÷ (latest end − earliest start).
    let span = (0..3)
        .map(|r| figure(phase, "rank-end", Some(r)))
        .fold(0.0, f64::max);
    let starts: Vec<f64> = (0..3)
        .map(|r| figure(phase, "rank-start", Some(r)))
        .collect();
    assert_eq!(starts.iter().copied().fold(f64::INFINITY, f64::min), 0.0);
    let bw = figure(phase, "bandwidth-ior", None);
    let expected = (3 * per_rank_bytes) as f64 / 1024.0 / span;
    assert!(
        (bw - expected).abs() <= expected * 1e-6,
        "{bw} vs {expected}"
    );
    let iops = figure(phase, "rate-ior", None);
    assert!(
        (iops - 3072.0 / span).abs() <= iops * 1e-6,
        "{iops} vs {span} s"
    );
    // The completion latencies of every rank's writes, merged.
    assert_eq!(
        phase["latency"]["write clat"]["count"].as_u64(),
        Some(3 * 1024)
    );
    // Each rank laid out and wrote its own files, in its own directory, all removed.
    let layout = &phases[0];
    assert_eq!(layout["ops"].as_u64(), Some(3 * 4));
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

/// IOR's shared file: under `--shared-dir` every rank's io jobs use the same files, each rank
/// writing a region of its own (IOR without -F), created by the jobs' opens in the timed phase
/// (`create-on-open`, IOR's create), with worker processes beside the ranks.
#[test]
fn io_ranks_share_one_file_under_shared_dir() {
    let Some(_one) = mpi_test("io_ranks_share_one_file_under_shared_dir", &[]) else {
        return;
    };
    let (state, target) = (tempdir(), Target::new());
    // Per rank and job: 1 MiB in 64 KiB writes (16 I/Os) at its own offset, fsynced.
    let io = "io:rw=write,bs=64k,size=1m,create-on-open,end-fsync,numjobs=2";
    let args = ["--shared-dir", "-w", io];
    let out = output_within(&mut mpirun(3, state.path(), &target, "", &args), LIMIT);
    let doc = succeeded(&out);
    let phases = doc["runs"][0]["phases"].as_array().unwrap();
    // Nothing laid out: the opens made the files.
    assert_eq!(phases[0]["ops"].as_u64(), Some(0));
    let phase = &phases[1];
    assert_eq!(phase["ops"].as_u64(), Some(3 * 2 * 16));
    assert_eq!(phase["bytes"].as_u64(), Some((3 * 2) << 20));
    assert!(figure(phase, "bandwidth-ior", None) > 0.0);
    assert_eq!(doc["runs"][0]["workers"]["mode"], "processes");
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

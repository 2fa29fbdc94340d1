//! `mpirun --oversubscribe -np 4 fsbench run ...` on one machine, as root: the aggregate is the
//! ranks' sum over the slowest, shift acts on another rank's files, a slowed rank shows in the
//! stonewall counts, every tree is removed, one rank's failure ends them all. Only with the
//! `mpi` feature (`cargo test --features mpi`); without `mpirun` the tests say SKIPPED.
#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::Duration;

use common::*;

/// Four ranks busy-wait in their barriers: one MPI test at a time on a small machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
/// The longest an MPI run of these tests may take (a few seconds each here).
const LIMIT: Duration = Duration::from_secs(180);
const TREE: &str = "tree:dirs=3,files=20,levels=2,stat,read";
const TREE_DIRS: f64 = 13.0;
const TREE_FILES: f64 = 260.0;

/// A tmpfs of the test's own as the shared target, unmounted at the end.
struct Target {
    dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl Target {
    fn new() -> Target {
        let parent = tempdir();
        let dir = parent.path().join("shared");
        std::fs::create_dir(&dir).unwrap();
        let mounted = status(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=4G", "tmpfs"])
                .arg(&dir),
        );
        assert!(
            mounted.success(),
            "cannot mount a tmpfs on {}",
            dir.display()
        );
        Target {
            dir,
            _parent: parent,
        }
    }

    fn entries(&self) -> Vec<String> {
        std::fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "results.db")
            .collect()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = output_within(Command::new("umount").arg(&self.dir), limit());
    }
}

fn can_run_mpi(test: &str) -> bool {
    can_run(test, &["mpirun"])
}

/// `mpirun -np N` of `wrapper` (a shell script given `$@` = fsbench and its arguments; `""`
/// for none) running `fsbench run -q --output-format json --dir TARGET ARGS`.
fn mpirun(np: u32, state: &Path, target: &Target, wrapper: &str, args: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("FSBENCH_STATE_DIR", state)
        .env("XDG_DATA_HOME", test_data_home())
        .args(["--oversubscribe", "-np", &np.to_string()]);
    if !wrapper.is_empty() {
        c.args(["sh", "-c", wrapper, "sh"]);
    }
    c.arg(env!("CARGO_BIN_EXE_fsbench"))
        .arg("--db")
        .arg(target.dir.join("results.db"))
        .args([
            "run",
            "-q",
            "--output-format",
            "json",
            "--no-drop-caches",
            "--runs",
            "1",
        ])
        .arg("--dir")
        .arg(&target.dir)
        .args(args);
    c
}

/// The value of figure `name` at `rank` (or without a rank) in a phase of the JSON document.
fn figure(phase: &serde_json::Value, name: &str, rank: Option<u64>) -> f64 {
    phase["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["name"] == name
                && match rank {
                    Some(r) => f["dims"][0]["name"] == "rank" && f["dims"][0]["count"] == r,
                    None => f.get("dims").is_none(),
                }
        })
        .unwrap_or_else(|| panic!("no figure {name} at rank {rank:?} in {}", phase["name"]))["value"]
        .as_f64()
        .unwrap()
}

fn succeeded(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "mpirun failed: {}", text(&out.stderr));
    json(out)
}

#[test]
fn aggregate_is_the_ranks_items_over_the_slowest_rank_and_every_tree_is_removed() {
    if !can_run_mpi("aggregate_is_the_ranks_items_over_the_slowest_rank") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
    if !can_run_mpi("shift_makes_each_rank_stat_the_next_ranks_files")
        || !can_run(
            "shift_makes_each_rank_stat_the_next_ranks_files",
            &["strace"],
        )
    {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
    if !can_run_mpi("a_slowed_rank_shows_in_the_stonewall_counts")
        || !can_run("a_slowed_rank_shows_in_the_stonewall_counts", &["strace"])
    {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (state, target) = (tempdir(), Target::new());
    // strace stops rank 1 at every system call: it creates files several times slower.
    let wrapper = "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then exec strace -f -o /dev/null \"$@\"; fi; exec \"$@\"";
    let tree = "tree:dirs=3,files=300,levels=2";
    let args = ["-w", tree, "--stonewall", "0.3"];
    let doc = succeeded(&output_within(
        &mut mpirun(4, state.path(), &target, wrapper, &args),
        LIMIT,
    ));
    let create = &doc["runs"][0]["phases"][1];
    assert_eq!(create["name"], "file-create");
    let min = figure(create, "stonewall-items-min", None);
    let max = figure(create, "stonewall-items-max", None);
    assert!(min < max, "stonewall counts min {min} max {max}");
    assert!(figure(create, "rate-stonewall", None) > 0.0);
    // Wear-out: every rank finished its items, so the next phases saw equal counts.
    for phase in doc["runs"][0]["phases"].as_array().unwrap() {
        let items: Vec<f64> = (0..4)
            .map(|r| figure(phase, "rank-items", Some(r)))
            .collect();
        assert!(
            items.iter().all(|i| *i == items[0]),
            "{}: {items:?}",
            phase["name"]
        );
    }
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

#[test]
fn a_rank_that_cannot_write_ends_every_rank_with_its_name_and_error() {
    if !can_run_mpi("a_rank_that_cannot_write_ends_every_rank")
        || !can_run("a_rank_that_cannot_write_ends_every_rank", &["unshare"])
    {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
    if !can_run_mpi("workloads_that_make_no_sense_under_mpi_are_refused") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (state, target) = (tempdir(), Target::new());
    let out = output_within(
        &mut mpirun(2, state.path(), &target, "", &["-w", "alloc"]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("cannot run under MPI: it measures how one filesystem"));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_singleton_without_mpirun_runs_as_always() {
    if !can_run_mpi("a_singleton_without_mpirun_runs_as_always") {
        return;
    }
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
fn sigterm_to_the_ranks_cleans_up_and_exits_130() {
    if !can_run_mpi("sigterm_to_the_ranks_cleans_up_and_exits_130") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (state, target, pids) = (tempdir(), Target::new(), tempdir());
    // Each rank says its pid (exec keeps it), then is fsbench.
    let wrapper = format!(
        "echo $$ > {}/pid.$OMPI_COMM_WORLD_RANK; exec \"$@\"",
        pids.path().display()
    );
    // 140,000 files per rank: the signal lands in the middle of file create.
    let tree = "tree:dirs=30,files=150,levels=2,size=0";
    let mut cmd = mpirun(4, state.path(), &target, &wrapper, &["-w", tree]);
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid_of = |rank: u32| {
        std::fs::read_to_string(pids.path().join(format!("pid.{rank}")))
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
    };
    let started = std::time::Instant::now();
    while (0..4).any(|r| pid_of(r).is_none()) && started.elapsed() < LIMIT {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Well into the runs, as a batch system's SIGTERM would come.
    std::thread::sleep(Duration::from_secs(2));
    for rank in 0..4 {
        let pid = pid_of(rank).expect("every rank started");
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let out = wait_drained_within(child, LIMIT);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Exit code:    130"), "{stderr}");
    assert!(stderr.contains("fsbench: error: interrupted"), "{stderr}");
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

#[test]
fn threads_and_ranks_compose() {
    if !can_run_mpi("threads_and_ranks_compose") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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

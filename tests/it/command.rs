//! The command workload: real programs (sh, tar, sleep) as phases, on a directory target and
//! on two made filesystems; their figures, kept output, failures and timeouts.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::*;

/// Setup that makes 300 files of 4 KiB in `src/`.
const SETUP: &str =
    "mkdir src && for i in $(seq 300); do head -c 4096 /dev/urandom > src/f$i; done";

/// `fsbench run` of the command workload on a fresh directory of `dir`, with `args`.
fn run_commands(dir: &Path, state: &Path, db: &Path, args: &[&str]) -> std::process::Output {
    run(json_run(state)
        .arg("--db")
        .arg(db)
        .args(["--runs", "2", "--dir"])
        .arg(dir)
        .args(["--command-space", "16M"])
        .args(args))
}

fn figure(phase: &serde_json::Value, name: &str) -> f64 {
    let figures = phase["figures"].as_array().expect("figures");
    figures
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no figure `{name}` in {figures:?}"))["value"]
        .as_f64()
        .unwrap()
}

#[test]
fn real_programs_are_measured_and_their_output_kept_and_shown() {
    let (target, state, scratch) = (tmpfs_tempdir(), tempdir(), tempdir());
    let db = scratch.path().join("results.db");
    // A phase that names its directory twice, writes with commas and `=` in its command line
    // and writes to stderr; tar really packs and unpacks the setup's files.
    let pack = "pack=tar -cf a.tar src && mkdir out && tar -xf a.tar -C out && sync; \
                echo \"dir=$(pwd -P),env=$FSBENCH_DIR,run=$FSBENCH_RUN\"; echo warn, here >&2";
    let out = run_commands(
        target.path(),
        state.path(),
        &db,
        &[
            "--command-setup",
            SETUP,
            "--command-phase",
            pack,
            "--command-phase",
            "list=ls -R out | wc -l",
            "--command-cleanup",
            "echo cleaned",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["suite"]["workload"][0]["kind"], "command");
    for run in doc["runs"].as_array().unwrap() {
        assert_eq!(run["status"], "ok");
        let phase = &run["phases"][0];
        assert_eq!(phase["name"], "pack");
        assert!(phase["elapsed_ns"].as_u64().unwrap() > 0);
        let cpu = figure(phase, "cpu user") + figure(phase, "cpu system");
        assert!(cpu > 0.0, "tar used no CPU: {phase}");
        // tar wrote the archive (1.2 MiB) and the extracted copy through write calls.
        assert!(figure(phase, "chars written") > 2.0, "{phase}");
        assert!(figure(phase, "peak memory") > 0.0, "{phase}");
        assert_eq!(run["phases"][1]["name"], "list");
        let kept = run["output"].as_array().unwrap();
        let step = |name: &str| {
            kept.iter()
                .find(|o| o["step"] == name)
                .unwrap_or_else(|| panic!("no output of {name}: {kept:?}"))
        };
        // The working directory is the run's fresh directory, and FSBENCH_DIR names it.
        let said = step("phase `pack`")["stdout"].as_str().unwrap().to_string();
        let line = said.lines().next().unwrap();
        let dir = line
            .split(',')
            .next()
            .unwrap()
            .strip_prefix("dir=")
            .unwrap();
        assert!(dir.starts_with(target.path().to_str().unwrap()), "{line}");
        assert!(line.contains(&format!("env={dir},")), "{line}");
        assert!(line.ends_with(&format!("run={}", run["run"])), "{line}");
        assert_eq!(step("phase `pack`")["stderr"], "warn, here\n");
        // 300 files, `out/src:` and the blank line between: ls saw what tar extracted.
        assert_eq!(
            step("phase `list`")["stdout"].as_str().unwrap().trim(),
            "304"
        );
        assert_eq!(step("cleanup")["stdout"], "cleaned\n");
    }
    let id = doc["id"].as_i64().unwrap().to_string();
    let shown = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["show", &id, "--verbose"]));
    let shown = text(&shown.stdout);
    assert!(shown.contains("Command output"), "{shown}");
    assert!(
        shown.contains("| warn, here") && shown.contains("| cleaned"),
        "{shown}"
    );
    assert!(shown.contains("peak memory"), "{shown}");
    let plain = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["show", &id]));
    assert!(!text(&plain.stdout).contains("Command output"));
}

#[test]
fn a_failing_command_fails_the_run_with_the_end_of_its_stderr() {
    let (target, state, scratch) = (tmpfs_tempdir(), tempdir(), tempdir());
    let db = scratch.path().join("results.db");
    let out = run_commands(
        target.path(),
        state.path(),
        &db,
        &[
            "--command-phase",
            "ok=true",
            "--command-phase",
            "bad=for i in $(seq 100); do echo noise $i >&2; done; echo the real reason >&2; exit 3",
        ],
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("phase `bad`") && err.contains("exited with status 3"),
        "{err}"
    );
    assert!(
        err.contains("the real reason") && !err.contains("noise 50\n"),
        "{err}"
    );
    // Stored with the failed run, and shown again.
    let shown = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["show", "1", "-v"]));
    let shown = text(&shown.stdout);
    assert!(
        shown.contains("exited with status 3") && shown.contains("the real reason"),
        "{shown}"
    );
    assert!(
        shown.contains("| noise 1"),
        "the whole kept stderr: {shown}"
    );

    let missing = run_commands(
        target.path(),
        state.path(),
        &db,
        &["--command-phase", "x=no-such-program-here --flag"],
    );
    let err = text(&missing.stderr);
    assert!(!missing.status.success());
    assert!(
        err.contains("status 127") && err.contains("not found"),
        "{err}"
    );
}

#[test]
fn a_timeout_kills_the_whole_process_tree() {
    let (target, state, scratch) = (tmpfs_tempdir(), tempdir(), tempdir());
    let db = scratch.path().join("results.db");
    let pids = scratch.path().join("pids");
    let p = pids.display();
    // A child, a grandchild in a shell of its own, and the shell waiting on them.
    let phase = format!(
        "slow=sleep 1000 & echo $! >> {p}; sh -c 'sleep 1000 & echo $! >> {p}; wait' & echo $! >> {p}; echo $$ >> {p}; wait"
    );
    let started = Instant::now();
    let out = run_commands(
        target.path(),
        state.path(),
        &db,
        &["--command-timeout", "2", "--command-phase", &phase],
    );
    let took = started.elapsed();
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("past its timeout of 2 s") && err.contains("killed"),
        "{err}"
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let listed: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(listed.len(), 4, "{listed:?}");
    for pid in listed {
        assert!(gone(pid), "process {pid} of the timed-out command lives on");
    }
}

#[test]
fn a_suite_file_gives_items_a_rate_and_the_file_form_reads_phases() {
    let (target, state, scratch) = (tmpfs_tempdir(), tempdir(), tempdir());
    let db = scratch.path().join("results.db");
    let suite = scratch.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            r#"[[workload]]
kind = "command"
setup = "{SETUP}"
space = "16M"
phase = [
  {{ name = "copy", run = "cp -r src dst", items = 300 }},
  {{ name = "pack", run = "tar -cf a.tar dst", items_cmd = "tar -tf a.tar | grep -c f" }},
]
"#
        ),
    )
    .unwrap();
    let out = run(json_run(state.path())
        .arg("--db")
        .arg(&db)
        .arg(&suite)
        .args(["--runs", "1", "--dir"])
        .arg(target.path()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let phases = &doc["runs"][0]["phases"];
    assert_eq!(phases[0]["ops"], 300);
    assert_eq!(phases[1]["ops"], 300, "items_cmd's count");
    let rate = doc["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["phase"] == "copy" && s["metric"] == "rate")
        .expect("a rate for the phase with items");
    assert_eq!(rate["unit"], "items/s");

    // The same phases from a file given with -w command:file=...
    let phases_file = scratch.path().join("phases.toml");
    std::fs::write(
        &phases_file,
        "setup = \"echo a, b > f\"\n[[phase]]\nname = \"read\"\nrun = \"cat f\"\n",
    )
    .unwrap();
    let workload = format!(
        "command:file={},space=16M,timeout=30",
        phases_file.display()
    );
    let out = run(json_run(state.path())
        .arg("--db")
        .arg(&db)
        .args(["--runs", "1", "--dir"])
        .arg(target.path())
        .args(["-w", &workload]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["runs"][0]["output"][0]["stdout"], "a, b\n");
    assert_eq!(doc["suite"]["workload"][0]["timeout"], 30);
}

#[test]
fn two_filesystems_are_compared_and_ranked_on_the_commands() {
    if !can_run("command compare", &["mkfs.ext2"]) {
        return;
    }
    let (images, state, scratch) = (tempdir(), tempdir(), tempdir());
    let db = scratch.path().join("results.db");
    let out = run(json_run(state.path())
        .arg("--db")
        .arg(&db)
        .args([
            "--runs",
            "3",
            "--fs",
            "tmpfs,ext2",
            "--image-size",
            "64M",
            "--image-dir",
        ])
        .arg(images.path())
        .args(["--command-space", "16M", "--command-setup", SETUP])
        .args(["--command-phase", "pack=tar -cf a.tar src && sync"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["runs"].as_array().unwrap().len(), 6);
    let id = doc["id"].as_i64().unwrap().to_string();
    let db = db.to_str().unwrap();
    for args in [vec!["compare", id.as_str()], vec!["rank", id.as_str()]] {
        let out = run(fsbench(state.path()).args(["--db", db]).args(&args));
        let said = text(&out.stdout);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(
            said.contains("pack") && said.contains("ext2"),
            "{args:?}: {said}"
        );
    }
    assert_nothing_left(images.path());
}

/// The cgroup v2 directory a process is in, where it is one of fsbench's.
fn fsbench_cgroup_of(pid: i32) -> Option<std::path::PathBuf> {
    let dir = cgroup_of(pid)?;
    let name = dir.file_name()?.to_str()?;
    name.starts_with("fsbench-").then_some(dir)
}

#[test]
fn what_a_killed_fsbench_left_running_is_killed_by_the_next() {
    if !is_root() {
        skip("command: a killed fsbench's cgroup: needs root (cgroups)");
        return;
    }
    // Both fsbench processes in a cgroup of the test's own: another test's fsbench would
    // sweep the killed one's cgroup as well, and first.
    let Some(own) = Isolated::new() else {
        assert!(std::env::var_os("CI").is_none(), "no cgroup v2 to run in");
        return skip("command: a killed fsbench's cgroup: no cgroup v2 to run fsbench in");
    };
    let (target, state, scratch) = (tmpfs_tempdir(), tempdir(), tempdir());
    let db = scratch.path().join("results.db");
    let pids = scratch.path().join("pids");
    let phase = format!(
        "slow=sleep 1000 & echo $! >> {p}; echo $$ >> {p}; wait",
        p = pids.display()
    );
    let commands = |phase: &str| {
        let mut run = json_run(state.path());
        run.arg("--db")
            .arg(&db)
            .args(["--runs", "1", "--command-space", "16M", "--dir"])
            .arg(target.path())
            .args(["--command-phase", phase]);
        own.enter(&mut run);
        run
    };
    let child = commands(&phase)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let fsbench_pid = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(60);
    let listed = loop {
        let listed: Vec<i32> = std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if listed.len() == 2 || Instant::now() > deadline {
            break listed;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    unsafe { libc::kill(fsbench_pid, libc::SIGKILL) };
    let _ = wait_drained_within(child, Duration::from_secs(30));
    assert_eq!(listed.len(), 2, "the phase did not start: {listed:?}");
    let (sleep, shell) = (listed[0], listed[1]);
    let cgroup = fsbench_cgroup_of(sleep);
    // The shell dies with fsbench (its parent-death signal).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone(shell) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(shell), "the command's shell outlived fsbench");
    let Some(cgroup) = cgroup else {
        unsafe { libc::kill(sleep, libc::SIGKILL) };
        skip("command: a killed fsbench's cgroup: no cgroup v2 here to put commands in");
        return;
    };
    assert!(
        !gone(sleep),
        "the killed fsbench's background process died with it"
    );
    assert!(cgroup.is_dir(), "{} went with fsbench", cgroup.display());
    let out = run(&mut commands("ok=true"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        gone(sleep),
        "the killed fsbench's background process lives on"
    );
    assert!(!cgroup.exists(), "{} is left", cgroup.display());
    let mut clean = fsbench(state.path());
    own.enter(clean.arg("clean"));
    let _ = run(&mut clean);
}

/// A live run's command phase survives a second fsbench starting one, whatever the first's
/// process name (a binary installed under another name) or PID namespace (its pid means
/// another process here): only a cgroup whose run is dead (its lock free) is stale.
#[test]
fn a_live_run_keeps_its_phase_whatever_its_name_or_pid_namespace() {
    if !is_root() {
        skip("command: a live run's cgroup: needs root (cgroups)");
        return;
    }
    let bin = tempdir();
    let renamed = bin.path().join("fsb-renamed");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fsbench"), &renamed).unwrap();
    let mut ways = vec![("a binary under another name", vec![renamed.clone()])];
    if has_tool("unshare") {
        let unshare = ["unshare", "--pid", "--fork"].map(std::path::PathBuf::from);
        ways.push(("another PID namespace", [&unshare[..], &[renamed]].concat()));
    } else {
        skip("command: a live run in another PID namespace: no unshare");
    }
    for (how, argv) in ways {
        let (target, state, scratch) = (tmpfs_tempdir(), tempdir(), tempdir());
        let (ready, go) = (scratch.path().join("ready"), scratch.path().join("go"));
        // Waits (at most a minute) for the test to say go, then succeeds.
        let phase = format!(
            "held=echo $$ > {r}; i=0; while [ ! -e {g} ] && [ $i -lt 600 ]; do sleep 0.1; \
             i=$((i+1)); done; test -e {g}",
            r = ready.display(),
            g = go.display()
        );
        let mut first = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .env("FSBENCH_STATE_DIR", state.path())
            .env("XDG_DATA_HOME", test_data_home())
            .args(["run", "-q", "--output-format", "json", "--db"])
            .arg(scratch.path().join("first.db"))
            .args(["--runs", "1", "--command-space", "16M", "--dir"])
            .arg(target.path())
            .args(["--command-phase", &phase])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_running_until(&mut first, "starting its command", || ready.exists());
        let shell: i32 = std::fs::read_to_string(&ready)
            .unwrap_or_default()
            .trim()
            .parse()
            .unwrap_or(0);
        let (other_target, other_state) = (tmpfs_tempdir(), tempdir());
        let second = run_commands(
            other_target.path(),
            other_state.path(),
            &scratch.path().join("second.db"),
            &["--command-phase", "quick=true"],
        );
        let alive = shell > 0 && !gone(shell);
        std::fs::write(&go, b"").unwrap();
        let out = wait_drained_within(first, limit());
        assert!(shell > 0, "{how}: the first run's phase never started");
        assert!(second.status.success(), "{}", text(&second.stderr));
        assert!(
            alive,
            "{how}: the second fsbench killed the live run's phase"
        );
        assert!(out.status.success(), "{how}: {}", text(&out.stderr));
        assert_eq!(json(&out)["runs"][0]["status"], "ok", "{how}");
    }
}

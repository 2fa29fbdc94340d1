//! Signals under `mpirun --oversubscribe -np 4` on one machine, as root: SIGTERM to the ranks
//! (a batch system's) and Ctrl-C to mpirun. Only with the `mpi` feature; without `mpirun`
//! the tests say SKIPPED.
#![cfg(feature = "mpi")]

use std::time::Duration;

use crate::common::mpi::*;
use crate::common::*;

#[test]
fn sigterm_to_the_ranks_cleans_up_and_exits_130() {
    let Some(_one) = mpi_test("sigterm_to_the_ranks_cleans_up_and_exits_130", &[]) else {
        return;
    };
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
    // Said by rank 0, naming the ranks the signal reached.
    let said = (stderr.lines()).find(|l| l.starts_with("fsbench: error: rank "));
    let said = said.unwrap_or_else(|| panic!("{stderr}"));
    assert!(said.ends_with(": interrupted"), "{stderr}");
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

/// `mpirun -np 4` of a long suite, each rank saying its pid, started once every rank has
/// said it; and the pid of each rank.
fn start_long_suite(
    target: &Target,
    state: &std::path::Path,
    pids: &std::path::Path,
    sigkill_timeout: Option<&str>,
) -> (std::process::Child, impl Fn(u32) -> Option<i32>) {
    let wrapper = format!(
        "echo $$ > {}/pid.$OMPI_COMM_WORLD_RANK; exec \"$@\"",
        pids.display()
    );
    // Eight workloads of 140,000 files per rank and run: a minute or more here.
    let trees: Vec<String> = (150..158)
        .flat_map(|f| {
            [
                "-w".into(),
                format!("tree:dirs=30,files={f},levels=2,size=0"),
            ]
        })
        .collect();
    let args: Vec<&str> = trees.iter().map(String::as_str).collect();
    let mut cmd = mpirun(4, state, target, &wrapper, &args);
    if let Some(secs) = sigkill_timeout {
        cmd.env("OMPI_MCA_odls_base_sigkill_timeout", secs);
    }
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pids = pids.to_path_buf();
    let pid_of = move |rank: u32| {
        std::fs::read_to_string(pids.join(format!("pid.{rank}")))
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
    };
    let started = std::time::Instant::now();
    while (0..4).any(|r| pid_of(r).is_none()) && started.elapsed() < LIMIT {
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, pid_of)
}

/// Whether every rank has ended within `limit` after mpirun did: a rank SIGKILLed as mpirun
/// exits may take a moment to die, and one that got SIGTERM may still be cleaning up.
fn ranks_end_within(pid_of: impl Fn(u32) -> Option<i32>, limit: Duration) -> bool {
    let since = std::time::Instant::now();
    loop {
        if (0..4).all(|r| !alive(pid_of(r).expect("every rank said its pid"))) {
            return true;
        }
        if since.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether `pid` still runs (a zombie waiting for its reaper does not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

// Ctrl-C reaches mpirun alone (Open MPI puts each rank in a process group of its own). Open
// MPI 4's mpirun then sends the ranks SIGCONT, sleeps `odls_base_sigkill_timeout` seconds
// (default 1), sends SIGTERM, sleeps as long again, and sends SIGKILL; it exits 1 whatever the
// ranks did. The ranks stop at SIGTERM and clean up, so a timeout long enough for the cleanup
// leaves nothing behind.
#[test]
fn ctrl_c_to_mpirun_with_time_to_clean_up_leaves_nothing() {
    let Some(_one) = mpi_test("ctrl_c_to_mpirun_with_time_to_clean_up_leaves_nothing", &[]) else {
        return;
    };
    let (state, target, pids) = (tempdir(), Target::new(), tempdir());
    let (child, pid_of) = start_long_suite(&target, state.path(), pids.path(), Some("8"));
    std::thread::sleep(Duration::from_secs(2));
    let interrupted = std::time::Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = wait_drained_within(child, LIMIT);
    assert!(!out.status.success());
    // SIGTERM came 8 s after Ctrl-C, SIGKILL 8 s after that: no hang beyond.
    assert!(interrupted.elapsed() < Duration::from_secs(60));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(
        ranks_end_within(&pid_of, Duration::from_secs(10)),
        "a rank outlived mpirun by 10 s"
    );
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

#[test]
fn ctrl_c_to_mpirun_by_default_ends_every_rank_and_clean_removes_the_rest() {
    let Some(_one) = mpi_test("ctrl_c_to_mpirun_by_default_ends_every_rank", &[]) else {
        return;
    };
    let (state, target, pids) = (tempdir(), Target::new(), tempdir());
    let (child, pid_of) = start_long_suite(&target, state.path(), pids.path(), None);
    std::thread::sleep(Duration::from_secs(2));
    let interrupted = std::time::Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = wait_drained_within(child, LIMIT);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(interrupted.elapsed() < Duration::from_secs(30));
    assert!(
        ranks_end_within(&pid_of, Duration::from_secs(10)),
        "a rank outlived mpirun by 10 s"
    );
    // SIGKILL one second after SIGTERM may cut the cleanup short; `fsbench clean` removes
    // what is left.
    let clean = run(fsbench(state.path()).arg("clean"));
    assert!(clean.status.success(), "{}", text(&clean.stderr));
    assert!(
        target.entries().is_empty(),
        "left behind: {:?}",
        target.entries()
    );
}

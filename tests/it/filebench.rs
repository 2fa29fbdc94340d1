//! `fsbench filebench FILE.f` and `-w personality:NAME`: real workload files run on tmpfs and
//! on a loop image; processes are processes; refusals name the construct and line; a run
//! that can obtain no file fails saying why; workers die with fsbench.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// A small mail-server file: one set, `processes` processes of 2 threads, `run SECS`.
fn mail_file(dir: &Path, processes: u32, secs: u32) -> PathBuf {
    let text = format!(
        "set $dir=/tmp\nset $nfiles=200\n\
         set $filesize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)\n\
         define fileset name=mail,path=$dir,size=$filesize,entries=$nfiles,dirwidth=1000000,prealloc=80\n\
         define process name=server,instances={processes}\n{{\n\
           thread name=worker,memsize=10m,instances=2\n  {{\n\
             flowop deletefile name=delete1,filesetname=mail\n\
             flowop createfile name=create1,filesetname=mail,fd=1\n\
             flowop appendfilerand name=append1,iosize=16k,fd=1\n\
             flowop fsync name=fsync1,fd=1\n\
             flowop closefile name=close1,fd=1\n\
             flowop openfile name=open1,filesetname=mail,fd=1\n\
             flowop readwholefile name=read1,fd=1,iosize=1m\n\
             flowop closefile name=close2,fd=1\n  }}\n}}\n\
         run {secs}\n"
    );
    let path = dir.join("mail.f");
    std::fs::write(&path, text).unwrap();
    path
}

fn filebench(state: &Path, file: &Path) -> Command {
    let mut c = fsbench(state);
    c.arg("--db")
        .arg(state.join("results.db"))
        .arg("filebench")
        .arg(file)
        .args(["--runs", "1", "-q"]);
    c
}

/// The first run's run-phase figures.
fn run_figures(doc: &serde_json::Value) -> &[serde_json::Value] {
    let phases = doc["runs"][0]["phases"].as_array().unwrap();
    let run = phases.iter().find(|p| p["name"] == "run").unwrap();
    run["figures"].as_array().unwrap()
}

/// The run phase's figure `name` (without dimensions) of the first run.
fn figure(doc: &serde_json::Value, name: &str) -> f64 {
    let f = run_figures(doc)
        .iter()
        .find(|f| f["name"] == name && f.get("dims").is_none());
    f.unwrap_or_else(|| panic!("no figure {name}"))["value"]
        .as_f64()
        .unwrap()
}

#[test]
fn a_workload_file_runs_on_tmpfs_with_filebenchs_summary() {
    let (dir, state, work) = (tempdir(), tempdir(), tmpfs_tempdir());
    let file = mail_file(dir.path(), 1, 1);
    let out = run(filebench(state.path(), &file).arg("--dir").arg(work.path()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("IO Summary:"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let ops: f64 = summary.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(ops > 100.0, "{summary}");
    // The breakdown lists the flowops, the last defined first, as filebench does.
    let close2 = stdout.find("\nclose2 ").unwrap();
    assert!(close2 < stdout.find("\ndelete1 ").unwrap(), "{stdout}");
    // JSON: the summary's figures, consistent with each other.
    let out = run(filebench(state.path(), &file)
        .args(["--output-format", "json", "--dir"])
        .arg(work.path()));
    let doc = json(&out);
    let (ops, rate, secs) = (
        figure(&doc, "ops"),
        figure(&doc, "ops/s"),
        figure(&doc, "run"),
    );
    assert!(
        (ops / secs - rate).abs() < rate * 0.01,
        "{ops} ops in {secs} s is not {rate} ops/s"
    );
    assert!((0.9..3.0).contains(&secs), "ran {secs} s");
    // Every file is under the run's directory, none outside it.
    assert_empty(work.path());
}

#[test]
fn a_personality_runs_on_a_loop_image() {
    if !can_run("a_personality_runs_on_a_loop_image", &["mkfs.ext4"]) {
        return;
    }
    let (images, state) = (tempdir(), tempdir());
    let (out, doc) = image_run_json(
        images.path(),
        state.path(),
        &[
            "--fs",
            "ext4",
            "--runs",
            "1",
            "-w",
            "personality:webproxy,nfiles=300,nthreads=4,runtime=1",
            "--image-size",
            "256M",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(figure(&doc, "ops/s") > 0.0);
    assert!(
        figure(&doc, "rd/s") > figure(&doc, "wr/s"),
        "webproxy reads five files a write"
    );
    assert_nothing_left(images.path());
}

/// The pids whose parent is `parent`, with their thread counts.
fn children_of(parent: u32) -> Vec<(u32, usize)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: u32 = after.split_whitespace().nth(1).unwrap().parse().unwrap();
        if ppid == parent {
            let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |t| t.count());
            out.push((pid, threads));
        }
    }
    out
}

#[test]
fn processes_are_processes_and_die_with_fsbench() {
    let (dir, state, work) = (tempdir(), tempdir(), tmpfs_tempdir());
    let file = mail_file(dir.path(), 3, 30);
    let mut child = filebench(state.path(), &file)
        .arg("--dir")
        .arg(work.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let workers = loop {
        let workers: Vec<_> = children_of(child.id())
            .into_iter()
            .filter(|(_, t)| *t >= 3)
            .collect();
        if workers.len() == 3 || started.elapsed() > Duration::from_secs(60) {
            break workers;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Three processes of the file's, each with its two threads beside its main one (which
    // starts and joins them, as filebench's does).
    assert_eq!(workers.len(), 3, "{workers:?}");
    assert!(
        workers.iter().all(|(_, threads)| *threads == 3),
        "{workers:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // Killed with no chance to clean up, fsbench takes its workers with it.
    let end = Instant::now() + Duration::from_secs(10);
    while workers
        .iter()
        .any(|(pid, _)| Path::new(&format!("/proc/{pid}")).exists())
    {
        assert!(
            Instant::now() < end,
            "workers outlived fsbench: {workers:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn what_fsbench_does_not_run_is_refused_naming_it_and_its_line() {
    let dir = tempdir();
    let cases = [
        (
            "define flowop name=x\n{\n  flowop x name=y\n}\ndefine process name=p\n{\n thread name=t\n {\n flowop x name=z\n }\n}\n",
            "line 3: composite flowop x uses itself",
        ),
        (
            "set $a=randvar(type=gamma)\n",
            "line 1: randvar is not supported",
        ),
        (
            "\n\ndefine fileset name=s,path=/tmp,size=1k,entries=2,dirwidth=2,cached=1\n",
            "line 3: unknown fileset attribute `cached`",
        ),
        ("system \"ls\"\n", "line 1: `system` is not supported"),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("case{i}.f"));
        std::fs::write(&path, text).unwrap();
        fails_with(&["filebench", path.to_str().unwrap(), "--dump"], 2, needle);
    }
    // A file without `run`, as most of filebench's own: refused unless a time is given.
    let file = mail_file(dir.path(), 1, 1);
    let without_run = std::fs::read_to_string(&file)
        .unwrap()
        .replace("run 1\n", "");
    std::fs::write(&file, without_run).unwrap();
    fails_with(
        &["filebench", file.to_str().unwrap(), "--dump"],
        2,
        "has no `run` line",
    );
    let state = tempdir();
    let out = run(fsbench(state.path()).args([
        "filebench",
        file.to_str().unwrap(),
        "--runtime",
        "5",
        "--dump",
    ]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\nrun 5\n"));
}

#[test]
fn a_run_that_can_obtain_no_file_fails_saying_why() {
    let (dir, state, work) = (tempdir(), tempdir(), tmpfs_tempdir());
    // Every slot has a file and nothing deletes: filebench would stop early and exit 0.
    let full = "define fileset name=full,path=/tmp,size=1k,entries=20,dirwidth=20,prealloc=100\n\
                define process name=p,instances=1\n{\n  thread name=t,instances=2\n  {\n\
                flowop createfile name=create1,filesetname=full,fd=1\n\
                flowop closefile name=close1,fd=1\n  }\n}\nrun 30\n";
    let file = dir.path().join("full.f");
    std::fs::write(&file, full).unwrap();
    let started = Instant::now();
    let out = run(filebench(state.path(), &file).arg("--dir").arg(work.path()));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the run stalled")
            && err.contains("create1")
            && err.contains("every slot has a file"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "it waited for the run's end"
    );
}

/// Personality `name` dumped as a file, scaled down by the text replacements `edits`, run
/// once on tmpfs: its JSON document.
fn scaled_personality(name: &str, edits: &[(&str, &str)]) -> serde_json::Value {
    let (dir, state, work) = (tempdir(), tempdir(), tmpfs_tempdir());
    let out = run(fsbench(state.path()).args(["filebench", "--personality", name, "--dump"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let small = (edits.iter()).fold(text(&out.stdout), |t, (from, to)| t.replace(from, to));
    let file = dir.path().join(format!("{name}.f"));
    std::fs::write(&file, small).unwrap();
    let out = run(filebench(state.path(), &file)
        .args(["--output-format", "json", "--dir"])
        .arg(work.path()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    json(&out)
}

#[test]
fn a_dumped_personality_runs_as_a_file() {
    let doc = scaled_personality(
        "webserver",
        &[
            ("entries=1000,", "entries=100,"),
            ("instances=100", "instances=3"),
            ("\nrun 60", "\nrun 1"),
        ],
    );
    // Ten whole-file reads a log append: reads outnumber writes about ten to one.
    let (rd, wr) = (figure(&doc, "rd/s"), figure(&doc, "wr/s"));
    assert!(rd > 5.0 * wr && wr > 0.0, "rd {rd} wr {wr}");
}

#[test]
fn sigterm_during_the_run_stops_the_workers_and_undoes_the_filesystem() {
    if !can_run(
        "sigterm_during_the_run_stops_the_workers_and_undoes_the_filesystem",
        &["mkfs.ext4"],
    ) {
        return;
    }
    let (dir, images, state) = (tempdir(), tempdir(), tempdir());
    let file = mail_file(dir.path(), 2, 60);
    let child = fsbench(state.path())
        .arg("--db")
        .arg(state.path().join("results.db"))
        .arg("filebench")
        .arg(&file)
        .args([
            "--runs",
            "1",
            "-q",
            "--fs",
            "ext4",
            "--image-size",
            "256M",
            "--image-dir",
        ])
        .arg(images.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let workers = loop {
        let workers: Vec<_> = children_of(child.id())
            .into_iter()
            .filter(|(_, t)| *t >= 3)
            .collect();
        if workers.len() == 2 {
            break workers;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the workers never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = wait_drained_within(child, Duration::from_secs(120));
    assert!(!out.status.success(), "{}", text(&out.stderr));
    assert!(
        workers
            .iter()
            .all(|(pid, _)| !Path::new(&format!("/proc/{pid}")).exists()),
        "{workers:?}"
    );
    // Its mount, loop device and image are gone.
    assert_nothing_left(images.path());
}

/// The run phase's `flowop ops` of flowop `name`, summed over its figures.
fn flowop_ops(doc: &serde_json::Value, name: &str) -> f64 {
    run_figures(doc)
        .iter()
        .filter(|f| f["name"] == "flowop ops" && f["dims"][0]["text"] == name)
        .map(|f| f["value"].as_f64().unwrap())
        .sum()
}

#[test]
fn oltp_s_semaphores_pace_the_writers_by_the_readers_posts() {
    let doc = scaled_personality(
        "oltp",
        &[
            ("size=10485760", "size=1048576"),
            ("instances=200", "instances=6"),
            ("name=dbwr,instances=10", "name=dbwr,instances=2"),
            ("\nrun 60", "\nrun 2"),
        ],
    );
    let (posts_db, posts_lg) = (
        flowop_ops(&doc, "shadow-post-dbwr"),
        flowop_ops(&doc, "shadow-post-lg"),
    );
    let (db_blocks, lg_blocks) = (flowop_ops(&doc, "dbwr-block"), flowop_ops(&doc, "lg-block"));
    // Every reader's pass posts to both; the writers went on only on the readers' posts
    // (each post reaches both database writers; a semblock takes 1,000, the log's 3,200),
    // and the readers ran at most the high water mark (2,000) ahead of either writer.
    assert!(
        (posts_db - posts_lg).abs() <= 6.0,
        "{posts_db} / {posts_lg}"
    );
    assert!(
        posts_db >= 1000.0,
        "the readers posted {posts_db} times in 2 s"
    );
    assert!(
        db_blocks >= 2.0 && lg_blocks >= 1.0,
        "{db_blocks} {lg_blocks}"
    );
    assert!(
        db_blocks <= 2.0 * (posts_db / 1000.0 + 1.0),
        "{db_blocks} for {posts_db}"
    );
    assert!(
        lg_blocks <= posts_lg / 3200.0 + 1.0,
        "{lg_blocks} for {posts_lg}"
    );
    assert!(
        posts_db <= 2000.0 + 1000.0 * db_blocks,
        "{posts_db} past {db_blocks}"
    );
}

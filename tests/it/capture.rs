//! What capture must follow, each pattern a case of one compiled program, replayed with no
//! call that comes out otherwise and the same tree, modes included: names with any byte (and
//! `-`), deleted and O_TMPFILE files, `/proc/self/fd` names, files taken from outside the
//! root, reads and writes longer than any buffer, mapped I/O; the program's own time,
//! which the replay's notes and think mode rest on; and capture's memory, which does not
//! grow with the root's entries.

use std::path::Path;
use std::process::Command;

use crate::common::capture::{
    assert_faithful, can_capture, capture_by, captured, captured_by, compiled, replay, tracers,
};
use crate::common::*;
use crate::traces::{ended, with_peak};

const CASES: &str = include_str!("fixtures/capture_cases.c");

#[test]
fn every_pattern_is_followed_to_the_file_it_is() {
    if !can_capture("the capture cases", &["cc"]) {
        return;
    }
    let work = tmpfs_tempdir();
    let program = compiled(work.path(), "cases", CASES);
    for tracer in tracers("the capture cases") {
        // Made anew for each: the program renames one of them away.
        let outside = work.path().join(format!("outside-{tracer}"));
        std::fs::create_dir(&outside).unwrap();
        for (name, size) in [("cfr", 5000), ("src", 3000), ("lnk", 100), ("mv", 50)] {
            std::fs::write(outside.join(name), vec![b'o'; size]).unwrap();
        }
        let cmd = [program.to_str().unwrap(), outside.to_str().unwrap()];
        let name = format!("cases-{tracer}");
        let (orig, trace) = captured_by(work.path(), &name, &cmd, Some(tracer));
        let replayed = work.path().join(format!("replayed-{tracer}"));
        every_pattern_replays(&trace, &orig, &replayed);
    }
}

/// The capture cases' trace replayed into `replayed` as they ran in `orig`.
fn every_pattern_replays(trace: &Path, orig: &Path, replayed: &Path) {
    let report = replay(trace, replayed);
    assert_faithful(&report, orig, replayed);
    let t = tree(replayed);
    // Every awkward name made, in its awkward directory.
    for name in [
        "d ir",
        "q\"uote",
        "new\nline",
        "a<b>c (deleted)",
        "x) = 3 <0.1>",
        "-",
    ] {
        assert_eq!(t[&format!("{name}/{name}")].0, 'f', "{name}: {t:?}");
    }
    assert_eq!(t["from-tmpfile"], ('f', 1000, 1), "{t:?}");
    assert_eq!(t["big"], ('f', 40 << 20, 1));
    // From outside: the sizes the calls read, the link a second name of the file made there.
    assert_eq!(t["cfr"].1, 5000);
    assert_eq!(t["sent"].1, 3000);
    assert_eq!(t["linked"], ('f', 100, 2));
    assert_eq!(t["moved"], ('f', 50, 1));
    // Beside the directory the symlink led to, and back where it started.
    assert_eq!(t["far/real/in-real"], ('f', 10, 1));
    assert_eq!(t["far/beside"], ('f', 20, 1));
    assert_eq!(t["far/dir-beside"].0, 'd');
    assert_eq!(t["back"], ('f', 30, 1));
    // Through the symlink exchanged with a directory, and in the directory.
    assert_eq!(t["far/swapped"], ('f', 40, 1));
    assert_eq!(t["xl/in-dir"], ('f', 50, 1));
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| {
        std::fs::metadata(replayed.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("modes"), 0o755);
    assert_eq!(mode("d ir/d ir"), 0o640);
    // The unlinked file's calls, the tmpfile's link, the chmod by name, the mappings.
    let c = &report.captured;
    assert!(
        c["fsync"] >= 1 && c["link"] >= 2 && c["chmod"] >= 1,
        "{c:?}"
    );
    assert!(
        c["mmap"] >= 2 && c["copy"] >= 1 && c["sendfile"] >= 1,
        "{c:?}"
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("mmap calls map the same range")),
        "{:?}",
        report.notes
    );
    // The 40 MiB write: one call, made as one (the replay counts the bytes it moved).
    assert!(c["write"] < 20, "{c:?}");
}

/// Threads of two processes opening, renaming, closing and unlinking at once, a number one
/// thread closes given to another's open at once: every call followed to its file.
#[test]
fn threads_racing_on_one_descriptor_table_are_followed() {
    if !can_capture("threads racing", &["cc"]) {
        return;
    }
    let work = tmpfs_tempdir();
    let threads = include_str!("fixtures/capture_threads.c");
    let program = compiled(work.path(), "threads", threads);
    for tracer in tracers("threads racing") {
        let name = format!("threads-{tracer}");
        let cmd = [program.to_str().unwrap()];
        let (orig, trace) = captured_by(work.path(), &name, &cmd, Some(tracer));
        let replayed = work.path().join(format!("replayed-{tracer}"));
        let report = replay(&trace, &replayed);
        assert_faithful(&report, &orig, &replayed);
        // 8 threads of 300 rounds: an open, a write and a close each.
        let c = &report.captured;
        assert_eq!((c["open"], c["close"]), (2400, 2400), "{tracer}: {c:?}");
    }
}

/// Where bpf cannot run (not root), strace records the calls and capture says why; asked
/// for, bpf is an error that says why; a ring buffer of no size is refused.
#[test]
fn capture_says_why_strace_runs_where_bpf_cannot() {
    if !is_root() || !has_tool("setpriv") || !can_capture("the tracer's fallback", &[]) {
        skip("the tracer's fallback: needs root (to become nobody) and setpriv");
        return;
    }
    let dir = tempdir();
    std::fs::create_dir(dir.path().join("root")).unwrap();
    for p in [dir.path().to_path_buf(), dir.path().join("root")] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    let as_nobody = |args: &[&str]| {
        output_within(
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_fsbench"))
                .args(args)
                .env("FSBENCH_STATE_DIR", dir.path().join("state"))
                .current_dir(dir.path().join("root")),
            limit(),
        )
    };
    let out = as_nobody(&["capture", "-o", "../t.trace", "--", "sh", "-c", ": > a"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("note: strace records the calls: the bpf tracer cannot run here: "),
        "{err}"
    );
    let (shown, _) = program_figures(&dir.path().join("t.trace"));
    assert!(shown.contains("\ntracer    strace\n"), "{shown}");
    let out = as_nobody(&[
        "capture",
        "--tracer",
        "bpf",
        "-o",
        "../b.trace",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--tracer bpf: it cannot run here: "),
        "{}",
        text(&out.stderr)
    );
    let out = as_nobody(&[
        "capture",
        "--bpf-buffer",
        "3",
        "-o",
        "../c.trace",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("power of two"));
}

/// A program of long-named calls (4,000-byte paths) too fast for a 1 MiB ring buffer: the
/// capture says how many calls the bpf tracer lost and writes no trace, unless told to keep
/// it, and then the trace counts them.
#[test]
fn calls_the_bpf_tracer_lost_are_counted_never_silent() {
    if !can_capture("the bpf tracer's lost calls", &["cc"])
        || !tracers("lost calls").contains(&"bpf")
    {
        return;
    }
    let work = tmpfs_tempdir();
    let long = "#include <string.h>\n#include <sys/stat.h>\nint main(void) { static char \
                p[4001]; struct stat st; memset(p, 'a', 4000); for (int i = 0; i < 6000; i++) \
                stat(p, &st); return 0; }\n";
    let program = compiled(work.path(), "long", long);
    let root = work.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let (state, trace) = (tempdir(), work.path().join("long.trace"));
    let capture = |more: &[&str]| {
        output_within(
            fsbench(state.path())
                .current_dir(&root)
                .args(["capture", "--tracer", "bpf", "--bpf-buffer", "1", "-o"])
                .arg(&trace)
                .args(more)
                .arg("--")
                .arg(&program),
            limit(),
        )
    };
    let out = capture(&[]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("the bpf tracer lost "), "{err}");
    assert!(err.contains("its ring buffer was full"), "{err}");
    assert!(!trace.exists());
    let out = capture(&["--accept-lost"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (shown, _) = program_figures(&trace);
    let lost = shown
        .lines()
        .find(|l| l.contains("lost by the bpf tracer: its ring buffer was full"))
        .unwrap_or_else(|| panic!("{shown}"));
    let n: u64 = lost
        .split_whitespace()
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap();
    assert!((1..=12_000).contains(&n), "{shown}");
}

/// 6,000 back-to-back traced calls (dd copying 3,000 bytes one at a time into the root)
/// captured by `tracer`: the `program` line's text, and its figures by name.
fn dd_captured_by(tracer: &str) -> (String, impl Fn(&str) -> f64 + use<>) {
    let work = tmpfs_tempdir();
    let orig = work.path().join("orig");
    std::fs::create_dir(&orig).unwrap();
    let trace = work.path().join("dd.trace");
    let dd = "dd if=/dev/zero of=a bs=1 count=3000 status=none";
    capture_by(&orig, &trace, &["sh", "-c", dd], Some(tracer));
    program_figures(&trace)
}

/// `capture --show`'s text of `trace`, and each figure of its `program` line by the words
/// before it.
fn program_figures(trace: &Path) -> (String, impl Fn(&str) -> f64 + use<>) {
    let state = tempdir();
    let out = run(fsbench(state.path()).args(["capture", "--show"]).arg(trace));
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = shown
        .lines()
        .find(|l| l.starts_with("program"))
        .unwrap_or_else(|| panic!("no program line: {shown}"))
        .to_string();
    let figure = move |name: &str| -> f64 {
        let after = line
            .split(name)
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: {line}"));
        after.split_whitespace().next().unwrap().parse().unwrap()
    };
    (shown, figure)
}

#[test]
fn capture_records_the_programs_own_time() {
    if !can_capture("the program's time under capture", &[]) {
        return;
    }
    let work = tmpfs_tempdir();
    for tracer in tracers("the program's time under capture") {
        // Half a second of the program's own time between two files.
        let cmd = ["sh", "-c", ": > a; sleep 0.5; : > b"];
        let (_, trace) = captured_by(work.path(), tracer, &cmd, Some(tracer));
        let (shown, figure) = program_figures(&trace);
        assert!(
            shown.contains(&format!("\ntracer    {tracer}\n")),
            "{shown}"
        );
        // Its own time holds the half second (less an estimate's error: strace's cost is
        // estimated on a machine that may be busy); under capture, strace's cost is added.
        // Nothing stops the program under bpf: its few calls cost it next to nothing.
        let (own, under) = (figure("own "), figure("under capture "));
        assert!((0.4..30.0).contains(&own), "{shown}");
        if tracer == "strace" {
            assert!(under > own, "{shown}");
        } else {
            assert!(under >= own && under - own < 0.05, "{shown}");
        }
    }
}

/// The bpf tracer's cost at each of the program's calls is measured (its programs' time,
/// and the calls' slower way into the kernel), not estimated: for a program of 6,000
/// back-to-back traced calls (dd copying byte by byte) it is taken out of the program's own
/// time, and never more than the time under capture.
#[test]
fn the_bpf_tracers_cost_is_taken_out_of_the_programs_time() {
    if !can_capture("the bpf tracer's cost", &["dd"]) {
        return;
    }
    if !tracers("the bpf tracer's cost").contains(&"bpf") {
        return;
    }
    let (shown, figure) = dd_captured_by("bpf");
    let (own, under) = (figure("own "), figure("under capture "));
    assert!(own > 0.0 && under - own >= 0.001, "{shown}");
}

/// strace's cost per call is read from the capture's own intervals: for a program made of
/// 6,000 back-to-back traced calls (dd copying byte by byte into the root), it accounts for
/// most of the time under capture and never for more than all of it.
#[test]
fn straces_cost_is_read_from_the_programs_own_calls() {
    if !can_capture("strace's cost from the capture", &["dd"]) {
        return;
    }
    let (shown, figure) = dd_captured_by("strace");
    let (own, under, per_call) = (
        figure("own "),
        figure("under capture "),
        figure("strace ") / 1e6,
    );
    assert!(per_call > 0.5e-6, "{shown}");
    assert!(per_call * 6000.0 <= under, "{shown}");
    assert!(own < under / 2.0, "{shown}");
}

/// Replayed on two filesystems, the answer line sets the calls' time against the program's
/// own; the tree the replay left on ext4 (with its lost+found) is the program's.
#[test]
fn the_answer_says_the_filesystems_share_of_the_program() {
    if !can_capture("the filesystem's share", &[]) || !can_run("the share on ext4", &["mkfs.ext4"])
    {
        return;
    }
    let work = tmpfs_tempdir();
    let cmd = "for i in 1 2 3; do echo $i > f$i; done; sleep 0.3";
    let (_, trace) = captured(work.path(), "share", &["sh", "-c", cmd]);
    let (state, images) = (tempdir(), tempdir());
    let workload = format!("replay:trace={}", trace.display());
    let out = run(fsbench(state.path())
        .args(["run", "--fs", "tmpfs,ext4", "--runs", "2", "--image-dir"])
        .arg(images.path())
        .args(["-w", &workload]));
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{all}");
    // The workload's headline, then its phases' lines, the share among them.
    let mut lines = all
        .lines()
        .skip_while(|l| !l.starts_with("replay:share.trace"));
    assert!(lines.next().is_some(), "{all}");
    let answer = lines
        .take_while(|l| l.starts_with(' '))
        .find(|l| l.contains("the calls take "))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(answer.contains("the calls take "), "{answer}");
    assert!(answer.contains(" s of the program's 0."), "{answer}");
    assert!(answer.contains("the filesystems differ by "), "{answer}");
    assert!(
        answer.contains(" (tmpfs ") || answer.contains(", tmpfs "),
        "{answer}"
    );
    assert!(!all.contains("tree differs"), "{all}");
    assert_nothing_left(images.path());
}

/// Think mode keeps the schedule: 20,000 calls 10 µs apart take about their 0.2 s (each call
/// at its time, the short waits spun), never less, and not the 20,000 sleeps' overshoot that
/// waiting out each gap on its own would add up to (a second or more) — made by two traced
/// processes in turn, as two worker processes on one schedule and as two threads.
#[test]
fn think_mode_keeps_the_programs_schedule() {
    let work = tempdir();
    let trace = work.path().join("paced.trace");
    let mut t = crate::traces::TraceText::of_version(3, &["d\td"]);
    for i in 0..20_000u64 {
        let tid = 1 + (i % 2) as u32;
        t.call(tid, i * 10, "stat\t0\t0\t-1\t-1\t1\t-1\td\t-");
    }
    t.write(&trace);
    for mode in ["processes", "threads"] {
        let (state, dir) = (tempdir(), work.path().join(format!("run-{mode}")));
        std::fs::create_dir(&dir).unwrap();
        let workload = format!("replay:trace={},mode=think,workers={mode}", trace.display());
        let out = run(json_run(state.path())
            .args(["--runs", "1", "-w", &workload, "--dir"])
            .arg(&dir));
        assert!(out.status.success(), "{mode}: {}", text(&out.stderr));
        let doc = json(&out);
        assert_eq!(doc["runs"][0]["workers"]["count"], 2, "{mode}");
        let secs = doc["runs"][0]["phases"][0]["elapsed_ns"].as_f64().unwrap() / 1e9;
        assert!((0.199..1.0).contains(&secs), "{mode}: {secs} s");
        assert_eq!(doc["runs"][0]["phases"][0]["ops"], 20_000, "{mode}");
    }
}

/// Think mode takes the program's own time: a program that computed for 0.3 s after its
/// last call (100 calls 1 ms apart, then 0.4 s in all) replays in think mode in 0.4 s or a
/// little more, fast in much less — as worker processes and as threads.
#[test]
fn think_mode_lasts_until_the_program_ended() {
    let work = tempdir();
    let trace = work.path().join("tail.trace");
    let mut t = crate::traces::TraceText::of_program(400_000, &["d\td"]);
    for i in 0..100u64 {
        t.call(1, i * 1000, "stat\t0\t0\t-1\t-1\t1\t-1\td\t-");
    }
    t.write(&trace);
    for (mode, workers, at_least, below) in [
        ("think", "processes", 0.4, 1.0),
        ("think", "threads", 0.4, 1.0),
        ("fast", "threads", 0.0, 0.3),
    ] {
        let (state, dir) = (tempdir(), work.path().join(format!("{mode}-{workers}")));
        std::fs::create_dir(&dir).unwrap();
        let spec = format!(
            "replay:trace={},mode={mode},workers={workers}",
            trace.display()
        );
        let out = run(json_run(state.path())
            .args(["--runs", "1", "-w", &spec, "--dir"])
            .arg(&dir));
        assert!(out.status.success(), "{mode}: {}", text(&out.stderr));
        let doc = json(&out);
        let secs = doc["runs"][0]["phases"][0]["elapsed_ns"].as_f64().unwrap() / 1e9;
        assert!(
            (at_least..below).contains(&secs),
            "{mode} {workers}: {secs} s"
        );
        assert_eq!(doc["runs"][0]["phases"][0]["ops"], 100, "{mode} {workers}");
    }
}

/// strace runs with TZ set (else glibc stats /etc/localtime twice a line); the command gets
/// the TZ it would have had, or none.
#[test]
fn the_command_keeps_its_time_zone() {
    if !can_capture("the command's TZ", &[]) {
        return;
    }
    let work = tmpfs_tempdir();
    for (tz, want) in [
        (None, "[unset]\n"),
        (Some("Europe/Paris"), "[Europe/Paris]\n"),
    ] {
        let root = work.path().join(format!("r{}", want.len()));
        std::fs::create_dir(&root).unwrap();
        let state = tempdir();
        let mut cmd = fsbench(state.path());
        match tz {
            Some(tz) => cmd.env("TZ", tz),
            None => cmd.env_remove("TZ"),
        };
        let trace = work.path().join(format!("tz{}.trace", want.len()));
        let out = output_within(
            cmd.current_dir(&root)
                .args(["capture", "-o"])
                .arg(&trace)
                .args(["--", "sh", "-c", "echo \"[${TZ-unset}]\" > tz"]),
            limit(),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(std::fs::read_to_string(root.join("tz")).unwrap(), want);
    }
}

/// Capture's peak resident memory, strace's capture of `true` in a root of `files` empty
/// files (in 100 directories) below `work`.
fn capture_peak(work: &Path, files: usize) -> u64 {
    let root = work.join(format!("root-{files}"));
    for d in 0..100 {
        std::fs::create_dir_all(root.join(format!("d{d}"))).unwrap();
    }
    for i in 0..files {
        std::fs::File::create(root.join(format!("d{}/f{i}", i % 100))).unwrap();
    }
    let trace = work.join(format!("{files}.trace"));
    let state = tempdir();
    let (out, peak) = with_peak(
        fsbench(state.path())
            .args([
                "capture",
                "--tracer",
                "strace",
                "--timeout",
                "120",
                "--root",
            ])
            .arg(&root)
            .arg("-o")
            .arg(&trace)
            .args(["--", "true"]),
    );
    ended(&out, 0);
    let entries = fsbench_model::units::group_thousands(files as u64 + 100);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("({entries} entries there before")),
        "{stdout}"
    );
    std::fs::remove_dir_all(&root).unwrap();
    peak
}

/// The initial state and the tree left are written as the root is walked, not held: ten
/// times the entries (about 170 bytes each when they were held: 30 MiB more) take no more
/// memory.
#[test]
fn captures_memory_does_not_grow_with_the_roots_entries() {
    if !can_capture("capture's memory against the root", &[]) {
        return;
    }
    let work = tmpfs_tempdir();
    let small = capture_peak(work.path(), 20_000);
    let large = capture_peak(work.path(), 200_000);
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    assert!(
        large < small + (4 << 20),
        "peak {:.1} MiB at 20,000 files, {:.1} MiB at 200,000",
        mib(small),
        mib(large)
    );
}

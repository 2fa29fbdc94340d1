//! Property tests of replay traces: a trace, hostile as it may be, is summarized and replayed
//! by the binary within the replay's memory bound, touching nothing outside its directory.

use crate::common::*;
use crate::traces::{bounded, seen};
use proptest::prelude::*;

/// Traces replayed by the binary, two processes each.
const TRACE_CASES: u32 = 150;

proptest! {
    #![proptest_config(ProptestConfig { cases: TRACE_CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn traces_are_replayed_or_refused_within_the_bound(
        entries in prop::collection::vec(trace_entry(), 0..6),
        mut calls in prop::collection::vec(trace_call(), 0..30),
        damage in prop::option::weighted(0.15, (any::<prop::sample::Index>(), damaged_line())),
        ended_well in prop::bool::weighted(0.95),
        version2 in any::<bool>(),
        version3 in any::<bool>(),
    ) {
        // Version 2 now and then: a program line, calls on the program's clock and by a
        // descriptor's /proc name, calls not recorded and the tree left, hostile as the rest;
        // half of those version 3, whose threads are in processes replayed as processes.
        let version = match (version2, version3) {
            (false, _) => 1,
            (true, false) => 2,
            (true, true) => 3,
        };
        if version2 {
            for (i, c) in calls.iter_mut().enumerate() {
                let flags = [0, 1, 1, 7][i % 4];
                c.push_str(&format!("\t{}\t{flags}", [0, 5, u64::MAX][i % 3]));
            }
            calls.extend(VERSION_2_TAIL.iter().map(|l| l.to_string()));
        }
        if version == 3 {
            calls.extend(TASKS.iter().map(|l| l.to_string()));
        }
        // Now and then one line that is damaged: the replay says where, whatever it holds.
        if let Some((at, line)) = damage {
            calls.insert(at.index(calls.len() + 1), line);
        }
        replays_or_refuses(&entries, &calls, ended_well, version);
    }
}

/// What follows a version 2 trace's calls: calls not recorded, and the tree the program left
/// (with names that climb out and link counts of any size).
const VERSION_2_TAIL: &[&str] = &[
    "skipped\toutside the root\t5\t%2Fetc%0A",
    "final\td\ta\t755",
    "final\tf\ta/x\t5\t644\t1",
    "final\tl\ts\ta",
    "final\tf\t../escape\t18446744073709551615\t7777\t99",
    "final\td\tOUTSIDE\t0",
];

/// A version 3 trace's processes: threads 1 and 2 of one, the others each its own.
const TASKS: &[&str] = &["task\t1\t1", "task\t2\t1", "task\t4294967295\t0"];

/// Writes the trace, has the binary summarize it and replay it into an empty directory
/// under the memory bound: each ends with a result or a clear error, and what is beside the
/// directory (a file the trace's symlinks name) is unchanged.
fn replays_or_refuses(entries: &[String], calls: &[String], ended_well: bool, version: u32) {
    use std::fmt::Write as _;
    let work = tmpfs_tempdir();
    let outside = work.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("canary"), b"keep").unwrap();
    let before = seen(&outside);
    // Directories for the generated names, a symlink inside and one to the outside.
    let mut text = format!("fsbench-trace {version}\nroot\t/captured\n");
    if version >= 2 {
        text.push_str("program\t9\t8\t7\t6\t22\t5\n");
    }
    text.push_str("d\ta\nd\ta/b\t700\nd\td\nl\ts\ta\nl\tl\tOUTSIDE\n");
    for line in entries.iter().chain([&"calls".to_string()]).chain(calls) {
        text.push_str(&line.replace("OUTSIDE", &outside.display().to_string()));
        text.push('\n');
    }
    if ended_well {
        let _ = writeln!(text, "end\t{}\t0", calls.len());
    }
    let trace = work.path().join("t.trace");
    std::fs::write(&trace, zstd::encode_all(text.as_bytes(), 1).unwrap()).unwrap();
    let dir = work.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let state = tempdir();
    let show = bounded(
        fsbench(state.path())
            .args(["capture", "--show"])
            .arg(&trace),
    );
    let replay = bounded(
        fsbench(state.path())
            .args(["capture", "--replay"])
            .arg(&trace)
            .arg("-C")
            .arg(&dir),
    );
    for out in [&show, &replay] {
        let err = text_of(&out.stderr);
        assert!(matches!(out.status.code(), Some(0..=2)), "{err}\n{text}");
        assert!(!err.contains("panicked"), "{err}\n{text}");
        if !out.status.success() {
            assert!(
                err.starts_with("fsbench: error: ") && err.len() < 4096,
                "{err}"
            );
        }
    }
    assert_eq!(seen(&outside), before, "{text}");
    // Nothing beside the directory: the outside, the trace, the run.
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 3, "{text}");
}

fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A path field of a trace: names that exist, names that climb out or are absolute, NUL,
/// no path at all.
fn trace_path() -> impl Strategy<Value = String> {
    let named = [
        "a", "a/b", "a/b/c", "s", "s/x", "l", "l/canary", ".", "d/e", "a/h", "a/x",
    ];
    let hostile = [
        "..",
        "../x",
        "OUTSIDE/canary",
        "/",
        "a/../../x",
        "%00",
        "a%00b",
        "-",
        "a%2Fb",
        "a//b/./c",
        "s/../../canary",
        "%2E%2E/x",
    ];
    prop_oneof![
        16 => prop::sample::select(named.to_vec()).prop_map(String::from),
        4 => prop::sample::select(hostile.to_vec()).prop_map(String::from),
        2 => "[a-z/.]{1,12}",
        1 => Just("n".repeat(300)),
    ]
}

/// A number of a type: mostly small, at times at the type's edges.
fn edges<T: std::fmt::Display + Clone + std::fmt::Debug + 'static>(
    small: impl Strategy<Value = T> + 'static,
    edges: Vec<T>,
) -> BoxedStrategy<String> {
    prop_oneof![
        5 => small.prop_map(|n| n.to_string()),
        1 => prop::sample::select(edges).prop_map(|n| n.to_string()),
    ]
    .boxed()
}

/// A line of the initial state: mostly names the base state lacks, which the calls use.
fn trace_entry() -> impl Strategy<Value = String> {
    let fresh = ["a/x", "a/b/y", "a/b/c", "d/e", "d/z", "f", "a/h"];
    let name = || {
        prop_oneof![
            4 => prop::sample::select(fresh.to_vec()).prop_map(String::from),
            1 => trace_path(),
        ]
    };
    let target = prop::sample::select(vec!["OUTSIDE", "..", "/", "a", "../..", "OUTSIDE/canary"]);
    let size = edges(0u64..5000, vec![1 << 62, 1 << 63, u64::MAX]);
    prop_oneof![
        6 => name().prop_map(|p| format!("d\t{p}")),
        6 => (name(), size).prop_map(|(p, n)| format!("f\t{p}\t{n}")),
        6 => (name(), target).prop_map(|(p, t)| format!("l\t{p}\t{t}")),
        4 => (name(), name()).prop_map(|(p, q)| format!("h\t{p}\t{q}")),
        // With an attribute: of the entry, or of another path (damage).
        3 => (name(), xattr()).prop_map(|(p, x)| format!("d\t{p}\nx\t{p}\t{x}")),
        3 => (name(), trace_path(), xattr())
            .prop_map(|(p, q, x)| format!("l\t{p}\tOUTSIDE/canary\nx\t{q}\t{x}")),
    ]
}

/// An attribute line's NAME SIZE [VALUE]: namespaces the kernel takes or refuses, names and
/// sizes at and past its bounds, an ACL's value of any length.
fn xattr() -> impl Strategy<Value = String> {
    let names = vec![
        "user.a".to_string(),
        "trusted.t".to_string(),
        "security.s".to_string(),
        "system.posix_acl_access".to_string(),
        format!("user.{}", "n".repeat(250)),
        format!("user.{}", "n".repeat(251)),
        "a%00b".to_string(),
    ];
    let size = edges(0u64..70_000, vec![65_536, 65_537, u64::MAX]);
    let value = prop_oneof![3 => Just(String::new()), 1 => "\t[0-9a-f]{0,12}"];
    (prop::sample::select(names), size, value).prop_map(|(n, s, v)| format!("{n}\t{s}{v}"))
}

/// A line that is no call: fields missing, escapes that are no bytes, words for numbers,
/// an end after 2^64 µs.
fn damaged_line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9\t%-]{0,30}",
        trace_call().prop_map(|c| c.replacen("\t0\t", "\tbogus\t", 1)),
        Just(format!(
            "1\t{}\t2\tstat\t0\t0\t-1\t-1\t1\t-1\ta\t-",
            u64::MAX - 1
        )),
        trace_call().prop_map(|c| c.replacen('\t', "\t%zz", 1)),
        trace_call().prop_map(|c| c
            .rsplit_once('\t')
            .map_or(c.clone(), |(head, _)| head.into())),
    ]
}

/// A call: TID START DUR KIND RESULT ERRNO FD FD2 A B PATH PATH2, each field of its type,
/// at times at its edges (descriptors of any number, lengths of 2^64 - 1, times that
/// overflow).
fn trace_call() -> impl Strategy<Value = String> {
    let kinds: Vec<&str> = fsbench_workloads::replay::trace::Kind::ALL
        .iter()
        .map(|k| k.name())
        .collect();
    let fd = || edges(-1i32..8, vec![-5, -100, i32::MAX, i32::MIN]);
    let times = (
        edges(0u32..4, vec![u32::MAX]),
        edges(0u64..1_000_000, vec![1_000_000_000_000, u64::MAX / 2]),
        edges(0u64..100, vec![1_000_000, u64::MAX / 4]),
    );
    let outcome = (
        edges(-1i64..5000, vec![i64::MAX, i64::MIN]),
        edges(
            prop::sample::select(vec![0i32, 0, 0, 2, 9, 13]),
            vec![-1, i32::MAX],
        ),
    );
    let args = (
        fd(),
        fd(),
        edges(
            0u64..5000,
            vec![0o101, 0o1101, 0o301, 1, 2, 1 << 40, u64::MAX],
        ),
        edges(-1i64..4096, vec![i64::MAX, i64::MIN]),
    );
    (
        times,
        prop::sample::select(kinds),
        outcome,
        args,
        trace_path(),
        trace_path(),
    )
        .prop_map(|((tid, start, dur), kind, (result, errno), (fd, fd2, a, b), p, q)| {
            format!("{tid}\t{start}\t{dur}\t{kind}\t{result}\t{errno}\t{fd}\t{fd2}\t{a}\t{b}\t{p}\t{q}")
        })
}

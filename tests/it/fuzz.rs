//! Property tests of the parsers that read user input: workload and filesystem spec strings,
//! FFSB profiles, suite files and replay traces. Whatever the input, a parser returns a value
//! or a clear error, and never panics or hangs; what parses also validates, describes and
//! sizes itself without a panic; a trace, hostile as it may be, is summarized and replayed by
//! the binary within the replay's memory bound, touching nothing outside its directory. The
//! case counts are bounded so the suite stays fast (under a minute).

use crate::common::*;
use crate::traces::{bounded, seen};
use fsbench_workloads::Params;
use fsbench_workloads::archive::tarfile::TarReader;
use fsbench_workloads::ffsb::profile;
use proptest::prelude::*;

const CASES: u32 = 2000;
/// Traces replayed by the binary, two processes each.
const TRACE_CASES: u32 = 150;

/// Everything a parsed workload offers must work without a panic.
fn exercise(spec: &Params) {
    let _ = spec.validate();
    assert!(!spec.label().is_empty());
    let _ = spec.phases();
    // A generated archive's totals walk its every entry (up to the billion entries validation
    // allows): as slow as generating the archive, so only for the small presets here.
    let label = spec.label();
    if !label.starts_with("archive") || label == "archive:tiny" || label == "archive:small" {
        let _ = spec.space_needed();
        let _ = spec.describe();
    }
}

fn assert_clear(e: &anyhow::Error, input: &str) {
    let text = format!("{e:#}");
    assert!(!text.trim().is_empty(), "empty error for {input:?}");
    assert!(
        text.len() < 4096,
        "a {}-byte error for {input:?}",
        text.len()
    );
}

/// Values that stress number parsing: huge, negative, suffixed, empty, odd characters.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        (0u64..5000).prop_map(|n| n.to_string()),
        (
            1u64..64,
            prop::sample::select(vec!["k", "m", "g", "t", "p", "e", "KiB", "x"])
        )
            .prop_map(|(n, s)| format!("{n}{s}")),
        Just("99999999999999999999999".to_string()),
        Just("-1".to_string()),
        Just(String::new()),
        "[a-z0-9+=:,._/-]{0,12}",
        "\\PC{0,8}",
    ]
}

fn workload_text() -> impl Strategy<Value = String> {
    let kind = prop::sample::select(vec![
        "tree",
        "atomic",
        "iozone",
        "io",
        "alloc",
        "archive",
        "ffsb",
        "ffsb-large-write",
        "nope",
        "",
    ]);
    let key = prop::sample::select(vec![
        "dirs",
        "files",
        "size",
        "levels",
        "d",
        "f",
        "s",
        "l",
        "count",
        "dd-count",
        "dd-blocks",
        "dd-bs",
        "sizes",
        "records",
        "tests",
        "threads",
        "max",
        "methods",
        "chunks",
        "fresh",
        "durable",
        "pool",
        "hosts",
        "backups",
        "per-dir",
        "empty",
        "regular",
        "popular",
        "min-size",
        "max-size",
        "seed",
        "order",
        "block",
        "direct",
        "sync",
        "quick",
        "small-shallow",
        "seed-1pct",
        "tiny",
        "large-write",
        "auto",
        "bs",
        "bssplit",
        "rw",
        "filesize",
        "offset",
        "iodepth",
        "ioengine",
        "runtime",
        "rate_iops",
        "random_distribution",
        "bogus",
    ]);
    let item = (key, prop::option::of(value())).prop_map(|(k, v)| match v {
        Some(v) => format!("{k}={v}"),
        None => k.to_string(),
    });
    (kind, prop::collection::vec(item, 0..5))
        .prop_map(|(kind, items)| format!("{kind}:{}", items.join(",")))
}

/// Reads every member of `bytes` (their data too); the members read, or the error's text.
fn read_tar(bytes: &[u8]) -> Result<usize, String> {
    let mut reader = TarReader::new(bytes);
    // Each member consumes at least one 512-byte block, so this bound is never the limit.
    for members in 0..=bytes.len() / 512 + 1 {
        let more = reader
            .next(&mut |_, data| std::io::copy(data, &mut std::io::sink()).map(|_| ()))
            .map_err(|e| e.to_string())?;
        if !more {
            return Ok(members);
        }
    }
    panic!("the reader did not advance");
}

/// A small valid archive: files, a directory, links, a long name, PAX headers.
fn valid_tar() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut add = |path: &str, kind: tar::EntryType, data: &[u8], link: Option<&str>| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        match link {
            Some(l) => b.append_link(&mut h, path, l).unwrap(),
            None => b.append_data(&mut h, path, data).unwrap(),
        }
    };
    add("d/", tar::EntryType::Directory, b"", None);
    add("d/a", tar::EntryType::Regular, &[7u8; 700], None);
    add(
        &format!("d/{}", "long".repeat(40)),
        tar::EntryType::Regular,
        b"x",
        None,
    );
    add("d/h", tar::EntryType::Link, b"", Some("d/a"));
    add("d/s", tar::EntryType::Symlink, b"", Some("a"));
    b.into_inner().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_are_read_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..3000)) {
        if let Err(e) = read_tar(&bytes) {
            prop_assert!(!e.trim().is_empty() && e.len() < 4096);
        }
    }

    #[test]
    fn mutated_archives_are_read_or_refused(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut bytes = valid_tar();
        prop_assert_eq!(read_tar(&bytes), Ok(5));
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        if let Err(e) = read_tar(&bytes) {
            prop_assert!(!e.trim().is_empty() && e.len() < 4096);
        }
    }

    #[test]
    fn workload_specs_parse_or_say_why(text in workload_text()) {
        // A workload that would read a file (an FFSB profile, a tar archive) reads only regular
        // files; these strings name none that exist.
        match Params::parse(&text) {
            Ok(spec) => exercise(&spec),
            Err(e) => assert_clear(&e, &text),
        }
    }

    #[test]
    fn arbitrary_workload_strings_never_panic(text in "\\PC{0,40}") {
        match Params::parse(&text) {
            Ok(spec) => exercise(&spec),
            Err(e) => assert_clear(&e, &text),
        }
    }

    #[test]
    fn filesystem_specs_parse_or_say_why(
        fs in prop::sample::select(vec!["ext4", "xfs", "btrfs", "tmpfs", "ext2", "zfs", "", "ext4,xfs"]),
        rest in "(:(mkfs|mount|label)=[a-zA-Z0-9 ^,=:'\"/_-]{0,16}){0,3}",
    ) {
        let text = format!("{fs}{rest}");
        match fsbench_testbed::define::parse_fs(&text) {
            Ok(configs) => prop_assert!(configs.iter().all(|c| !c.label.is_empty())),
            Err(e) => assert_clear(&e, &text),
        }
    }

    #[test]
    fn ffsb_profiles_parse_or_say_why(lines in prop::collection::vec(profile_line(), 0..24)) {
        let text = lines.join("\n");
        match profile::parse(&text, "fuzz") {
            Ok(params) => exercise(&Params::from(params)),
            Err(e) => assert_clear(&e, &text),
        }
    }

    #[test]
    fn mutated_seed_profiles_parse_or_say_why(
        edits in prop::collection::vec((any::<prop::sample::Index>(), profile_line()), 0..4),
        drop in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut lines: Vec<String> = SEED_PROFILE.lines().map(str::to_string).collect();
        if let Some(i) = drop {
            lines.remove(i.index(lines.len()));
        }
        for (at, line) in edits {
            let i = at.index(lines.len() + 1);
            lines.insert(i, line);
        }
        let text = lines.join("\n");
        match profile::parse(&text, "fuzz") {
            Ok(params) => exercise(&Params::from(params)),
            Err(e) => assert_clear(&e, &text),
        }
    }

    #[test]
    fn suite_files_parse_or_say_why(lines in prop::collection::vec(suite_line(), 0..12)) {
        let text = lines.join("\n");
        match fsbench_testbed::define::parse_suite(&text) {
            Ok(suite) => {
                let _ = fsbench_testbed::define::validate(&suite);
                for w in &suite.workloads {
                    match Params::of(w) {
                        Ok(w) => exercise(&w),
                        Err(e) => assert_clear(&e, &text),
                    }
                }
            }
            Err(e) => assert_clear(&e, &text),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: TRACE_CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn traces_are_replayed_or_refused_within_the_bound(
        entries in prop::collection::vec(trace_entry(), 0..6),
        mut calls in prop::collection::vec(trace_call(), 0..30),
        damage in prop::option::weighted(0.15, (any::<prop::sample::Index>(), damaged_line())),
        ended_well in prop::bool::weighted(0.95),
        version2 in any::<bool>(),
    ) {
        // Version 2 now and then: a program line, calls on the program's clock and by a
        // descriptor's /proc name, calls not recorded and the tree left, hostile as the rest.
        if version2 {
            for (i, c) in calls.iter_mut().enumerate() {
                let flags = [0, 1, 1, 7][i % 4];
                c.push_str(&format!("\t{}\t{flags}", [0, 5, u64::MAX][i % 3]));
            }
            calls.extend(VERSION_2_TAIL.iter().map(|l| l.to_string()));
        }
        // Now and then one line that is damaged: the replay says where, whatever it holds.
        if let Some((at, line)) = damage {
            calls.insert(at.index(calls.len() + 1), line);
        }
        replays_or_refuses(&entries, &calls, ended_well, version2);
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

/// Writes the trace, has the binary summarize it and replay it into an empty directory
/// under the memory bound: each ends with a result or a clear error, and what is beside the
/// directory (a file the trace's symlinks name) is unchanged.
fn replays_or_refuses(entries: &[String], calls: &[String], ended_well: bool, version2: bool) {
    use std::fmt::Write as _;
    let work = tmpfs_tempdir();
    let outside = work.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("canary"), b"keep").unwrap();
    let before = seen(&outside);
    // Directories for the generated names, a symlink inside and one to the outside.
    let mut text = if version2 {
        String::from("fsbench-trace 2\nroot\t/captured\nprogram\t9\t8\t7\t6\t22\t5\n")
    } else {
        String::from("fsbench-trace 1\nroot\t/captured\n")
    };
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
    ]
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

/// The FFSB large-file write report's profile, as users have it.
const SEED_PROFILE: &str = "num_filesystems=1
num_threadgroups=1
directio=0
time=600

[filesystem0]
        location=/mnt/test/
        num_files=0
        num_dirs=0
        max_filesize=1073741824
        min_filesize=1073741824
[end0]

[threadgroup0]
        num_threads=128
        write_size=65536
        write_blocksize=65536
        create_weight=1
[end0]";

fn profile_line() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "time",
        "directio",
        "alignio",
        "bufferio",
        "num_filesystems",
        "num_threadgroups",
        "num_files",
        "num_dirs",
        "min_filesize",
        "max_filesize",
        "size_weight",
        "num_threads",
        "read_size",
        "read_blocksize",
        "write_size",
        "write_blocksize",
        "read_weight",
        "write_weight",
        "create_weight",
        "delete_weight",
        "append_weight",
        "stat_weight",
        "metaop_weight",
        "readall_weight",
        "op_delay",
        "read_skip",
        "num_ops",
        "agefs",
        "desired_util",
        "location",
        "reuse",
        "bogus",
    ]);
    prop_oneof![
        4 => (key, value()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => prop::sample::select(vec![
            "[filesystem0]", "[end0]", "[threadgroup0]", "[threadgroup1]", "[end1]", "[stats]",
            "[end]", "[filesystem]", "[threadgroup]", "# comment", "", "[", "]",
        ]).prop_map(str::to_string),
        1 => "\\PC{0,20}",
    ]
}

fn suite_line() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "name = \"x\"",
            "purpose = \"why\"",
            "runs = 3",
            "runs = 0",
            "runs = -1",
            "runs = 99999999999",
            "min_phase_secs = -1.0",
            "max_cv_percent = nan",
            "drop_caches = false",
            "[target]",
            "kind = \"image\"",
            "kind = \"dir\"",
            "kind = \"device\"",
            "path = \"/nonexistent\"",
            "size = \"1p\"",
            "size = \"x\"",
            "[[config]]",
            "fs = \"ext4\"",
            "fs = \"zfs\"",
            "mkfs = \"-O ^has_journal\"",
            "mkfs = \"'unbalanced\"",
            "mount = \"noatime\"",
            "[[workload]]",
            "kind = \"tree\"",
            "kind = \"atomic\"",
            "kind = \"iozone\"",
            "kind = \"alloc\"",
            "kind = \"ffsb\"",
            "kind = \"archive\"",
            "preset = \"quick\"",
            "preset = \"quick-shallow\"",
            "dirs = 3",
            "levels = 4000",
            "count = 18446744073709551615",
            "size = 1",
        ])
        .prop_map(str::to_string),
        "[a-z_]{1,8} = [0-9\"a-z]{0,6}",
    ]
}

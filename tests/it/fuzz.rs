//! Property tests of the parsers that read user input: workload and filesystem spec strings,
//! FFSB profiles, suite files and tar archives. Whatever the input, a parser returns a value
//! or a clear error, and never panics or hangs; what parses also validates, describes and
//! sizes itself without a panic (replay traces: `fuzz_traces`). The case counts are bounded
//! so the suite stays fast (under a minute).

use fsbench_workloads::Params;
use fsbench_workloads::archive::tarfile::TarReader;
use fsbench_workloads::ffsb::profile;
use proptest::prelude::*;

const CASES: u32 = 2000;

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

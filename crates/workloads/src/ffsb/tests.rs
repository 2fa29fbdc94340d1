use super::*;

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
[end0]
";

#[test]
fn the_seed_profile_parses_as_written() {
    let p = profile::parse(SEED_PROFILE, "seed.ffsb").unwrap();
    assert_eq!(p.time, Some(600));
    assert_eq!(p.groups.len(), 1);
    let g = &p.groups[0];
    assert_eq!(g.num_threads, 128);
    assert_eq!((g.write_size, g.write_blocksize), (65536, 65536));
    assert_eq!(g.weights.get(&Op::Create), Some(&1));
    assert_eq!(p.fileset.max_filesize, 1 << 30);
    assert_eq!(p.fileset.location.as_deref(), Some("/mnt/test/"));
    assert_eq!(p.name(), "profile=seed.ffsb");
    // 128 files of 1 GiB in flight: the target must hold them.
    assert!(p.space_needed().unwrap().bytes >= 128 << 30);
}

#[test]
fn the_file_set_is_written_in_ffsb_s_create_blocksize() {
    let p = profile::parse(SEED_PROFILE, "seed.ffsb").unwrap();
    assert_eq!(p.fileset.create_block(), 4096, "FFSB's default");
    let text = SEED_PROFILE.replace("num_dirs=0", "num_dirs=0\n    create_blocksize=64k");
    let p = profile::parse(&text, "seed.ffsb").unwrap();
    assert_eq!(p.fileset.create_block(), 64 << 10);
}

#[test]
fn profile_errors_name_the_line() {
    let typo = SEED_PROFILE.replace("write_blocksize", "write_blocksise");
    let e = profile::parse(&typo, "t.ffsb").unwrap_err().to_string();
    assert!(
        e.contains("line 17") && e.contains("write_blocksise"),
        "{e}"
    );
    let bad = SEED_PROFILE.replace("num_threads=128", "num_threads=many");
    let e = profile::parse(&bad, "t.ffsb").unwrap_err().to_string();
    assert!(e.contains("line 15") && e.contains("many"), "{e}");
    let count = SEED_PROFILE.replace("num_threadgroups=1", "num_threadgroups=2");
    let e = profile::parse(&count, "t.ffsb").unwrap_err().to_string();
    assert!(e.contains("line 2"), "{e}");
    let open = SEED_PROFILE.replace("[end0]\n\n[threadgroup0]", "\n[threadgroup0]");
    assert!(profile::parse(&open, "t.ffsb").is_err());
    let aging = SEED_PROFILE.replace("num_dirs=0", "agefs=1");
    let e = profile::parse(&aging, "t.ffsb").unwrap_err().to_string();
    assert!(
        e.contains("line 9") && e.contains("aging thread group"),
        "{e}"
    );
    let init = SEED_PROFILE.replace("num_dirs=0", "init_util=0.5");
    let e = profile::parse(&init, "t.ffsb").unwrap_err().to_string();
    assert!(e.contains("not supported") && e.contains("--fill"), "{e}");
}

#[test]
fn op_order_is_the_table_order() {
    for (i, op) in Op::ALL.iter().enumerate() {
        assert_eq!(*op as usize, i, "{op:?}");
    }
}

#[test]
fn sizes_weights_and_spaces_parse() {
    let text = "time=10\n[filesystem0]\nnum_files=10\nsize_weight 4k 33\nsize_weight 1m 67\n[end0]\n\
                [threadgroup0]\nnum_threads=2\nread_weight=3\nstat_weight=1\nread_size=4k\nread_blocksize=4k\n\
                [stats]\nenable_stats=1\nmsec_range 0.00 0.01\n[end]\n[end0]\n";
    let p = profile::parse(text, "w.ffsb").unwrap();
    assert_eq!(p.fileset.size_weights, [(4096, 33), (1 << 20, 67)]);
    let g = &p.groups[0];
    assert_eq!(g.total_weight(), 4);
    // Cumulative choice in FFSB's table order: draws 0-2 read, 3 stat.
    let picks: Vec<Op> = (0..4).map(|d| g.choose(d)).collect();
    assert_eq!(picks, [Op::Read, Op::Read, Op::Read, Op::Stat]);
}

#[test]
fn operations_are_drawn_with_ffsb_s_byte_modulo_bias() {
    let mut g = ThreadGroup::default();
    for (op, w) in [
        (Op::Read, 4),
        (Op::Write, 2),
        (Op::Create, 1),
        (Op::Delete, 1),
        (Op::Stat, 2),
    ] {
        g.set_weight(op, w);
    }
    // FFSB draws one random byte for a sum below 256, modulo 10: 0-5 come 26 times in 256,
    // 6-9 25 times; only the low byte of fsbench's draw counts.
    let mut picks = std::collections::BTreeMap::new();
    for draw in 0..256u64 {
        *picks.entry(g.choose(draw | 0xABCD_0000)).or_insert(0) += 1;
    }
    let counts: Vec<u32> = [Op::Read, Op::Write, Op::Create, Op::Delete, Op::Stat]
        .iter()
        .map(|op| picks[op])
        .collect();
    assert_eq!(counts, [104, 52, 25, 25, 50]);
}

#[test]
fn large_write_preset_and_validation() {
    let p = FfsbParams::parse("large-write").unwrap();
    assert_eq!(p.groups[0].num_threads, 128);
    assert!(p.fileset.fit);
    assert_eq!(p.created_files(), 128);
    p.validate().unwrap();
    let q = FfsbParams::parse("threads=4,size=8m").unwrap();
    assert!(!q.fileset.fit);
    assert_eq!(q.space_needed().unwrap().bytes, 4 * (8 << 20) / 10 * 11);
    assert!(FfsbParams::parse("bogus").is_err());
    assert!(FfsbParams::parse("threads=x").is_err());
    let mut never = q.clone();
    never.groups[0].ops_per_thread = None;
    assert!(never.validate().is_err());
    let json = serde_json::to_string(&q).unwrap();
    assert_eq!(serde_json::from_str::<FfsbParams>(&json).unwrap(), q);
    let toml_text = toml::to_string(&q).unwrap();
    assert_eq!(toml::from_str::<FfsbParams>(&toml_text).unwrap(), q);
}

/// FFSB 6's own sections, as in its examples/profile_everything: no numbers, FFSB 6 keys only.
const FFSB6_PROFILE: &str = "directio = 0
time = 0

[filesystem]
	num_files	= 20
	num_dirs	= 3
	size_weight	4k	33
	size_weight	8k	21
[end]

[threadgroup]
	num_threads	= 2
	stat_weight	= 1
	read_weight	= 1
	read_size	= 4k
	read_blocksize	= 4k
	[stats]
		enable_stats	= 1
		msec_range	0.00 0.01
	[end]
[end]
";

#[test]
fn ffsb6_sections_and_time_zero_build_the_file_set_only() {
    let p = profile::parse(FFSB6_PROFILE, "six.ffsb").unwrap();
    assert_eq!(p.groups.len(), 1);
    assert_eq!(p.fileset.size_weights, [(4096, 33), (8192, 21)]);
    assert!(p.notes.is_empty(), "{:?}", p.notes);
    // time=0: FFSB builds the file set and exits ("Setup complete, exiting").
    assert!(p.setup_only());
    let phases = p.phases();
    let names: Vec<&str> = phases.iter().map(|i| i.name.as_ref()).collect();
    assert_eq!(names, ["setup", "remove"]);
    assert!(p.describe().contains("time=0: the file set only"));
    // With fsbench's num_ops, the groups still run their fixed amount.
    let counted = FFSB6_PROFILE.replace("num_threads\t= 2", "num_threads\t= 2\n\tnum_ops = 5");
    let p = profile::parse(&counted, "six.ffsb").unwrap();
    assert!(!p.setup_only() && p.run_time().is_none());
    assert_eq!(p.phases().len(), 3);
}

#[test]
fn ffsb5_counts_are_read_with_a_note_and_ffsb_aborts_are_errors() {
    let p = profile::parse(SEED_PROFILE, "seed.ffsb").unwrap();
    assert_eq!(p.notes.len(), 2, "{:?}", p.notes);
    assert!(p.notes[0].contains("line 1") && p.notes[0].contains("FFSB 6 rejects"));
    // FFSB asserts that a read fits the file it picked.
    let big_read =
        FFSB6_PROFILE.replace("read_size\t= 4k", "read_size\t= 8k\n\tread_blocksize = 8k");
    let e = profile::parse(&big_read, "six.ffsb")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("read_size 8192 is larger than the smallest file (4096)"),
        "{e}"
    );
    // A thread group inside [filesystem] is FFSB's aging group: run with agefs=1 (and
    // desired_util), noted and left out without, as FFSB leaves it.
    let group = "\t[threadgroup]\n\t\tcreate_weight = 10\n\t\tappend_weight = 10\n\t\t\
                 delete_weight = 1\n\t\twrite_size = 400\n\t\twrite_blocksize = 1024\n\t[end]\n";
    let idle = FFSB6_PROFILE.replace(
        "[end]\n\n[threadgroup]",
        &format!("{group}[end]\n\n[threadgroup]"),
    );
    let p = profile::parse(&idle, "six.ffsb").unwrap();
    assert!(
        p.fileset.aging.is_none() && p.notes[0].contains("aging group"),
        "{:?}",
        p.notes
    );
    let aged = idle.replace(
        "num_dirs\t= 3",
        "num_dirs\t= 3\n\tagefs = 1\n\tdesired_util = 0.3",
    );
    let p = profile::parse(&aged, "six.ffsb").unwrap();
    let aging = p.fileset.aging.clone().unwrap();
    assert_eq!(
        (
            aging.desired_util_ppm,
            aging.create,
            aging.append,
            aging.delete
        ),
        (300_000, 10, 10, 1)
    );
    let profile = aging.profile(&p.fileset);
    assert_eq!(
        (profile.target_util_percent, profile.write_block),
        (30.0, 400)
    );
    let e = profile::parse(
        &aged.replace("desired_util = 0.3", "desired_util = 2"),
        "six.ffsb",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("desired_util"), "{e}");
    let unknown = FFSB6_PROFILE.replace("[filesystem]", "[filesystems]");
    let e = profile::parse(&unknown, "six.ffsb")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 4") && e.contains("unknown section"), "{e}");
}

#[test]
fn files_are_named_and_spread_as_ffsb_6_does() {
    let mut names = worker::Names::default();
    assert_eq!(names.dir(2).to_str().unwrap(), "datadir2");
    let mut places = std::collections::BTreeMap::new();
    for id in 0..4000 {
        let name = names.file(id, 3).to_str().unwrap().to_string();
        let (place, file) = match name.split_once('/') {
            Some((dir, file)) => (dir.to_string(), file.to_string()),
            None => (String::new(), name.clone()),
        };
        assert_eq!(file, format!("datafile{id}"));
        *places.entry(place).or_insert(0) += 1;
    }
    // The top level and three directories, about a quarter each (FFSB picks one of dirs + 1).
    assert_eq!(places.len(), 4, "{places:?}");
    assert!(
        places.values().all(|n| (850..1150).contains(n)),
        "{places:?}"
    );
    assert_eq!(names.file(7, 0).to_str().unwrap(), "datafile7");
    // Under a root, the same place below it, whatever was built in between.
    let mut whole = worker::Names::under(b"/mnt/x/data/");
    let relative = names.file(12, 3).to_str().unwrap().to_string();
    whole.dir(1);
    assert_eq!(
        whole.file(12, 3).to_str().unwrap(),
        format!("/mnt/x/data/{relative}")
    );
}

#[test]
fn bufferio_is_read_as_ffsb_6_honours_it() {
    let buffered = FFSB6_PROFILE.replace("directio = 0", "directio = 0\nbufferio = 1");
    let p = profile::parse(&buffered, "six.ffsb").unwrap();
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("line 2: bufferio=1") && n.contains("same unbuffered")),
        "{:?}",
        p.notes
    );
    let plain = profile::parse(FFSB6_PROFILE, "six.ffsb").unwrap();
    assert_eq!(
        FfsbParams {
            notes: Vec::new(),
            ..p
        },
        plain,
        "the same I/O"
    );
}

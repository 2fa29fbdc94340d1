use super::walk::Name;
use super::*;

#[test]
fn article_preset_totals() {
    // The fdtree article's own figures (seed 000).
    let cases = [
        ("small-shallow", 8_421, 336_840, 1_347_360),
        ("small-deep", 88_573, 354_292, 1_417_168),
        ("medium-shallow", 307, 3_070, 12_280_000),
        ("medium-deep", 2_047, 4_094, 16_376_000),
    ];
    for (name, dirs, files, kib) in cases {
        let p = TreeParams::parse(name).unwrap();
        assert_eq!(
            (p.total_dirs(), p.total_files(), p.total_kib()),
            (dirs, files, kib),
            "{name}"
        );
    }
}

#[test]
fn names_are_fdtrees() {
    let mut n = Name::new();
    assert_eq!(n.of(3, b'D', 20).to_str().unwrap(), "L3D20");
    assert_eq!(n.of(0, b'F', 1).to_str().unwrap(), "L0F1");
    assert_eq!(
        n.of(u32::MAX, b'F', u32::MAX).to_str().unwrap(),
        "L4294967295F4294967295"
    );
}

#[test]
fn parses_presets_and_parameters() {
    let p = TreeParams::parse("small-deep").unwrap();
    assert_eq!((p.dirs, p.files, p.size, p.levels), (3, 4, 1, 10));
    let q = TreeParams::parse("d=20,f=40,s=1,l=3").unwrap();
    assert_eq!(q.preset.as_deref(), Some("small-shallow"));
    let r = TreeParams::parse("dirs=2,files=3,size=0,levels=1").unwrap();
    assert_eq!(r.name(), "d2-f3-s0-l1");
    assert!(TreeParams::parse("nonsense").is_err());
    assert!(TreeParams::parse("dirs=-1").is_err());
    assert!(TreeParams::parse("depth=3").is_err());
}

#[test]
fn rejects_zero_and_absurd_trees() {
    assert!(TreeParams::new(0, 1, 1, 1).validate().is_err());
    assert!(TreeParams::new(1, 0, 1, 1).validate().is_err());
    let huge = TreeParams::new(10_000, 1, 1, 100).validate().unwrap_err();
    assert!(huge.to_string().contains("absurdly large"), "{huge}");
    assert!(TreeParams::new(1, 1, 0, 0).validate().is_ok());
}

#[test]
fn suite_file_form_deserializes() {
    let p: TreeParams = toml::from_str("preset = \"medium-deep\"").unwrap();
    assert_eq!(p.total_files(), 4_094);
    let q: TreeParams = toml::from_str("preset = \"small-deep\"\nlevels = 2").unwrap();
    assert_eq!((q.levels, q.preset), (2, None));
    assert!(toml::from_str::<TreeParams>("dirz = 3").is_err());
}

#[test]
fn mdtest_phases_come_between_create_and_remove() {
    let spec = WorkloadSpec::parse("tree:quick-shallow,read,stat").unwrap();
    assert_eq!(spec.label(), "tree:quick-shallow,stat,read");
    assert_eq!(WorkloadSpec::parse(&spec.label()).unwrap(), spec);
    let phases = spec.phases();
    let names: Vec<&str> = phases.iter().map(|p| p.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "dir-create",
            "file-create",
            "file-stat",
            "file-read",
            "file-remove",
            "dir-remove"
        ]
    );
    let WorkloadSpec::Tree(only_read) = WorkloadSpec::parse("tree:d=2,f=2,s=1,l=1,read").unwrap()
    else {
        panic!()
    };
    assert_eq!(
        only_read.phase_kinds(),
        [DIR_CREATE, FILE_CREATE, FILE_READ, FILE_REMOVE, DIR_REMOVE]
    );
    assert!(
        only_read
            .describe()
            .ends_with("every file read (mdtest -E)")
    );
    // Without the flags: fdtree's four, labelled as before.
    let plain = WorkloadSpec::parse("tree:quick-shallow").unwrap();
    assert_eq!(plain.label(), "tree:quick-shallow");
    assert_eq!(plain.phases().len(), 4);
}

#[test]
fn threads_each_walk_a_tree_of_their_own() {
    use std::sync::Arc;
    let params = TreeParams::parse("dirs=2,files=3,levels=2,threads=3,stat").unwrap();
    assert_eq!(params.name(), "d2-f3-s1-l2,stat,threads=3");
    assert_eq!((params.total_dirs(), params.total_files()), (21, 63));
    let scratch = tempfile::tempdir().unwrap();
    let dir = rustix::fs::open(
        scratch.path(),
        rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
        Mode::empty(),
    )
    .unwrap();
    let mut tree = Tree::new(params, "root".into());
    let progress = Arc::new(crate::measure::Progress::default());
    let roots = |path: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    for phase in 0..tree.phases().len() {
        let mut rec = PhaseRecorder::start("phase", progress.clone());
        tree.run_phase(phase, dir.as_fd(), &mut rec).unwrap();
        let m = rec.finish();
        assert_eq!(m.ops, tree.expected_units(phase), "phase {phase}");
        assert!(m.errors.is_empty(), "phase {phase}: {:?}", m.errors);
        if phase == 0 {
            assert_eq!(roots(scratch.path()), ["root.t0", "root.t1", "root.t2"]);
        }
    }
    // Every thread's first-done is known, and every tree is gone.
    assert_eq!(progress.threads().0, 3 * 5);
    assert!(roots(scratch.path()).is_empty());
}

#[test]
fn io500_shaped_presets_and_byte_sizes() {
    let hard = TreeParams::parse("mdtest-hard").unwrap();
    assert_eq!(
        (hard.file_bytes(), hard.stat, hard.read),
        (3901, true, true)
    );
    assert_eq!(hard.name(), "mdtest-hard");
    assert_eq!(hard.total_kib(), (10_000 * 3901u64).div_ceil(1024));
    let easy = WorkloadSpec::parse_list("mdtest-easy").unwrap();
    assert_eq!(easy[0].label(), "tree:mdtest-easy");
    let WorkloadSpec::Tree(easy) = &easy[0] else {
        panic!("mdtest-easy is a tree");
    };
    assert_eq!((easy.file_bytes(), easy.levels, easy.stat), (0, 0, true));
    // Without the preset's flag it is a tree of its own; the old presets keep their flags.
    assert_eq!(
        TreeParams::parse("mdtest-easy,stat=false").unwrap().name(),
        "d1-f20000-s0-l0"
    );
    assert_eq!(
        TreeParams::parse("small-shallow,stat").unwrap().name(),
        "small-shallow,stat"
    );
    assert_eq!(
        TreeParams::parse("quick,bytes=100").unwrap().name(),
        "d25-f1-s1-l3,bytes=100"
    );
}

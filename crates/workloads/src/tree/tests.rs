use super::walk::Name;
use super::*;
use crate::Params;

#[test]
fn article_preset_totals() {
    // The fdtree article's own figures (its tables of directories, files and KiB).
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
    let spec = Params::parse("tree:quick-shallow,read,stat").unwrap();
    assert_eq!(spec.label(), "tree:quick-shallow,stat,read");
    assert_eq!(Params::parse(&spec.label()).unwrap(), spec);
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
    let only_read = Params::parse("tree:d=2,f=2,s=1,l=1,read").unwrap();
    let only_read: &TreeParams = only_read.get().unwrap();
    assert_eq!(
        only_read.phase_list(),
        [
            Phase::DirCreate,
            Phase::FileCreate,
            Phase::FileRead,
            Phase::FileRemove,
            Phase::DirRemove
        ]
    );
    assert!(
        only_read
            .describe()
            .ends_with("every file read (mdtest -E)")
    );
    // Without the flags: fdtree's four, labelled as before.
    let plain = Params::parse("tree:quick-shallow").unwrap();
    assert_eq!(plain.label(), "tree:quick-shallow");
    assert_eq!(plain.phases().len(), 4);
}

#[test]
fn workers_each_walk_a_tree_of_their_own() {
    let params = TreeParams::parse("dirs=2,files=3,levels=2,threads=3,stat").unwrap();
    assert_eq!(params.name(), "d2-f3-s1-l2,stat,threads=3");
    assert_eq!((params.total_dirs(), params.total_files()), (21, 63));
    walk_three_trees(params);
    let params = TreeParams::parse("dirs=2,files=3,levels=2,threads=3,stat,workers=threads");
    let params = params.unwrap();
    assert_eq!(params.name(), "d2-f3-s1-l2,stat,threads=3,workers=threads");
    assert!(
        params
            .describe()
            .ends_with("3 threads, each on a tree of its own")
    );
    walk_three_trees(params);
}

/// Every phase of a tree of 3 workers: every unit counted, every tree made and removed.
fn walk_three_trees(params: TreeParams) {
    use std::sync::Arc;
    let scratch = tempfile::tempdir().unwrap();
    let dir = rustix::fs::open(
        scratch.path(),
        rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
        Mode::empty(),
    )
    .unwrap();
    let mut tree = Tree::new(params, "root".into());
    let progress = Arc::new(fsbench_measure::measure::Progress::default());
    for phase in 0..tree.phases().len() {
        let mut rec = PhaseRecorder::start("phase", progress.clone());
        tree.run_phase(phase, dir.as_fd(), &mut rec).unwrap();
        let m = rec.finish();
        assert_eq!(m.ops, tree.expected_units(phase), "phase {phase}");
        assert!(m.errors.is_empty(), "phase {phase}: {:?}", m.errors);
        if phase == 0 {
            assert_eq!(names_in(scratch.path()), ["root.t0", "root.t1", "root.t2"]);
        }
    }
    // Every thread's first-done is known, and every tree is gone.
    assert_eq!(progress.threads().0, 3 * 5);
    assert!(names_in(scratch.path()).is_empty());
    // The threads' private tables left nothing open in the process: no descriptor but `dir`
    // is anywhere in the scratch directory.
    let leaked: Vec<_> = std::fs::read_dir("/proc/thread-self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.unwrap().path()).ok())
        .filter(|target| target.starts_with(scratch.path()) && target != scratch.path())
        .collect();
    assert!(leaked.is_empty(), "{leaked:?}");
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
    let easy = Params::parse_list("mdtest-easy").unwrap();
    assert_eq!(easy[0].label(), "tree:mdtest-easy");
    let easy: &TreeParams = easy[0].get().expect("mdtest-easy is a tree");
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

/// The directory `scratch` as a descriptor, for running phases in it.
fn open_scratch(scratch: &tempfile::TempDir) -> std::os::fd::OwnedFd {
    rustix::fs::open(
        scratch.path(),
        rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
        Mode::empty(),
    )
    .unwrap()
}

/// Names in `path`, sorted.
fn names_in(path: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Runs every phase of `tree` in `dir`, calling `after` with each phase's index and ops;
/// every phase but a stonewalled file create does the units it expects, without an error.
fn run_all(tree: &mut Tree, dir: &std::os::fd::OwnedFd, mut after: impl FnMut(usize, u64)) {
    let progress = std::sync::Arc::new(fsbench_measure::measure::Progress::default());
    for phase in 0..tree.phases().len() {
        let mut rec = PhaseRecorder::start("phase", progress.clone());
        tree.run_phase(phase, dir.as_fd(), &mut rec).unwrap();
        let m = rec.finish();
        assert!(m.errors.is_empty(), "phase {phase}: {:?}", m.errors);
        if !(tree.stonewall.is_some() && tree.phases[phase] == Phase::FileCreate) {
            assert_eq!(m.ops, tree.expected_units(phase), "phase {phase}");
        }
        after(phase, m.ops);
    }
}

#[test]
fn a_shared_trees_files_carry_their_owners_rank_and_thread() {
    let mut n = Name::new();
    let share = |rank, thread| {
        Some(Share {
            makes_dirs: false,
            rank,
            thread,
        })
    };
    assert_eq!(
        n.owned(0, b'F', 3, share(Some(2), None)).to_str(),
        Ok("L0F3.r2")
    );
    assert_eq!(
        n.owned(1, b'F', 9, share(None, Some(4))).to_str(),
        Ok("L1F9.t4")
    );
    let longest = n.owned(
        MAX_LEVELS,
        b'F',
        u32::MAX,
        share(Some(u32::MAX), Some(u32::MAX)),
    );
    assert_eq!(
        longest.to_str(),
        Ok("L100F4294967295.r4294967295.t4294967295")
    );
}

#[test]
fn shared_threads_fill_one_tree_that_thread_0_makes_and_removes() {
    let params = TreeParams::parse("dirs=2,files=3,levels=1,threads=3,shared,stat").unwrap();
    assert_eq!(params.name(), "d2-f3-s1-l1,stat,threads=3,shared");
    // One tree's 3 directories; every thread's 3 files in each.
    assert_eq!((params.total_dirs(), params.total_files()), (3, 27));
    let alone = TreeParams::parse("dirs=2,files=3,levels=1,shared").unwrap();
    assert!(alone.validate().is_err(), "shared needs threads");
    let scratch = tempfile::tempdir().unwrap();
    let dir = open_scratch(&scratch);
    let mut tree = Tree::new(params, "root".into());
    let root = scratch.path().join("root");
    run_all(&mut tree, &dir, |phase, ops| match phase {
        0 => {
            assert_eq!(ops, 3);
            assert_eq!(names_in(scratch.path()), ["root"]);
            assert_eq!(names_in(&root), ["L1D1", "L1D2"]);
        }
        1 => {
            assert_eq!(ops, 27);
            let mut want: Vec<String> = (0..3)
                .flat_map(|t| (1..=3).map(move |f| format!("L1F{f}.t{t}")))
                .chain(["L1D1".into(), "L1D2".into()])
                .collect();
            want.sort();
            assert_eq!(names_in(&root), want);
            assert_eq!(names_in(&root.join("L1D2")).len(), 9);
        }
        _ => {}
    });
    assert!(names_in(scratch.path()).is_empty());
    // The directory phases note who made the tree.
    let out = tree.after_phase(0, dir.as_fd()).unwrap();
    assert!(out.notes[0].contains("one shared tree"));
}

/// The stonewall's counts, as the fake agreement saw them.
static REACHED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One rank's agreement, as if another rank had made 3,000 files.
fn another_made_3000(count: u64, failed: bool) -> u64 {
    assert!(!failed);
    REACHED.store(count, std::sync::atomic::Ordering::Relaxed);
    count.max(3000)
}

#[test]
fn the_stonewall_stops_file_create_and_wears_out_to_the_agreed_count() {
    let params = TreeParams::parse("dirs=3,files=20000,levels=1,size=0,stat,read").unwrap();
    let total = params.total_files();
    let scratch = tempfile::tempdir().unwrap();
    let dir = open_scratch(&scratch);
    let stonewall = Stonewall::new(std::time::Duration::from_millis(1), another_made_3000);
    let agreed = stonewall.agreed.clone();
    let mut tree = Tree::new(params, "root".into()).with_stonewall(stonewall);
    let mut ops = Vec::new();
    run_all(&mut tree, &dir, |_, n| ops.push(n));
    let wall = *agreed.get().expect("file create agreed");
    let reached = REACHED.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(wall.reached, reached);
    // 80,000 files do not fit in a millisecond: it stopped, then went on to the agreed 3,000
    // (or to its own count, if that was more).
    assert!(reached < total, "reached {reached} of {total}");
    assert_eq!(wall.items, reached.max(3000));
    assert!(wall.secs >= 0.001);
    // Create, stat, read and remove all saw that many files, the first ones of the walk: no
    // error for a file never made (run_all checks), and the whole tree went away.
    assert_eq!(&ops[1..5], [wall.items; 4]);
    assert_eq!(ops[0], 4);
    assert!(names_in(scratch.path()).is_empty());
}

/// Calls of the fake agreement below that said "failed".
static FAILED_CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn count_failures(_count: u64, failed: bool) -> u64 {
    if failed {
        FAILED_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    u64::MAX
}

#[test]
fn a_rank_that_never_agreed_gives_its_word_as_a_failure_once() {
    let stonewall = Stonewall::new(std::time::Duration::from_secs(1), count_failures);
    stonewall.abandon();
    stonewall.abandon();
    assert_eq!(FAILED_CALLS.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(stonewall.agreed.get().map(|a| a.items), Some(0));
}

#[test]
fn empty_files_need_their_metadata_and_no_block_each() {
    // 10^7 empty files (11,111,111 directories' worth of tree at 10 per level).
    let p = TreeParams::parse("dirs=10,files=10,size=1,levels=6,bytes=0").unwrap();
    let need = p.space_needed().unwrap();
    let (dirs, files) = (p.total_dirs(), p.total_files());
    assert_eq!(need.inodes, dirs + files);
    assert_eq!(need.bytes, dirs * 4096 + files * 1024);
    assert!(need.bytes < 20 << 30, "{}", need.bytes);
}

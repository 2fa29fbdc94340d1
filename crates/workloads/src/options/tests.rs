use crate::alloc::AllocParams;
use crate::atomic::AtomicParams;
use crate::iozone::IozoneParams;
use crate::{Params, WORKLOADS};
use fsbench_model::workload::WorkloadSpec;

fn err(text: &str) -> String {
    format!("{:#}", Params::parse(text).unwrap_err())
}

#[test]
fn types_and_ranges_come_from_the_table() {
    assert_eq!(
        err("tree:levels=200"),
        "tree: `levels` must be between 0 and 100, got 200"
    );
    assert!(err("tree:dirs=0").contains("`dirs` must be at least 1"));
    assert!(err("tree:dirs=x").contains("not a non-negative integer"));
    assert!(err("atomic:dd-bs=1q").contains("unknown suffix"));
    assert!(err("alloc:fresh=disk").contains("`fresh` is one of file, fs; got `disk`"));
    assert!(err("iozone:direct=maybe").contains("is a flag"));
    assert!(err("iozone:tests=0+8").contains("`tests` is one of"));
    let a = Params::parse("atomic:dd-bs=8k").unwrap();
    assert_eq!(a.get::<AtomicParams>().unwrap().dd_block_size, 8192);
}

#[test]
fn presets_supply_values_and_keys_override_in_any_order() {
    let before = Params::parse("tree:small-deep,levels=2").unwrap();
    let after = Params::parse("tree:levels=2,small-deep").unwrap();
    let keyed = Params::parse("tree:levels=2,preset=small-deep").unwrap();
    assert_eq!(before, after);
    assert_eq!(before, keyed);
    assert_eq!(before.label(), "tree:d3-f4-s1-l2");
    // Flags and keys keep the preset whichever comes first.
    let a = Params::parse("iozone:direct,threads=2,auto").unwrap();
    let b = Params::parse("iozone:auto,threads=2,direct").unwrap();
    assert_eq!(a, b);
    let p: &IozoneParams = a.get().unwrap();
    assert_eq!(p.file_sizes.last(), Some(&(512 << 20)));
    assert!(p.direct && p.threads == 2);
    // A preset's `sizes` gives way to an explicit `max`, and the reverse.
    let p = Params::parse("iozone:max=1m,seq-1m").unwrap();
    let p: &IozoneParams = p.get().unwrap();
    assert_eq!(
        (p.file_sizes.last(), p.groups.as_slice()),
        (Some(&(1 << 20)), &[0, 1][..])
    );
    assert!(err("iozone:sizes=1m,max=4m").contains("not both"));
    // The fast preset: 2 file sizes × 2 record sizes of 3 test groups, less the 4 KiB records
    // of the 64 MiB file (IOzone's rule for files over 16 MiB).
    let p = Params::parse("iozone:fast").unwrap();
    let p: &IozoneParams = p.get().unwrap();
    assert_eq!(
        p.cells(),
        [(4 << 20, 4 << 10), (4 << 20, 1 << 20), (64 << 20, 1 << 20)]
    );
    assert_eq!(p.groups, [0, 1, 2]);
}

#[test]
fn duplicates_two_presets_and_unknown_keys_are_refused() {
    assert_eq!(err("tree:dirs=2,d=3"), "tree: `dirs` is given twice");
    assert!(err("atomic:quick,standard").contains("two presets"));
    let typo = err("iozone:thread=2");
    assert!(typo.contains("did you mean `threads`"), "{typo}");
    assert!(typo.contains("options are preset, sizes, max"), "{typo}");
    assert!(err("tree:huge").contains("unknown tree preset `huge`: choose one of"));
}

#[test]
fn lists_flags_and_plus_stay_inside_a_value() {
    let spec = Params::parse("alloc:methods=mmap+chunk-4k,chunks=8k+16k,durable=unmount").unwrap();
    let p: &AllocParams = spec.get().unwrap();
    let names: Vec<String> = p.methods.iter().map(|m| m.name()).collect();
    assert_eq!(names, ["mmap", "chunk-8192", "chunk-16384"]);
    let p = Params::parse("iozone:stdio,no-drop,sync").unwrap();
    let p: &IozoneParams = p.get().unwrap();
    assert!(p.groups.contains(&6) && p.groups.contains(&7) && !p.drop_caches && p.sync);
    assert!(
        p.preset.is_none(),
        "stdio changes the tests: not the preset"
    );
}

#[test]
fn comma_lists_of_workloads_split_at_kind_names() {
    let specs = Params::parse_list("atomic:quick,archive:tiny,order=pool-first,tree").unwrap();
    let labels: Vec<String> = specs.iter().map(|s| s.label()).collect();
    assert_eq!(
        labels,
        ["atomic:quick", "archive:tiny,pool-first", "tree:default"]
    );
    let alias = Params::parse_list("ffsb-large-write:threads=4,tree:small-deep").unwrap();
    assert_eq!(
        alias[0].label(),
        "ffsb:large-write,threads=4,size=1G,block=64K"
    );
    assert!(
        format!("{:#}", Params::parse("atomic:quick,tree").unwrap_err())
            .contains("names 2 workloads")
    );
    assert!(err("bogus:x").contains("unknown workload `bogus`"));
}

#[test]
fn suite_file_tables_use_the_same_options() {
    let suite: fsbench_model::suite::Suite = toml::from_str(
        "[[workload]]\nkind = \"atomic\"\npreset = \"quick\"\n\
         [[workload]]\nkind = \"iozone\"\npreset = \"auto\"\n\
         sizes = [\"1m\", \"4m\"]\ndirect = true\nthreads = 2\n\
         [[workload]]\nkind = \"atomic\"\ndd_count = 10\n",
    )
    .unwrap();
    let labels: Vec<String> = suite.workloads.iter().map(Params::label_of).collect();
    assert_eq!(
        labels,
        [
            "atomic:quick",
            "iozone:sizes=1M+4M,records=4K+8K+16K+32K+64K+128K+256K+512K+1M+2M+4M+8M+16M,direct,threads=2",
            "atomic:n20000-dd10x4x4096",
        ]
    );
    assert_eq!(
        Params::of(&suite.workloads[0]).unwrap(),
        Params::parse("atomic:quick").unwrap()
    );
    let typo: fsbench_model::suite::Suite =
        toml::from_str("[[workload]]\nkind = \"tree\"\ndirz = 3").unwrap();
    let typo = Params::of(&typo.workloads[0]).unwrap_err().to_string();
    assert!(
        typo.contains("unknown tree option `dirz` (did you mean `dirs`?)"),
        "{typo}"
    );
}

#[test]
fn help_lists_every_workload_option_and_preset() {
    let help = Params::help();
    for kind in WORKLOADS.iter().map(|r| r.kind) {
        assert!(help.contains(&format!("\n{}:", kind.name)), "{}", kind.name);
        for o in kind.options {
            assert!(
                help.contains(&format!("  {}", o.name)),
                "{}: {}",
                kind.name,
                o.name
            );
        }
        for p in kind.presets {
            assert!(help.contains(&format!("preset {}", p.name)), "{}", p.name);
        }
        for (alias, _) in kind.aliases {
            assert!(help.contains(alias), "{alias}");
        }
    }
}

#[test]
fn every_preset_parses_and_validates_and_labels_with_its_name() {
    for kind in WORKLOADS.iter().map(|r| r.kind) {
        for p in kind.presets {
            let spec = Params::parse(&format!("{}:{}", kind.name, p.name)).unwrap();
            spec.validate().unwrap();
            assert_eq!(spec.label(), format!("{}:{}", kind.name, p.name));
            // The stable kind name is what a suite keeps.
            let json = serde_json::to_value(spec.spec()).unwrap();
            assert_eq!(json["kind"], kind.name);
            let kept: WorkloadSpec = serde_json::from_value(json).unwrap();
            assert_eq!(Params::of(&kept).unwrap(), spec);
        }
    }
}

#[test]
fn advice_for_more_work_names_settings_the_workload_has() {
    for kind in WORKLOADS.iter().map(|r| r.kind) {
        assert!(!kind.more_work.is_empty(), "{}", kind.name);
        for key in kind.more_work {
            assert!(kind.option(key).is_some(), "{}: {key}", kind.name);
        }
    }
    // FFSB's large-write has one preset: no "larger preset" to choose.
    let ffsb = Params::parse("ffsb-large-write")
        .unwrap()
        .more_work_advice();
    assert_eq!(ffsb, "larger `size=`, `threads=`");
    let tree = Params::parse("tree:quick").unwrap().more_work_advice();
    assert!(
        tree.contains("larger tree preset") && tree.contains("`dirs=`"),
        "{tree}"
    );
    let iozone = Params::parse("iozone:quick").unwrap().more_work_advice();
    assert!(
        iozone.contains("`max=`") && iozone.contains("`sizes=`"),
        "{iozone}"
    );
}

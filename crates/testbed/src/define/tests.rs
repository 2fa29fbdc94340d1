use super::*;
use fsbench_model::config::{ExtraDevice, FsConfig};
use fsbench_model::filesystem::FsType;
use fsbench_model::suite::{AutoRuns, Suite};
use fsbench_model::testbed::TargetSpec;
use fsbench_model::workload::WorkloadSpec;

#[test]
fn parses_plain_lists_and_keyed_configs() {
    let list = parse_fs("ext4,xfs,btrfs").unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(list[1].fs, Some(FsType::Xfs));
    let one = parse_fs("ext4:mkfs=-O ^has_journal -I 256").unwrap();
    assert_eq!(one[0].mkfs, ["-O", "^has_journal", "-I", "256"]);
    assert_eq!(one[0].label, "ext4 -O ^has_journal -I 256");
    let two = parse_fs("ext3:mount=data=writeback,noatime:label=wb").unwrap();
    assert_eq!(two[0].mount, "data=writeback,noatime");
    assert_eq!(two[0].label, "wb");
    let colon = parse_fs("xfs:mkfs=-L a:b:mount=noatime").unwrap();
    assert_eq!(colon[0].mkfs, ["-L", "a:b"]);
    assert_eq!(colon[0].mount, "noatime");
}

#[test]
fn zfs_takes_pool_and_dataset_properties() {
    let c = &parse_fs("zfs:pool=ashift=12,autoexpand=on:dataset=recordsize=16k").unwrap()[0];
    assert_eq!(c.mkfs, ["ashift=12", "autoexpand=on"]);
    assert_eq!(c.mount, "recordsize=16k");
    assert_eq!(
        c.label,
        "zfs pool=ashift=12,autoexpand=on dataset=recordsize=16k"
    );
    for (bad, want) in [
        ("zfs:mkfs=-o ashift=12", "takes `pool=`"),
        ("zfs:mount=noatime", "takes `dataset=`"),
        ("ext4:dataset=atime=off", "is for zfs"),
        ("zfs:dataset=mountpoint=/home", "fsbench sets"),
        ("zfs:pool=ashift", "NAME=VALUE"),
    ] {
        let err = parse_fs(bad).unwrap_err().to_string();
        assert!(err.contains(want), "{bad}: {err}");
    }
    let suite: Suite =
        parse_suite("[[config]]\nfs = \"zfs\"\npool = \"ashift=12\"\ndataset = \"atime=off\"\n")
            .unwrap();
    assert_eq!(suite.configs[0].mkfs, ["ashift=12"]);
    assert_eq!(suite.configs[0].mount, "atime=off");
    // As saved with results: read back the same.
    let again: Suite = parse_suite(&toml::to_string(&suite).unwrap()).unwrap();
    assert_eq!(again.configs, suite.configs);
    for (bad, want) in [
        ("fs = \"ext4\"\npool = \"ashift=12\"", "is for zfs"),
        (
            "fs = \"zfs\"\nmount = \"a=b\"\ndataset = \"c=d\"",
            "given twice",
        ),
        ("fs = \"zfs\"\ndataset = \"mountpoint=/\"", "fsbench sets"),
    ] {
        let err = parse_suite(&format!("[[config]]\n{bad}\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{bad}: {err}");
    }
}

#[test]
fn user_drivers_are_found_by_name_and_kept_with_their_configuration() {
    let text = r#"
        [[driver]]
        name = "myext4"
        mkfs = "mkfs.ext4 -F -q {options} {device}"
        mount_type = "ext4"
        [[config]]
        fs = "myext4"
        mkfs = "-O ^has_journal"
    "#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(&path, text).unwrap();
    let suite = read_suite(&path).unwrap();
    let config = &suite.configs[0];
    assert_eq!(config.fs, Some(FsType::User));
    assert_eq!(config.label, "myext4 -O ^has_journal");
    assert_eq!(config.driver.as_ref().unwrap().name, "myext4");
    // Saved with the results and read back without the suite file.
    let again: FsConfig = serde_json::from_str(&serde_json::to_string(config).unwrap()).unwrap();
    assert_eq!(&again, config);
    let cli = parse_fs_with("myext4:mount=noatime", &suite.drivers).unwrap();
    assert_eq!(cli[0].label, "myext4 -o noatime");
    let err = parse_fs_with("other", &suite.drivers).unwrap_err();
    assert!(err.to_string().contains("drivers myext4"), "{err}");
    assert!(parse_fs("user").is_err());
}

#[test]
fn rejects_bad_configs() {
    assert!(parse_fs("ufs").is_err());
    assert!(parse_fs("ext4:bogus=1").is_err());
    assert!(parse_fs("ext4:mount=a:mount=b").is_err());
    assert!(parse_fs("ext4:mkfs=-L 'open").is_err());
}

#[test]
fn suite_file_round_trip() {
    let text = r#"
        name = "mail"
        purpose = "Which filesystem for a maildir server?"
        runs = 5
        [target]
        kind = "image"
        size = "8G"
        loop_cache = true
        [[config]]
        fs = "ext4"
        mkfs = "-O ^has_journal"
        [[config]]
        fs = "ext3"
        mount = "data=writeback"
        label = "ext3-wb"
        [[workload]]
        kind = "tree"
        preset = "small-shallow"
    "#;
    let suite: Suite = parse_suite(text).unwrap();
    validate(&suite).unwrap();
    assert_eq!(suite.runs, 5);
    assert_eq!(
        suite.target,
        TargetSpec::Image {
            dir: "/var/tmp".into(),
            size: Some(8 << 30),
            loop_cache: true,
        }
    );
    assert_eq!(suite.configs[0].mkfs, ["-O", "^has_journal"]);
    assert_eq!(suite.configs[1].label, "ext3-wb");
    let again: Suite = parse_suite(&toml::to_string(&suite).unwrap()).unwrap();
    assert_eq!(again, suite);
}

#[test]
fn suite_file_errors_name_the_problem() {
    let err = parse_suite("runz = 3").unwrap_err().to_string();
    assert!(err.contains("runz"), "{err}");
    let err = parse_suite("[[workload]]\nkind = \"nope\"").unwrap_err();
    assert!(
        format!("{err:#}").contains("[[workload]] 1: unknown workload `nope`"),
        "{err:#}"
    );
    // A kept suite whose workload this fsbench cannot run is refused before anything is made.
    let kept = Suite {
        workloads: vec![WorkloadSpec {
            kind: "nope".into(),
            params: Default::default(),
        }],
        ..Suite::default()
    };
    let err = validate(&kept).unwrap_err().to_string();
    assert!(err.contains("nope"), "{err}");
    let mut s = Suite {
        workloads: default_workloads(),
        ..Suite::default()
    };
    s.runs = 0;
    assert!(validate(&s).is_err());
}

#[test]
fn runs_auto_in_a_suite_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auto.toml");
    std::fs::write(&path, "runs = \"auto\"\n[auto_runs]\nmax_runs = 12\n").unwrap();
    let suite = read_suite(&path).unwrap();
    let auto = suite.auto_runs.clone().unwrap();
    assert_eq!((auto.max_runs, auto.target_ci_percent), (12, 5.0));
    assert_eq!(suite.runs, 12);
    std::fs::write(&path, "runs = \"auto\"\n").unwrap();
    assert_eq!(
        read_suite(&path).unwrap().auto_runs,
        Some(AutoRuns::default())
    );
    std::fs::write(&path, "runs = \"often\"\n").unwrap();
    assert!(read_suite(&path).is_err());
}

#[test]
fn type_errors_name_the_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typed.toml");
    for (text, line, key) in [
        ("runs = 2\n[[config]]\nfs = 3\n", 3, "fs = 3"),
        ("[[config]]\nfs = \"ext4\"\nmkfs = 1\n", 3, "mkfs = 1"),
        ("name = \"n\"\nruns = \"x\"\n", 2, "runs = \"x\""),
        (
            "[auto_runs]\ntarget_ci_percent = \"x\"\n",
            2,
            "target_ci_percent",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let err = read_suite(&path).unwrap_err().to_string();
        assert!(err.contains(&format!("line {line}")), "{text}: {err}");
        assert!(err.contains(key), "{text}: {err}");
    }
    std::fs::write(&path, "[[config]]\nfs = \"ext4\"\nmkfs = 1\n").unwrap();
    let err = read_suite(&path).unwrap_err().to_string();
    assert!(err.contains("a string or a list of strings"), "{err}");
}

#[test]
fn extra_devices_in_a_suite_file() {
    let toml = "[[extra_device]]\npath = \"/dev/loop3\"\n\
                [[extra_device]]\npath = \"/dev/loop4\"\nforce = true\n";
    let suite: Suite = parse_suite(toml).unwrap();
    assert_eq!(
        suite.extra_devices,
        [
            ExtraDevice {
                path: "/dev/loop3".into(),
                force: false
            },
            ExtraDevice {
                path: "/dev/loop4".into(),
                force: true
            }
        ]
    );
    assert!(parse_suite("[[extra_device]]\npath = \"/x\"\nforse = true\n").is_err());
    let dir = Suite {
        target: TargetSpec::Dir {
            path: "/tmp".into(),
        },
        workloads: default_workloads(),
        ..suite
    };
    assert!(validate(&dir).unwrap_err().to_string().contains("--dir"));
}

#[test]
fn the_write_cache_is_on_or_off_and_refused_on_loop_images() {
    let c = &parse_fs("ext4:wcache=off:mount=noatime").unwrap()[0];
    assert_eq!(
        (c.wcache, c.label.as_str()),
        (Some(false), "ext4 -o noatime wcache=off")
    );
    let on = &parse_fs("xfs:wcache=on:label=cached").unwrap()[0];
    assert_eq!((on.wcache, on.label.as_str()), (Some(true), "cached"));
    let err = parse_fs("ext4:wcache=yes").unwrap_err().to_string();
    assert!(err.contains("expected on (`write back`"), "{err}");
    let suite: Suite =
        parse_suite("[[config]]\nfs = \"ext4\"\nwcache = false\n[[workload]]\nkind = \"tree\"\n")
            .unwrap();
    assert_eq!(suite.configs[0].wcache, Some(false));
    // The default target is a loop image: refused, with what the backing disk has.
    let err = validate(&suite).unwrap_err().to_string();
    assert!(
        err.contains("a loop device has no write cache of its own; the backing disk's is"),
        "{err}"
    );
}

#[test]
fn configurations_name_their_age_and_fill() {
    let c = parse_fs("ext4:age=light:fill=50").unwrap();
    assert_eq!((c[0].age.as_deref(), c[0].fill), (Some("light"), Some(50)));
    assert_eq!(c[0].label, "ext4 age=light @ 50%");
    let named = parse_fs("xfs:age=geriatrix-like:label=old").unwrap();
    assert_eq!(named[0].label, "old");
    assert!(parse_fs("ext4:fill=96").is_err());
    let toml = "[[config]]\nfs = \"ext4\"\nage = \"light\"\nfill = 30\n";
    let suite: Suite = parse_suite(toml).unwrap();
    assert_eq!(suite.configs[0].label, "ext4 age=light @ 30%");
}

#[test]
fn bad_profiles_levels_and_directories_are_refused() {
    let mut suite = Suite {
        workloads: default_workloads(),
        age: Some("ancient".into()),
        ..Suite::default()
    };
    assert!(
        validate(&suite)
            .unwrap_err()
            .to_string()
            .contains("ancient")
    );
    suite.age = Some("light".into());
    validate(&suite).unwrap();
    suite.target = fsbench_model::testbed::TargetSpec::Dir {
        path: "/tmp".into(),
    };
    let e = validate(&suite).unwrap_err().to_string();
    assert!(e.contains("not --dir"), "{e}");
    suite.age = None;
    suite.fill = vec![0];
    validate(&suite).unwrap();
    suite.probe_after = true;
    let e = validate(&suite).unwrap_err().to_string();
    assert!(
        e.contains("free-space probe") && e.contains("not --dir"),
        "{e}"
    );
    assert_eq!(crate::aging::parse_fill("90%").unwrap(), 90);
    assert!(crate::aging::parse_fill("x").is_err());
}

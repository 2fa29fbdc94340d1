use super::*;

#[test]
fn parses_presets_settings_and_files() {
    let p = ArchiveParams::parse("small,order=pool-first").unwrap();
    assert_eq!(p.name(), "small,pool-first");
    let q = ArchiveParams::parse("pool=10,hosts=1,backups=1,files=100,popular=70000").unwrap();
    let Source::Generated { shape, preset } = &q.source else {
        panic!()
    };
    assert_eq!(
        (shape.pool_files, shape.popular_links, preset.is_none()),
        (10, 70_000, true)
    );
    assert!(ArchiveParams::parse("bogus=1").is_err());
    assert!(ArchiveParams::parse("huge").is_err());
    assert!(ArchiveParams::parse("order=sideways").is_err());
    assert!(
        ArchiveParams::parse("hosts=0")
            .and_then(|p| p.validate())
            .is_err()
    );
    assert!(
        ArchiveParams::parse("file=/nonexistent.tar")
            .unwrap()
            .validate()
            .is_err()
    );
    assert!(ArchiveParams::parse("file=/x.tar,pool=3").is_err());
}

#[test]
fn seed_proportions() {
    let p = ArchiveParams::parse("seed-10pct").unwrap();
    let Source::Generated { shape, .. } = &p.source else {
        panic!()
    };
    let (entries, _, _) = shape.totals();
    assert!(entries > 1_000_000, "{entries}");
    let links = shape.hosts as u64 * shape.backups_per_host as u64 * shape.files_per_backup;
    let per_pool = links as f64 / shape.pool_files as f64;
    assert!(
        (20.0..25.0).contains(&per_pool),
        "{per_pool} links per pool file; the seed had 22.8"
    );
}

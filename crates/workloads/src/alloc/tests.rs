use super::*;

#[test]
fn parses_presets_and_settings() {
    let p = AllocParams::parse("").unwrap();
    assert_eq!(p.size, 1 << 30);
    assert!(p.fit);
    assert_eq!(p.methods.len(), 5);
    let names: Vec<String> = p.phases().iter().map(|i| i.name.to_string()).collect();
    assert_eq!(
        names,
        [
            "posix-fallocate",
            "fallocate",
            "mmap",
            "chunk-4096",
            "chunk-8192"
        ]
    );
    let p = AllocParams::parse("size=64m,chunks=4k+16k,fresh=fs,durable=unmount").unwrap();
    assert_eq!(p.size, 64 << 20);
    assert!(!p.fit && p.preset.is_none());
    assert_eq!(p.methods.last(), Some(&Method::Chunks(16384)));
    assert_eq!(p.fresh, Fresh::Fs);
    assert_eq!(
        p.name(),
        "size=64M,methods=posix-fallocate+fallocate+mmap+chunk-4096+chunk-16384,fresh=fs,durable=unmount"
    );
    assert!(AllocParams::parse("methods=posix-fallocate+bogus").is_err());
    assert!(AllocParams::parse("colour=red").is_err());
    assert!(
        AllocParams::parse("methods=mmap+mmap")
            .unwrap()
            .validate()
            .is_err()
    );
    let json = serde_json::to_string(&p).unwrap();
    assert!(json.contains("\"chunk-16384\""));
    assert_eq!(serde_json::from_str::<AllocParams>(&json).unwrap(), p);
}

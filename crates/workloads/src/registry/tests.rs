use super::*;

#[test]
fn buffers_beyond_half_the_memory_are_refused() {
    assert!(check_buffers("w", 1 << 30, Some(4 << 30)).is_ok());
    let e = check_buffers("ffsb:large-write", 128 << 30, Some(23 << 30)).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("128.0 GiB") && text.contains("23.0 GiB"),
        "{text}"
    );
    assert!(check_buffers("w", 128 << 30, None).is_ok());
}

#[test]
fn overflowing_space_is_an_error_not_a_small_number() {
    // The case: 16 files of 2^60 bytes wrapped around to a need that passed the
    // free-space check; 15 gave "need about 512.0 PiB".
    let profile = |files: u32| {
        format!(
            "time=1\n[filesystem0]\nnum_files={files}\nnum_dirs=1\nmin_filesize=1152921504606846976\nmax_filesize=1152921504606846976\n[end0]\n[threadgroup0]\nnum_threads=1\nread_weight=1\nread_size=4096\nread_blocksize=4096\n[end0]\n"
        )
    };
    for files in [15, 16] {
        let w = Params::from(ffsb::profile::parse(&profile(files), "t").unwrap());
        let e = w.space_needed().unwrap_err().to_string();
        assert!(e.contains("beyond 16 EiB"), "{files}: {e}");
    }
    let thirteen = Params::from(ffsb::profile::parse(&profile(13), "t").unwrap());
    let need = thirteen.space_needed().unwrap().bytes;
    assert!(need >= 13 << 60, "{need}");
}

#[test]
fn every_registered_workload_parses_to_its_own_variant() {
    for entry in WORKLOADS {
        let name = entry.kind.name;
        let params = Params::parse(name).unwrap();
        assert_eq!(params.kind().name, name);
        assert_eq!(params.reports(), entry.reports, "{name}");
        assert_eq!(params.spec().kind, name);
    }
    let mut names: Vec<&str> = WORKLOADS.iter().map(|w| w.kind.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), WORKLOADS.len(), "a name twice");
}

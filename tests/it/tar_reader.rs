//! The tar reader against malformed input, deterministically (a fixed seed, so a failure in CI
//! repeats anywhere): PAX records of every length with every kind of bad length field, member
//! sizes that overflow, and a few thousand mutated valid archives, each read and some
//! extracted beside a canary. Whatever the bytes, the reader returns members or a short error,
//! never panics, and extraction writes nothing outside its target. Takes a few seconds.

use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;

use crate::common::tarball::*;
use fsbench_measure::measure::{PhaseRecorder, Progress};
use fsbench_workloads::archive::tarfile::TarReader;
use fsbench_workloads::archive::{ArchiveParams, Source, extract_into};

/// Reads every member of `bytes`; their names, or the error's text.
fn read_tar(bytes: &[u8]) -> Result<Vec<String>, String> {
    let mut reader = TarReader::new(bytes);
    let mut names = Vec::new();
    // Each member consumes at least one 512-byte block, so this bound is never the limit.
    for _ in 0..=bytes.len() / 512 + 1 {
        let more = reader
            .next(&mut |entry, data| {
                names.push(String::from_utf8_lossy(entry.path).into_owned());
                std::io::copy(data, &mut std::io::sink()).map(|_| ())
            })
            .map_err(|e| e.to_string())?;
        if !more {
            return Ok(names);
        }
    }
    panic!("the reader did not advance");
}

fn assert_short(result: &Result<Vec<String>, String>, what: &str) {
    if let Err(e) = result {
        assert!(!e.trim().is_empty() && e.len() < 4096, "{what}: {e:?}");
    }
}

#[test]
fn pax_records_of_every_length_and_malformed_length_fields() {
    let lengths: Vec<String> = (0..=70)
        .map(|n| n.to_string())
        .chain(
            [
                "",
                "-1",
                "+5",
                " 5",
                "5x",
                "0x10",
                "00012",
                "18446744073709551615",
                "18446744073709551616",
                "99999999999999999999999",
                "٣",
            ]
            .map(str::to_string),
        )
        .collect();
    let mut cases = 0;
    for length in &lengths {
        for body_len in 0..=70 {
            for newline in [false, true] {
                let mut body: Vec<u8> = b"path=p".iter().copied().cycle().take(body_len).collect();
                if newline {
                    body.push(b'\n');
                }
                let record = [format!("{length} ").as_bytes(), &body].concat();
                let bytes = end(vec![member("PaxHeader", b'x', &record, ""), file("a", "x")]);
                let got = read_tar(&bytes);
                assert_short(
                    &got,
                    &format!("record {:?}", String::from_utf8_lossy(&record)),
                );
                // A well-formed record renames the member; anything accepted names one.
                if let Ok(names) = &got {
                    assert_eq!(names.len(), 1, "{record:?}");
                }
                cases += 1;
            }
        }
    }
    // The record that panicked: a length of 2 covers only the length and the space.
    let two = end(vec![member("PaxHeader", b'x', b"2 ", ""), file("a", "x")]);
    assert_eq!(read_tar(&two), Err("bad PAX record length".to_string()));
    // A correct one is still read.
    let good = end(vec![pax(&[("path", "long/pax/name")]), file("a", "x")]);
    assert_eq!(read_tar(&good), Ok(vec!["long/pax/name".to_string()]));
    println!("{cases} PAX records");
}

/// Base-256 size fields for sizes whose rounding to blocks overflows, and a few that do not
/// but that no archive holds.
fn size_field(size: u64) -> Vec<u8> {
    let mut field = vec![0x80, 0, 0, 0];
    field.extend_from_slice(&size.to_be_bytes());
    field
}

#[test]
fn huge_member_sizes_stop_with_an_error_and_smuggle_nothing() {
    for kind in [
        b'0', b'1', b'2', b'5', b'7', b'g', b'V', b'x', b'L', b'K', b'S', b'Z',
    ] {
        for size in [
            u64::MAX,
            u64::MAX - 1,
            u64::MAX - 510,
            u64::MAX - 511,
            1 << 63,
        ] {
            let bytes = end(vec![
                header(b"d", kind, &size_field(size), b"x", false),
                file("smuggled", "x"),
            ]);
            let what = format!("type {:?}, size {size}", kind as char);
            let got = read_tar(&bytes);
            assert_short(&got, &what);
            let names = got.as_ref().map(Vec::as_slice).unwrap_or_default();
            assert!(!names.iter().any(|n| n == "smuggled"), "{what}: {names:?}");
            assert!(got.is_err(), "{what}: accepted {names:?}");
            if size > u64::MAX - 511 {
                assert!(
                    got.unwrap_err().contains("more than any archive holds"),
                    "{what}"
                );
            }
        }
    }
}

/// A small deterministic generator (xorshift64*): the same cases on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Valid archives with every member kind the reader knows, links aimed outward included.
fn seeds() -> Vec<Vec<u8>> {
    vec![
        end(vec![
            directory("d/"),
            file("d/a", &"x".repeat(700)),
            hardlink("d/h", "d/a"),
            symlink("d/s", "../../canary"),
            file("d/s/through", "x"),
        ]),
        end(vec![
            pax(&[("path", "p/long/name"), ("linkpath", "p")]),
            symlink("x", "y"),
            gnu_long(b'L', &"n/".repeat(70)),
            file("short", "data"),
            gnu_long(b'K', "../canary/keep"),
            hardlink("hl", "ignored"),
        ]),
        end(vec![
            member("g", b'g', b"19 comment=global\n", ""),
            pax(&[("path", "q"), ("size", "3")]),
            file("q", "abc"),
            member("fifo", b'6', b"", ""),
            member("vol", b'V', b"", ""),
        ]),
    ]
}

/// One mutation aimed at what the reader parses: a header field, a PAX record, the blocks.
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let headers: Vec<usize> = (0..bytes.len() / 512)
        .map(|b| b * 512)
        .filter(|&at| bytes[at + 257..at + 263] == *b"ustar\0")
        .collect();
    if headers.is_empty() {
        return;
    }
    let at = *rng.pick(&headers);
    match rng.below(8) {
        // A size field: a huge, odd or unparsable value.
        0 => {
            let sizes: [&[u8]; 6] = [
                &size_field(u64::MAX),
                &size_field(rng.next()),
                b"77777777777\0",
                b"00000001000\0",
                b"00000000002\0",
                b"8\0\0\0\0\0\0\0\0\0\0\0",
            ];
            let field = *rng.pick(&sizes);
            bytes[at + 124..at + 136].copy_from_slice(field);
        }
        // The type flag.
        1 => bytes[at + 156] = *rng.pick(b"0125673gVxLKSMDZ\0"),
        // The name or the link: climbing, absolute, through the symlink.
        2 => {
            let names: [&[u8]; 5] = [b"../out", b"/abs", b"d/s/x", b"d/s", b"..\0"];
            let name = *rng.pick(&names);
            let field = if rng.below(2) == 0 { at } else { at + 157 };
            bytes[field..field + 100].fill(0);
            bytes[field..field + name.len()].copy_from_slice(name);
        }
        // A byte of a PAX record or of anything else after the header.
        3 => {
            let i = (at + 512 + rng.below(64)).min(bytes.len() - 1);
            bytes[i] = *rng.pick(b"0123456789 =\n\0x");
        }
        // Any byte of the header.
        4 => bytes[at + rng.below(512)] = rng.next() as u8,
        // A block dropped or duplicated.
        5 => {
            let block: Vec<u8> = bytes[at..at + 512].to_vec();
            if rng.below(2) == 0 {
                bytes.drain(at..at + 512);
            } else {
                bytes.splice(at..at, block);
            }
            return;
        }
        // Cut anywhere.
        6 => {
            let cut = rng.below(bytes.len());
            bytes.truncate(cut);
            return;
        }
        // The base-256 marker on the size.
        _ => bytes[at + 124] |= 0x80,
    }
    // Most mutations keep the checksum right, so the reader goes on past the header.
    if rng.below(8) != 0 {
        set_checksum(&mut bytes[at..at + 512]);
    }
}

/// Every path below `dir` with its length, or a symlink's target.
fn listing(dir: &Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = p.symlink_metadata().unwrap();
            if m.is_dir() {
                stack.push(p.clone());
            }
            out.push((p, m.len()));
        }
    }
    out.sort();
    out
}

#[test]
fn seeded_fuzz_of_mutated_archives_never_panics_or_escapes() {
    const CASES: usize = 3000;
    // One case in this many is extracted too; every one is read.
    const EXTRACT_EVERY: usize = 6;
    let base = crate::common::tmpfs_tempdir();
    let canary = base.path().join("canary");
    std::fs::create_dir(&canary).unwrap();
    std::fs::write(canary.join("keep"), "precious").unwrap();
    let outside = listing(base.path());
    let archive = base.path().join("a.tar");
    let target = base.path().join("target");
    let progress = Arc::new(Progress::default());
    let seeds = seeds();
    let mut rng = Rng(0x5eed_f5be_4c25);
    let (mut refused, mut extracted) = (0, 0);
    for case in 0..CASES {
        let mut bytes = rng.pick(&seeds).clone();
        for _ in 0..1 + rng.below(3) {
            if bytes.len() < 512 {
                break;
            }
            mutate(&mut rng, &mut bytes);
        }
        let got = read_tar(&bytes);
        assert_short(&got, &format!("case {case}"));
        refused += usize::from(got.is_err());
        if case % EXTRACT_EVERY != 0 {
            continue;
        }
        std::fs::write(&archive, &bytes).unwrap();
        std::fs::create_dir(&target).unwrap();
        let dir = std::fs::File::open(&target).unwrap();
        let params = ArchiveParams {
            source: Source::File {
                path: archive.clone(),
            },
            remove_order: Default::default(),
        };
        let mut rec = PhaseRecorder::start("extract", progress.clone());
        let _ = extract_into(&params, dir.as_fd(), None, &mut rec);
        drop(dir);
        std::fs::remove_dir_all(&target).unwrap();
        std::fs::remove_file(&archive).unwrap();
        assert_eq!(
            listing(base.path()),
            outside,
            "case {case} changed something outside the target"
        );
        assert_eq!(std::fs::read(canary.join("keep")).unwrap(), b"precious");
        extracted += 1;
    }
    // The mutations must reach past the first header, not only break checksums.
    assert!(
        refused > CASES / 10 && refused < CASES * 9 / 10,
        "{refused} of {CASES} refused"
    );
    println!("{CASES} mutated archives read ({refused} refused), {extracted} extracted, 0 escaped");
}

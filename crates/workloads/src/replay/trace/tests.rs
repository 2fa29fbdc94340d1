//! The trace format read back as written, and refused when damaged.

use super::*;

#[test]
fn a_trace_reads_back_as_written_and_a_cut_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t");
    let program = Program {
        wall_us: 2_000_000,
        own_us: 1_500_000,
        calls_us: 300_000,
        strace_ns: 12_345,
        umask: 0o027,
        traced: 999,
        tracer: Tracer::Bpf,
    };
    let file_ = std::fs::File::create(&file).unwrap();
    let mut w = TraceWriter::new(file_, Path::new("/r 1"), &program).unwrap();
    let entries = [
        Entry::Dir(b"a".to_vec(), 0o700),
        Entry::File(b"a/f %\tx".to_vec(), 12, 0o4755),
        Entry::Symlink(b"s".to_vec(), b"../../etc".to_vec()),
        Entry::HardLink(b"g".to_vec(), b"a/f %\tx".to_vec()),
        // A name that is `-` is not "none".
        Entry::Dir(b"-".to_vec(), 0o755),
    ];
    // The file's attributes, by name: an ACL with its value, one with a name to escape.
    let xattrs = [
        Xattr {
            name: b"system.posix_acl_access".to_vec(),
            size: 4,
            value: Some(vec![2, 0, 0xff, 0]),
        },
        Xattr {
            name: b"user.a b\t".to_vec(),
            size: 65_536,
            value: None,
        },
    ];
    for e in &entries {
        w.entry(e).unwrap();
        if e.path() == b"a/f %\tx" {
            for x in &xattrs {
                w.xattr(e.path(), x).unwrap();
            }
        }
    }
    let call = Call {
        tid: 7,
        start_us: 5,
        dur_us: 2,
        kind: Some(Kind::Rename),
        result: -1,
        errno: libc::ENOENT,
        fd: -1,
        fd2: -1,
        a: 0,
        b: -1,
        path: b"a/\xff".to_vec(),
        path2: b"-".to_vec(),
        at_us: 4,
        flags: BY_FD_NAME,
        value: Vec::new(),
    };
    w.call(&call).unwrap();
    // A POSIX ACL set by the program, with its value.
    let acl = Call {
        kind: Some(Kind::SetXattr),
        a: 5,
        path: b"a".to_vec(),
        path2: b"system.posix_acl_access".to_vec(),
        value: b"\x02\0\0\0\xff".to_vec(),
        ..call.clone()
    };
    w.call(&acl).unwrap();
    w.skipped("outside the root", 7, b"/etc/passwd \n").unwrap();
    w.task(7, 5).unwrap();
    let left = [
        Left {
            path: b"a".to_vec(),
            kind: b'd',
            size: 0,
            mode: 0o1777,
            nlink: 1,
            target: Vec::new(),
            xattrs: Vec::new(),
        },
        Left {
            path: b"a/f %\tx".to_vec(),
            kind: b'f',
            size: 12,
            mode: 0o600,
            nlink: 2,
            target: Vec::new(),
            xattrs: xattrs
                .iter()
                .map(|x| Xattr {
                    value: None,
                    ..x.clone()
                })
                .collect(),
        },
        Left {
            path: b"s".to_vec(),
            kind: b'l',
            size: 9,
            mode: 0o777,
            nlink: 1,
            target: b"../../etc".to_vec(),
            xattrs: Vec::new(),
        },
    ];
    for l in &left {
        w.left(l).unwrap();
    }
    w.finish(3).unwrap();
    let mut r = TraceReader::open(Some(&file)).unwrap();
    assert_eq!(r.root, Path::new("/r 1"));
    assert_eq!(r.program.as_ref(), Some(&program));
    for e in &entries {
        assert_eq!(r.entry().unwrap().as_ref(), Some(e));
        let want: &[Xattr] = if e.path() == b"a/f %\tx" {
            &xattrs
        } else {
            &[]
        };
        assert_eq!(r.xattrs(), want);
    }
    let mut back = Call::default();
    assert!(r.call(&mut back).unwrap());
    assert_eq!(back, call);
    assert!(r.call(&mut back).unwrap());
    assert_eq!(back, acl);
    assert!(!r.call(&mut back).unwrap());
    assert_eq!(r.totals, Some((2, 3)));
    let example = b"/etc/passwd \n".to_vec();
    assert_eq!(r.skipped, [("outside the root".to_string(), 7, example)]);
    assert_eq!(r.left_entries, 3);
    // Thread 7 is of process 5; a thread without a `task` line is a process of its own.
    assert!(r.records_processes());
    assert_eq!((r.process_of(7), r.process_of(8)), (5, 8));
    // The tree left, read in a pass of its own, entry by entry into one buffer.
    let mut r = TraceReader::open(Some(&file)).unwrap();
    let mut one = Left::default();
    for l in &left {
        assert!(r.left(&mut one).unwrap());
        assert_eq!(&one, l);
    }
    assert!(!r.left(&mut one).unwrap());
    assert_eq!(r.totals, Some((2, 3)));

    // Cut in the middle of the compressed stream: a clear error, never a panic.
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 12]).unwrap();
    let outcome = TraceReader::open(Some(&file)).and_then(|mut r| {
        while r.call(&mut back)? {}
        Ok(())
    });
    assert!(format!("{:#}", outcome.unwrap_err()).contains("damaged"));
    // Version 1: no program line, no modes, 12 fields a call.
    let v1 = "fsbench-trace 1\nroot\t/r\nd\ta\nf\ta/f\t3\ncalls\n\
              1\t5\t2\tstat\t0\t0\t-1\t-1\t1\t-1\ta/f\t-\nend\t1\t0\n";
    std::fs::write(&file, zstd::encode_all(v1.as_bytes(), 1).unwrap()).unwrap();
    let mut r = TraceReader::open(Some(&file)).unwrap();
    assert_eq!(r.program, None);
    assert_eq!(r.entry().unwrap(), Some(Entry::Dir(b"a".to_vec(), 0o755)));
    assert_eq!(
        r.entry().unwrap(),
        Some(Entry::File(b"a/f".to_vec(), 3, 0o644))
    );
    assert!(r.call(&mut back).unwrap());
    assert_eq!((back.at_us, back.flags, back.start_us), (5, 0, 5));
    // No processes recorded: every thread in one.
    assert!(!r.call(&mut back).unwrap());
    assert!(!r.records_processes());
    assert_eq!((r.process_of(1), r.process_of(9)), (0, 0));
    std::fs::write(&file, b"fsbench-trace 1\n").unwrap();
    let e = TraceReader::open(Some(&file)).err().unwrap();
    assert!(e.to_string().contains("not an fsbench trace"), "{e}");
}

#[test]
fn a_line_is_read_up_to_its_limit_and_no_further() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t");
    let with_root = |len: usize| {
        let root = format!("root\t{}\n", "r".repeat(len - "root\t".len()));
        let text = format!("{MAGIC} {VERSION}\n{root}calls\nend\t0\t0\n");
        std::fs::write(&file, zstd::encode_all(text.as_bytes(), 1).unwrap()).unwrap();
        TraceReader::open(Some(&file)).map(|r| r.root.as_os_str().len())
    };
    assert_eq!(with_root(LINE_MAX).unwrap(), LINE_MAX - 5);
    let e = with_root(LINE_MAX + 1).err().unwrap();
    assert!(
        e.to_string()
            .contains("at line 2: a line longer than 65,536 bytes"),
        "{e}"
    );
}

/// The attribute lines a capture never writes: each a clear error naming its line, read in
/// the memory of one entry's attributes.
/// A call's value: only a setxattr's of a POSIX ACL, of its length, in hex, within the bound,
/// from version 5 on.
#[test]
fn a_calls_value_is_refused_where_it_cannot_be() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t");
    let read = |version: u32, line: &str| {
        let text = format!("{MAGIC} {version}\nroot\t/r\ncalls\n{line}\nend\t1\t0\n");
        std::fs::write(&file, zstd::encode_all(text.as_bytes(), 1).unwrap()).unwrap();
        let mut r = TraceReader::open(Some(&file))?;
        let mut call = Call::default();
        r.call(&mut call)?;
        anyhow::Ok(call.value)
    };
    let line = |kind: &str, a: usize, name: &str, value: &str| {
        format!("1\t5\t2\t{kind}\t0\t0\t-1\t0\t{a}\t1\tf\t{name}\t5\t0\t{value}")
    };
    let acl = "system.posix_acl_access";
    assert_eq!(
        read(5, &line("setxattr", 2, acl, "02ff")).unwrap(),
        [2, 0xff]
    );
    let long = "00".repeat(XATTR_VALUE_MAX + 1);
    let refused = [
        (5, line("getxattr", 2, acl, "02ff")),
        (5, line("setxattr", 2, "user.a", "02ff")),
        (5, line("setxattr", 3, acl, "02ff")),
        (5, line("setxattr", 2, acl, "02fg")),
        (5, line("setxattr", 2, acl, "02f")),
        (5, line("setxattr", XATTR_VALUE_MAX + 1, acl, &long)),
        (4, line("setxattr", 2, acl, "02ff")),
    ];
    for (version, text) in refused {
        let e = read(version, &text).expect_err(&text);
        assert!(format!("{e:#}").contains("damaged"), "{text}: {e:#}");
    }
}

#[test]
fn hostile_attribute_lines_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t");
    let read = |state: &str, left: &str| {
        let text = format!("{MAGIC} {VERSION}\nroot\t/r\n{state}calls\n{left}end\t0\t0\n");
        std::fs::write(&file, zstd::encode_all(text.as_bytes(), 1).unwrap()).unwrap();
        let mut r = TraceReader::open(Some(&file))?;
        while r.entry()?.is_some() {}
        let mut left = Left::default();
        while r.left(&mut left)? {}
        anyhow::Ok(())
    };
    let long = "n".repeat(251);
    let many: String = (0..7000)
        .map(|i| format!("x\tf\tuser.{i:08}\t1\n"))
        .collect();
    let refused = [
        (
            format!("f\tf\t1\t644\nx\tf\tuser.{long}\t1\n"),
            "",
            "longer than 255 bytes",
        ),
        (
            "f\tf\t1\t644\nx\tf\tuser.a\t65537\n".into(),
            "",
            "larger than 65,536 bytes",
        ),
        (
            "f\tf\t1\t644\nx\tg\tuser.a\t1\n".into(),
            "",
            "an attribute of g, which is not",
        ),
        (
            "f\tf\t1\t644\nx\t../../etc/passwd\tuser.a\t1\n".into(),
            "",
            "../../etc/passwd",
        ),
        (
            "x\tf\tuser.a\t1\nf\tf\t1\t644\n".into(),
            "",
            "before any entry",
        ),
        (
            "f\tf\t1\t644\nx\tf\tuser.b\t1\nx\tf\tuser.a\t1\n".into(),
            "",
            "name order",
        ),
        (
            "f\tf\t1\t644\nx\tf\tuser.a\t1\nx\tf\tuser.a\t1\n".into(),
            "",
            "twice",
        ),
        (format!("f\tf\t1\t644\n{many}"), "", "XATTR_LIST_MAX"),
        (
            "f\tf\t1\t644\nx\tf\tuser.a\t1\t5a\n".into(),
            "",
            "bad attribute value",
        ),
        (
            "f\tf\t1\t644\nx\tf\tsystem.posix_acl_access\t2\t5\n".into(),
            "",
            "bad attribute value",
        ),
        (
            String::new(),
            "final\tx\tf\tuser.a\t1\n",
            "not after its entry",
        ),
        (
            String::new(),
            "final\tf\tf\t1\t644\t1\nfinal\tx\tf\tuser.a\t1\t00\n",
            "bad attribute line",
        ),
        (
            String::new(),
            "final\tf\tf\t1\t644\t1\nfinal\tx\tg\tuser.a\t1\n",
            "not the entry",
        ),
    ];
    for (state, left, why) in refused {
        let e = format!("{:#}", read(&state, left).unwrap_err());
        assert!(
            e.contains("damaged trace at line") && e.contains(why),
            "{why}: {e}"
        );
    }
    // At the bounds: a name of 255 bytes, a value of 64 KiB, 64 KiB of names.
    let fits: String = (0..6000)
        .map(|i| format!("x\tf\tuser.{i:04}\t65536\n"))
        .collect();
    read(
        &format!("f\tf\t1\t644\n{fits}x\tf\tuser.{}\t1\n", &long[1..]),
        "",
    )
    .unwrap();
}

/// The space a replay asks for counts the initial state's attributes (names and values) as
/// it counts its files' bytes.
#[test]
fn the_space_needed_counts_the_initial_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t");
    let with = |state: &str| {
        let text = format!("{MAGIC} {VERSION}\nroot\t/r\n{state}calls\nend\t0\t0\n");
        std::fs::write(&file, zstd::encode_all(text.as_bytes(), 1).unwrap()).unwrap();
        crate::replay::Summary::of(Some(&file))
            .unwrap()
            .space_needed()
            .unwrap()
            .bytes
    };
    let bare = with("f\tf\t100\t644\n");
    let attributed = with("f\tf\t100\t644\nx\tf\tuser.a\t65536\nx\tf\tuser.b\t10\n");
    assert_eq!(attributed - bare, 6 + 65_536 + 6 + 10);
}

//! The bpf tracer's records parsed as strace's lines are: descriptors followed from the
//! calls themselves.

use std::path::Path;

use super::*;

/// A record of `name` by task 5 with `args`, result `ret`, and its path arguments.
fn rec<'a>(
    name: &'static str,
    args: &[i64],
    ret: i64,
    paths: &[(usize, &'a [u8])],
) -> SyscallRecord<'a> {
    let mut a = [0u64; 6];
    for (i, v) in args.iter().enumerate() {
        a[i] = *v as u64;
    }
    let mut p = [None, None];
    for (slot, (i, s)) in paths.iter().enumerate() {
        a[*i] = 0x1000 + *i as u64;
        p[slot] = Some((*i, Some(*s)));
    }
    SyscallRecord {
        start_ns: 1_000_000,
        end_ns: 1_003_000,
        tid: 5,
        pid: 5,
        name,
        args: a,
        ret,
        paths: p,
        data: None,
        data_unread: false,
        value: None,
        cost_ns: 0,
    }
}

fn parse(records: &[SyscallRecord<'_>]) -> (Parser, Vec<Call>) {
    let mut parser = Parser::for_kernel(Path::new("/r"), Path::new("/r"));
    let mut calls = Vec::new();
    let mut call = Call::default();
    for r in records {
        // As the bpf tracer says each close at its entry too.
        if r.name == "close" {
            parser.kernel_closing(r.tid, r.args[0] as i32);
        }
        if parser.kernel_call(r, &mut call).is_some() {
            calls.push(call.clone());
        }
    }
    (parser, calls)
}

const O_WRONLY_CREAT: i64 = 0o101;

#[test]
fn descriptors_are_followed_from_opens_dups_closes_and_renames() {
    let name = b"d ir/q\"<>\n\xff x) = 3 <0";
    let (parser, calls) = parse(&[
        rec("openat", &[-100, 0, O_WRONLY_CREAT, 0o640], 3, &[(1, name)]),
        rec("write", &[3, 0, 5], 5, &[]),
        rec("dup2", &[3, 9], 9, &[]),
        rec("fcntl", &[9, 1030], 10, &[]),
        rec("close", &[3], 0, &[]),
        rec("fsync", &[9], 0, &[]),
        rec("fsync", &[3], -9, &[]),
        rec(
            "renameat",
            &[-100, 0, -100, 0],
            0,
            &[(1, b"d ir"), (3, b"moved")],
        ),
        rec("fdatasync", &[10], 0, &[]),
        rec("pipe2", &[0, 0], 0, &[]),
        rec("openat", &[-100, 0, 0], 4, &[(1, b"/etc/passwd")]),
        rec("read", &[4, 0, 10], 10, &[]),
    ]);
    use Kind::*;
    let kinds: Vec<Kind> = calls.iter().map(Call::kind).collect();
    assert_eq!(
        kinds,
        [Open, Write, Dup, Dup, Close, Fsync, Rename, Fdatasync]
    );
    assert_eq!(calls[0].path, name);
    assert_eq!((calls[0].a, calls[0].b), (0o101, 0o640));
    assert_eq!(
        (calls[1].fd, calls[1].a, &calls[1].path[..]),
        (3, 5, &name[..])
    );
    assert_eq!((calls[3].fd, calls[3].fd2), (9, 10));
    assert_eq!(calls[5].path, name);
    // The rename moved the open file: its descriptor is named below the new name.
    let mut moved = b"moved".to_vec();
    moved.extend_from_slice(&name[4..]);
    assert_eq!(calls[7].path, moved);
    // A descriptor closed, and one outside the root: not recorded, counted.
    assert_eq!(parser.skipped.get(&Skip::NotAFile).map(|s| s.0), Some(1));
    assert_eq!(parser.skipped.get(&Skip::Outside).map(|s| s.0), Some(2));
    // A call with a failed result is dated from its start, nothing subtracted.
    assert_eq!(calls[0].dur_us, 3);
}

#[test]
fn a_pipe_exec_and_close_range_drop_what_is_no_file_any_more() {
    let mut pipe = rec("pipe2", &[0, 0], 0, &[]);
    pipe.data = Some([3 | 4 << 32, 0, 0]);
    let (parser, calls) = parse(&[
        rec("openat", &[-100, 0, 0], 3, &[(1, b"a")]),
        rec("openat", &[-100, 0, 0o2000000], 4, &[(1, b"b")]),
        rec("openat", &[-100, 0, 0], 6, &[(1, b"c")]),
        pipe,
        rec("read", &[3, 0, 1], 1, &[]),
        rec("read", &[4, 0, 1], 1, &[]),
        rec("openat", &[-100, 0, 0o2000000], 4, &[(1, b"b")]),
        rec("execve", &[0, 0, 0], 0, &[]),
        rec("read", &[4, 0, 1], 1, &[]),
        rec("read", &[6, 0, 1], 1, &[]),
        rec("close_range", &[5, u32::MAX as i64, 0], 0, &[]),
        rec("read", &[6, 0, 1], 1, &[]),
    ]);
    let reads: Vec<i32> = (calls.iter())
        .filter(|c| c.kind() == Kind::Read)
        .map(|c| c.fd)
        .collect();
    assert_eq!(reads, [6]);
    assert_eq!(parser.skipped.get(&Skip::NotAFile).map(|s| s.0), Some(4));
}

#[test]
fn tmpfiles_and_proc_self_fd_names_lead_to_their_files() {
    let (_, calls) = parse(&[
        rec("openat", &[-100, 0, 0o20200002, 0o640], 6, &[(1, b".")]),
        rec("write", &[6, 0, 3], 3, &[]),
        rec(
            "linkat",
            &[-100, 0, -100, 0, 0x400],
            0,
            &[(1, b"/proc/self/fd/6"), (3, b"named")],
        ),
        rec("fsync", &[6], 0, &[]),
        rec("openat", &[-100, 0, 0o2200000], 7, &[(1, b"dir")]),
        rec(
            "fchmodat",
            &[-100, 0, 0o755, 0],
            0,
            &[(1, b"/proc/self/fd/7")],
        ),
    ]);
    use Kind::*;
    let kinds: Vec<Kind> = calls.iter().map(Call::kind).collect();
    assert_eq!(kinds, [Open, Write, Link, Fsync, Open, Chmod]);
    assert_eq!(
        (calls[2].fd, calls[2].flags, &calls[2].path2[..]),
        (6, BY_FD_NAME, &b"named"[..])
    );
    assert_eq!(calls[3].path, b"named");
    assert_eq!(
        (calls[5].fd, calls[5].flags, &calls[5].path[..]),
        (7, BY_FD_NAME, &b"dir"[..])
    );
}

#[test]
fn forks_copy_or_share_the_table_and_unread_paths_are_counted() {
    let mut parser = Parser::for_kernel(Path::new("/r"), Path::new("/r"));
    let mut call = Call::default();
    let mut run = |parser: &mut Parser, r: SyscallRecord<'_>| {
        parser.kernel_call(&r, &mut call).map(|()| call.clone())
    };
    run(&mut parser, rec("openat", &[-100, 0, 0], 3, &[(1, b"f")])).unwrap();
    parser.kernel_fork(5, 6, 0x11);
    parser.kernel_fork(5, 7, 0x3d0f00);
    run(&mut parser, rec("openat", &[-100, 0, 0], 4, &[(1, b"g")])).unwrap();
    let on = |tid, fd| SyscallRecord {
        tid,
        ..rec("fsync", &[fd], 0, &[])
    };
    assert_eq!(run(&mut parser, on(6, 3)).unwrap().path, b"f");
    assert!(run(&mut parser, on(6, 4)).is_none());
    assert_eq!(run(&mut parser, on(7, 4)).unwrap().path, b"g");
    let mut unread = rec("unlinkat", &[-100, 0x7777, 0], -14, &[]);
    unread.paths[0] = Some((1, None));
    assert!(run(&mut parser, unread).is_none());
    assert_eq!(parser.skipped.get(&Skip::PathUnread).map(|s| s.0), Some(1));
    let tasks = parser.tasks();
    assert_eq!(tasks, [(5, 5), (6, 6), (7, 5)]);
}

#[test]
fn a_number_closed_by_one_thread_and_opened_by_another_is_each_ones_file() {
    let mut parser = Parser::for_kernel(Path::new("/r"), Path::new("/r"));
    let mut call = Call::default();
    let mut run = |parser: &mut Parser, r: SyscallRecord<'_>| {
        parser.kernel_call(&r, &mut call).map(|()| call.clone())
    };
    run(&mut parser, rec("openat", &[-100, 0, 0], 3, &[(1, b"a")])).unwrap();
    parser.kernel_fork(5, 6, 0x3d0f00);
    // Thread 5's close has freed 3 when thread 6's open is given it, and returns after.
    parser.kernel_closing(5, 3);
    let open = SyscallRecord {
        tid: 6,
        ..rec("openat", &[-100, 0, 0], 3, &[(1, b"b")])
    };
    assert_eq!(run(&mut parser, open).unwrap().path, b"b");
    assert_eq!(
        run(&mut parser, rec("close", &[3], 0, &[])).unwrap().path,
        b"a"
    );
    let write = SyscallRecord {
        tid: 6,
        ..rec("write", &[3, 0, 1], 1, &[])
    };
    assert_eq!(run(&mut parser, write).unwrap().path, b"b");
}

#[test]
fn threads_share_their_working_directory_and_processes_copy_it() {
    let mut parser = Parser::for_kernel(Path::new("/r"), Path::new("/r"));
    let mut call = Call::default();
    let mut run = |parser: &mut Parser, r: SyscallRecord<'_>| {
        parser.kernel_call(&r, &mut call).map(|()| call.clone())
    };
    // A thread (CLONE_FS among its flags) and a process (SIGCHLD alone).
    parser.kernel_fork(5, 6, 0x3d0f00);
    parser.kernel_fork(5, 7, 0x11);
    assert!(run(&mut parser, rec("chdir", &[0], 0, &[(0, b"d")])).is_none());
    let open = |tid| SyscallRecord {
        tid,
        ..rec("openat", &[-100, 0, 0o101, 0o644], 3, &[(1, b"f")])
    };
    assert_eq!(run(&mut parser, open(6)).unwrap().path, b"d/f");
    assert_eq!(run(&mut parser, open(7)).unwrap().path, b"f");
    // The working directory renamed under the thread: its paths follow.
    let rename = rec("rename", &[0, 0], 0, &[(0, b"/r/d"), (1, b"/r/e")]);
    assert!(run(&mut parser, rename).is_some());
    assert_eq!(run(&mut parser, open(6)).unwrap().path, b"e/f");
}

#[test]
fn each_call_is_on_the_programs_clock_less_what_tracing_had_cost_its_task() {
    let at = |start_ns: u64, cost_ns: u64, fd: i64| SyscallRecord {
        start_ns,
        end_ns: start_ns + 1_000,
        cost_ns,
        ..rec("fsync", &[fd], 0, &[])
    };
    let (parser, calls) = parse(&[
        rec("openat", &[-100, 0, O_WRONLY_CREAT, 0o644], 3, &[(1, b"f")]),
        at(1_500_000, 200_000, 3),
        at(3_000_000, 900_000, 3),
    ]);
    let times: Vec<(u64, u64)> = calls.iter().map(|c| (c.start_us, c.at_us)).collect();
    assert_eq!(times, [(0, 0), (500, 300), (2000, 1100)]);
    // The program's last call had cost it 0.9 ms.
    assert_eq!(parser.program_cost_us(), 900);
}

#[test]
fn fchmodat2_keeps_its_flags_and_the_newer_calls_on_files_are_named() {
    const NOFOLLOW: i64 = 0x100;
    const EMPTY_PATH: i64 = 0x1000;
    let (parser, calls) = parse(&[
        rec("openat", &[-100, 0, O_WRONLY_CREAT, 0o644], 3, &[(1, b"f")]),
        rec("fchmodat2", &[-100, 0, 0o600, 0], 0, &[(1, b"f")]),
        rec("fchmodat2", &[-100, 0, 0o777, NOFOLLOW], -95, &[(1, b"l")]),
        rec("fchmodat2", &[3, 0, 0o604, EMPTY_PATH], 0, &[(1, b"")]),
        // No AT_EMPTY_PATH: no file; counted, never a chmod of the descriptor.
        rec("fchmodat", &[3, 0, 0o604, EMPTY_PATH], -2, &[(1, b"")]),
        // A mount's descriptor: no file, neither recorded nor counted.
        rec("open_tree_attr", &[-100, 0, 1, 0, 0], 4, &[]),
        rec("file_setattr", &[-100, 0, 0, 24, 0], 0, &[(1, b"f")]),
    ]);
    let chmods: Vec<_> = (calls[1..].iter())
        .map(|c| (c.kind(), &c.path[..], c.fd, c.a, c.b, c.errno, c.flags))
        .collect();
    assert_eq!(
        chmods,
        [
            (Kind::Chmod, &b"f"[..], -1, 0o600, -1, 0, 0),
            // B 0: not followed; Linux refuses a symlink's own mode.
            (Kind::Chmod, &b"l"[..], -1, 0o777, 0, libc::EOPNOTSUPP, 0),
            // The descriptor's file, by its name (an O_PATH one, fchmod would refuse).
            (Kind::Chmod, &b"f"[..], 3, 0o604, -1, 0, BY_FD_NAME),
        ]
    );
    let named: Vec<_> = parser
        .skipped
        .iter()
        .map(|(w, (n, _))| (w.reason(), *n))
        .collect();
    assert_eq!(named.len(), 2, "{named:?}");
    assert_eq!(named[0], (Skip::EmptyPath.reason(), 1));
    assert!(named[1].0.contains("of file_setattr") && named[1].1 == 1);
}

#[test]
fn xattr_calls_are_recorded_with_their_names_sizes_and_flags() {
    const NOFOLLOW: i64 = 0x100;
    const EMPTY_PATH: i64 = 0x1000;
    // `struct xattr_args` as the BPF program reads it: value, size | flags << 32.
    let args = |size: u64, flags: u64| {
        let mut r = rec("setxattrat", &[], 0, &[]);
        r.data = Some([0x2000, size | flags << 32, 0]);
        r
    };
    let with_args = |mut r: SyscallRecord<'static>, how: &SyscallRecord<'_>| {
        r.data = how.data;
        r
    };
    let mut name_unread = rec("fsetxattr", &[3, 0x1000, 0, 1, 0], 0, &[]);
    name_unread.paths[0] = Some((1, None));
    let mut args_unread = rec("getxattrat", &[-100, 0, 0, 0, 0x2000, 16], 0, &[(1, b"f")]);
    args_unread.data_unread = true;
    let k = b"user.k";
    let (parser, calls) = parse(&[
        rec("openat", &[-100, 0, O_WRONLY_CREAT, 0o644], 3, &[(1, b"f")]),
        rec("setxattr", &[0, 0, 0, 100, 1], 0, &[(0, b"f"), (1, k)]),
        rec("lsetxattr", &[0, 0, 0, 5, 0], -1, &[(0, b"l"), (1, k)]),
        // Past the kernel's largest value: refused (E2BIG), and so in the replay.
        rec("fsetxattr", &[3, 0, 0, 200_000, 2], -7, &[(1, k)]),
        rec("getxattr", &[0, 0, 0, 0], 100, &[(0, b"f"), (1, k)]),
        rec("lgetxattr", &[0, 0, 0, 8], -61, &[(0, b"l"), (1, k)]),
        rec("fgetxattr", &[3, 0, 0, 4096], 100, &[(1, k)]),
        // A buffer past the largest list is cut to it, as the kernel cuts it.
        rec("listxattr", &[0, 0, 70_000], 7, &[(0, b"f")]),
        rec("llistxattr", &[0, 0, 0], 7, &[(0, b"l")]),
        rec("flistxattr", &[3, 0, 16], 7, &[]),
        rec("removexattr", &[0, 0], 0, &[(0, b"f"), (1, k)]),
        rec("lremovexattr", &[0, 0], -61, &[(0, b"l"), (1, k)]),
        rec("fremovexattr", &[3, 0], -61, &[(1, k)]),
        with_args(
            rec(
                "setxattrat",
                &[-100, 0, NOFOLLOW, 0, 0, 16],
                0,
                &[(1, b"d/f"), (3, k)],
            ),
            &args(5, 2),
        ),
        with_args(
            rec(
                "getxattrat",
                &[3, 0, EMPTY_PATH, 0, 0, 16],
                5,
                &[(1, b""), (3, k)],
            ),
            &args(64, 0),
        ),
        rec("listxattrat", &[-100, 0, 0, 0, 32], 7, &[(1, b"f")]),
        rec(
            "removexattrat",
            &[-100, 0, NOFOLLOW, 0],
            0,
            &[(1, b"f"), (3, k)],
        ),
        // Counted: outside the root, on no file, arguments the tracer could not read.
        rec("getxattr", &[0, 0, 0, 0], -61, &[(0, b"/etc/f"), (1, k)]),
        rec("fgetxattr", &[9, 0, 0, 0], -61, &[(1, k)]),
        name_unread,
        args_unread,
    ]);
    let got: Vec<_> = (calls[1..].iter())
        .map(|c| (c.kind(), &c.path[..], &c.path2[..], c.fd, c.a, c.b, c.fd2))
        .collect();
    let (f, l, none) = (&b"f"[..], &b"l"[..], &b""[..]);
    use Kind::{GetXattr as G, ListXattr as L, RemoveXattr as R, SetXattr as S};
    assert_eq!(
        got,
        [
            (S, f, &k[..], -1, 100, 1, 1),
            (S, l, &k[..], -1, 5, 0, 0),
            (S, f, &k[..], 3, 65_537, 1, 2),
            (G, f, &k[..], -1, 0, 1, -1),
            (G, l, &k[..], -1, 8, 0, -1),
            (G, f, &k[..], 3, 4096, 1, -1),
            (L, f, none, -1, 65_536, 1, -1),
            (L, l, none, -1, 0, 0, -1),
            (L, f, none, 3, 16, 1, -1),
            (R, f, &k[..], -1, 0, 1, -1),
            (R, l, &k[..], -1, 0, 0, -1),
            (R, f, &k[..], 3, 0, 1, -1),
            (S, &b"d/f"[..], &k[..], -1, 5, 0, 2),
            (G, f, &k[..], 3, 64, 1, -1),
            (L, f, none, -1, 32, 1, -1),
            (R, f, &k[..], -1, 0, 0, -1),
        ]
    );
    assert_eq!((calls[4].result, calls[3].errno), (100, 7));
    let skipped: Vec<_> = (parser.skipped.iter())
        .map(|(why, (n, _))| (*why, *n))
        .collect();
    let counted = [
        (Skip::Outside, 1),
        (Skip::NotAFile, 1),
        (Skip::PathUnread, 2),
    ];
    assert_eq!(skipped, counted);
}

#[test]
fn a_working_directory_through_a_symlink_is_the_directory_it_leads_to() {
    use crate::replay::trace::Entry;
    let mut parser = Parser::for_kernel(Path::new("/r"), Path::new("/r"));
    parser.symlinks_before(&[Entry::Symlink(b"here".to_vec(), b"far/real".to_vec())]);
    let mut call = Call::default();
    let mut paths = Vec::new();
    for r in [
        rec("chdir", &[0], 0, &[(0, b"here")]),
        rec("mkdir", &[0, 0o755], 0, &[(0, b"../x")]),
        rec("symlink", &[0, 0], 0, &[(0, b".."), (1, b"up")]),
        rec("chdir", &[0], 0, &[(0, b"up/..")]),
        rec("mkdir", &[0, 0o755], 0, &[(0, b"y")]),
        // Not followed: the symlink itself.
        rec("unlink", &[0], 0, &[(0, b"/r/here")]),
        rec("mkdir", &[0, 0o755], 0, &[(0, b"/r/here/z")]),
    ] {
        if parser.kernel_call(&r, &mut call).is_some() {
            paths.push(String::from_utf8(call.path.clone()).unwrap());
        }
    }
    assert_eq!(paths, ["far/x", "far/real/up", "y", "here", "here/z"]);
}

#[test]
fn the_descriptors_file_needs_at_empty_path_or_a_followed_proc_link() {
    const EMPTY_PATH: i64 = 0x1000;
    let (parser, calls) = parse(&[
        rec("openat", &[-100, 0, O_WRONLY_CREAT, 0o644], 3, &[(1, b"f")]),
        // glibc's fstat: the descriptor's file.
        rec("newfstatat", &[3, 0, 0, EMPTY_PATH], 0, &[(1, b"")]),
        rec("statx", &[3, 0, EMPTY_PATH, 0x7ff, 0], 0, &[(1, b"")]),
        // No AT_EMPTY_PATH: ENOENT, no file; counted, never a stat of the descriptor.
        rec("newfstatat", &[3, 0, 0, 0], -2, &[(1, b"")]),
        rec("statx", &[3, 0, 0, 0x7ff, 0], -2, &[(1, b"")]),
        rec("fchownat", &[3, 0, 0, 0, 0], -2, &[(1, b"")]),
        // readlinkat needs no flag for it.
        rec("readlinkat", &[3, 0, 0, 64], 1, &[(1, b"")]),
        // /proc's link itself, not followed: EOPNOTSUPP, the file untouched.
        rec(
            "fchmodat2",
            &[-100, 0, 0o600, 0x100],
            -95,
            &[(1, b"/proc/self/fd/3")],
        ),
    ]);
    let stats: Vec<_> = (calls[1..].iter())
        .map(|c| (c.kind(), c.fd, &c.path[..], c.errno))
        .collect();
    let on_f = (Kind::Stat, 3, &b"f"[..], 0);
    assert_eq!(stats, [on_f, on_f, (Kind::Readlink, 3, &b"f"[..], 0)]);
    let skipped: Vec<_> = (parser.skipped.iter())
        .map(|(w, (n, _))| (w.reason(), *n))
        .collect();
    assert_eq!(
        skipped,
        [(Skip::Outside.reason(), 1), (Skip::EmptyPath.reason(), 3)]
    );
}

#[test]
fn an_exchange_swaps_the_names_of_what_is_open_below_both() {
    const RENAME_EXCHANGE: i64 = 2;
    let (_, calls) = parse(&[
        rec(
            "openat",
            &[-100, 0, O_WRONLY_CREAT, 0o644],
            3,
            &[(1, b"a/x")],
        ),
        rec(
            "openat",
            &[-100, 0, O_WRONLY_CREAT, 0o644],
            4,
            &[(1, b"b/y")],
        ),
        rec(
            "renameat2",
            &[-100, 0, -100, 0, RENAME_EXCHANGE],
            0,
            &[(1, b"a"), (3, b"b")],
        ),
        rec("fsync", &[3], 0, &[]),
        rec("fsync", &[4], 0, &[]),
    ]);
    let paths: Vec<_> = calls[3..].iter().map(|c| &c.path[..]).collect();
    assert_eq!(paths, [&b"b/x"[..], &b"a/y"[..]]);
    assert_eq!(calls[2].a, RENAME_EXCHANGE as u64);
}

//! The strace parser on lines as strace 6 prints them.

use super::*;
use crate::replay::trace::{BY_FD_NAME, Entry, Kind};

fn parse(lines: &[&str]) -> (Vec<Call>, u64) {
    let mut p = Parser::new(Path::new("/r"), Path::new("/r"), 0);
    let mut out = Vec::new();
    let mut call = Call::default();
    for l in lines {
        if p.line(l.as_bytes(), &mut call).is_some() {
            out.push(call.clone());
        }
    }
    (out, p.dropped())
}

#[test]
fn strace_lines_become_calls_relative_to_the_root() {
    let (calls, dropped) = parse(&[
        r#"5 10.000000 openat(-100</r/d>, "../q\76w", 0x941, 0666) = 3</r/q\76w> <0.000010>"#,
        r#"5 10.000100 write(3</r/q\76w>,  <unfinished ...>"#,
        r#"6 10.000150 openat(-100</etc>, "/etc/passwd", 0) = 4</etc/passwd> <0.000010>"#,
        r#"5 10.000200 <... write resumed>""..., 4096) = 100 <0.000050>"#,
        r#"5 10.000300 newfstatat(-100</r>, "nope", 0x7ff, 0) = -1 ENOENT (No such file or directory) <0.000004>"#,
        r#"5 10.000400 renameat2(-100</r>, "a", -100</r>, "b", 0x1) = 0 <0.000004>"#,
        r#"5 10.000500 vfork() = 9 <0.000100>"#,
        r#"9 10.000600 mkdir("sub", 0755) = 0 <0.000010>"#,
        r#"9 10.000700 openat(-100</r>, "../../x", 0) = -1 ENOENT (x) <0.000010>"#,
    ]);
    assert_eq!(dropped, 2, "{calls:?}");
    let kinds: Vec<Kind> = calls.iter().map(Call::kind).collect();
    use Kind::*;
    assert_eq!(kinds, [Open, Write, Stat, Rename, Mkdir]);
    assert_eq!(calls[0].path, b"q>w");
    assert_eq!((calls[0].a, calls[0].b, calls[0].fd2), (0x941, 0o666, 3));
    assert_eq!((calls[1].fd, calls[1].a, calls[1].start_us), (3, 100, 100));
    assert_eq!((calls[2].errno, calls[2].a), (libc::ENOENT, 1));
    assert_eq!((&calls[3].path2[..], calls[3].a), (&b"b"[..], 1));
    // The child's working directory is its parent's.
    assert_eq!((calls[4].tid, &calls[4].path[..]), (9, &b"sub"[..]));
}

#[test]
fn openat2_keeps_its_open_how_and_sendfile_and_copies_their_offset() {
    let (calls, dropped) = parse(&[
        r#"5 10.000000 openat2(-100</r/d>, "a", {flags=0x241, mode=0640, resolve=0xc}, 24) = 3</r/d/a> <0.000010>"#,
        r#"5 10.000100 openat2(3</r/d>, "/b/../c", {flags=0, resolve=0x10}, 24) = 4</r/d/c> <0.000010>"#,
        r#"5 10.000200 openat2(-100</r>, "/etc/passwd", {flags=0}, 24) = 5</etc/passwd> <0.000010>"#,
        r#"5 10.000300 sendfile(3</r/d/a>, 4</r/d/c>, NULL, 6) = 6 <0.000010>"#,
        r#"5 10.000400 copy_file_range(4</r/d/c>, [2], 3</r/d/a>, NULL, 6, 0) = 6 <0.000010>"#,
        r#"5 10.000500 sendfile(3</r/d/a>, 4</r/d/c>, [5] => [9], 4) = 4 <0.000010>"#,
    ]);
    assert_eq!(dropped, 1, "{calls:?}");
    use Kind::*;
    let kinds: Vec<Kind> = calls.iter().map(Call::kind).collect();
    assert_eq!(kinds, [Open, Open, Sendfile, Copy, Sendfile]);
    assert_eq!(calls[0].path, b"d/a");
    let open = &calls[0];
    assert_eq!((open.a, open.b, open.fd2), (0x241 | 0xc << 32, 0o640, 3));
    // RESOLVE_IN_ROOT: the absolute path is below the directory descriptor.
    assert_eq!((&calls[1].path[..], calls[1].a), (&b"d/c"[..], 0x10 << 32));
    // sendfile(out, in): works on the input, writes to the output; B: the input offset.
    let send = &calls[2];
    assert_eq!((send.fd, send.fd2, send.a, send.b), (4, 3, 6, -1));
    assert_eq!(
        (&send.path[..], &send.path2[..]),
        (&b"d/c"[..], &b"d/a"[..])
    );
    assert_eq!((calls[3].fd, calls[3].fd2, calls[3].b), (4, 3, 2));
    assert_eq!((calls[4].a, calls[4].b), (4, 5));
}

#[test]
fn names_hold_any_byte_and_descriptors_are_followed_to_their_file() {
    let (calls, dropped) = parse(&[
        // A name with a space, a quote, `<>`, a newline, a non-UTF-8 byte and `) = 3 <`.
        r#"5 1.000000 openat(-100</r/d ir>, "q\"\74\76\n\377 x) = 3 <0", 0x241, 0640) = 3</r/d ir/q\"\074\76\n\377 x) = 3 \0740> <0.000010>"#,
        r#"5 1.000100 write(3</r/d ir/q\"\074\76\n\377 x) = 3 \0740>, ""..., 5) = 5 <0.000010>"#,
        // A file named `t (deleted)`, and a file deleted while open.
        r#"5 1.000200 openat(-100</r>, "t (deleted)", 0x42, 0600) = 4</r/t (deleted)> <0.000010>"#,
        r#"5 1.000300 unlinkat(-100</r>, "t (deleted)", 0) = 0 <0.000010>"#,
        r#"5 1.000400 fsync(4</r/t (deleted)>(deleted)) = 0 <0.000010>"#,
        // O_TMPFILE, named by linkat of /proc/self/fd/N; a mode by /proc/self/fd.
        r#"5 1.000500 openat(-100</r>, ".", 0x410002, 0640) = 6</r/#1234>(deleted) <0.000010>"#,
        r#"5 1.000600 linkat(-100</r>, "/proc/self/fd/6", -100</r>, "named", 0x400) = 0 <0.000010>"#,
        // A thread (CLONE_FILES) shares its process's descriptors, those opened after too.
        r#"5 1.000650 clone3({flags=0x3d0f00, child_tid=0x7f00, stack=0x7e00, stack_size=0x7fff00} => {parent_tid=[8]}, 88) = 8 <0.000010>"#,
        r#"5 1.000700 openat(-100</r>, "dir", 0x2a0000) = 7</r/dir> <0.000010>"#,
        r#"5 1.000800 chmod("/proc/self/fd/7", 0755) = 0 <0.000010>"#,
        r#"8 1.000860 chmod("/proc/self/fd/7", 0700) = 0 <0.000010>"#,
        // A descriptor this thread's process never showed: skipped, counted.
        r#"5 1.000900 chmod("/proc/self/fd/99", 0755) = 0 <0.000010>"#,
        r#"5 1.001000 fcntl(3</r/x>, 0x7, 0x7ffd) = 0 <0.000010>"#,
        "5 1.001100 this is not strace's",
    ]);
    use Kind::*;
    let kinds: Vec<Kind> = calls.iter().map(Call::kind).collect();
    assert_eq!(
        kinds,
        [
            Open, Write, Open, Unlink, Fsync, Open, Link, Open, Chmod, Chmod
        ]
    );
    let name = b"d ir/q\"<>\n\xff x) = 3 <0";
    assert_eq!(
        (&calls[0].path[..], &calls[1].path[..]),
        (&name[..], &name[..])
    );
    assert_eq!((calls[1].fd, calls[1].a), (3, 5));
    assert_eq!(calls[4].path, b"t (deleted)");
    let link = &calls[6];
    assert_eq!(
        (link.fd, link.flags, &link.path[..]),
        (6, BY_FD_NAME, &b"#1234"[..])
    );
    assert_eq!((&link.path2[..], link.a), (&b"named"[..], 0x400));
    let chmod = &calls[8];
    assert_eq!((chmod.fd, chmod.flags, chmod.a), (7, BY_FD_NAME, 0o755));
    assert_eq!(chmod.path, b"dir");
    assert_eq!(
        (calls[9].tid, calls[9].fd, &calls[9].path[..]),
        (8, 7, &b"dir"[..])
    );
    assert_eq!(dropped, 3);
}

#[test]
fn files_taken_from_outside_become_part_of_the_initial_state() {
    let mut p = Parser::new(Path::new("/r"), Path::new("/r"), 0);
    let mut call = Call::default();
    let mut calls = Vec::new();
    for l in [
        r#"5 1.0 copy_file_range(3</o/a>, NULL, 4</r/a>, NULL, 5000, 0) = 5000 <0.000010>"#,
        r#"5 1.1 linkat(-100</r>, "/o/b", -100</r>, "b", 0) = 0 <0.000010>"#,
        r#"5 1.2 renameat(-100</r>, "x", -100</r>, "/o/away/x", 0) = 0 <0.000010>"#,
        // Failed across filesystems: it would not fail so in a replay.
        r#"5 1.3 renameat(-100</r>, "/tmp/c", -100</r>, "c") = -1 EXDEV (x) <0.000010>"#,
    ] {
        if p.line(l.as_bytes(), &mut call).is_some() {
            calls.push(call.clone());
        }
    }
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0].path, b".fsbench-outside/o/a");
    assert_eq!(calls[1].path, b".fsbench-outside/o/b");
    assert_eq!(calls[2].path2, b".fsbench-outside/o/away/x");
    let sources = p.sources();
    let named = |e: &Entry| e.path().to_vec();
    let names: Vec<Vec<u8>> = sources.iter().map(named).collect();
    let want: Vec<&[u8]> = vec![
        b".fsbench-outside",
        b".fsbench-outside/o",
        b".fsbench-outside/o/a",
        b".fsbench-outside/o/away",
        b".fsbench-outside/o/b",
    ];
    assert_eq!(names, want);
    // Gone from where it was (no /o here): as long as the copy read.
    assert_eq!(
        sources[2],
        Entry::File(b".fsbench-outside/o/a".to_vec(), 5000, 0o644)
    );
    assert_eq!(p.dropped(), 1);
}

#[test]
fn the_program_clock_leaves_out_what_strace_added_before_each_call() {
    // 10 µs a call: the child inherits its parent's stops, the parent its waited child's.
    let mut p = Parser::new(Path::new("/r"), Path::new("/r"), 10_000);
    let mut call = Call::default();
    let mut at = Vec::new();
    for l in [
        r#"1 1.000000 openat(-100</r>, "a", 0) = 3</r/a> <0.000010>"#,
        r#"1 1.000100 clone(child_stack=NULL, flags=0x1200011) = 2 <0.000010>"#,
        r#"2 1.000200 openat(-100</r>, "b", 0) = 3</r/b> <0.000010>"#,
        r#"2 1.000300 close(3</r/b>) = 0 <0.000010>"#,
        r#"1 1.000400 wait4(-1, NULL, 0, NULL) = 2 <0.000010>"#,
        r#"1 1.000500 close(3</r/a>) = 0 <0.000010>"#,
    ] {
        if p.line(l.as_bytes(), &mut call).is_some() {
            at.push((call.start_us, call.at_us));
        }
    }
    assert_eq!(at, [(0, 0), (200, 180), (300, 270), (500, 460)]);
    // The program waited for its child: its stops hold the child's, not twice the same.
    assert_eq!((p.program_stops(), p.stops_total()), (5, 6));
}

#[test]
fn each_task_is_recorded_with_its_process() {
    let mut p = Parser::new(Path::new("/r"), Path::new("/r"), 0);
    let mut call = Call::default();
    for l in [
        r#"5 1.000000 mkdir("a", 0755) = 0 <0.000010>"#,
        // A fork (SIGCHLD, no CLONE_THREAD) whose child's first call shows before the
        // parent's clone returns, as strace -f prints them.
        r#"5 1.000100 clone(child_stack=NULL, flags=0x1200011 <unfinished ...>"#,
        r#"6 1.000150 mkdir("b", 0755) = 0 <0.000010>"#,
        r#"5 1.000200 <... clone resumed>, child_tidptr=0x7f00) = 6 <0.000100>"#,
        // The child's thread, and a thread of the first process.
        r#"6 1.000300 clone3({flags=0x3d0f00, child_tid=0x7f00, stack=0x7e00, stack_size=0x7fff00} => {parent_tid=[7]}, 88) = 7 <0.000010>"#,
        r#"5 1.000350 clone3({flags=0x3d0f00, child_tid=0x7f00, stack=0x7e00, stack_size=0x7fff00} => {parent_tid=[9]}, 88) = 9 <0.000010>"#,
        r#"7 1.000400 mkdir("c", 0755) = 0 <0.000010>"#,
        r#"9 1.000450 mkdir("d", 0755) = 0 <0.000010>"#,
        // vfork: a process of its own; a thread that made no recorded call is not listed.
        r#"5 1.000500 vfork() = 8 <0.000100>"#,
        r#"8 1.000600 mkdir("e", 0755) = 0 <0.000010>"#,
        r#"8 1.000700 clone3({flags=0x3d0f00} => {parent_tid=[10]}, 88) = 10 <0.000010>"#,
    ] {
        p.line(l.as_bytes(), &mut call);
    }
    assert_eq!(p.tasks(), [(5, 5), (6, 6), (7, 6), (8, 8), (9, 5)]);
}

#[test]
fn fchmodat2_by_name_is_a_chmod_and_by_number_is_counted_by_name() {
    let mut p = Parser::new(Path::new("/r"), Path::new("/r"), 0);
    let mut call = Call::default();
    let mut calls = Vec::new();
    for l in [
        // strace 6.1: the call by number, its path a pointer.
        r#"5 10.000000 syscall_0x1c4(0xffffff9c, 0x55cd5effb004, 0x180, 0, 0x7f29ed59e6d0, 0) = 0 <0.000030>"#,
        // futex_wait: no file.
        r#"5 10.000100 syscall_0x1c7(0x7f00, 0x1, 0, 0, 0, 0) = 0 <0.000001>"#,
        // A strace that knows it.
        r#"5 10.000200 fchmodat2(-100</r>, "l", 0777, 0x100) = -1 EOPNOTSUPP (Operation not supported) <0.000004>"#,
        r#"5 10.000300 fchmodat2(3</r/f>, "", 0604, 0x1000) = 0 <0.000004>"#,
        r#"5 10.000400 fchmodat2(-100</r>, "d", 0700, 0) = 0 <0.000004>"#,
        r#"5 10.000500 file_setattr(-100</r>, "f", 0x7ffc, 24, 0) = 0 <0.000004>"#,
        // Outside the root: counted so.
        r#"5 10.000600 setxattr("/etc/x", ""..., ""..., 1, 0) = 0 <0.000004>"#,
        r#"5 10.000700 fsetxattr(3</r/f>, ""..., ""..., 1, 0) = 0 <0.000004>"#,
    ] {
        if p.line(l.as_bytes(), &mut call).is_some() {
            calls.push(call.clone());
        }
    }
    let kinds: Vec<Kind> = calls.iter().map(Call::kind).collect();
    assert_eq!(kinds, [Kind::Chmod; 3]);
    // B 0: the last symlink is not followed.
    let c = &calls[0];
    assert_eq!(
        (&c.path[..], c.a, c.b, c.errno),
        (&b"l"[..], 0o777, 0, libc::EOPNOTSUPP)
    );
    assert_eq!((c.fd, &calls[1].path[..], calls[1].fd), (-1, &b"f"[..], 3));
    assert_eq!((calls[1].a, calls[1].flags), (0o604, BY_FD_NAME));
    assert_eq!((calls[2].a, calls[2].b), (0o700, -1));
    let named: Vec<_> = p
        .skipped
        .iter()
        .map(|(why, (n, _))| (why.reason(), *n))
        .collect();
    assert_eq!(named.len(), 4, "{named:?}");
    assert!(named.iter().all(|(_, n)| *n == 1), "{named:?}");
    assert_eq!(named[0].0, Skip::Outside.reason());
    assert!(named[1].0.contains("fchmodat2") && named[1].0.contains("--tracer bpf"));
    assert!(named[2].0.contains("of file_setattr"), "{named:?}");
    assert!(named[3].0.contains("of fsetxattr"), "{named:?}");
}

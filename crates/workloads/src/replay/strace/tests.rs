//! The strace parser on lines as strace 6 prints them.

use super::*;
use crate::replay::trace::Kind;

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

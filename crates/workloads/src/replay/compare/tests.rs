//! The streamed comparison of two real trees: every kind of difference found, in the walk's
//! order.

use std::os::fd::AsFd;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use super::*;
use crate::replay::state::each_left_at;
use crate::replay::trace::{Left, Program, TraceWriter};

/// The tree left below `root`, every entry of it.
fn left_at(root: &Path) -> anyhow::Result<Vec<Left>> {
    let mut out = Vec::new();
    each_left_at(root, &mut |e| {
        out.push(e.clone());
        Ok(())
    })?;
    Ok(out)
}

/// A tree of files, directories, a symlink and a hard link, with names whose walk order is
/// not their byte order (`a/b/x` comes after `a/b0`).
fn program_tree(root: &Path) {
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    for (name, body) in [
        ("a/b/x", "1"),
        ("a/b0", "22"),
        ("a-b", "333"),
        ("f", "4444"),
        ("gone", ""),
        ("kind", "5"),
    ] {
        std::fs::write(root.join(name), body).unwrap();
        mode(&root.join(name), 0o644);
    }
    for dir in ["a", "a/b"] {
        mode(&root.join(dir), 0o755);
    }
    std::fs::hard_link(root.join("f"), root.join("a/f-link")).unwrap();
    symlink("a/b", root.join("s")).unwrap();
}

/// Modes set whatever the umask.
fn mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, PermissionsExt::from_mode(mode)).unwrap();
}

/// The trace of a program that left `root`'s tree: its `final` lines only.
fn trace_of(root: &Path, trace: &Path, left: &[Left]) -> PathBuf {
    let file = std::fs::File::create(trace).unwrap();
    let mut w = TraceWriter::new(file, root, &Program::default()).unwrap();
    for e in left {
        w.left(e).unwrap();
    }
    w.finish(0).unwrap();
    trace.to_path_buf()
}

fn compared(trace: &Path, replayed: &Path) -> (Option<u64>, Option<String>) {
    let dir = std::fs::File::open(replayed).unwrap();
    tree(Some(trace), dir.as_fd()).unwrap()
}

#[test]
fn the_walk_lists_paths_in_walk_order() {
    let work = tempfile::tempdir().unwrap();
    program_tree(work.path());
    let paths: Vec<Vec<u8>> = left_at(work.path())
        .unwrap()
        .into_iter()
        .map(|e| e.path)
        .collect();
    let mut ordered = paths.clone();
    ordered.sort_by(|a, b| walk_order(a, b));
    assert_eq!(paths, ordered);
    // Not the paths' byte order: that would put a/b/x before a/b0.
    let mut bytes = paths.clone();
    bytes.sort();
    assert_ne!(paths, bytes);
}

#[test]
fn every_kind_of_difference_is_found_entry_by_entry() {
    let work = tempfile::tempdir().unwrap();
    let (program, replay) = (work.path().join("program"), work.path().join("replay"));
    program_tree(&program);
    program_tree(&replay);
    let trace = trace_of(
        &program,
        &work.path().join("t"),
        &left_at(&program).unwrap(),
    );
    assert_eq!(compared(&trace, &replay), (Some(0), None));

    // A name missing, one more, a type, a size, a mode, a link count, a symlink's target.
    std::fs::remove_file(replay.join("gone")).unwrap();
    std::fs::write(replay.join("a/b/extra"), "").unwrap();
    std::fs::remove_file(replay.join("kind")).unwrap();
    std::fs::create_dir(replay.join("kind")).unwrap();
    mode(&replay.join("kind"), 0o755);
    std::fs::write(replay.join("kind/inside"), "").unwrap();
    std::fs::write(replay.join("a-b"), "3").unwrap();
    mode(&replay.join("a/b0"), 0o600);
    std::fs::remove_file(replay.join("a/f-link")).unwrap();
    std::fs::write(replay.join("a/f-link"), "4444").unwrap();
    std::fs::remove_file(replay.join("s")).unwrap();
    symlink("a/b0", replay.join("s")).unwrap();
    // What a filesystem makes of itself is not a difference the program's tree lacks.
    std::fs::create_dir(replay.join("lost+found")).unwrap();
    std::fs::write(replay.join("lost+found/#12"), "").unwrap();

    let (differ, note) = compared(&trace, &replay);
    let note = note.unwrap();
    // gone, a/b/extra, kind (type), kind/inside, a-b, a/b0, f and a/f-link (link counts), s.
    assert_eq!(differ, Some(9), "{note}");
    let program_entries = left_at(&program).unwrap().len();
    assert!(
        note.contains(&format!("in 9 of {program_entries} entries")),
        "{note}"
    );
    // The first five named, in the walk's order.
    for named in [
        "a-b: program file 3 B 644 ×1, replay file 1 B 644 ×1",
        "f: program file 4 B 644 ×2, replay file 4 B 644 ×1",
        "gone: program file 0 B 644 ×1, replay missing",
        "kind: program file 1 B 644 ×1, replay dir 755",
        "s: program symlink → a/b, replay symlink → a/b0",
    ] {
        assert!(note.contains(named), "{named} in {note}");
    }
    assert!(!note.contains("lost+found"), "{note}");
}

#[test]
fn the_rest_of_a_tree_is_compared_after_the_walk() {
    let work = tempfile::tempdir().unwrap();
    let (program, replay) = (work.path().join("program"), work.path().join("replay"));
    program_tree(&program);
    std::fs::create_dir(&replay).unwrap();
    std::fs::write(replay.join("0"), "").unwrap();
    let left = left_at(&program).unwrap();
    let trace = trace_of(&program, &work.path().join("t"), &left);
    let (differ, note) = compared(&trace, &replay);
    // Every entry of the program's missing, and the replay's one extra.
    assert_eq!(differ, Some(left.len() as u64 + 1), "{note:?}");
}

#[test]
fn a_tree_out_of_the_walks_order_is_not_compared() {
    let work = tempfile::tempdir().unwrap();
    let (program, replay) = (work.path().join("program"), work.path().join("replay"));
    program_tree(&program);
    program_tree(&replay);
    let mut left = left_at(&program).unwrap();
    left.sort();
    let trace = trace_of(&program, &work.path().join("t"), &left);
    let (differ, note) = compared(&trace, &replay);
    assert_eq!(differ, None);
    assert!(note.unwrap().contains("not in the order"));
}

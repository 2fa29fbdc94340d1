//! The tree a replay left compared with the one the program left: both come in one order
//! (the walk's, [`walk_order`]) — the program's read from the trace, the replay's walked —
//! and are compared entry by entry, so that a tree of any size takes the memory of a few
//! entries (and of the largest directory's names, which the walk sorts).

use std::cmp::Ordering;
use std::os::fd::BorrowedFd;
use std::path::Path;

use super::state::{each_left, walk_order};
use super::trace::{Left, TraceReader, Xattr};
use fsbench_measure::units::shown;
use fsbench_model::units::group_thousands;

/// Entries of a differing tree named in its note.
const TREE_NAMED: usize = 5;
/// What a filesystem makes of itself (ext2/3/4's), not the replay's unless the program's
/// tree has it too.
const LOST_FOUND: &[u8] = b"lost+found";

/// Compares the tree below `dir` with the one the program left, as the trace (`None`: the
/// built-in demo) holds it: the number of entries that differ (missing, extra, or of another
/// type, size, mode, link count or attributes — those of a trace that lists them; `None`:
/// not compared) and a note naming a few.
pub(super) fn tree(
    trace: Option<&Path>,
    dir: BorrowedFd<'_>,
) -> anyhow::Result<(Option<u64>, Option<String>)> {
    let mut program = TraceReader::open(trace)?;
    let mut cmp = Comparison::default();
    cmp.more = program.left(&mut cmp.want)?;
    let xattrs = program.records_xattrs();
    each_left(dir, xattrs, &mut |got| cmp.replayed(&mut program, got))?;
    while cmp.more {
        cmp.found.add(Some(&cmp.want), None);
        cmp.next(&mut program)?;
    }
    Ok(cmp.outcome())
}

/// The comparison so far: the program's next entry, and what differed.
#[derive(Default)]
struct Comparison {
    /// The program's next entry, when `more`.
    want: Left,
    more: bool,
    /// The path of the program's entry before `want`, to check their order.
    before: Vec<u8>,
    /// The program's entries read.
    wanted: u64,
    /// The trace's tree is not in the walk's order (not written by capture): not compared.
    unordered: bool,
    program_has_lost_found: bool,
    found: Differences,
}

/// The entries that differ: how many, a few described.
#[derive(Default)]
struct Differences {
    count: u64,
    named: Vec<String>,
}

impl Differences {
    fn add(&mut self, program: Option<&Left>, replay: Option<&Left>) {
        self.count += 1;
        if self.named.len() < TREE_NAMED {
            let path = program.or(replay).map_or(&[][..], |e| &e.path[..]);
            let mut named = vec![];
            if program
                .zip(replay)
                .is_none_or(|(p, r)| !same_but_xattrs(p, r))
            {
                named.push(format!(
                    "program {}, replay {}",
                    describe(program),
                    describe(replay)
                ));
            }
            if let Some((p, r)) = program.zip(replay).filter(|(p, r)| p.xattrs != r.xattrs) {
                named.push(format!(
                    "attributes: the program's {}, the replay's {}",
                    xattrs_text(&p.xattrs, &r.xattrs),
                    xattrs_text(&r.xattrs, &p.xattrs)
                ));
            }
            self.named
                .push(format!("{}: {}", shown(path), named.join(", ")));
        }
    }
}

impl Comparison {
    /// The program's next entry; out of order, the comparison stops.
    fn next(&mut self, program: &mut TraceReader) -> anyhow::Result<()> {
        self.wanted += 1;
        self.program_has_lost_found |= self.want.path == LOST_FOUND;
        std::mem::swap(&mut self.before, &mut self.want.path);
        self.more = program.left(&mut self.want)?;
        if self.more && walk_order(&self.before, &self.want.path) != Ordering::Less {
            self.unordered = true;
            self.more = false;
        }
        Ok(())
    }

    /// One entry of the replay's tree: the program's before it are missing, the program's
    /// of its path is compared, none is an extra one.
    fn replayed(&mut self, program: &mut TraceReader, got: &Left) -> anyhow::Result<()> {
        if self.unordered {
            return Ok(());
        }
        while self.more && walk_order(&self.want.path, &got.path) == Ordering::Less {
            self.found.add(Some(&self.want), None);
            self.next(program)?;
        }
        if self.more && self.want.path == got.path {
            if self.want != *got {
                self.found.add(Some(&self.want), Some(got));
            }
            return self.next(program);
        }
        let in_lost_found = got.path == LOST_FOUND
            || (got.path.starts_with(LOST_FOUND) && got.path.get(LOST_FOUND.len()) == Some(&b'/'));
        // Only in the replay's: an extra entry, unless the filesystem made it.
        if self.program_has_lost_found || !in_lost_found {
            self.found.add(None, Some(got));
        }
        Ok(())
    }

    fn outcome(self) -> (Option<u64>, Option<String>) {
        if self.unordered {
            let note = "the trace's tree left is not in the order `fsbench capture` writes it: \
                        the replay's tree was not compared with it";
            return (None, Some(note.to_string()));
        }
        let found = self.found;
        if found.count == 0 {
            return (Some(0), None);
        }
        let note = format!(
            "the replay's tree differs from what the program left in {} of {} entries (names, \
             types, sizes, modes, link counts, extended attributes): {}",
            group_thousands(found.count),
            group_thousands(self.wanted),
            found.named.join("; ")
        );
        (Some(found.count), Some(note))
    }
}

fn same_but_xattrs(a: &Left, b: &Left) -> bool {
    (a.kind, a.size, a.mode, a.nlink, &a.target) == (b.kind, b.size, b.mode, b.nlink, &b.target)
}

/// The attributes of `these` that `others` has not with the same size, each with its size,
/// the first few; `none`. Each side names only its own: the differences.
fn xattrs_text(these: &[Xattr], others: &[Xattr]) -> String {
    let own: Vec<String> = (these.iter())
        .filter(|x| !others.iter().any(|o| o.name == x.name && o.size == x.size))
        .map(|x| format!("{} {} B", shown(&x.name), x.size))
        .collect();
    match own.len() {
        0 => "none".to_string(),
        n if n > 3 => format!("{} and {} more", own[..3].join(", "), n - 3),
        _ => own.join(", "),
    }
}

fn describe(e: Option<&Left>) -> String {
    match e {
        None => "missing".to_string(),
        Some(e) => match e.kind {
            b'f' => format!("file {} B {:o} ×{}", e.size, e.mode, e.nlink),
            b'd' => format!("dir {:o}", e.mode),
            _ => format!("symlink → {}", shown(&e.target)),
        },
    }
}

#[cfg(test)]
mod tests;

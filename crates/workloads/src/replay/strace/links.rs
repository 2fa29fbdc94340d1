//! The symlinks beneath the root, followed from the root's state before the program and the
//! program's own calls (symlink, unlink, rename), so that a working directory reached
//! through one is the directory it is, as the kernel resolved it: the bpf tracer's records
//! hold the path a chdir was given, and `..` from there is the real directory's parent,
//! not the symlink's.

use std::collections::BTreeMap;

use super::Parser;
use crate::replay::trace::Entry;

/// How many symlinks one resolution follows at most (the kernel's limit).
const HOPS_MAX: u32 = 40;

/// Each symlink's absolute path and its target.
#[derive(Debug, Default)]
pub(super) struct Symlinks(BTreeMap<Vec<u8>, Vec<u8>>);

impl Symlinks {
    pub(super) fn made(&mut self, abs: &[u8], target: &[u8]) {
        self.0.insert(abs.to_vec(), target.to_vec());
    }

    pub(super) fn removed(&mut self, abs: &[u8]) {
        self.0.remove(abs);
    }

    /// `old` was renamed `new`: a symlink at it or below it is now below `new`; one that
    /// was at `new` is gone, unless the two were exchanged (RENAME_EXCHANGE): then the ones
    /// at or below `new` are below `old`. Only the symlinks moved are looked at: a program
    /// that renames each of a million files beside a million symlinks (rsync, dpkg) would
    /// otherwise make a million million comparisons.
    pub(super) fn renamed(&mut self, old: &[u8], new: &[u8], exchanged: bool) {
        if self.0.is_empty() {
            return;
        }
        // All taken out before any is put back: an exchange swaps two sets of names.
        let from_old = self.take_at_or_below(old);
        let from_new = match exchanged {
            true => self.take_at_or_below(new),
            false => {
                self.0.remove(new);
                Vec::new()
            }
        };
        let moved = |(path, target): (Vec<u8>, Vec<u8>), from: &[u8], to: &[u8]| {
            ([to, &path[from.len()..]].concat(), target)
        };
        let back = (from_old.into_iter().map(|l| moved(l, old, new)))
            .chain(from_new.into_iter().map(|l| moved(l, new, old)));
        self.0.extend(back);
    }

    /// The symlinks at `at` and below it, taken out.
    fn take_at_or_below(&mut self, at: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        // The paths below `at` are those from `at/` up to `at0`: `0` follows `/`.
        let (first, past) = ([at, b"/"].concat(), [at, b"0"].concat());
        let below: Vec<Vec<u8>> = (self.0.range(first..past))
            .map(|(path, _)| path.clone())
            .collect();
        (std::iter::once(at.to_vec()).chain(below))
            .filter_map(|path| Some((path.clone(), self.0.remove(&path)?)))
            .collect()
    }

    /// Absolute `path` as the kernel resolves it, into `out`: every symlink known here
    /// followed (the last component only with `follow_last`, or a trailing slash), `..`
    /// climbing from where a symlink led; with none known, `path` lexically normalized. A
    /// symlink it does not know is taken as a directory.
    pub(super) fn resolve(&self, path: &[u8], follow_last: bool, out: &mut Vec<u8>) {
        // The components still to walk, the next last: slices of `path` and of targets.
        let mut left: Vec<&[u8]> = Vec::with_capacity(16);
        push_components(&mut left, path);
        out.clear();
        let mut hops = 0;
        while let Some(part) = left.pop() {
            match part {
                b"" | b"." => {}
                b".." => {
                    let cut = out.iter().rposition(|&c| c == b'/').unwrap_or(0);
                    out.truncate(cut);
                }
                name => {
                    out.push(b'/');
                    out.extend_from_slice(name);
                    let followed = follow_last || !left.is_empty();
                    let target =
                        (self.0.get(out.as_slice())).filter(|_| followed && hops < HOPS_MAX);
                    let Some(target) = target else {
                        continue;
                    };
                    hops += 1;
                    // The target, relative to the symlink's directory, in its place.
                    let cut = out.iter().rposition(|&c| c == b'/').unwrap_or(0);
                    out.truncate(cut);
                    if target.first() == Some(&b'/') {
                        out.clear();
                    }
                    push_components(&mut left, target);
                }
            }
        }
        if out.is_empty() {
            out.push(b'/');
        }
    }
}

impl Parser {
    /// The root's symlinks before the program ran (its state, `entries`).
    pub fn symlinks_before(&mut self, entries: &[Entry]) {
        for e in entries {
            if let Entry::Symlink(path, target) = e {
                let abs = [&self.root[..], b"/", path].concat();
                self.links.made(&abs, target);
            }
        }
    }
}

/// Where `path` is once `old` was renamed `new` (or the two exchanged): None where the
/// rename leaves it.
pub(super) fn renamed_path(
    path: &[u8],
    old: &[u8],
    new: &[u8],
    exchanged: bool,
) -> Option<Vec<u8>> {
    let below = |from: &[u8], to: &[u8]| {
        let rest = path.strip_prefix(from)?;
        (rest.is_empty() || rest.first() == Some(&b'/')).then(|| [to, rest].concat())
    };
    below(old, new).or_else(|| if exchanged { below(new, old) } else { None })
}

/// Pushes `path`'s components onto `stack` so that the first is popped first.
fn push_components<'a>(stack: &mut Vec<&'a [u8]>, path: &'a [u8]) {
    stack.extend(path.split(|&c| c == b'/').rev());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinks_target_is_where_dot_dot_climbs_from() {
        let mut links = Symlinks::default();
        links.made(b"/r/link", b"d/real");
        links.made(b"/r/abs", b"/r/d");
        links.made(b"/r/loop", b"loop");
        let r = |links: &Symlinks, path: &[u8], follow: bool| {
            let mut out = b"left from before".to_vec();
            links.resolve(path, follow, &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(r(&links, b"/r/link", true), "/r/d/real");
        // Its last component not followed, but for a trailing slash or a `..` after it.
        assert_eq!(r(&links, b"/r/link", false), "/r/link");
        assert_eq!(r(&links, b"/r/link/", false), "/r/d/real");
        assert_eq!(r(&links, b"/r/link/..", false), "/r/d");
        assert_eq!(r(&links, b"/r/link/../x", false), "/r/d/x");
        assert_eq!(r(&links, b"/r/abs/real/../..", false), "/r");
        assert_eq!(r(&links, b"/r/d/../plain/./y", false), "/r/plain/y");
        assert_eq!(r(&links, b"/r/../..", false), "/");
        // Followed 40 times, then taken as it is.
        assert_eq!(r(&links, b"/r/loop", true), "/r/loop");
        links.renamed(b"/r", b"/s", false);
        assert_eq!(r(&links, b"/s/link/..", true), "/s/d");
        assert_eq!(
            r(&links, b"/s/abs/x", true),
            "/r/d/x",
            "its target still says /r/d"
        );
        links.removed(b"/s/link");
        assert_eq!(r(&links, b"/s/link/..", true), "/s");
        links.made(b"/s/link", b"d/real");
        links.renamed(b"/s/d", b"/s/link", false);
        assert_eq!(
            r(&links, b"/s/link/..", true),
            "/s",
            "a directory renamed over it"
        );
        links.made(b"/s/other", b"d/real");
        links.made(b"/s/e/inner", b"/far");
        links.renamed(b"/s/other", b"/s/e", true);
        assert_eq!(
            r(&links, b"/s/e/..", true),
            "/s/d",
            "exchanged: /s/e is the symlink"
        );
        assert_eq!(
            r(&links, b"/s/other/inner/x", true),
            "/far/x",
            "and /s/other the dir"
        );
    }

    #[test]
    fn a_rename_moves_the_symlinks_at_and_below_it_and_no_others() {
        let mut links = Symlinks::default();
        for path in [
            "/r/a", "/r/a/x", "/r/a/y/z", "/r/a-b", "/r/a.c", "/r/a0", "/r/ab",
        ] {
            links.made(path.as_bytes(), b"t");
        }
        links.renamed(b"/r/a", b"/r/n", false);
        let paths = |links: &Symlinks| -> Vec<String> {
            (links.0.keys())
                .map(|p| String::from_utf8(p.clone()).unwrap())
                .collect()
        };
        let kept = ["/r/a-b", "/r/a.c", "/r/a0", "/r/ab"];
        let moved = ["/r/n", "/r/n/x", "/r/n/y/z"];
        let mut both = [&kept[..], &moved[..]].concat();
        both.sort();
        assert_eq!(paths(&links), both);
        // Exchanged back with a name that holds symlinks of its own.
        links.renamed(b"/r/n", b"/r/ab", true);
        let mut swapped = [&kept[..3], &["/r/ab", "/r/ab/x", "/r/ab/y/z", "/r/n"]].concat();
        swapped.sort();
        assert_eq!(paths(&links), swapped);
    }
}

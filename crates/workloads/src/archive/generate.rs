//! A deterministic generator of BackupPC-shaped archives (as in the BackupPC tar report): a pool
//! `cpool/X/Y/Z/<32 hex digits>` of files with zeroed content, then backup trees
//! `pc/<host>/<n>/...` whose files are hard links to pool files, interspersed with empty and a few
//! regular files, and optionally many links to one popular pool file (what hit btrfs's and
//! nilfs2's link limits in that report).
//!
//! Every entry is computed from its position and the generator's seed, so it holds no list of
//! what it produced: memory is constant in the archive's size.

use std::fmt::Write as _;
use std::io::{self, Read as _, Write};
use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};

use super::{Entry, EntryKind};

/// Pool files are spread over 16 × 16 × 16 directories, as BackupPC's cpool.
const POOL_DIRS: u64 = 4096;

/// The shape of a generated archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    pub pool_files: u64,
    pub hosts: u32,
    pub backups_per_host: u32,
    pub files_per_backup: u64,
    /// Files per directory in a backup tree.
    pub files_per_dir: u32,
    /// Share of backup files that are empty regular files (not links), per mille.
    pub empty_permille: u32,
    /// Share of backup files that are regular files with data, per mille.
    pub regular_permille: u32,
    /// Extra hard links to pool file 0, in `pc/popular/`.
    pub popular_links: u64,
    /// Pool file sizes are log-uniform between these, in bytes.
    pub min_size: u64,
    pub max_size: u64,
    pub seed: u64,
}

/// splitmix64: a tiny, stable hash, so the same seed gives the same archive in any version.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl Shape {
    /// Size of pool file `i`.
    fn pool_size(&self, i: u64) -> u64 {
        let (lo, hi) = (
            self.min_size.max(1) as f64,
            self.max_size.max(self.min_size).max(1) as f64,
        );
        let u = (mix(self.seed ^ 0x5151 ^ i) >> 11) as f64 / (1u64 << 53) as f64;
        (lo * (hi / lo).powf(u)).round() as u64
    }

    /// Appends pool file `i`'s path to `out`: `cpool/X/Y/Z/` and 32 hex digits starting XYZ.
    fn pool_path(&self, i: u64, out: &mut String) {
        let d = i % POOL_DIRS;
        let digits = [
            HEX[(d >> 8) as usize],
            HEX[((d >> 4) & 15) as usize],
            HEX[(d & 15) as usize],
        ];
        out.push_str("cpool/");
        for c in digits {
            out.push(c as char);
            out.push('/');
        }
        for c in digits {
            out.push(c as char);
        }
        let (a, b) = (mix(self.seed ^ i), mix(self.seed.rotate_left(17) ^ i));
        for k in 0..29 {
            let word = if k < 16 {
                a >> (4 * k)
            } else {
                b >> (4 * (k - 16))
            };
            out.push(HEX[(word & 15) as usize] as char);
        }
    }

    /// Calls `emit` for every entry in archive order. `emit` returns false to stop early.
    /// Paths are built in two reused buffers: nothing is allocated per entry.
    pub fn walk(&self, emit: &mut dyn FnMut(&Entry<'_>) -> bool) {
        let mut walk = Walk {
            shape: self,
            emit,
            path: String::with_capacity(256),
            link: String::with_capacity(256),
        };
        if walk.pool().is_continue() {
            let _ = walk.backups();
        }
    }

    /// (entries, bytes of file data, inodes) of the archive.
    pub fn totals(&self) -> (u64, u64, u64) {
        let (mut entries, mut bytes, mut inodes) = (0, 0, 0);
        self.walk(&mut |e| {
            entries += 1;
            bytes += e.size;
            if e.kind != EntryKind::HardLink {
                inodes += 1;
            }
            true
        });
        (entries, bytes, inodes)
    }

    /// Writes the archive as a tar file (GNU format, long names as GNU tar writes them).
    pub fn write_tar(&self, out: impl Write) -> io::Result<()> {
        let mut builder = tar::Builder::new(out);
        let mut failure = None;
        self.walk(&mut |e| {
            let path = std::str::from_utf8(e.path).expect("generated paths are ASCII");
            let mut header = tar::Header::new_gnu();
            header.set_mtime(1_273_190_400); // 2010-05-07, the seed's date: deterministic output.
            header.set_uid(0);
            header.set_gid(0);
            let result = match e.kind {
                EntryKind::Dir => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(0o755);
                    header.set_size(0);
                    builder.append_data(&mut header, path, io::empty())
                }
                EntryKind::File => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_mode(0o644);
                    header.set_size(e.size);
                    builder.append_data(&mut header, path, io::repeat(0).take(e.size))
                }
                EntryKind::HardLink | EntryKind::Symlink => {
                    let kind = if e.kind == EntryKind::HardLink {
                        tar::EntryType::Link
                    } else {
                        tar::EntryType::Symlink
                    };
                    header.set_entry_type(kind);
                    header.set_mode(0o644);
                    header.set_size(0);
                    let target = std::str::from_utf8(e.link).expect("generated paths are ASCII");
                    builder.append_link(&mut header, path, target)
                }
                EntryKind::Fifo | EntryKind::Other(_) => Ok(()),
            };
            match result {
                Ok(()) => true,
                Err(err) => {
                    failure = Some(err);
                    false
                }
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
        builder.into_inner()?.flush()
    }
}

/// A walk of the archive's entries: the emitter and the two reused path buffers. Each step
/// breaks where `emit` asks to stop.
struct Walk<'a> {
    shape: &'a Shape,
    emit: &'a mut dyn FnMut(&Entry<'_>) -> bool,
    path: String,
    link: String,
}

impl Walk<'_> {
    /// The entry at `path` (with `link` as its target where it is a hard link).
    fn entry(&mut self, kind: EntryKind, size: u64) -> ControlFlow<()> {
        let link = if kind == EntryKind::HardLink {
            self.link.as_bytes()
        } else {
            b""
        };
        let entry = Entry {
            path: self.path.as_bytes(),
            kind,
            size,
            link,
        };
        match (self.emit)(&entry) {
            true => ControlFlow::Continue(()),
            false => ControlFlow::Break(()),
        }
    }

    /// The directory `path`.
    fn dir(&mut self, path: std::fmt::Arguments<'_>) -> ControlFlow<()> {
        self.path.clear();
        let _ = self.path.write_fmt(path);
        self.entry(EntryKind::Dir, 0)
    }

    /// `cpool/x/y/z/`: the pool's directories, each with its files.
    fn pool(&mut self) -> ControlFlow<()> {
        let shape = self.shape;
        self.dir(format_args!("cpool/"))?;
        for d in 0..POOL_DIRS.min(shape.pool_files) {
            let (x, y, z) = (
                HEX[(d >> 8) as usize] as char,
                HEX[((d >> 4) & 15) as usize] as char,
                HEX[(d & 15) as usize] as char,
            );
            if d & 0xff == 0 {
                self.dir(format_args!("cpool/{x}/"))?;
            }
            if d & 0xf == 0 {
                self.dir(format_args!("cpool/{x}/{y}/"))?;
            }
            self.dir(format_args!("cpool/{x}/{y}/{z}/"))?;
            for i in (d..shape.pool_files).step_by(POOL_DIRS as usize) {
                self.path.clear();
                shape.pool_path(i, &mut self.path);
                self.entry(EntryKind::File, shape.pool_size(i))?;
            }
        }
        ControlFlow::Continue(())
    }

    /// `pc/host<h>/<n>/`: every host's backups, then the popular links' tree.
    fn backups(&mut self) -> ControlFlow<()> {
        let shape = self.shape;
        self.dir(format_args!("pc/"))?;
        for h in 0..shape.hosts {
            self.dir(format_args!("pc/host{h}/"))?;
            for n in 0..shape.backups_per_host {
                let chooser = |k: u64| {
                    let r = mix(shape.seed ^ ((h as u64) << 48) ^ ((n as u64) << 32) ^ k);
                    let per_mille = (r % 1000) as u32;
                    if per_mille < shape.empty_permille || shape.pool_files == 0 {
                        (EntryKind::File, 0, 0)
                    } else if per_mille < shape.empty_permille + shape.regular_permille {
                        (EntryKind::File, shape.pool_size(r >> 10), 0)
                    } else {
                        (EntryKind::HardLink, 0, (r >> 10) % shape.pool_files)
                    }
                };
                self.tree(
                    shape.files_per_backup,
                    chooser,
                    format_args!("pc/host{h}/{n}/"),
                )?;
            }
        }
        if shape.popular_links > 0 && shape.pool_files > 0 {
            self.dir(format_args!("pc/popular/"))?;
            let chooser = |_| (EntryKind::HardLink, 0, 0);
            self.tree(shape.popular_links, chooser, format_args!("pc/popular/0/"))?;
        }
        ControlFlow::Continue(())
    }

    /// One backup tree: `files` files under `<prefix>f%2f/fdir<n>/ff<k>`, each (its kind, size
    /// and pool file) as `chooser` says.
    fn tree(
        &mut self,
        files: u64,
        chooser: impl Fn(u64) -> (EntryKind, u64, u64),
        prefix: std::fmt::Arguments<'_>,
    ) -> ControlFlow<()> {
        let fpd = self.shape.files_per_dir.max(1) as u64;
        self.dir(prefix)?;
        self.path.push_str("f%2f/");
        self.entry(EntryKind::Dir, 0)?;
        for k in 0..files {
            let (kind, size, pool) = chooser(k);
            self.link.clear();
            if kind == EntryKind::HardLink {
                self.shape.pool_path(pool, &mut self.link);
            }
            self.path.clear();
            let _ = self.path.write_fmt(prefix);
            let _ = write!(self.path, "f%2f/fdir{}/", k / fpd);
            if k % fpd == 0 {
                self.entry(EntryKind::Dir, 0)?;
            }
            let _ = write!(self.path, "ff{k}");
            self.entry(kind, size)?;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Shape {
        Shape {
            pool_files: 300,
            hosts: 2,
            backups_per_host: 2,
            files_per_backup: 150,
            files_per_dir: 64,
            empty_permille: 100,
            regular_permille: 10,
            popular_links: 5,
            min_size: 10,
            max_size: 5000,
            seed: 1,
        }
    }

    #[test]
    fn pool_paths_have_backuppc_shape() {
        let s = tiny();
        let mut p = String::new();
        s.pool_path(0x123 + 4096 * 2, &mut p);
        assert!(p.starts_with("cpool/1/2/3/123"), "{p}");
        assert_eq!(p.len(), "cpool/1/2/3/".len() + 32);
        assert!(p[12..].bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn deterministic_and_links_point_at_earlier_pool_files() {
        let s = tiny();
        let mut seen = std::collections::HashSet::new();
        let mut first = Vec::new();
        s.walk(&mut |e| {
            let path = String::from_utf8(e.path.to_vec()).unwrap();
            match e.kind {
                EntryKind::HardLink => {
                    let target = String::from_utf8(e.link.to_vec()).unwrap();
                    assert!(
                        seen.contains(&target),
                        "{path} links to {target}, not yet extracted"
                    );
                }
                EntryKind::File | EntryKind::Dir => {
                    let parent = path
                        .trim_end_matches('/')
                        .rsplit_once('/')
                        .map(|(p, _)| format!("{p}/"));
                    if let Some(parent) = parent {
                        assert!(seen.contains(&parent), "{path} comes before its directory");
                    }
                }
                _ => {}
            }
            seen.insert(path.clone());
            first.push(path);
            true
        });
        let mut again = Vec::new();
        s.walk(&mut |e| {
            again.push(String::from_utf8(e.path.to_vec()).unwrap());
            true
        });
        assert_eq!(first, again);
        let (entries, _, _) = s.totals();
        assert_eq!(entries as usize, first.len());
        assert_eq!(
            first
                .iter()
                .filter(|p| p.starts_with("pc/popular/0/f%2f/fdir0/ff"))
                .count(),
            5
        );
    }
}

//! Where a file set's files are, built as filebench builds its tree: each directory gets a
//! width and a depth drawn from gamma distributions around the set's `dirwidth` and the depth
//! that width needs for its entries; a directory at its depth holds files, numbered `%08d`
//! from 1, the others hold directories. Files are numbered in the order the tree is built, so
//! a leaf directory's files have consecutive numbers: the layout keeps one row per directory,
//! never one per file, and a file's path and size are computed from its number.

use std::ffi::CStr;

use super::model::{Fileset, Num};
use crate::io::Rng;

/// The tree of one file set.
#[derive(Debug)]
pub(super) struct Layout {
    /// The set's directory name.
    name: String,
    /// Each directory's parent (`None`: the set's own directory) and its `%08d` name.
    dirs: Vec<(Option<u32>, u32)>,
    /// Directories holding files, in file order: (first file, directory).
    leaves: Vec<(u64, u32)>,
    /// Directories holding leaf directories, the same way.
    leafdir_rows: Vec<(u64, u32)>,
    entries: u64,
    size: Num,
    /// Draws each file's size from its number, the same at every use.
    size_seed: u64,
}

/// A draw from the gamma distribution of `shape` and scale 1 (Marsaglia and Tsang's method;
/// below a shape of 1, the draw for shape + 1 scaled by U^(1/shape)).
pub(super) fn gamma(rng: &mut Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = rng.unit().max(f64::MIN_POSITIVE);
        return gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        // A standard normal draw (Box-Muller).
        let (u1, u2) = (rng.unit().max(f64::MIN_POSITIVE), rng.unit());
        let x = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = rng.unit().max(f64::MIN_POSITIVE);
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

impl Num {
    /// A value: the fixed one, or a draw (rounded down, as filebench takes integers).
    pub(crate) fn draw(&self, rng: &mut Rng) -> u64 {
        match *self {
            Num::Fixed(n) => n,
            Num::Gamma { mean, gamma: shape } => (gamma(rng, shape) * mean / shape) as u64,
            Num::Uniform { lower, upper } => (lower + rng.unit() * (upper - lower)) as u64,
        }
    }
}

/// Room for the deepest path a set can have (`name` and 8-digit names).
const PATH_MAX: usize = 4096;

impl Layout {
    /// The tree of `set`, drawn from `seed`; an error where it would be absurdly deep.
    pub(super) fn new(set: &Fileset, seed: u64) -> Result<Layout, String> {
        let mut b = Builder {
            rng: Rng::new(seed),
            gamma: f64::from(set.dirgamma) / 1000.0,
            width: set.dirwidth as f64,
            depth: ((set.entries + set.leafdirs).max(1) as f64).ln() / (set.dirwidth as f64).ln(),
            total: [set.entries, set.leafdirs],
            placed: [0, 0],
            dirs: Vec::new(),
            rows: [Vec::new(), Vec::new()],
        };
        // A `define file` is a one-entry set, as in filebench: SET/00000001/00000001.
        b.subdir(None, 1, 0.0)?;
        let [leaves, leafdir_rows] = b.rows;
        Ok(Layout {
            name: set.name.clone(),
            dirs: b.dirs,
            leaves,
            leafdir_rows,
            entries: set.entries,
            size: set.size,
            size_seed: seed ^ 0x5bd1_e995_9e37_79b9,
        })
    }

    pub(super) fn entries(&self) -> u64 {
        self.entries
    }

    pub(super) fn dir_count(&self) -> usize {
        self.dirs.len()
    }

    /// Bytes the layout holds (for the memory a set costs).
    pub(super) fn bytes(&self) -> usize {
        self.dirs.len() * std::mem::size_of::<(Option<u32>, u32)>()
            + (self.leaves.len() + self.leafdir_rows.len()) * std::mem::size_of::<(u64, u32)>()
    }

    /// File `index`'s size, the same at every call.
    pub(super) fn size(&self, index: u64) -> u64 {
        match self.size {
            Num::Fixed(n) => n,
            other => other.draw(&mut Rng::new(
                self.size_seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            )),
        }
    }

    /// Directory `dir`'s path below the target directory into `buf`, as a C string of
    /// `len` bytes (without its NUL); the set's own directory is `name`.
    fn write_dir(&self, mut dir: Option<u32>, buf: &mut [u8; PATH_MAX]) -> usize {
        // The names from the leaf upwards, then reversed into place.
        let mut chain = [0u32; 64];
        let mut depth = 0;
        while let Some(d) = dir {
            let (parent, serial) = self.dirs[d as usize];
            if parent.is_none() {
                // The root is the set's own directory.
                break;
            }
            chain[depth] = serial;
            depth += 1;
            dir = parent;
        }
        let name = self.name.as_bytes();
        buf[..name.len()].copy_from_slice(name);
        let mut at = name.len();
        for serial in chain[..depth].iter().rev() {
            at = push_serial(buf, at, *serial);
        }
        at
    }

    /// File `index`'s path (`SET/00000001/00000003`) in `buf`.
    pub(super) fn file_path<'b>(&self, index: u64, buf: &'b mut [u8; PATH_MAX]) -> &'b CStr {
        let leaf = self.leaves.partition_point(|(first, _)| *first <= index) - 1;
        let (first, dir) = self.leaves[leaf];
        let at = self.write_dir(Some(dir), buf);
        let at = push_serial(buf, at, (index - first + 1) as u32);
        buf[at] = 0;
        CStr::from_bytes_with_nul(&buf[..=at]).expect("one NUL at the end")
    }

    /// Leaf directory `index`'s path (`SET/00000001/00000002`) in `buf`.
    pub(super) fn leafdir_path<'b>(&self, index: u64, buf: &'b mut [u8; PATH_MAX]) -> &'b CStr {
        let row = self
            .leafdir_rows
            .partition_point(|(first, _)| *first <= index)
            - 1;
        let (first, dir) = self.leafdir_rows[row];
        let at = self.write_dir(Some(dir), buf);
        let at = push_serial(buf, at, (index - first + 1) as u32);
        buf[at] = 0;
        CStr::from_bytes_with_nul(&buf[..=at]).expect("one NUL at the end")
    }

    /// Directory `dir`'s path (the set's own for 0), for listdir.
    pub(super) fn dir_path<'b>(&self, dir: u32, buf: &'b mut [u8; PATH_MAX]) -> &'b CStr {
        let at = self.write_dir(Some(dir), buf);
        buf[at] = 0;
        CStr::from_bytes_with_nul(&buf[..=at]).expect("one NUL at the end")
    }

    /// The path of the directory holding file `index`, for the stat filebench makes before
    /// a create.
    pub(super) fn parent_path<'b>(&self, index: u64, buf: &'b mut [u8; PATH_MAX]) -> &'b CStr {
        let leaf = self.leaves.partition_point(|(first, _)| *first <= index) - 1;
        let at = self.write_dir(Some(self.leaves[leaf].1), buf);
        buf[at] = 0;
        CStr::from_bytes_with_nul(&buf[..=at]).expect("one NUL at the end")
    }

    /// Every directory's path, parents first (the order they are made in).
    pub(super) fn dir_paths(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        (0..self.dirs.len()).map(|d| {
            let mut buf = [0u8; PATH_MAX];
            let n = self.write_dir(Some(d as u32), &mut buf);
            buf[..n].to_vec()
        })
    }
}

/// Writes `/%08d` of `serial` at `at`; returns the new end.
fn push_serial(buf: &mut [u8; PATH_MAX], at: usize, serial: u32) -> usize {
    buf[at] = b'/';
    let mut n = serial;
    for i in (1..=8).rev() {
        buf[at + i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    at + 9
}

/// Builds a tree as filebench's `fileset_populate_subdir` does.
struct Builder {
    rng: Rng,
    gamma: f64,
    width: f64,
    depth: f64,
    /// Files, then leaf directories: how many, how many placed, the rows of their
    /// directories.
    total: [u64; 2],
    placed: [u64; 2],
    dirs: Vec<(Option<u32>, u32)>,
    rows: [Vec<(u64, u32)>; 2],
}

impl Builder {
    /// A draw around `mean`, or `mean` itself without a spread.
    fn around(&mut self, mean: f64) -> f64 {
        if self.gamma > 0.0 {
            gamma(&mut self.rng, self.gamma) * mean / self.gamma
        } else {
            mean
        }
    }

    fn subdir(&mut self, parent: Option<u32>, serial: u32, depth: f64) -> Result<(), String> {
        let depth = depth + 1.0;
        if depth > 60.0 {
            return Err(
                "its directory tree would be more than 60 levels deep: use a larger dirwidth"
                    .into(),
            );
        }
        let id = u32::try_from(self.dirs.len()).map_err(|_| "more than 2^32 directories")?;
        self.dirs.push((parent, serial));
        let randepth = match self.around(self.depth) as u64 {
            0 => 1.0,
            d => d as f64,
        };
        let width = match self.around(self.width) {
            0.0 => 1.0,
            w => w,
        };
        let leaf = parent.is_some() && depth >= randepth;
        // Files first, then leaf directories, each numbered from 1 (where one directory gets
        // both, filebench gives them the same names, and so does fsbench).
        for kind in 0..2 {
            if leaf && self.placed[kind] < self.total[kind] {
                self.rows[kind].push((self.placed[kind], id));
            }
            let mut i = 1u32;
            while (parent.is_none() || f64::from(i) < width + 1.0)
                && self.placed[kind] < self.total[kind]
            {
                if leaf {
                    self.placed[kind] += 1;
                } else {
                    self.subdir(Some(id), i, depth)?;
                }
                i += 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(entries: u64, dirwidth: u64) -> Fileset {
        Fileset {
            name: "set".into(),
            single: false,
            entries,
            leafdirs: 0,
            size: Num::Gamma {
                mean: 16384.0,
                gamma: 1.5,
            },
            dirwidth,
            dirgamma: 1500,
            prealloc: 80,
            readonly: false,
            writeonly: false,
            paralloc: false,
        }
    }

    #[test]
    fn every_file_has_one_path_under_the_sets_directory() {
        let layout = Layout::new(&set(5000, 20), 7).unwrap();
        let mut buf = [0u8; PATH_MAX];
        let mut seen = std::collections::HashSet::new();
        for i in 0..5000 {
            let path = layout.file_path(i, &mut buf).to_str().unwrap().to_string();
            assert!(path.starts_with("set/"), "{path}");
            assert!(
                path.len() > 13 && path.ends_with(|c: char| c.is_ascii_digit()),
                "{path}"
            );
            assert!(seen.insert(path));
        }
        // About 20 files a directory: one row per directory, a handful of bytes per file.
        let per_dir = 5000.0 / layout.leaves.len() as f64;
        assert!(
            (8.0..60.0).contains(&per_dir),
            "{per_dir} files per leaf directory"
        );
        assert!(layout.bytes() < 5000 * 4, "{} bytes", layout.bytes());
    }

    #[test]
    fn a_wide_set_is_one_directory_and_a_file_is_alone() {
        let layout = Layout::new(&set(1000, 1_000_000), 1).unwrap();
        let mut buf = [0u8; PATH_MAX];
        let first = layout.parent_path(0, &mut buf).to_bytes().to_vec();
        assert_eq!(layout.parent_path(999, &mut buf).to_bytes(), first);
        let file = Fileset {
            single: true,
            entries: 1,
            dirgamma: 0,
            ..set(1, 10)
        };
        let layout = Layout::new(&file, 1).unwrap();
        assert_eq!(
            layout.file_path(0, &mut buf).to_bytes(),
            b"set/00000001/00000001"
        );
    }

    #[test]
    fn two_million_files_take_a_few_bytes_each() {
        let layout = Layout::new(&set(2_000_000, 20), 5).unwrap();
        let mut buf = [0u8; PATH_MAX];
        assert!(
            layout
                .file_path(1_999_999, &mut buf)
                .to_bytes()
                .starts_with(b"set/")
        );
        let shared = super::super::files::SetState::room(2_000_000, 0, 64);
        let per_file = (layout.bytes() + shared) as f64 / 2e6;
        assert!(per_file < 4.0, "{per_file} bytes a file");
    }

    #[test]
    fn sizes_follow_the_gamma_mean_and_repeat() {
        let layout = Layout::new(&set(20000, 20), 3).unwrap();
        let mean = (0..20000).map(|i| layout.size(i) as f64).sum::<f64>() / 20000.0;
        assert!((mean - 16384.0).abs() < 16384.0 * 0.05, "mean {mean}");
        assert_eq!(layout.size(17), layout.size(17));
    }
}

//! Which I/O comes next in a job: the file (fio's round robin), read or write (`rwmixread`),
//! the block size (`bssplit`), the offset (sequential, or random by a distribution, each
//! block once per pass unless `norandommap`), and the pass's end.

use serde::{Deserialize, Serialize};

use super::params::{Distribution, IoParams};

/// A small fast generator (xorshift64*): offsets must cost nothing beside the I/O, and
/// `randrepeat` needs the same sequence from the same seed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        // splitmix64 of the seed: nearby seeds (job numbers) start far apart, never at 0.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    #[inline]
    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1).
    #[inline]
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n).
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// fio's scramble of a skewed block number, so that the hot blocks are spread over the file
/// rather than packed at its start.
#[inline]
fn hash(v: u64) -> u64 {
    let mut x = v.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 29;
    x.wrapping_mul(0xbf58_476d_1ce4_e5b9)
}

/// A skewed or uniform pick of one block among `n`.
#[derive(Debug, Serialize, Deserialize)]
enum Picker {
    Uniform,
    /// Gray et al.'s zipf generator, as fio's lib/zipf.c.
    Zipf {
        theta: f64,
        zetan: f64,
        alpha: f64,
        eta: f64,
        offset: u64,
    },
    Pareto {
        power: f64,
        offset: u64,
    },
    Normal {
        sigma: f64,
    },
    Zoned(super::params::Zones),
}

/// fio computes zeta over at most this many blocks (ZIPF_MAX_GEN), for its setup time.
const ZIPF_MAX: u64 = 10_000_000;

impl Picker {
    fn new(d: Distribution, n: u64, rng: &mut Rng) -> Picker {
        match d {
            Distribution::Random => Picker::Uniform,
            Distribution::Zipf(theta) => {
                let zeta = |k: u64| (1..=k).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
                let zetan = zeta(n.min(ZIPF_MAX));
                let zeta2 = zeta(2);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                Picker::Zipf {
                    theta,
                    zetan,
                    alpha: 1.0 / (1.0 - theta),
                    eta,
                    offset: rng.next(),
                }
            }
            Distribution::Pareto(h) => Picker::Pareto {
                power: h.ln() / (1.0 - h).ln(),
                offset: rng.next(),
            },
            Distribution::Normal(pct) => Picker::Normal {
                sigma: pct / 100.0 * n as f64,
            },
            Distribution::Zoned(zones) => Picker::Zoned(zones),
        }
    }

    #[inline]
    fn pick(&self, n: u64, rng: &mut Rng) -> u64 {
        match *self {
            Picker::Uniform => rng.below(n),
            Picker::Zipf {
                theta,
                zetan,
                alpha,
                eta,
                offset,
            } => {
                let u = rng.unit();
                let z = u * zetan;
                let v = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(theta) {
                    2
                } else {
                    1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                hash(v - 1).wrapping_add(offset) % n
            }
            Picker::Pareto { power, offset } => {
                let v = ((n - 1) as f64 * (1.0 - rng.unit()).powf(power)) as u64;
                hash(v).wrapping_add(offset) % n
            }
            Picker::Normal { sigma } => {
                // Irwin–Hall: twelve uniforms less six is close to a standard normal.
                let g: f64 = (0..12).map(|_| rng.unit()).sum::<f64>() - 6.0;
                let v = n as f64 / 2.0 + g * sigma;
                (v.max(0.0) as u64).min(n - 1)
            }
            Picker::Zoned(ref zones) => {
                // A zone by its share of the accesses, then a block within it.
                let mut roll = rng.below(100) as u8;
                let mut last = (0, 0);
                for (access, first, len) in zones.each(n) {
                    last = (first, len);
                    if roll < access {
                        break;
                    }
                    roll -= access;
                }
                last.0 + rng.below(last.1)
            }
        }
    }
}

/// Blocks of one file already done this pass (fio's random map), in `min_bs` units.
#[derive(Debug, Serialize, Deserialize)]
struct Map {
    words: Vec<u64>,
}

impl Map {
    fn new(blocks: u64) -> Map {
        Map {
            words: vec![0; blocks.div_ceil(64) as usize],
        }
    }

    fn clear(&mut self) {
        self.words.fill(0);
    }

    fn used(&self, b: u64) -> bool {
        self.words[(b / 64) as usize] & (1 << (b % 64)) != 0
    }

    fn mark(&mut self, from: u64, count: u64) {
        for b in from..from + count {
            self.words[(b / 64) as usize] |= 1 << (b % 64);
        }
    }

    /// The first free block at or after `b`, wrapping around; `None` when all are used.
    fn next_free(&self, b: u64, blocks: u64) -> Option<u64> {
        let start = (b / 64) as usize;
        let n = self.words.len();
        for i in 0..=n {
            let w = (start + i) % n;
            let mut free = !self.words[w];
            if i == 0 {
                free &= u64::MAX << (b % 64);
            }
            if free != 0 {
                let found = w as u64 * 64 + u64::from(free.trailing_zeros());
                if found < blocks {
                    return Some(found);
                }
            }
        }
        None
    }
}

/// One I/O to issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Next {
    pub file: usize,
    pub offset: u64,
    pub len: u32,
    pub read: bool,
}

/// The sequence of one job's I/Os. Jobs' patterns lie side by side, and each is written at
/// every I/O by its own job's thread: each starts on a cache line (pair) of its own. A job
/// run by a worker process hands its pattern back after the phase (serde), so that the
/// timed phase goes on where the ramp left off.
#[derive(Debug, Serialize, Deserialize)]
#[repr(align(128))]
pub(crate) struct Pattern {
    rng: Rng,
    picker: Picker,
    random: bool,
    read_percent: u32,
    bssplit: Vec<(u64, u32)>,
    /// The writes' own block size (fio's `bs=READ,WRITE`).
    write_bs: Option<u64>,
    min_bs: u64,
    start: u64,
    /// Blocks of `min_bs` in a file's region.
    blocks: u64,
    region: u64,
    /// Per file: the next sequential offset (from the region's start), and its map.
    positions: Vec<u64>,
    maps: Vec<Map>,
    next_file: usize,
    /// `rw=read:GAP`: bytes skipped after each sequential I/O (negative: backwards).
    gap: i64,
    /// `rw=randread:N`: I/Os per random offset (the others follow it), and how many of
    /// the current run are left.
    run_len: u32,
    run_left: u32,
    /// Bytes a pass moves, and what this one moved so far.
    pass_bytes: u64,
    done: u64,
}

impl Pattern {
    /// Moves what the pattern writes at every I/O (positions, maps) into memory allocated on
    /// the calling thread, a job's own, off the cache lines of the jobs made beside it.
    pub(crate) fn move_here(&mut self) {
        self.positions = Vec::from(&self.positions[..]);
        self.maps = self
            .maps
            .iter()
            .map(|m| Map {
                words: Vec::from(&m.words[..]),
            })
            .collect();
    }

    pub(crate) fn new(p: &IoParams, seed: u64) -> Pattern {
        let mut rng = Rng::new(seed);
        let min_bs = p.min_bs();
        let region = p.region();
        let blocks = region / min_bs;
        let random = p.rw.random();
        let use_map = random && !p.norandommap;
        Pattern {
            picker: Picker::new(p.distribution, blocks, &mut rng),
            rng,
            random,
            read_percent: p.rw.read_percent(p.rwmixread),
            bssplit: p.bssplit.clone(),
            write_bs: p.write_bs,
            min_bs,
            start: p.offset,
            blocks,
            region,
            positions: vec![0; p.nrfiles as usize],
            maps: (0..if use_map { p.nrfiles } else { 0 })
                .map(|_| Map::new(blocks))
                .collect(),
            next_file: 0,
            gap: p.seq_gap,
            run_len: p.seq_nr.max(1),
            run_left: 0,
            pass_bytes: p.size,
            done: 0,
        }
    }

    /// Starts a new pass: the maps cleared, the sequential positions back at the start
    /// (unless a gap moves them).
    pub(crate) fn new_pass(&mut self) {
        self.done = 0;
        self.run_left = 0;
        // With a gap the offsets wrap within the file, and fio's next pass goes on from
        // where the last ended.
        if self.gap == 0 {
            self.positions.fill(0);
        }
        self.maps.iter_mut().for_each(Map::clear);
    }

    #[inline]
    fn block_size(&mut self) -> u64 {
        if self.bssplit.len() == 1 {
            return self.bssplit[0].0;
        }
        let mut roll = self.rng.below(100) as u32;
        for (size, pct) in &self.bssplit {
            if roll < *pct {
                return *size;
            }
            roll -= pct;
        }
        self.bssplit[self.bssplit.len() - 1].0
    }

    /// The next sequential offset of `file` for a block of `bs`: where the last I/O ended,
    /// plus `gap`; past the region's end (or before its start) a forward gap wraps to the
    /// start and a backward one to the end plus the gap, as fio's `get_next_seq_offset`.
    #[inline]
    fn sequential(&mut self, file: usize, bs: u64) -> u64 {
        let mut at = self.positions[file];
        if at + bs > self.region {
            at = 0;
        }
        let end = at + bs;
        let next = end as i64 + self.gap;
        self.positions[file] = match self.gap {
            0 => end,
            gap if next < 0 || next as u64 >= self.region => match gap > 0 {
                true => 0,
                false => (self.region as i64 + gap).max(0) as u64,
            },
            _ => next as u64,
        };
        at
    }

    /// Whether the next I/O reads, by the job's mix.
    #[inline]
    fn direction(&mut self) -> bool {
        match self.read_percent {
            100 => true,
            0 => false,
            pct => (self.rng.below(100) as u32) < pct,
        }
    }

    /// The next I/O of the pass; `None` when the pass has moved its bytes.
    #[inline]
    pub(crate) fn next(&mut self) -> Option<Next> {
        // The direction first where the writes have a size of their own.
        let (bs, read) = match self.write_bs {
            None => (self.block_size(), None),
            Some(write) => match self.direction() {
                true => (self.block_size(), Some(true)),
                false => (write, Some(false)),
            },
        };
        if self.done + bs > self.pass_bytes {
            return None;
        }
        let file = self.next_file;
        self.next_file = (file + 1) % self.positions.len();
        let read = read.unwrap_or_else(|| self.direction());
        let span = bs / self.min_bs;
        // A run of sequential I/Os after a random offset ends at the region's end too.
        let run_on = self.run_left > 0 && self.positions[file] + bs <= self.region;
        let within = if self.random && !run_on {
            let mut b = self.picker.pick(self.blocks, &mut self.rng);
            if let Some(map) = self.maps.get_mut(file) {
                if map.used(b) {
                    // Every block used: the map starts over (a pass larger than the region).
                    b = map.next_free(b, self.blocks).unwrap_or_else(|| {
                        map.clear();
                        b
                    });
                }
                // A block too near the end for `bs` moves back to fit.
                b = b.min(self.blocks - span);
                map.mark(b, span);
            } else {
                b = b.min(self.blocks - span);
            }
            self.run_left = self.run_len - 1;
            self.positions[file] = (b + span) * self.min_bs;
            b * self.min_bs
        } else {
            self.run_left = self.run_left.saturating_sub(1);
            self.sequential(file, bs)
        };
        self.done += bs;
        Some(Next {
            file,
            offset: self.start + within,
            len: bs as u32,
            read,
        })
    }

    /// A number below `n` from the job's generator (fio draws a `startdelay` range from
    /// the job's).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    /// The average block size, for `rate=` in bytes per second.
    pub(crate) fn mean_bs(&self) -> f64 {
        self.bssplit
            .iter()
            .map(|(s, p)| *s as f64 * f64::from(*p) / 100.0)
            .sum()
    }
}

/// Fills `buf` with `rng`'s numbers: data no filesystem compresses or deduplicates.
pub(super) fn fill_random(buf: &mut [u8], rng: &mut Rng) {
    for chunk in buf.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next().to_le_bytes()[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(args: &str) -> Pattern {
        Pattern::new(&IoParams::parse(args).unwrap(), 7)
    }

    fn pass(p: &mut Pattern) -> Vec<Next> {
        std::iter::from_fn(|| p.next()).collect()
    }

    #[test]
    fn reads_and_writes_take_their_own_block_sizes() {
        let mut p = pattern("rw=randrw,bs=4k,write-bs=16k,size=4m");
        let ios = pass(&mut p);
        assert!(
            ios.iter()
                .all(|io| io.len == if io.read { 4096 } else { 16384 })
        );
        let writes = ios.iter().filter(|io| !io.read).count();
        assert!(writes > ios.len() / 10 && writes < ios.len(), "{writes}");
        assert!(
            ios.iter()
                .all(|io| io.offset % 4096 == 0 && io.offset + u64::from(io.len) <= 4 << 20)
        );
    }

    #[test]
    fn zoned_sends_each_zone_its_share_of_the_accesses() {
        let mut p = pattern(
            "rw=randread,bs=4k,size=40m,norandommap,random-distribution=zoned:50/5:30/15:20/",
        );
        let blocks = (40 << 20) / 4096;
        let ios = pass(&mut p);
        let share = |lo: u64, hi: u64| {
            let n = ios
                .iter()
                .filter(|io| (lo..hi).contains(&(io.offset / 4096)))
                .count();
            n as f64 / ios.len() as f64
        };
        let (first, second, rest) = (
            share(0, blocks / 20),
            share(blocks / 20, blocks / 5),
            share(blocks / 5, blocks),
        );
        assert!((0.47..0.53).contains(&first), "{first}");
        assert!((0.27..0.33).contains(&second), "{second}");
        assert!((0.17..0.23).contains(&rest), "{rest}");
        assert!(IoParams::parse("random-distribution=zoned:50/5:40/15").is_err());
    }

    #[test]
    fn a_random_pattern_with_a_count_runs_that_many_ios_from_each_offset() {
        let mut p = pattern("rw=randread,rw-modifier=4,bs=4k,size=1m,norandommap");
        let ios = pass(&mut p);
        // The lengths of the runs of consecutive blocks: 4, or fewer where a run meets the
        // file's end (more where a random offset lands right after the run before).
        let mut runs = vec![1];
        for w in ios.windows(2) {
            match w[1].offset == w[0].offset + 4096 {
                true => *runs.last_mut().unwrap() += 1,
                false => runs.push(1),
            }
        }
        let fours = runs.iter().filter(|r| **r == 4).count();
        assert!(fours * 10 >= runs.len() * 9, "{runs:?}");
        assert!(runs.iter().all(|r| *r <= 8), "{runs:?}");
    }

    #[test]
    fn a_random_pass_touches_every_block_once_with_the_map() {
        let mut p = pattern("rw=randread,bs=4k,size=1m,nrfiles=2");
        let ios = pass(&mut p);
        assert_eq!(ios.len(), 256);
        let mut seen: Vec<(usize, u64)> = ios.iter().map(|n| (n.file, n.offset)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 256, "no block twice");
        assert!(
            ios.iter()
                .all(|n| n.offset % 4096 == 0 && n.offset < 512 << 10)
        );
    }

    #[test]
    fn sequential_ios_follow_each_other_from_the_offset() {
        let mut p = pattern("rw=write,bs=64k,size=1m,filesize=2m,offset=1m");
        let ios = pass(&mut p);
        let offsets: Vec<u64> = ios.iter().map(|n| n.offset).collect();
        let expected: Vec<u64> = (0..16).map(|i| (1 << 20) + i * (64 << 10)).collect();
        assert_eq!(offsets, expected);
        assert!(ios.iter().all(|n| !n.read));
    }

    #[test]
    fn the_same_seed_gives_the_same_offsets_and_mixes_reads() {
        let (mut a, mut b) = (
            pattern("rw=randrw,rwmixread=70,bssplit=4k/50:16k/50,size=4m"),
            pattern("rw=randrw,rwmixread=70,bssplit=4k/50:16k/50,size=4m"),
        );
        let (x, y) = (pass(&mut a), pass(&mut b));
        assert_eq!(x, y);
        let reads = x.iter().filter(|n| n.read).count() as f64 / x.len() as f64;
        assert!((0.6..0.8).contains(&reads), "{reads}");
        assert!(x.iter().any(|n| n.len == 4096) && x.iter().any(|n| n.len == 16384));
    }

    #[test]
    fn zipf_concentrates_on_few_blocks() {
        let mut p = pattern("rw=randread,size=64m,random-distribution=zipf:1.2,norandommap");
        let mut counts = std::collections::HashMap::new();
        for n in pass(&mut p) {
            *counts.entry(n.offset).or_insert(0u32) += 1;
        }
        let mut c: Vec<u32> = counts.into_values().collect();
        c.sort_unstable_by(|a, b| b.cmp(a));
        let top: u32 = c.iter().take(c.len() / 10).sum();
        assert!(f64::from(top) > 0.5 * 16384.0, "top 10% of blocks: {top}");
    }
}

//! Which I/O comes next in a job: the file (fio's round robin), read or write (`rwmixread`),
//! the block size (`bssplit`), the offset (sequential, or random by a distribution, each
//! block once per pass unless `norandommap`), and the pass's end.

use serde::{Deserialize, Serialize};

use std::os::fd::OwnedFd;

use super::files::Files;
use super::params::IoParams;
use fsbench_measure::error::FsbenchError;

mod map;
mod picker;
mod service;
use map::Map;
use picker::Picker;
use service::{Served, Service};

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

/// What comes next where files open and close.
pub(crate) enum Pick {
    Io(Next),
    /// The file picked is closed and `openfiles` are open: reap, then ask again.
    Busy,
    /// The pass is over.
    End,
}

/// One I/O to issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Next {
    pub file: usize,
    pub offset: u64,
    pub len: u32,
    pub read: bool,
    /// The priority its engine gave it (fio's `cmdprio_*`; 0: the job's own).
    pub prio: u16,
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
    /// Of the random pattern's I/Os, the percentage at a random offset (fio's
    /// `percentage_random`); the others follow the I/O before.
    percentage_random: u32,
    read_percent: u32,
    bssplit: Vec<(u64, u32)>,
    /// The writes' own block sizes (fio's `bs=READ,WRITE` or `bssplit=READ,WRITE`); empty:
    /// `bssplit`'s.
    write_split: Vec<(u64, u32)>,
    /// Random offsets are multiples of this: `blockalign`, or the smallest block.
    unit: u64,
    start: u64,
    /// Units in a file's region.
    blocks: u64,
    region: u64,
    /// Per file: the next sequential offset (from the region's start), and its map.
    positions: Vec<u64>,
    maps: Vec<Map>,
    /// fio's `file_service_type`.
    service: Service,
    /// Where files open and close as the job goes (`IoParams::opens_as_picked`), as fio:
    /// used up ends it for the pass (`files_end`: sequential I/O; at random only where the
    /// job is not time-based, else its map starts over), and a time-based pass ends only
    /// when every file is done, not at its bytes (`bytes_end`).
    files_end: [bool; 2],
    bytes_end: bool,
    /// `rw=read:GAP`: bytes skipped after each sequential I/O (negative: backwards).
    gap: i64,
    /// `rw=randread:N`: I/Os per random offset (the others follow it), and how many of
    /// the current run are left.
    run_len: u32,
    run_left: u32,
    /// Bytes a pass moves, and what this one moved so far.
    pass_bytes: u64,
    done: u64,
    /// fio's strided zones, where the job has them.
    zone: Option<Zone>,
}

/// Where a job with strided zones stands: its zones, the current one's start (from the
/// region's) and the bytes moved in it (fio's `file_offset` and `zone_bytes`).
#[derive(Debug, Serialize, Deserialize)]
struct Zone {
    spec: super::params::Strided,
    at: u64,
    bytes: u64,
}

impl Zone {
    /// Before an I/O, as fio's `setup_strided_zone_mode`: on to the next zone once this
    /// one's bytes moved (back to the start past the end), and back to the zone's start
    /// past its range.
    #[inline]
    fn before(&mut self, position: &mut u64, region: u64) {
        if self.bytes >= self.spec.size {
            self.bytes = 0;
            self.at += self.spec.range + self.spec.skip;
            if self.at >= region {
                self.at = 0;
            }
            *position = self.at;
        }
        if *position >= self.at + self.spec.range {
            *position = self.at;
        }
    }
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

    /// Copy `copy`'s (of `numjobs`) I/Os of job `p`, drawn from `seed`.
    pub(crate) fn new(p: &IoParams, copy: u32, seed: u64) -> Pattern {
        let mut rng = Rng::new(seed);
        let unit = p.align();
        let region = p.region();
        let blocks = region / unit;
        let random = p.rw.random();
        let use_map = random && !p.norandommap;
        let write_split = match (&p.write_bssplit, p.write_bs) {
            (split, _) if !split.is_empty() => split.clone(),
            (_, Some(bs)) => vec![(bs, 100)],
            (_, None) => Vec::new(),
        };
        let service = Service::new(p, &mut rng);
        let as_picked = p.opens_as_picked().is_some();
        let files_end = as_picked && !service.skewed();
        Pattern {
            picker: Picker::new(p.distribution, blocks, &mut rng),
            rng,
            random,
            percentage_random: p.percentage_random,
            read_percent: p.rw.read_percent(p.rwmixread),
            bssplit: p.bssplit.clone(),
            write_split,
            unit,
            start: p.copy_offset(copy),
            blocks,
            region,
            positions: vec![0; p.nrfiles as usize],
            maps: (0..if use_map { p.nrfiles } else { 0 })
                .map(|_| Map::new(blocks))
                .collect(),
            files_end: [files_end, files_end && !p.time_based],
            bytes_end: !as_picked || !p.time_based,
            service,
            gap: p.seq_gap,
            run_len: p.seq_nr.max(1),
            run_left: 0,
            pass_bytes: p.size,
            done: 0,
            zone: p.zones.map(|spec| Zone {
                spec,
                at: 0,
                bytes: 0,
            }),
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
        self.service.new_pass();
        if let Some(zone) = &mut self.zone {
            (zone.at, zone.bytes) = (0, 0);
        }
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

    /// Whether the next I/O of a random pattern goes to a random offset
    /// (`percentage_random`), rather than after the one before.
    #[inline]
    fn at_random(&mut self) -> bool {
        self.percentage_random >= 100 || (self.rng.below(100) as u32) < self.percentage_random
    }

    /// The next I/O of the pass; `None` when the pass has moved its bytes.
    #[inline]
    pub(crate) fn next(&mut self) -> Option<Next> {
        let (bs, read) = self.size();
        if self.done + bs > self.pass_bytes {
            return None;
        }
        let file = self.service.pick(bs, self.pass_bytes, &mut self.rng);
        self.place(file, bs, read)
    }

    /// The next I/O of the pass where at most `openfiles` files are open (`files`, which
    /// `open` opens one of), as fio's `set_io_u_file`: the file first, then its I/O; a
    /// file whose range is used up is done (closed once its I/Os complete) and the next
    /// is picked.
    #[inline]
    pub(crate) fn next_open(
        &mut self,
        files: &mut Files,
        open: &mut dyn FnMut(usize) -> Result<OwnedFd, FsbenchError>,
    ) -> Result<Pick, FsbenchError> {
        loop {
            // fio stops at the bytes before it picks a file (the turn stays where it is).
            if self.bytes_end && self.done >= self.pass_bytes {
                return Ok(Pick::End);
            }
            let file = match self.service.pick_open(&mut self.rng, files, open)? {
                Served::File(f) => f,
                Served::Busy => return Ok(Pick::Busy),
                Served::End => return Ok(Pick::End),
            };
            let (bs, read) = self.size();
            if self.bytes_end && self.done + bs > self.pass_bytes {
                return Ok(Pick::End);
            }
            match self.place(file, bs, read) {
                Some(next) => return Ok(Pick::Io(next)),
                None => {
                    self.service.set_done(file);
                    files.done(file);
                }
            }
        }
    }

    /// The next I/O's size, and its direction where the writes have sizes of their own
    /// (then drawn first).
    #[inline]
    fn size(&mut self) -> (u64, Option<bool>) {
        match self.write_split.is_empty() {
            true => (draw(&self.bssplit, &mut self.rng), None),
            false => match self.direction() {
                true => (draw(&self.bssplit, &mut self.rng), Some(true)),
                false => (draw(&self.write_split, &mut self.rng), Some(false)),
            },
        }
    }

    /// The I/O of `bs` bytes on `file`; `None` where the file's range is used up and that
    /// ends the file (`files_end`): sequential I/O past the region's end, random I/O with
    /// every block of the map done.
    #[inline]
    fn place(&mut self, file: usize, bs: u64, read: Option<bool>) -> Option<Next> {
        if self.files_end[0] && !self.random && self.positions[file] + bs > self.region {
            return None;
        }
        let read = read.unwrap_or_else(|| self.direction());
        // Random offsets within the zone: its blocks alone, its map new at each range's worth
        // (fio's `fio_file_reset`), from its start.
        let (mut blocks, mut region, mut base) = (self.blocks, self.region, 0);
        if let Some(zone) = &mut self.zone {
            zone.before(&mut self.positions[file], self.region);
            if self.random {
                if zone.bytes % zone.spec.range == 0 {
                    self.maps.iter_mut().for_each(Map::clear);
                }
                region = zone.spec.range.min(self.region - zone.at);
                (blocks, base) = (region / self.unit, zone.at);
            }
            zone.bytes += bs;
        }
        // A run of sequential I/Os after a random offset ends at the region's end too.
        let run_on = self.run_left > 0 && self.positions[file] + bs <= self.region;
        let within = if self.random && !run_on && self.at_random() {
            let mut b = self.picker.pick(blocks, &mut self.rng);
            // A block too near the end for `bs` moves back to fit.
            let last = region.saturating_sub(bs) / self.unit;
            if let Some(map) = self.maps.get_mut(file) {
                if map.used(b) {
                    // Every block used: the map starts over (a pass larger than the region),
                    // or the file is done.
                    let free = map.next_free(b, blocks);
                    if free.is_none() && self.files_end[1] {
                        return None;
                    }
                    b = free.unwrap_or_else(|| {
                        map.clear();
                        b
                    });
                }
                b = b.min(last);
                map.mark(b, bs.div_ceil(self.unit).min(blocks - b));
            } else {
                b = b.min(last);
            }
            self.run_left = self.run_len - 1;
            self.positions[file] = base + b * self.unit + bs;
            base + b * self.unit
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
            prio: 0,
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

/// A block size of `split` by its shares.
#[inline]
fn draw(split: &[(u64, u32)], rng: &mut Rng) -> u64 {
    if split.len() == 1 {
        return split[0].0;
    }
    let mut roll = rng.below(100) as u32;
    for (size, pct) in split {
        if roll < *pct {
            return *size;
        }
        roll -= pct;
    }
    split[split.len() - 1].0
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
        Pattern::new(&IoParams::parse(args).unwrap(), 0, 7)
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
    fn strided_zones_move_zonesize_bytes_then_skip_as_fio() {
        let mut p = pattern("rw=read,bs=4k,size=32k,zonemode=strided,zonesize=8k,zoneskip=16k");
        let offsets: Vec<u64> = pass(&mut p).iter().map(|io| io.offset >> 10).collect();
        // Two blocks a zone, the next zone 8k + 16k on, from 0 again past the 32k file.
        assert_eq!(offsets, [0, 4, 24, 28, 0, 4, 24, 28]);
        let mut p = pattern("rw=read,bs=4k,size=32k,zonemode=strided,zonesize=12k,zonerange=8k");
        let offsets: Vec<u64> = pass(&mut p).iter().map(|io| io.offset >> 10).collect();
        // 12k in a zone 8k long: its start again before the next.
        assert_eq!(offsets, [0, 4, 0, 8, 12, 8, 16, 20]);
        // At random: each zone's two blocks once each, in some order, zone after zone.
        let mut p = pattern("rw=randread,bs=4k,size=64k,zonemode=strided,zonesize=8k,zoneskip=8k");
        let offsets: Vec<u64> = pass(&mut p).iter().map(|io| io.offset >> 10).collect();
        for (pair, zone) in offsets.chunks(2).zip([0, 16, 32, 48, 0, 16, 32, 48]) {
            let mut pair = pair.to_vec();
            pair.sort_unstable();
            assert_eq!(pair, [zone, zone + 4], "{offsets:?}");
        }
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

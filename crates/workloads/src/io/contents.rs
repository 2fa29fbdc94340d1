//! What written blocks hold besides verify's headers and patterns, as fio's buffer options
//! say: `zero_buffers`, `buffer_compress_percentage` (that share of each
//! `buffer_compress_chunk` zeros, the rest random), `refill_buffers` (new data before every
//! write), `scramble_buffers` (fio's default: each 512 bytes of a block stamped with its
//! offset and a count before a write, so that no two writes hold the same data) and
//! `dedupe_percentage` (that share of the fills repeat the fill before, or with
//! `dedupe_mode=working_set` one of the first fills of the job, or of every job running
//! with it under `dedupe_global`, as fio's dedupe.c chooses them).

use super::IoParams;
use super::params::Contents;
use super::pattern::{Rng, fill_random};
use fsbench_measure::calls::Aligned;

/// What a job does to its buffer before each write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PerWrite {
    Nothing,
    Refill,
    Scramble,
}

/// A job's filler of its write buffers. Every fill is made from a seed: a fill of new data
/// from the thread's next one (the thread's number and the count of its new fills), a
/// repeated fill from an earlier fill's.
pub(super) struct Filler {
    contents: Contents,
    per_write: PerWrite,
    rng: Rng,
    last_seed: u64,
    writes: u64,
    /// The fills of new data so far, and the thread's number in the seeds.
    new_fills: u64,
    thread: u32,
    /// `dedupe_mode=working_set`: the fills it holds, and fio's spread of them over the
    /// threads under `dedupe_global` (the first thread's number, their count, the fills
    /// of each).
    working_set: u64,
    spread: (u32, u32, u64),
}

/// A fill's seed: the `n`-th new fill of thread `thread`.
fn seed_of(thread: u32, n: u64) -> u64 {
    (u64::from(thread) << 40) ^ n
}

impl Filler {
    /// The filler of copy `copy` of the `job`-th job running together.
    pub(super) fn new(params: &IoParams, (job, copy): (usize, u32)) -> Filler {
        let c = params.contents;
        // fio's thread number over the job file (a job of `fsbench run`: its copy).
        let thread = params.fio.as_ref().map_or(0, |f| f.first_thread) + copy;
        let working_set = c.dedupe_working_set.map_or(0, |pct| {
            let blocks = params.size * u64::from(pct) / 100 / params.min_bs().max(1);
            blocks.max(1)
        });
        let (first, threads) = c.dedupe_threads.unwrap_or((thread, 1));
        let spread = (
            first,
            threads,
            (working_set / u64::from(threads.max(1))).max(1),
        );
        // With `verify` and a pattern, fio writes the pattern whatever else is asked.
        let per_write = if c.refill && (params.verify.is_none() || params.pattern.is_empty()) {
            PerWrite::Refill
        } else if c.scramble && c.compress_percent == 0 && params.verify.is_none() {
            PerWrite::Scramble
        } else {
            PerWrite::Nothing
        };
        Filler {
            contents: c,
            per_write,
            last_seed: seed_of(thread, 0),
            rng: Rng::new(((job as u64) << 32) | u64::from(copy)),
            writes: 0,
            new_fills: 0,
            thread,
            working_set,
            spread,
        }
    }

    /// The buffers' first contents where the options ask for other than random data (a
    /// job's pattern stays: verify and `buffer_pattern` fill it).
    pub(super) fn initial(&mut self, params: &IoParams, bufs: &mut [Aligned]) {
        if self.contents.plain() || !params.pattern.is_empty() {
            return;
        }
        for b in bufs {
            self.fill(b.buf());
        }
    }

    /// Before a write of `buf` at `offset`: refilled or scrambled as the options say.
    #[inline]
    pub(super) fn before_write(&mut self, buf: &mut [u8], offset: u64) {
        match self.per_write {
            PerWrite::Nothing => {}
            PerWrite::Refill => self.fill(buf),
            PerWrite::Scramble => {
                self.writes += 1;
                scramble(buf, offset, self.writes);
            }
        }
    }

    /// New contents: zeros, compressible or random data, or (`dedupe_percentage`) an
    /// earlier fill again, made from the same seed.
    fn fill(&mut self, buf: &mut [u8]) {
        self.last_seed = self.next_seed();
        let c = self.contents;
        let mut data = Rng::new(self.last_seed);
        if c.zero {
            buf.fill(0);
        } else if c.compress_percent > 0 {
            compressible(buf, c.compress_percent, c.compress_chunk, &mut data);
        } else {
            fill_random(buf, &mut data);
        }
    }
}

impl Filler {
    /// The next fill's seed, as fio's `get_buf_state`: at 100% every fill is the first;
    /// else `dedupe_percentage`% of them repeat the fill before (`repeat`) or one of the
    /// working set drawn uniformly: the first fills of this thread, or under
    /// `dedupe_global` those of each thread in turn (fio's
    /// `init_dedupe_working_set_seeds`: the set's `k`-th fill is fill `k % per` of the
    /// `k / per`-th thread after this one, `per` its size over the threads).
    fn next_seed(&mut self) -> u64 {
        let pct = u64::from(self.contents.dedupe_percent);
        let repeat = match pct {
            0 => false,
            100 => return seed_of(self.thread, 0),
            _ => self.rng.below(100) < pct,
        };
        if !repeat {
            let seed = seed_of(self.thread, self.new_fills);
            self.new_fills += 1;
            return seed;
        }
        if self.working_set == 0 {
            return self.last_seed;
        }
        let k = self.rng.below(self.working_set);
        let (first, threads, per) = self.spread;
        let mine = u64::from(self.thread.saturating_sub(first));
        let turn = (mine + k / per) % u64::from(threads.max(1));
        seed_of(first + turn as u32, k % per)
    }
}

/// Each `chunk` of `buf`: its first (100 − `percent`)% random, the rest zeros, as fio's
/// compressible buffers.
fn compressible(buf: &mut [u8], percent: u32, chunk: u64, rng: &mut Rng) {
    let chunk = (chunk as usize).clamp(1, buf.len().max(1));
    for part in buf.chunks_mut(chunk) {
        let random = chunk * (100 - percent as usize) / 100;
        let random = random.min(part.len());
        fill_random(&mut part[..random], rng);
        part[random..].fill(0);
    }
}

/// fio's scramble: in each 512 bytes, the block's offset in one of its first eight 8-byte
/// words and a count of writes in its 48th to 64th bytes.
#[inline]
fn scramble(buf: &mut [u8], offset: u64, count: u64) {
    let word = ((count ^ offset) & 7) as usize * 8;
    for (i, sector) in buf.chunks_exact_mut(512).enumerate() {
        let at = offset + i as u64 * 512;
        sector[word..word + 8].copy_from_slice(&at.to_le_bytes());
        sector[48..56].copy_from_slice(&count.to_le_bytes());
        sector[56..64].copy_from_slice(&(count ^ at).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compressible_chunk_is_random_then_zeros() {
        let mut buf = vec![0xffu8; 2048];
        compressible(&mut buf, 75, 1024, &mut Rng::new(3));
        for half in buf.chunks(1024) {
            assert!(half[..256].iter().any(|b| *b != 0));
            assert!(half[256..].iter().all(|b| *b == 0));
        }
    }

    /// The share of `fills` fills of `filler` (4 KiB blocks) that repeat an earlier one, and
    /// the fills.
    fn repeats(filler: &mut Filler, fills: usize) -> (f64, Vec<Vec<u8>>) {
        let mut blocks = Vec::new();
        for _ in 0..fills {
            let mut buf = vec![0u8; 4096];
            filler.before_write(&mut buf, 0);
            blocks.push(buf);
        }
        let mut seen = std::collections::HashSet::new();
        let repeated = blocks.iter().filter(|b| !seen.insert(b.to_vec())).count();
        (repeated as f64 / fills as f64, blocks)
    }

    #[test]
    fn dedupe_modes_repeat_their_share_of_the_fills() {
        for mode in ["repeat", "working_set"] {
            let p = IoParams::parse(&format!(
                "rw=write,bs=4k,size=4m,dedupe-percentage=40,dedupe-mode={mode}"
            ))
            .unwrap();
            let (share, _) = repeats(&mut Filler::new(&p, (0, 0)), 1024);
            assert!((0.33..=0.47).contains(&share), "{mode}: {share}");
        }
        // Under dedupe_global a repeated fill may be another thread's.
        let p = IoParams::parse(
            "rw=write,bs=4k,size=4m,numjobs=2,dedupe-percentage=50,dedupe-mode=working_set,dedupe-global=true,dedupe-working-set-percentage=20",
        )
        .unwrap();
        let (_, first) = repeats(&mut Filler::new(&p, (0, 0)), 512);
        let (_, second) = repeats(&mut Filler::new(&p, (0, 1)), 512);
        let firsts: std::collections::HashSet<&Vec<u8>> = first.iter().collect();
        let shared = second.iter().filter(|b| firsts.contains(b)).count();
        assert!(
            shared > 50,
            "{shared} of the second thread's fills are the first's"
        );
    }

    #[test]
    fn scrambled_writes_differ_from_each_other() {
        let mut a = vec![7u8; 4096];
        let mut b = a.clone();
        scramble(&mut a, 8192, 1);
        scramble(&mut b, 8192, 2);
        assert_ne!(a, b);
        assert_ne!(a, vec![7u8; 4096]);
    }
}

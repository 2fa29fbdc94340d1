//! What written blocks hold besides verify's headers and patterns, as fio's buffer options
//! say: `zero_buffers`, `buffer_compress_percentage` (that share of each
//! `buffer_compress_chunk` zeros, the rest random), `refill_buffers` (new data before every
//! write), `scramble_buffers` (fio's default: each 512 bytes of a block stamped with its
//! offset and a count before a write, so that no two writes hold the same data) and
//! `dedupe_percentage` (that share of the fills repeat the fill before).

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

/// A job's filler of its write buffers.
pub(super) struct Filler {
    contents: Contents,
    per_write: PerWrite,
    rng: Rng,
    last_seed: u64,
    writes: u64,
}

impl Filler {
    pub(super) fn new(params: &IoParams, seed: u64) -> Filler {
        let c = params.contents;
        let per_write = if c.refill {
            PerWrite::Refill
        } else if c.scramble && c.compress_percent == 0 && params.verify.is_none() {
            PerWrite::Scramble
        } else {
            PerWrite::Nothing
        };
        let mut rng = Rng::new(seed);
        Filler {
            contents: c,
            per_write,
            last_seed: rng.next(),
            rng,
            writes: 0,
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

    /// New contents: zeros, compressible or random data, or (`dedupe_percentage`) the
    /// fill before again, made from the same seed.
    fn fill(&mut self, buf: &mut [u8]) {
        let c = self.contents;
        if c.dedupe_percent == 0 || self.rng.below(100) >= u64::from(c.dedupe_percent) {
            self.last_seed = self.rng.next();
        }
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

//! What written blocks hold besides verify's headers and patterns, as fio's buffer options
//! say: `zero_buffers`, `buffer_compress_percentage` (that share of each
//! `buffer_compress_chunk` zeros, the rest random), `refill_buffers` (new data before every
//! write), `scramble_buffers` (fio's default: each 512 bytes of a block stamped with its
//! offset and a count before a write, so that no two writes hold the same data) and
//! `dedupe_percentage` (that share of the fills repeat the fill before).

use serde::{Deserialize, Serialize};

use super::IoParams;
use super::pattern::{Rng, fill_random};
use crate::options::Parsed;
use fsbench_measure::calls::Aligned;

/// fio's buffer options, as the job file gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Contents {
    pub zero: bool,
    pub refill: bool,
    pub scramble: bool,
    /// Percent of each chunk that is zeros, and the chunk's bytes.
    pub compress_percent: u32,
    pub compress_chunk: u64,
    /// Percent of the fills that repeat the one before.
    pub dedupe_percent: u32,
}

impl Contents {
    /// The options, with fio's rules between them: a block that compresses entirely is
    /// zeros; one that compresses in part is filled anew for every write unless
    /// `refill_buffers` is given, and so is every block with `dedupe_percentage`; neither
    /// is scrambled.
    pub(super) fn of(p: &Parsed) -> Contents {
        let mut c = Contents {
            zero: p.flag("zero-buffers"),
            refill: p.flag("refill-buffers"),
            scramble: p.flag("scramble-buffers"),
            compress_percent: p
                .small("buffer-compress-percentage")
                .expect("has a default"),
            compress_chunk: p.num("buffer-compress-chunk").expect("has a default"),
            dedupe_percent: p.small("dedupe-percentage").expect("has a default"),
        };
        match c.compress_percent {
            100 => (c.zero, c.compress_percent) = (true, 0),
            pct if pct > 0 && !p.explicit("refill-buffers") => c.refill = true,
            _ => {}
        }
        if c.dedupe_percent > 0 {
            c.refill = true;
        }
        // fio scrambles unless zeros were asked for, or compressible or repeated data.
        let shaped = p.explicit("buffer-compress-percentage") || p.explicit("dedupe-percentage");
        c.scramble &= !(shaped || (c.zero && p.explicit("zero-buffers")));
        c
    }

    /// Whether the blocks are fio's random data made once (nothing to do here).
    fn plain(&self) -> bool {
        !self.zero && self.compress_percent == 0 && self.dedupe_percent == 0
    }
}

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

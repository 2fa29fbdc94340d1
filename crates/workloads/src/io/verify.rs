//! fio's `verify`: every block a job writes carries a header (a magic number, the
//! algorithm, the block's length and its offset in the file) and a checksum of the rest of
//! the block, or is filled with `verify_pattern`; once the job's writes end, every block it
//! wrote is read back and checked, and a mismatch is reported with its file and offset as
//! fio reports it, and fails the run. The header is fsbench's own (fio's layout differs),
//! the checking as real as fio's.

use super::IoParams;
use super::params::{Algorithm, HEADER};
use super::pattern::{Rng, fill_random};
use fsbench_measure::calls::Aligned;

/// What a read back returns: the bytes read, or why none were.
pub(crate) type ReadResult = Result<usize, rustix::io::Errno>;

/// fio's magic number at the start of each verified block.
const MAGIC: u16 = 0xacca;

impl Algorithm {
    /// The checksum of `data` into `out` (`digest_len` bytes).
    fn digest(self, data: &[u8], out: &mut [u8]) {
        use sha2::Digest;
        fn put(out: &mut [u8], d: &[u8]) {
            out.copy_from_slice(d);
        }
        // Slice-by-16 tables: the crate's default reads a byte at a time, and the stamp of
        // every written block cost about 8 µs a 4 KiB write (a verify job ran at 0.35 ×
        // fio's IOPS; 1.02 × with these).
        type Fast<W> = crc::Crc<W, crc::Table<16>>;
        const CRC64: Fast<u64> = Fast::<u64>::new(&crc::CRC_64_ECMA_182);
        const CRC32C: Fast<u32> = Fast::<u32>::new(&crc::CRC_32_ISCSI);
        const CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_IBM_3740);
        const CRC7: crc::Crc<u8> = crc::Crc::<u8>::new(&crc::CRC_7_MMC);
        match self {
            Algorithm::Md5 => put(out, &md5::Md5::digest(data)),
            Algorithm::Crc64 => put(out, &CRC64.checksum(data).to_le_bytes()),
            Algorithm::Crc32c => put(out, &CRC32C.checksum(data).to_le_bytes()),
            Algorithm::Crc16 => put(out, &CRC16.checksum(data).to_le_bytes()),
            Algorithm::Crc7 => put(out, &[CRC7.checksum(data)]),
            Algorithm::Sha1 => put(out, &sha1::Sha1::digest(data)),
            Algorithm::Sha256 => put(out, &sha2::Sha256::digest(data)),
            Algorithm::Sha512 => put(out, &sha2::Sha512::digest(data)),
            Algorithm::Sha3_224 => put(out, &sha3::Sha3_224::digest(data)),
            Algorithm::Sha3_256 => put(out, &sha3::Sha3_256::digest(data)),
            Algorithm::Sha3_384 => put(out, &sha3::Sha3_384::digest(data)),
            Algorithm::Sha3_512 => put(out, &sha3::Sha3_512::digest(data)),
            Algorithm::Xxhash => {
                put(out, &xxhash_rust::xxh32::xxh32(data, 1).to_le_bytes());
            }
            Algorithm::Meta | Algorithm::Pattern | Algorithm::Null => {}
        }
    }
}

/// `buf` filled with `pattern`, repeated from its start.
pub(super) fn fill_pattern(buf: &mut [u8], pattern: &[u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern[i % pattern.len()];
    }
}

/// One job's verification: how its blocks are stamped, and which it wrote.
pub(crate) struct Verifier {
    algorithm: Algorithm,
    /// Bytes per header (fio's `verify_interval`; the block size by default).
    interval: u64,
    /// An interval of `verify_pattern` (or `buffer_pattern`), repeated from its start;
    /// empty without one.
    expected: Vec<u8>,
    /// Per file, a bit per interval of its region: written by the job and not checked since.
    written: Vec<Vec<u64>>,
    region_start: u64,
    /// fio's `verify_backlog`: a check after this many writes (0: only at the end), and the
    /// writes since the last.
    backlog: u64,
    since_check: u64,
    /// fio's `verify_dump`: each wrong block written to files named as fio names them.
    dump: bool,
}

/// Where [`Verifier::take_block`] goes on from: a file, and a word of its bits.
#[derive(Default)]
pub(crate) struct Cursor {
    file: usize,
    word: usize,
}

/// The first mismatch a verification found, and how many it found.
pub(crate) struct Mismatch {
    pub message: String,
    pub count: u64,
}

impl Verifier {
    /// The verification a job's `verify` options ask for, if any.
    pub(crate) fn of(params: &IoParams, copy: u32) -> Option<Verifier> {
        let interval = params.interval();
        // A job that only reads checks what it reads: it notes no blocks written.
        let words = match params.rw.read_percent(params.rwmixread) {
            100 => 0,
            _ => (params.region() / interval).div_ceil(64) as usize,
        };
        let mut expected = Vec::new();
        if !params.pattern.is_empty() {
            expected.resize(interval as usize, 0);
            fill_pattern(&mut expected, &params.pattern);
        }
        Some(Verifier {
            algorithm: params.verify?,
            interval,
            expected,
            written: vec![vec![0; words]; params.nrfiles as usize],
            region_start: params.copy_offset(copy),
            // Nothing to check during the job when the end checks nothing either.
            backlog: if params.do_verify {
                params.verify_backlog
            } else {
                0
            },
            since_check: 0,
            dump: params.verify_dump,
        })
    }

    /// Stamps a block about to be written at `offset`: each interval's header and
    /// checksum (what fio computes for each write), or the pattern.
    #[inline]
    pub(crate) fn stamp(&self, block: &mut [u8], offset: u64) {
        if self.algorithm == Algorithm::Pattern {
            return;
        }
        let (n, at) = (self.algorithm.digest_len(), HEADER);
        for (i, chunk) in block.chunks_mut(self.interval as usize).enumerate() {
            chunk[0..2].copy_from_slice(&MAGIC.to_le_bytes());
            chunk[2] = self.algorithm as u8;
            chunk[3] = n as u8;
            let len = chunk.len() as u32;
            chunk[4..8].copy_from_slice(&len.to_le_bytes());
            let here = offset + i as u64 * self.interval;
            chunk[8..16].copy_from_slice(&here.to_le_bytes());
            let (sum, data) = chunk[at..].split_at_mut(n);
            self.algorithm.digest(data, sum);
        }
    }

    /// Notes a completed write (no allocation: a bit per interval); whether a backlog check
    /// is due (`verify_backlog` writes since the last).
    #[inline]
    pub(crate) fn written(&mut self, file: usize, offset: u64, len: u64) -> bool {
        let first = (offset - self.region_start) / self.interval;
        for i in first..first + len / self.interval {
            self.written[file][(i / 64) as usize] |= 1 << (i % 64);
        }
        self.since_check += 1;
        if self.backlog == 0 || self.since_check < self.backlog {
            return false;
        }
        self.since_check = 0;
        true
    }

    /// The intervals the job wrote and that were not checked since, read back by `read`
    /// (file, into `buf`, an aligned block, from an offset: a `pread`, or the engine's own
    /// read where it opens no file) and checked: at most `limit` of them (0: all), up to the
    /// first wrong one when `fatal`; how many were checked, and the first mismatch with the
    /// number found.
    pub(crate) fn check_written(
        &mut self,
        (mut read, names): (impl FnMut(usize, &mut [u8], u64) -> ReadResult, &[String]),
        buf: &mut [u8],
        limit: u64,
        fatal: bool,
    ) -> Result<(u64, Option<Mismatch>), rustix::io::Errno> {
        let mut checked = 0;
        let mut first: Option<Mismatch> = None;
        let len = self.interval as usize;
        for (file, name) in names.iter().enumerate().take(self.written.len()) {
            for w in 0..self.written[file].len() {
                while self.written[file][w] != 0 {
                    if (limit > 0 && checked >= limit) || (fatal && first.is_some()) {
                        return Ok((checked, first));
                    }
                    let word = &mut self.written[file][w];
                    let i = w as u64 * 64 + u64::from(word.trailing_zeros());
                    *word &= *word - 1;
                    let offset = self.region_start + i * self.interval;
                    let got = read(file, &mut buf[..len], offset)?;
                    checked += 1;
                    if self.algorithm == Algorithm::Null {
                        continue;
                    }
                    if let Some(wrong) = self.check(&buf[..got], offset, len) {
                        let at = [(offset, len), (offset, len)];
                        let message = self.report(name, wrong, at, &buf[..got]);
                        let m = first.get_or_insert(Mismatch { message, count: 0 });
                        m.count += 1;
                    }
                }
            }
        }
        Ok((checked, first))
    }

    /// The next block of written intervals from `at` on, file by file in offset order (fio
    /// sorts the blocks it logged so): a run of them within one `block`-long stretch of the
    /// region (the job's blocks are aligned so), as its file, offset and length; they are
    /// no longer noted. `None` when none is left.
    pub(crate) fn take_block(&mut self, at: &mut Cursor, block: u64) -> Option<(usize, u64, u64)> {
        let per_block = (block / self.interval).max(1);
        while let Some(bits) = self.written.get_mut(at.file) {
            let Some(w) = (at.word..bits.len()).find(|&w| bits[w] != 0) else {
                (at.file, at.word) = (at.file + 1, 0);
                continue;
            };
            at.word = w;
            let first = w as u64 * 64 + u64::from(bits[w].trailing_zeros());
            let end = (first / per_block + 1) * per_block;
            let mut i = first;
            while i < end
                && bits
                    .get((i / 64) as usize)
                    .is_some_and(|b| b & 1 << (i % 64) != 0)
            {
                bits[(i / 64) as usize] &= !(1 << (i % 64));
                i += 1;
            }
            let offset = self.region_start + first * self.interval;
            return Some((at.file, offset, (i - first) * self.interval));
        }
        None
    }

    /// A block a job that only reads read at `offset` (of file `name`), each interval
    /// checked as fio's `verify_io_u` checks a read-only job's reads (of files a group
    /// before it wrote): the first wrong interval, reported as fio reports it, the block read
    /// being the requested one. As fio's on data another job wrote, no count of writes is
    /// checked (fsbench stamps none); the header's offset and the pattern are.
    pub(crate) fn check_read(&self, block: &[u8], offset: u64, name: &str) -> Option<String> {
        if self.algorithm == Algorithm::Null {
            return None;
        }
        let len = self.interval as usize;
        (block.chunks(len).enumerate()).find_map(|(i, got)| {
            let at = offset + (i * len) as u64;
            let wrong = self.check(got, at, len)?;
            Some(self.report(name, wrong, [(at, len), (offset, block.len())], got))
        })
    }

    /// A wrong interval (`got`, of file `name`) in fio's words: what is wrong, where (the
    /// interval's offset and length, then the requested block's), and what `verify_dump`
    /// dumped of it.
    fn report(
        &self,
        name: &str,
        (why, wrong): (String, Wrong),
        [(offset, len), (block, block_len)]: [(u64, usize); 2],
        got: &[u8],
    ) -> String {
        let mut message = format!(
            "{why} at file {name} offset {offset}, length {len} (requested block: offset={block}, length={block_len})"
        );
        if self.dump {
            message += &self.dump_block(name, offset, got, wrong);
        }
        message
    }

    /// What is wrong with one interval read back, in fio's words, and which part; `None`
    /// when it is right.
    fn check(&self, got: &[u8], offset: u64, len: usize) -> Option<(String, Wrong)> {
        let a = self.algorithm;
        if got.len() < len {
            let why = format!("verify: short read, {} of {len} bytes", got.len());
            return Some((why, Wrong::Header));
        }
        if a == Algorithm::Pattern {
            return self.bad_pattern(&got[..len], 0);
        }
        let magic = u16::from_le_bytes([got[0], got[1]]);
        if magic != MAGIC {
            let why = format!("verify: bad magic header {magic:x}, wanted {MAGIC:x}");
            return Some((why, Wrong::Header));
        }
        let stamped = u64::from_le_bytes(got[8..16].try_into().expect("8 bytes"));
        if stamped != offset {
            let why = format!(
                "{}: verify failed: header offset {stamped}, wanted {offset}",
                a.name()
            );
            return Some((why, Wrong::Header));
        }
        // fio's `meta` checks the pattern after the header, where a job gives one.
        if a == Algorithm::Meta && !self.expected.is_empty() {
            return self.bad_pattern(&got[..len], HEADER);
        }
        let n = a.digest_len();
        let mut sum = [0u8; 64];
        a.digest(&got[HEADER + n..len], &mut sum[..n]);
        if sum[..n] != got[HEADER..HEADER + n] {
            let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
            let why = format!(
                "{}: verify failed (expected {}, received {})",
                a.name(),
                hex(&got[HEADER..HEADER + n]),
                hex(&sum[..n])
            );
            return Some((why, Wrong::Checksum));
        }
        None
    }

    /// The first byte of an interval from `from` on that is not the pattern's, in fio's
    /// words (compared whole first: a read-only job checks every block it reads).
    fn bad_pattern(&self, got: &[u8], from: usize) -> Option<(String, Wrong)> {
        let want = &self.expected[..got.len()];
        if got[from..] == want[from..] {
            return None;
        }
        let bad = (from..got.len()).find(|&i| got[i] != want[i])?;
        let why = format!(
            "verify: bad pattern block offset {bad}: pattern: verify failed, wanted {:#04x}, got {:#04x}",
            want[bad], got[bad]
        );
        Some((why, Wrong::Pattern))
    }

    /// fio's `verify_dump`: the wrong block `got` (of file `name`, at `offset`) written to
    /// the working directory as fio names the files: `BASENAME.OFFSET.hdr_fail` for a wrong
    /// header, else `.received`, and `.expected` where fsbench knows what was written (a
    /// pattern: a checksummed block's data is random, not made again from a seed as fio's
    /// is). What was dumped, as fio says it.
    fn dump_block(&self, name: &str, offset: u64, got: &[u8], wrong: Wrong) -> String {
        let base = name.rsplit('/').next().unwrap_or(name);
        let mut said = String::new();
        let mut dump = |kind: &str, bytes: &[u8]| {
            let file = format!("{base}.{offset}.{kind}");
            said += &match std::fs::write(&file, bytes) {
                Ok(()) => format!("; {kind} data dumped as {file}"),
                Err(e) => format!("; {kind} data not dumped: {file}: {e}"),
            };
        };
        match wrong {
            Wrong::Header => dump("hdr_fail", got),
            Wrong::Checksum => dump("received", got),
            Wrong::Pattern => {
                dump("received", got);
                dump("expected", &self.expected[..got.len()]);
            }
        }
        said
    }
}

/// Which part of a block read back is wrong (what fio's `verify_dump` writes of it).
#[derive(Clone, Copy)]
enum Wrong {
    Header,
    Checksum,
    Pattern,
}

/// One aligned block per slot in flight, holding what the job writes: random, as fio's (a
/// compressing filesystem gets no free ride), or the job's `verify_pattern` or
/// `buffer_pattern`.
pub(super) fn write_buffers(params: &IoParams, job: usize, copy: u32) -> Vec<Aligned> {
    let mut fill = Rng::new(u64::from(copy) + ((job as u64) << 32) + 1);
    (0..params.depth())
        .map(|_| {
            let mut b = Aligned::new(params.max_bs() as usize);
            if params.pattern.is_empty() {
                fill_random(b.buf(), &mut fill);
            } else {
                fill_pattern(b.buf(), &params.pattern);
            }
            b
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Cursor, Verifier};
    use crate::io::IoParams;

    #[test]
    fn the_blocks_written_come_back_file_by_file_in_offset_order_one_block_at_most() {
        // 16 KiB blocks with a header every 4 KiB, in two files of 256 KiB.
        let p =
            IoParams::parse("rw=write,bs=16k,verify=md5,verify-interval=4k,size=512k,nrfiles=2")
                .unwrap();
        let mut v = Verifier::of(&p, 0).unwrap();
        for (file, offset) in [(1, 0), (0, 64 << 10), (0, 16 << 10), (0, 32 << 10)] {
            v.written(file, offset, 16 << 10);
        }
        // A write of 8 KiB: its two intervals alone.
        v.written(0, 128 << 10, 8 << 10);
        let mut at = Cursor::default();
        let blocks: Vec<_> = std::iter::from_fn(|| v.take_block(&mut at, 16 << 10)).collect();
        let kib = |(f, o, l): (usize, u64, u64)| (f, o >> 10, l >> 10);
        assert_eq!(
            blocks.into_iter().map(kib).collect::<Vec<_>>(),
            [
                (0, 16, 16),
                (0, 32, 16),
                (0, 64, 16),
                (0, 128, 8),
                (1, 0, 16)
            ]
        );
        assert_eq!(
            v.take_block(&mut Cursor::default(), 16 << 10),
            None,
            "all taken"
        );
    }
}

//! fio's `verify` options: what they imply and what fsbench cannot check.

use super::{Engine, IoParams};
use serde::{Deserialize, Serialize};

/// Magic, algorithm, checksum length, block length, offset: the header before the checksum.
pub(crate) const HEADER: usize = 16;
use crate::options::Parsed;
use fsbench_measure::error::invalid;

/// fio's `verify` and what written blocks hold (`verify_pattern`, `buffer_pattern`).
pub(super) fn verify_options(p: &Parsed) -> anyhow::Result<(Option<Algorithm>, Vec<u8>)> {
    let verify_pattern = p
        .text("verify-pattern")
        .map(|t| parse_pattern("verify_pattern", t))
        .transpose()?;
    // As fio: a `verify_pattern` alone verifies by the pattern.
    let verify = match p.text("verify") {
        Some("0" | "none") => None,
        Some(name) => Some(Algorithm::parse(name)),
        None => verify_pattern.as_ref().map(|_| Algorithm::Pattern),
    };
    let pattern = match (verify_pattern, p.text("buffer-pattern")) {
        (Some(v), _) => v,
        (None, Some(b)) => parse_pattern("buffer_pattern", b)?,
        (None, None) => Vec::new(),
    };
    Ok((verify, pattern))
}

impl IoParams {
    /// Bytes per verification header: `verify_interval`, or the smallest block.
    pub(crate) fn interval(&self) -> u64 {
        match self.verify_interval {
            0 => self.min_bs(),
            n => n,
        }
    }

    pub(super) fn validate_verify(&self) -> anyhow::Result<()> {
        let Some(a) = self.verify else {
            return Ok(());
        };
        let no = |msg: String| Err(invalid(format!("io: `verify={}`: {msg}", a.name())));
        if self.rw.read_percent(self.rwmixread) == 100 && !self.existing_files {
            return no(
                "a job that only reads checks the files a group before it in its job file wrote (the same `filename`), and this one's are laid out afresh"
                    .into(),
            );
        }
        if self.engine == Engine::Null || self.engine.file_op() {
            return no(format!(
                "ioengine={} writes no data to check",
                self.engine.name()
            ));
        }
        if a == Algorithm::Pattern && self.pattern.is_empty() {
            return no("needs `verify_pattern`".into());
        }
        let interval = self.interval();
        // The blocks' offsets count from each copy's start, so the offset itself may be any.
        if self.block_sizes().any(|bs| !bs.is_multiple_of(interval))
            || interval <= a.overhead() as u64
        {
            return no(format!(
                "`verify_interval` ({interval}) must divide every block size and exceed the header's {} bytes",
                a.overhead()
            ));
        }
        Ok(())
    }
}

/// fio's `verify=` algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    Md5,
    Crc64,
    Crc32c,
    Crc16,
    Crc7,
    Sha1,
    Sha256,
    Sha512,
    Sha3_224,
    Sha3_256,
    Sha3_384,
    Sha3_512,
    Xxhash,
    /// The header alone (its offset checked), fio's `meta`.
    Meta,
    /// Blocks filled with `verify_pattern`, checked byte for byte; no header.
    Pattern,
    /// Written as usual, nothing checked (fio's `null`).
    Null,
}

impl Algorithm {
    /// fio's names (its `crc32c-intel` and `crc32` are `crc32c`, `sha3-*` spelt with a dash;
    /// `0` is no verification).
    pub(crate) const NAMES: &'static [&'static str] = &[
        "0",
        "md5",
        "crc64",
        "crc32c",
        "crc32c-intel",
        "crc32",
        "crc16",
        "crc7",
        "sha1",
        "sha256",
        "sha512",
        "sha3-224",
        "sha3-256",
        "sha3-384",
        "sha3-512",
        "xxhash",
        "meta",
        "pattern",
        "null",
    ];

    pub(crate) fn parse(text: &str) -> Algorithm {
        match text {
            "md5" => Algorithm::Md5,
            "crc64" => Algorithm::Crc64,
            "crc16" => Algorithm::Crc16,
            "crc7" => Algorithm::Crc7,
            "sha1" => Algorithm::Sha1,
            "sha256" => Algorithm::Sha256,
            "sha512" => Algorithm::Sha512,
            "sha3-224" => Algorithm::Sha3_224,
            "sha3-256" => Algorithm::Sha3_256,
            "sha3-384" => Algorithm::Sha3_384,
            "sha3-512" => Algorithm::Sha3_512,
            "xxhash" => Algorithm::Xxhash,
            "meta" => Algorithm::Meta,
            "pattern" => Algorithm::Pattern,
            "null" => Algorithm::Null,
            _ => Algorithm::Crc32c,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Md5 => "md5",
            Algorithm::Crc64 => "crc64",
            Algorithm::Crc32c => "crc32c",
            Algorithm::Crc16 => "crc16",
            Algorithm::Crc7 => "crc7",
            Algorithm::Sha1 => "sha1",
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha512 => "sha512",
            Algorithm::Sha3_224 => "sha3-224",
            Algorithm::Sha3_256 => "sha3-256",
            Algorithm::Sha3_384 => "sha3-384",
            Algorithm::Sha3_512 => "sha3-512",
            Algorithm::Xxhash => "xxhash",
            Algorithm::Meta => "meta",
            Algorithm::Pattern => "pattern",
            Algorithm::Null => "null",
        }
    }

    /// The checksum's length in bytes.
    pub(crate) fn digest_len(self) -> usize {
        match self {
            Algorithm::Md5 => 16,
            Algorithm::Crc64 => 8,
            Algorithm::Crc32c | Algorithm::Xxhash => 4,
            Algorithm::Crc16 => 2,
            Algorithm::Crc7 => 1,
            Algorithm::Sha1 => 20,
            Algorithm::Sha256 | Algorithm::Sha3_256 => 32,
            Algorithm::Sha512 | Algorithm::Sha3_512 => 64,
            Algorithm::Sha3_224 => 28,
            Algorithm::Sha3_384 => 48,
            Algorithm::Meta | Algorithm::Pattern | Algorithm::Null => 0,
        }
    }

    /// Bytes at the start of a block that are not data: the header and the checksum.
    pub(crate) fn overhead(self) -> usize {
        match self {
            Algorithm::Pattern | Algorithm::Null => 0,
            a => HEADER + a.digest_len(),
        }
    }
}

/// fio's `verify_pattern` and `buffer_pattern`: `0x` and hex digits, a `"quoted string"`,
/// or a decimal number (its bytes, little-endian, without the high zero bytes).
pub(crate) fn parse_pattern(key: &str, text: &str) -> anyhow::Result<Vec<u8>> {
    let bad = |why: &str| invalid(format!("io: `{key}={text}`: {why}"));
    let bytes = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        let hex = if hex.len() % 2 == 1 {
            format!("0{hex}")
        } else {
            hex.to_string()
        };
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| bad("hex digits after 0x"))?
    } else if let Some(quoted) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        quoted.as_bytes().to_vec()
    } else {
        let n: u64 = text
            .parse()
            .map_err(|_| bad("0xHEX, \"text\" or a number"))?;
        let mut b = n.to_le_bytes().to_vec();
        while b.len() > 1 && b.last() == Some(&0) {
            b.pop();
        }
        b
    };
    if bytes.is_empty() || bytes.len() > 512 {
        return Err(bad("1 to 512 bytes"));
    }
    Ok(bytes)
}

//! fio's `verify` options: what they imply and what fsbench cannot check.

use super::{Engine, IoParams};
use crate::io::verify::{Algorithm, parse_pattern};
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
        if self.rw.read_percent(self.rwmixread) == 100 {
            return no(
                "a job that only reads has no written blocks to check (fsbench's files are fresh)"
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
        if self.block_sizes().any(|bs| !bs.is_multiple_of(interval))
            || interval <= a.overhead() as u64
            || !self.offset.is_multiple_of(interval)
        {
            return no(format!(
                "`verify_interval` ({interval}) must divide every block size and the offset, and exceed the header's {} bytes",
                a.overhead()
            ));
        }
        Ok(())
    }
}

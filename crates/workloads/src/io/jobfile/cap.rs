//! `--cap size=16m,runtime=2s`: a job file scaled down without editing it.

use super::IoParams;
use fsbench_measure::error::invalid;

/// Bounds on every job of a job file (`--cap size=16m,runtime=2s`): a job file scaled down
/// without editing it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cap {
    /// At most this many bytes per job and per file.
    pub size: Option<u64>,
    /// Every job stops after this long (its ramp too), time-based or not.
    pub runtime_ms: Option<u64>,
}

impl Cap {
    /// `size=SIZE,runtime=TIME`, either or both.
    pub fn parse(text: &str) -> anyhow::Result<Cap> {
        let mut cap = Cap::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = |why: String| invalid(format!("--cap `{part}`: {why}"));
            match part.split_once('=') {
                Some(("size", v)) => {
                    cap.size = Some(
                        fsbench_measure::units::parse_size(v).map_err(|e| bad(e.to_string()))?,
                    )
                }
                Some(("runtime", v)) => {
                    cap.runtime_ms = Some(
                        super::super::params::parse_time("runtime", v)
                            .map_err(|e| bad(e.to_string()))?,
                    )
                }
                _ => {
                    return Err(bad(
                        "give size=SIZE and/or runtime=TIME (e.g. size=16m,runtime=2s)".into(),
                    ));
                }
            }
        }
        Ok(cap)
    }

    /// What the cap did, for the output; `None` without one.
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(size) = self.size {
            parts.push(format!("size={}", fsbench_model::units::compact_size(size)));
        }
        if let Some(ms) = self.runtime_ms {
            parts.push(format!("runtime={}s", ms as f64 / 1000.0));
        }
        (!parts.is_empty()).then(|| {
            format!(
                "the job file scaled by --cap {}: every job's size (a job without one: that size), files and offset_increment at most that, its runtime, ramp and start delay too",
                parts.join(",")
            )
        })
    }

    pub(super) fn apply(&self, job: &mut IoParams) {
        if let Some(size) = self.size {
            job.size = job.size.min(size);
            job.filesize = job.filesize.min(size.max(job.offset + job.max_bs()));
            // Each copy's files are that much longer than the one before's.
            job.offset_increment = job.offset_increment.min(size);
        }
        if let Some(ms) = self.runtime_ms {
            job.runtime_ms = match job.runtime_ms {
                0 => ms,
                given => given.min(ms),
            };
            job.ramp_ms = job.ramp_ms.min(ms);
            let (lo, hi) = job.startdelay_ms;
            job.startdelay_ms = (lo.min(ms), hi.min(ms));
        }
    }
}

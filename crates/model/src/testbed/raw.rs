//! The raw-device baseline's record (`--baseline`): what the storage stack keeps of it and
//! how it reads; measuring it is the testbed's (core's `testbed::baseline`).

use serde::{Deserialize, Serialize};

/// A timed sequential pass over the device.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Pass {
    /// 1 MiB requests completed.
    pub requests: u64,
    pub bytes: u64,
    pub secs: f64,
}

impl Pass {
    pub(crate) fn bytes_per_sec(&self) -> f64 {
        self.bytes as f64 / self.secs.max(1e-9)
    }
}

/// The raw device's figures: a baseline, never compared in verdicts or ranks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RawBaseline {
    /// The block device measured (a loop device for an image).
    pub device: String,
    pub read: Pass,
    /// Written before it is read (what reads then find is real data, not a sparse image's
    /// holes).
    pub write: Option<Pass>,
}

/// `raw device: read 1.9 GiB/s, write 1.1 GiB/s (/dev/loop0, O_DIRECT 1 MiB requests)`.
pub fn describe(b: &RawBaseline) -> String {
    let rate = |p: &Pass| format!("{}/s", crate::units::format_bytes(p.bytes_per_sec() as u64));
    let write = b
        .write
        .as_ref()
        .map_or(String::new(), |w| format!(", write {}", rate(w)));
    format!(
        "raw device: read {}{write} ({}, sequential O_DIRECT 1 MiB requests, {:.1} s each; a baseline, not compared)",
        rate(&b.read),
        b.device,
        b.read.secs
    )
}

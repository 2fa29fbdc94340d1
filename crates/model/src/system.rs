//! The system a suite ran on, recorded with every result.

use serde::{Deserialize, Serialize};

/// Kernel, CPU and memory of the machine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SystemInfo {
    pub hostname: String,
    pub kernel_release: String,
    pub kernel_version: String,
    pub arch: String,
    pub cpu_model: String,
    pub cpus: usize,
    pub memory_bytes: u64,
    pub fsbench_version: String,
    pub root: bool,
}

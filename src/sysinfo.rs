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

impl SystemInfo {
    pub fn collect() -> SystemInfo {
        let uname = rustix::system::uname();
        let text = |s: &std::ffi::CStr| s.to_string_lossy().into_owned();
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                matches!(k.trim(), "model name" | "Model" | "cpu model")
                    .then(|| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_bytes = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024);
        SystemInfo {
            hostname: text(uname.nodename()),
            kernel_release: text(uname.release()),
            kernel_version: text(uname.version()),
            arch: text(uname.machine()),
            cpu_model,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            fsbench_version: env!("CARGO_PKG_VERSION").to_string(),
            root: crate::tools::is_root(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_this_machine() {
        let s = SystemInfo::collect();
        assert!(!s.kernel_release.is_empty());
        assert!(s.cpus >= 1);
        assert!(s.memory_bytes > 64 << 20);
    }
}

//! The system a suite ran on and its processes, as the kernel says (the record is the model's).

use fsbench_model::system::SystemInfo;

/// A `/proc/meminfo` field in bytes, e.g. `MemAvailable:`.
fn meminfo_bytes(field: &str) -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// Memory the machine can give a new process without swapping (MemAvailable), if known.
pub fn available_memory() -> Option<u64> {
    meminfo_bytes("MemAvailable:")
}

/// Start time of process `pid` in clock ticks since boot; with the pid it names a process
/// uniquely, since pids are reused.
pub fn process_start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; fields after its closing parenthesis are plain.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Gathering the system record: it reads /proc and uname, so it lives here, not in the model.
pub trait SystemInfoExt {
    /// Kernel, CPU and memory of this machine now.
    fn collect() -> SystemInfo;
}

impl SystemInfoExt for SystemInfo {
    fn collect() -> SystemInfo {
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
        let memory_bytes = meminfo_bytes("MemTotal:").unwrap_or(0);
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

    #[test]
    fn start_ticks_of_self_and_nobody() {
        assert!(process_start_ticks(std::process::id()).is_some());
        assert!(process_start_ticks(u32::MAX).is_none());
    }
}

//! The storage stack under a suite as recorded: the chain from the image directory (or
//! `--device`) down to the disks with their queue settings, the kernel's tunables, the load
//! around the suite and each run, and a short hash naming identical stacks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One block device of the chain, with its request-queue settings (a partition's queue facts
/// are its disk's, so a partition is followed by its disk).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BlockQueue {
    pub name: String,
    pub model: Option<String>,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
    pub nr_requests: Option<u32>,
    pub read_ahead_kb: Option<u32>,
    /// `write back` (a volatile cache) or `write through`.
    pub write_cache: Option<String>,
    pub logical_block_size: Option<u32>,
    pub physical_block_size: Option<u32>,
}

/// The filesystem holding the images (or a device's image file) and the devices below it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BackingChain {
    /// The image directory or the `--device` path.
    pub path: PathBuf,
    /// The filesystem holding it (none for a block device given as `--device`).
    pub fstype: Option<String>,
    pub mount_source: Option<String>,
    pub mount_options: Option<String>,
    /// From the device holding it down to the disks (through partitions, device-mapper, md).
    pub devices: Vec<BlockQueue>,
}

/// Kernel tunables that decide when written data goes to disk (`/proc/sys/vm`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct VmTunables {
    pub dirty_ratio: Option<u64>,
    pub dirty_background_ratio: Option<u64>,
    pub dirty_bytes: Option<u64>,
    pub dirty_background_bytes: Option<u64>,
    pub dirty_expire_centisecs: Option<u64>,
    pub dirty_writeback_centisecs: Option<u64>,
    pub swappiness: Option<u64>,
}

/// Everything below the filesystem under test that can change its figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StorageStack {
    pub kernel_release: String,
    pub backing: Option<BackingChain>,
    pub vm: VmTunables,
    /// The active mode of `/sys/kernel/mm/transparent_hugepage/enabled`.
    pub transparent_hugepages: Option<String>,
    /// cpu0's cpufreq governor; `None` where the kernel has no cpufreq (most VMs).
    pub cpu_governor: Option<String>,
    /// `none` on bare metal, else the hypervisor (systemd-detect-virt) or `virtual`.
    pub virtual_machine: String,
    /// The container fsbench runs in (systemd-detect-virt), if it can tell.
    pub container: Option<String>,
    /// Free page reporting's settings where the kernel has it: a VM guest hands freed memory
    /// back to the host, and the next allocation of it is faulted in again there, so that
    /// runs on tmpfs or the page cache change speed with what ran before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_page_reporting: Option<String>,
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`).
pub type LoadAverage = [f64; 3];

impl StorageStack {
    /// A short, stable name of this exact stack: FNV-1a (64 bit) of its JSON form, 12 hex
    /// digits (std's hashers may change between Rust releases; this must not).
    pub fn hash(&self) -> String {
        let text = serde_json::to_string(self).expect("a stack serializes");
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{:012x}", h >> 16)
    }

    /// Every leaf as `path = value` (`backing.devices.0.scheduler = mq-deadline`).
    fn leaves(&self) -> BTreeMap<String, String> {
        fn walk(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
            let join = |k: &str| {
                if prefix.is_empty() {
                    k.to_string()
                } else {
                    format!("{prefix}.{k}")
                }
            };
            match v {
                serde_json::Value::Object(map) => {
                    map.iter().for_each(|(k, v)| walk(&join(k), v, out))
                }
                serde_json::Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .for_each(|(i, v)| walk(&join(&i.to_string()), v, out)),
                serde_json::Value::String(s) => {
                    out.insert(prefix.to_string(), s.clone());
                }
                other => {
                    out.insert(prefix.to_string(), other.to_string());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(
            "",
            &serde_json::to_value(self).expect("a stack serializes"),
            &mut out,
        );
        out
    }

    /// What differs from `other`, one `item: this → other` line each (empty when identical).
    pub fn differences(&self, other: &StorageStack) -> Vec<String> {
        let (a, b) = (self.leaves(), other.leaves());
        let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        keys.into_iter()
            .filter(|k| a.get(*k) != b.get(*k))
            .map(|k| {
                let show = |v: Option<&String>| v.map_or("(absent)".to_string(), |v| v.clone());
                format!("{k}: {} → {}", show(a.get(k)), show(b.get(k)))
            })
            .collect()
    }
}

/// The stack of a suite: collected once when it starts, and its hash.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SuiteTestbed {
    pub stack: StorageStack,
    /// [`StorageStack::hash`], stored so that identical stacks can be found by it.
    pub stack_hash: String,
    pub load_start: Option<LoadAverage>,
    pub load_end: Option<LoadAverage>,
    /// Other fsbench processes running when the suite started (their PIDs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_fsbench: Vec<u32>,
    /// The raw device's own speed before the first mkfs (`--baseline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<super::raw::RawBaseline>,
}

/// The stack as one run saw it: its hash, the load around the run, and what differs from the
/// suite's stack (nothing, usually).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunTestbed {
    pub stack_hash: String,
    pub load_start: Option<LoadAverage>,
    pub load_end: Option<LoadAverage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// The I/O scheduler the run set (`bfq on /dev/loop3 (was mq-deadline)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// For a loop image, the backing disk's queue: set (`bfq on /dev/vda (was mq-deadline)`,
    /// with `--sched-backing`) or not (`not set: /dev/vda keeps mq-deadline ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_scheduler: Option<String>,
    /// The write cache the run set (`write through on /dev/sdb (was write back)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_cache: Option<String>,
    /// The background load during the phases, and what it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<BackgroundRecord>,
}

impl SuiteTestbed {
    /// What made the machine busy when the suite started, one sentence each: a load average
    /// above the number of CPUs, other fsbench runs.
    pub fn busy(&self, cpus: usize) -> Vec<String> {
        let mut out = Vec::new();
        if let Some([one, ..]) = self.load_start.filter(|l| l[0] > cpus as f64) {
            out.push(format!(
                "the machine was busy when the suite started: load average {one:.1} on {cpus} CPUs; its figures are partly the other work's"
            ));
        }
        if !self.other_fsbench.is_empty() {
            let pids: Vec<String> = self.other_fsbench.iter().map(u32::to_string).collect();
            out.push(format!(
                "{} other fsbench process(es) ran when the suite started (PID {}): runs side by side measure each other",
                pids.len(),
                pids.join(", ")
            ));
        }
        out
    }
}

/// What the background load of a run was and what it cost, as stored with the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BackgroundRecord {
    pub command: String,
    pub version: Option<String>,
    pub secs: f64,
    /// The load's own CPU time, its workers' included.
    pub cpu_user_secs: f64,
    pub cpu_system_secs: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack() -> StorageStack {
        StorageStack {
            kernel_release: "6.12.0".into(),
            backing: None,
            vm: VmTunables {
                dirty_ratio: Some(20),
                dirty_background_ratio: Some(10),
                dirty_bytes: Some(0),
                dirty_background_bytes: Some(0),
                dirty_expire_centisecs: Some(3000),
                dirty_writeback_centisecs: Some(500),
                swappiness: Some(60),
            },
            transparent_hugepages: Some("madvise".into()),
            cpu_governor: None,
            virtual_machine: "kvm".into(),
            container: None,
            free_page_reporting: None,
        }
    }

    #[test]
    fn identical_stacks_share_a_hash_and_differences_are_named() {
        let a = stack();
        let mut b = a.clone();
        assert_eq!(a.hash(), b.hash());
        assert_eq!(a.hash().len(), 12);
        assert!(a.differences(&b).is_empty());
        b.vm.dirty_ratio = Some(a.vm.dirty_ratio.unwrap_or(0) + 1);
        b.kernel_release = "0.0-other".into();
        assert_ne!(a.hash(), b.hash());
        let diff = a.differences(&b);
        assert_eq!(diff.len(), 2, "{diff:?}");
        assert!(
            diff.iter().any(|d| d.starts_with("vm.dirty_ratio: ")),
            "{diff:?}"
        );
        assert!(diff.iter().any(|d| d.ends_with("→ 0.0-other")), "{diff:?}");
    }
}

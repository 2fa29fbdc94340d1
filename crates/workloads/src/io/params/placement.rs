//! fio's options that place a job's threads and prioritise its I/O, read as fio reads them:
//! `cpus_allowed` (or `cpumask`) and `cpus_allowed_policy`, `numa_cpu_nodes`,
//! `numa_mem_policy`, `nice`, `prio` and `prioclass`, and the per-I/O priorities of the
//! libaio and io_uring engines (`cmdprio_percentage`, `cmdprio_class`, `cmdprio`,
//! `cmdprio_bssplit`). A CPU or node this machine lacks is refused as fio refuses it.

use serde::{Deserialize, Serialize};

use super::Engine;
use super::cmdprio::{CmdPrio, ioprio_value};
use crate::options::Parsed;
use fsbench_measure::error::invalid;

/// Where a job's threads run and at what priority (none of it given: as fsbench runs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// fio's `cpus_allowed` (or `cpumask`): the CPUs the job's threads may run on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u32>,
    /// `cpus_allowed_policy=split`: each thread on one of them, by its number in the file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub split: bool,
    /// fio's `numa_cpu_nodes`: the threads run on these nodes' CPUs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_nodes: Vec<u32>,
    /// fio's `numa_mem_policy`: where the threads' memory comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_policy: Option<MemPolicy>,
    /// fio's `nice`: added to each thread's nice value.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nice: i32,
    /// fio's `prio` and `prioclass` as an ioprio value, set with `ioprio_set` on each
    /// thread (none: left as it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ioprio: Option<u16>,
    /// fio's `cmdprio_*`: the priorities the engine gives I/Os of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdprio: Option<CmdPrio>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// fio's `numa_mem_policy=MODE[:NODES]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemPolicy {
    Default,
    Prefer(u32),
    Bind(Vec<u32>),
    Interleave(Vec<u32>),
    Local,
}

impl Placement {
    /// The priority an I/O ran with: its own (`own`, 0: none), or the job's (`prio`, `prioclass`), or 0.
    #[inline]
    pub(crate) fn prio_of(&self, own: u16) -> u16 {
        match own {
            0 => self.ioprio.unwrap_or(0),
            own => own,
        }
    }

    pub(crate) fn is_default(&self) -> bool {
        *self == Placement::default()
    }

    /// How the job was placed, for its description; `None` where nothing was asked.
    pub(crate) fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.cpus.is_empty() {
            let split = if self.split { " (split)" } else { "" };
            parts.push(format!("CPUs {}{split}", list_text(&self.cpus)));
        }
        if !self.cpu_nodes.is_empty() {
            parts.push(format!("nodes {}", list_text(&self.cpu_nodes)));
        }
        if let Some(policy) = &self.mem_policy {
            parts.push(format!("memory {}", policy.text()));
        }
        if let Some(prio) = self.ioprio {
            parts.push(format!("ioprio {}/{}", prio >> 13, prio & 7));
        }
        if self.nice != 0 {
            parts.push(format!("nice {}", self.nice));
        }
        if self.cmdprio.is_some() {
            parts.push("per-I/O priorities (cmdprio)".into());
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

impl MemPolicy {
    fn text(&self) -> String {
        match self {
            MemPolicy::Default => "default".into(),
            MemPolicy::Prefer(node) => format!("prefer:{node}"),
            MemPolicy::Bind(nodes) => format!("bind:{}", list_text(nodes)),
            MemPolicy::Interleave(nodes) => format!("interleave:{}", list_text(nodes)),
            MemPolicy::Local => "local".into(),
        }
    }
}

/// `0,2,3` as written back.
fn list_text(list: &[u32]) -> String {
    let parts: Vec<String> = list.iter().map(u32::to_string).collect();
    parts.join(",")
}

/// The job's placement from its options, checked against this machine's CPUs and nodes.
pub(super) fn placement(p: &Parsed, engine: Engine) -> anyhow::Result<Placement> {
    let cpus = match (p.text("cpus-allowed"), p.text("cpumask")) {
        (Some(list), _) => cpu_list(list)?,
        (None, Some(mask)) => cpu_mask(mask)?,
        (None, None) => Vec::new(),
    };
    let nice = match p.text("nice") {
        Some(text) => text
            .parse::<i32>()
            .ok()
            .filter(|n| (-20..=19).contains(n))
            .ok_or_else(|| invalid(format!("io: `nice={text}` is from -20 to 19")))?,
        None => 0,
    };
    let ioprio = (p.explicit("prio") || p.explicit("prioclass")).then(|| {
        ioprio_value(
            p.small("prioclass").unwrap_or(0),
            p.small("prio").unwrap_or(0),
        )
    });
    Ok(Placement {
        cpus,
        split: p.text("cpus-allowed-policy") == Some("split"),
        cpu_nodes: match p.text("numa-cpu-nodes") {
            Some(text) => node_list("numa-cpu-nodes", text)?,
            None => Vec::new(),
        },
        mem_policy: p.text("numa-mem-policy").map(mem_policy).transpose()?,
        nice,
        ioprio,
        cmdprio: super::cmdprio::cmdprio(p, engine)?,
    })
}

/// fio's `cpus_allowed=0-1,3`: each CPU must be one this machine has (fio: "CPU N too
/// large").
fn cpu_list(text: &str) -> anyhow::Result<Vec<u32>> {
    let cpus = ranges("cpus-allowed", text)?;
    let max = configured_cpus();
    if let Some(too_large) = cpus.iter().find(|c| u64::from(**c) >= max) {
        return Err(invalid(format!(
            "io: `cpus-allowed={text}`: CPU {too_large} too large (max={}), as fio says",
            max - 1
        )));
    }
    Ok(cpus)
}

/// fio's `cpumask=MASK`: a bit per CPU, of the first 32.
fn cpu_mask(text: &str) -> anyhow::Result<Vec<u32>> {
    let bad = || invalid(format!("io: `cpumask={text}` is a number, a bit per CPU"));
    let mask = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).map_err(|_| bad())?,
        None => text.parse::<u64>().map_err(|_| bad())?,
    };
    let cpus: Vec<u32> = (0..32).filter(|i| mask & (1 << i) != 0).collect();
    cpu_list(&list_text(&cpus))
}

/// The CPUs this machine is configured with (fio's `cpus_configured`).
fn configured_cpus() -> u64 {
    // SAFETY: sysconf reads a value and has no other effect.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    u64::try_from(n).unwrap_or(1).max(1)
}

/// `0-1,3` as the numbers it names.
fn ranges(key: &str, text: &str) -> anyhow::Result<Vec<u32>> {
    let bad = || {
        invalid(format!(
            "io: `{key}={text}` is a list: N, N-M, comma-separated"
        ))
    };
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (u32, u32) = (
            lo.trim().parse().map_err(|_| bad())?,
            hi.trim().parse().map_err(|_| bad())?,
        );
        if lo > hi || hi - lo > 4096 {
            return Err(bad());
        }
        out.extend(lo..=hi);
    }
    if out.is_empty() {
        return Err(bad());
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// A NUMA node list (libnuma's `numa_parse_nodestring`: `all` or N, N-M, comma-separated),
/// each node one this machine has.
fn node_list(key: &str, text: &str) -> anyhow::Result<Vec<u32>> {
    let online = online_nodes().map_err(|e| {
        invalid(format!(
            "io: `{key}`: cannot read this machine's nodes: {e}"
        ))
    })?;
    if text == "all" {
        return Ok(online);
    }
    let nodes = ranges(key, text)?;
    if let Some(missing) = nodes.iter().find(|n| !online.contains(n)) {
        return Err(invalid(format!(
            "io: `{key}`: node {missing} (of {text}) is not on this machine (its nodes: {}); fio: numa_parse_nodestring failed",
            list_text(&online)
        )));
    }
    Ok(nodes)
}

/// fio's `numa_mem_policy=MODE[:NODES]`, with fio's own complaints.
fn mem_policy(text: &str) -> anyhow::Result<MemPolicy> {
    let (mode, nodes) = match text.split_once(':') {
        Some((mode, nodes)) => (mode, Some(nodes)),
        None => (text, None),
    };
    let no = |why: &str| Err(invalid(format!("io: `numa-mem-policy={text}`: {why}")));
    let key = "numa-mem-policy";
    match (mode, nodes) {
        ("default", None) => Ok(MemPolicy::Default),
        ("local", None) => Ok(MemPolicy::Local),
        ("default" | "local", Some(_)) => no("fio: NO nodelist for 'local'"),
        ("prefer", Some(n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            let node = node_list(key, n)?[0];
            Ok(MemPolicy::Prefer(node))
        }
        ("prefer", Some(_)) => no("fio: one node only for 'prefer'"),
        ("prefer", None) => no("fio: one node is needed for 'prefer'"),
        ("bind", Some(n)) => Ok(MemPolicy::Bind(node_list(key, n)?)),
        ("bind", None) => no("fio: a nodelist is needed for 'bind'"),
        ("interleave", n) => Ok(MemPolicy::Interleave(node_list(key, n.unwrap_or("all"))?)),
        _ => no("fio: memory policy should be: default, prefer, bind, interleave, local"),
    }
}

/// This machine's NUMA nodes (`/sys/devices/system/node/online`; one node, 0, where the
/// kernel has no NUMA).
pub(crate) fn online_nodes() -> std::io::Result<Vec<u32>> {
    match std::fs::read_to_string("/sys/devices/system/node/online") {
        Ok(text) => Ok(list(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(vec![0]),
        Err(e) => Err(e),
    }
}

/// The kernel's list format, `0-3,8,10-11`.
pub(crate) fn list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(lo), Ok(hi)) = (lo.parse::<u32>(), hi.parse::<u32>()) {
            out.extend(lo..=hi);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::IoParams;

    #[test]
    fn priorities_are_fio_s_values() {
        let p = IoParams::parse("prio=4,prioclass=1,nice=5")
            .unwrap()
            .placement;
        assert_eq!(p.ioprio, Some(0x2004));
        assert_eq!(p.nice, 5);
        // A level without a class is best effort, as fio's `ioprio_value`.
        let p = IoParams::parse("prio=6").unwrap().placement;
        assert_eq!(p.ioprio, Some(0x4006));
        assert!(IoParams::parse("").unwrap().placement.is_default());
        assert!(IoParams::parse("prio=8").is_err());
        assert!(IoParams::parse("nice=20").is_err());
    }

    #[test]
    fn cpus_and_nodes_this_machine_lacks_are_refused_as_fio_refuses_them() {
        let p = IoParams::parse("cpus-allowed=0,cpus-allowed-policy=split").unwrap();
        assert_eq!((p.placement.cpus, p.placement.split), (vec![0], true));
        assert_eq!(cpu_mask("0x1").unwrap(), vec![0]);
        let cpus = configured_cpus();
        let err = cpu_list(&format!("0-{cpus}")).unwrap_err().to_string();
        assert!(err.contains(&format!("CPU {cpus} too large")), "{err}");
        let missing = online_nodes().unwrap().len();
        let err = node_list("numa-cpu-nodes", &format!("0-{missing}")).unwrap_err();
        assert!(
            err.to_string().contains("numa_parse_nodestring failed"),
            "{err}"
        );
        assert_eq!(node_list("numa-cpu-nodes", "0").unwrap(), vec![0]);
    }

    #[test]
    fn memory_policies_read_as_fio_reads_them() {
        assert_eq!(mem_policy("bind:0").unwrap(), MemPolicy::Bind(vec![0]));
        assert_eq!(mem_policy("prefer:0").unwrap(), MemPolicy::Prefer(0));
        assert_eq!(mem_policy("local").unwrap(), MemPolicy::Local);
        assert!(
            matches!(mem_policy("interleave").unwrap(), MemPolicy::Interleave(n) if n.contains(&0))
        );
        for (bad, says) in [
            ("bind", "a nodelist is needed"),
            ("prefer:0-1", "one node only"),
            ("local:0", "NO nodelist"),
            ("spread:0", "should be: default"),
        ] {
            let err = mem_policy(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}

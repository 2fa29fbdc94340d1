//! A job's thread placed and prioritised as fio's `thread_main` does it, before the job
//! opens its files or makes its buffers: its CPUs (`sched_setaffinity`), its NUMA nodes'
//! CPUs (as libnuma's `numa_run_on_node_mask`), its memory policy (`set_mempolicy`), its
//! I/O priority (`ioprio_set`) and its nice value (`nice`). Each worker is a new process or
//! thread, so what is set here ends with it.

use super::params::{IoParams, MemPolicy, kernel_list as list};
use fsbench_measure::error::FsbenchError;

/// fio's `IOPRIO_WHO_PROCESS` (with 0: the calling thread).
const IOPRIO_WHO_PROCESS: libc::c_int = 1;

/// Nodes a memory policy's mask can name (bits).
const MAX_NODES: usize = 1024;

/// Places the calling worker, copy `copy` of job `params`.
pub(crate) fn apply(params: &IoParams, copy: u32) -> Result<(), FsbenchError> {
    let p = &params.placement;
    if p.is_default() {
        return Ok(());
    }
    // fio's thread number over the whole job file (from 1); `split` counts with it.
    let thread = params
        .fio
        .as_ref()
        .map_or(copy + 1, |f| f.first_thread + copy);
    let failed = |what: &str, e: std::io::Error| {
        FsbenchError::Failed(format!(
            "io: job `{}` thread {thread}: {what}: {e}",
            params.job.as_deref().unwrap_or("io")
        ))
    };
    if !p.cpus.is_empty() {
        let cpus = if p.split {
            // fio's `fio_cpus_split`: the (thread - 1)-th of the CPUs, round the list.
            vec![p.cpus[(thread.saturating_sub(1) as usize) % p.cpus.len()]]
        } else {
            p.cpus.clone()
        };
        set_affinity(&cpus).map_err(|e| failed("cpu_set_affinity", e))?;
    }
    if !p.cpu_nodes.is_empty() {
        let mut cpus = Vec::new();
        for node in &p.cpu_nodes {
            cpus.extend(node_cpus(*node).map_err(|e| failed("numa_run_on_node_mask", e))?);
        }
        set_affinity(&cpus).map_err(|e| failed("numa_run_on_node_mask", e))?;
    }
    // fio leaves the `default` policy as it is: no call.
    if let Some(policy) = p.mem_policy.as_ref().filter(|m| **m != MemPolicy::Default) {
        set_mempolicy(policy).map_err(|e| failed("set_mempolicy", e))?;
    }
    if let Some(prio) = p.ioprio {
        // SAFETY: ioprio_set takes three integers and changes this thread's priority only.
        let r = unsafe {
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                0,
                libc::c_int::from(prio),
            )
        };
        if r < 0 {
            return Err(failed("ioprio_set", std::io::Error::last_os_error()));
        }
    }
    if p.nice != 0 {
        // nice(2) returns the new value, which may be -1: errno tells (fio's check).
        // SAFETY: errno is this thread's; nice changes this thread's nice value only.
        let r = unsafe {
            *libc::__errno_location() = 0;
            libc::nice(p.nice)
        };
        let e = std::io::Error::last_os_error();
        if r == -1 && e.raw_os_error() != Some(0) {
            return Err(failed("nice", e));
        }
    }
    Ok(())
}

fn set_affinity(cpus: &[u32]) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus
        .iter()
        .map(|c| *c as usize)
        .filter(|c| *c < libc::CPU_SETSIZE as usize)
    {
        // SAFETY: the CPU is within the set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size given; 0 is the calling thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// As libnuma sets a policy: the mode and a mask of the nodes (empty for `local`).
fn set_mempolicy(policy: &MemPolicy) -> std::io::Result<()> {
    let (mode, nodes): (libc::c_int, &[u32]) = match policy {
        MemPolicy::Default => (libc::MPOL_DEFAULT, &[]),
        MemPolicy::Local => (libc::MPOL_LOCAL, &[]),
        MemPolicy::Prefer(node) => (libc::MPOL_PREFERRED, std::slice::from_ref(node)),
        MemPolicy::Bind(nodes) => (libc::MPOL_BIND, nodes),
        MemPolicy::Interleave(nodes) => (libc::MPOL_INTERLEAVE, nodes),
    };
    let mut mask = [0u64; MAX_NODES / 64];
    for node in nodes.iter().map(|n| *n as usize).filter(|n| *n < MAX_NODES) {
        mask[node / 64] |= 1 << (node % 64);
    }
    // SAFETY: the mask holds MAX_NODES bits; set_mempolicy reads it and sets this thread's
    // policy.
    let r = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            mode,
            mask.as_ptr(),
            MAX_NODES as libc::c_ulong + 1,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Node `node`'s CPUs (`/sys/devices/system/node/nodeN/cpulist`).
fn node_cpus(node: u32) -> std::io::Result<Vec<u32>> {
    let path = format!("/sys/devices/system/node/node{node}/cpulist");
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(list(&text)),
        // No NUMA in the kernel: node 0 is every CPU.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && node == 0 => {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            Ok((0..n as u32).collect())
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::params::online_nodes;

    #[test]
    fn the_kernels_lists_read_as_their_numbers() {
        assert_eq!(list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(list("0\n"), vec![0]);
        assert!(list("\n").is_empty());
    }

    #[test]
    fn this_machine_has_node_0_and_its_cpus() {
        let nodes = online_nodes().unwrap();
        assert!(nodes.contains(&0), "{nodes:?}");
        assert!(!node_cpus(0).unwrap().is_empty());
    }
}

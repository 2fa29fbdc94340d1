//! The storage stack under a suite, as the system reports it: the chain from the image
//! directory (or `--device`) down to the disks with their queue settings, the kernel's
//! writeback and memory tunables, the CPU frequency governor and whether the machine is
//! virtual. A short hash names identical stacks, so that results from different stacks are
//! never compared unawares.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use fsbench_model::testbed::{
    BackingChain, BlockQueue, LoadAverage, RunTestbed, StorageStack, SuiteTestbed, TargetSpec,
    VmTunables,
};

use super::device::{read_trim, sysfs_node};
use super::mounts;
use fsbench_measure::tools;

/// `order 9` (the smallest block reported, as a page order) and, where the kernel has the
/// setting, `, after 0 ms` (how long a block stays free first), when a virtio balloon under
/// `balloons` offers free page reporting (feature bit 5, VIRTIO_BALLOON_F_REPORTING); `None`
/// otherwise, as on bare metal, whose kernels often have the module with no one using it.
fn free_page_reporting(params: &Path, balloons: &Path) -> Option<String> {
    let reports = std::fs::read_dir(balloons)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|device| read_trim(&device.path().join("features")))
        .any(|bits| bits.as_bytes().get(5) == Some(&b'1'));
    if !reports {
        return None;
    }
    let order = read_trim(&params.join("page_reporting_order"))?;
    Some(match read_trim(&params.join("min_free_ms")) {
        Some(ms) => format!("order {order}, after {ms} ms"),
        None => format!("order {order}"),
    })
}

/// The load average now, if the kernel says.
pub fn load_average() -> Option<LoadAverage> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// fsbench processes other than this one, its children and, under an MPI launcher, its
/// sibling ranks.
fn other_fsbench_processes() -> Vec<u32> {
    let me = std::process::id();
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The fields after the command's closing parenthesis: state, then the parent.
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let comm = |pid: u32| read_trim(Path::new(&format!("/proc/{pid}/comm")));
    let my_parent = parent(me);
    let launched = my_parent.and_then(comm).is_some_and(|c| {
        [
            "mpirun",
            "mpiexec",
            "orterun",
            "orted",
            "prterun",
            "prted",
            "hydra_pmi_proxy",
        ]
        .contains(&c.as_str())
    });
    let pids = std::fs::read_dir("/proc").into_iter().flatten().flatten();
    pids.filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me && comm(pid).as_deref() == Some("fsbench"))
        .filter(|&pid| {
            let p = parent(pid);
            p != Some(me) && !(launched && p == my_parent)
        })
        .collect()
}

fn read_number<T: std::str::FromStr>(path: impl AsRef<Path>) -> Option<T> {
    read_trim(path.as_ref())?.parse().ok()
}

/// The bracketed (active) word of a sysfs choice such as `always [madvise] never`.
fn active_choice(text: String) -> String {
    text.split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(['[', ']']).to_string())
        .unwrap_or(text)
}

fn queue_of(node: &Path) -> Option<BlockQueue> {
    let queue = node.join("queue");
    Some(BlockQueue {
        name: node.file_name()?.to_string_lossy().into_owned(),
        model: read_trim(&node.join("device/model")),
        rotational: read_trim(&queue.join("rotational")).map(|r| r == "1"),
        scheduler: read_trim(&queue.join("scheduler")).map(active_choice),
        nr_requests: read_number(queue.join("nr_requests")),
        read_ahead_kb: read_number(queue.join("read_ahead_kb")),
        write_cache: read_trim(&queue.join("write_cache")),
        logical_block_size: read_number(queue.join("logical_block_size")),
        physical_block_size: read_number(queue.join("physical_block_size")),
    })
}

/// `node` and everything below it: a partition's disk, the devices a device-mapper or md
/// device is built on (sysfs `slaves`), depth first.
fn chain_below(node: &Path, out: &mut Vec<BlockQueue>) {
    if out.len() > 16 {
        return; // no real stack is this deep; a sysfs loop must not recurse forever
    }
    if node.join("partition").exists() {
        // A partition has no queue of its own: its disk, next in the chain, has the settings.
        out.push(empty_queue(node));
        if let Some(disk) = node.parent() {
            chain_below(disk, out);
        }
        return;
    }
    out.extend(queue_of(node));
    let mut slaves: Vec<PathBuf> = std::fs::read_dir(node.join("slaves"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.path().canonicalize().ok())
                .collect()
        })
        .unwrap_or_default();
    slaves.sort();
    for slave in slaves {
        chain_below(&slave, out);
    }
}

fn empty_queue(node: &Path) -> BlockQueue {
    BlockQueue {
        name: node
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        model: None,
        rotational: None,
        scheduler: None,
        nr_requests: None,
        read_ahead_kb: None,
        write_cache: None,
        logical_block_size: None,
        physical_block_size: None,
    }
}

fn chain_of_device(major: u32, minor: u32) -> Vec<BlockQueue> {
    let mut out = Vec::new();
    if let Some(node) = sysfs_node(major, minor) {
        chain_below(&node, &mut out);
    }
    out
}

/// The chain behind `path`: a block device itself, or the filesystem holding a file or
/// directory and the devices below that filesystem.
pub(crate) fn backing_chain(path: &Path) -> Option<BackingChain> {
    let meta = path.metadata().ok()?;
    if meta.file_type().is_block_device() {
        let rdev = meta.rdev();
        return Some(BackingChain {
            path: path.to_path_buf(),
            fstype: None,
            mount_source: None,
            mount_options: None,
            devices: chain_of_device(rustix::fs::major(rdev), rustix::fs::minor(rdev)),
        });
    }
    let mount = mounts::mount_containing(path);
    let mut devices = chain_of_device(rustix::fs::major(meta.dev()), rustix::fs::minor(meta.dev()));
    if devices.is_empty() {
        // btrfs reports an anonymous st_dev; its mount source names the real device.
        let source = mount.as_ref().map(|m| Path::new(&m.source).to_path_buf());
        if let Some(rdev) = source.and_then(|s| s.metadata().ok()).map(|m| m.rdev()) {
            devices = chain_of_device(rustix::fs::major(rdev), rustix::fs::minor(rdev));
        }
    }
    Some(BackingChain {
        path: path.to_path_buf(),
        fstype: mount.as_ref().map(|m| m.fstype.clone()),
        mount_source: mount.as_ref().map(|m| m.source.clone()),
        mount_options: mount.map(|m| m.options),
        devices,
    })
}

/// `systemd-detect-virt --vm` or `--container`: `none`, or what it detected.
fn detect_virt(flag: &str) -> Option<String> {
    let tool = tools::find("systemd-detect-virt")?;
    let run = tools::run(&tool, &[flag.to_string()]).ok()?;
    // It exits non-zero and prints `none` when there is none.
    Some(run.output.trim().to_string()).filter(|w| !w.is_empty())
}

/// The hypervisor the machine runs under, or `none`; without systemd-detect-virt, the CPU's
/// `hypervisor` flag says only whether there is one.
fn virtual_machine() -> String {
    detect_virt("--vm").unwrap_or_else(|| {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let hypervisor = cpuinfo
            .lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
        if hypervisor { "virtual" } else { "none" }.to_string()
    })
}

/// Collecting the stack record from the system (sysfs, /proc, systemd-detect-virt).
pub(crate) trait StorageStackExt {
    /// The stack under `target` as the system reports it now.
    fn collect(target: &TargetSpec) -> StorageStack;
}

impl StorageStackExt for StorageStack {
    fn collect(target: &TargetSpec) -> StorageStack {
        let backing = match target {
            TargetSpec::Image { dir, .. } => backing_chain(dir),
            TargetSpec::Device { path, .. } => backing_chain(path),
            TargetSpec::Dir { path } => backing_chain(path),
        };
        let vm = |name: &str| read_number::<u64>(Path::new("/proc/sys/vm").join(name));
        StorageStack {
            kernel_release: rustix::system::uname()
                .release()
                .to_string_lossy()
                .into_owned(),
            backing,
            vm: VmTunables {
                dirty_ratio: vm("dirty_ratio"),
                dirty_background_ratio: vm("dirty_background_ratio"),
                dirty_bytes: vm("dirty_bytes"),
                dirty_background_bytes: vm("dirty_background_bytes"),
                dirty_expire_centisecs: vm("dirty_expire_centisecs"),
                dirty_writeback_centisecs: vm("dirty_writeback_centisecs"),
                swappiness: vm("swappiness"),
            },
            transparent_hugepages: read_trim(Path::new(
                "/sys/kernel/mm/transparent_hugepage/enabled",
            ))
            .map(active_choice),
            cpu_governor: read_trim(Path::new(
                "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            )),
            virtual_machine: virtual_machine(),
            container: detect_virt("--container"),
            free_page_reporting: free_page_reporting(
                Path::new("/sys/module/page_reporting/parameters"),
                Path::new("/sys/bus/virtio/drivers/virtio_balloon"),
            ),
        }
    }
}

/// Collecting a suite's testbed record, and a run's against it.
pub trait SuiteTestbedExt {
    /// The stack under `target` now, with the load average.
    fn collect(target: &TargetSpec) -> SuiteTestbed;
    /// The stack as a run about to start sees it, against the suite's.
    fn run_start(&self, target: &TargetSpec) -> RunTestbed;
}

impl SuiteTestbedExt for SuiteTestbed {
    fn collect(target: &TargetSpec) -> SuiteTestbed {
        let stack = StorageStack::collect(target);
        SuiteTestbed {
            stack_hash: stack.hash(),
            stack,
            load_start: load_average(),
            load_end: None,
            other_fsbench: other_fsbench_processes(),
            baseline: None,
        }
    }

    fn run_start(&self, target: &TargetSpec) -> RunTestbed {
        let now = StorageStack::collect(target);
        RunTestbed {
            stack_hash: now.hash(),
            load_start: load_average(),
            load_end: None,
            changed: self.stack.differences(&now),
            scheduler: None,
            backing_scheduler: None,
            write_cache: None,
            background: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_machine_and_other_fsbench_runs_are_said() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("fsbench");
        std::fs::copy("/bin/sleep", &other).unwrap();
        // Through a shell that stays its parent, so it is no child of this process.
        let mut shell = std::process::Command::new("sh")
            .args(["-c", "\"$0\" 20; true"])
            .arg(&other)
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut testbed = SuiteTestbed::collect(&TargetSpec::Dir { path: "/".into() });
        // Other fsbench runs on the machine may be seen too: this one must be.
        let ours = |pids: &[u32]| {
            pids.iter().any(|pid| {
                std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == other)
            })
        };
        while !ours(&testbed.other_fsbench) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
            testbed.other_fsbench = other_fsbench_processes();
        }
        let found = ours(&testbed.other_fsbench);
        let _ = std::process::Command::new("pkill")
            .args(["-f", &other.to_string_lossy()])
            .status();
        let _ = shell.kill();
        let _ = shell.wait();
        assert!(found, "{:?}", testbed.other_fsbench);
        testbed.load_start = Some([9.5, 1.0, 1.0]);
        testbed.other_fsbench = vec![4242];
        let busy = testbed.busy(2);
        assert_eq!(busy.len(), 2, "{busy:?}");
        assert!(busy[0].contains("load average 9.5 on 2 CPUs"), "{busy:?}");
        assert!(
            busy[1].contains("1 other fsbench process(es) ran when the suite started (PID 4242)"),
            "{busy:?}"
        );
        testbed.load_start = Some([1.5, 1.0, 1.0]);
        testbed.other_fsbench.clear();
        assert!(testbed.busy(2).is_empty());
    }

    #[test]
    fn free_page_reporting_is_recorded_only_when_a_balloon_reports() {
        let dir = tempfile::tempdir().unwrap();
        let (params, balloons) = (dir.path().join("params"), dir.path().join("balloon"));
        let device = balloons.join("virtio0");
        std::fs::create_dir_all(&params).unwrap();
        std::fs::create_dir_all(&device).unwrap();
        std::fs::write(params.join("page_reporting_order"), "9\n").unwrap();
        // The module with no balloon, or a balloon without the feature: nothing is reported.
        assert_eq!(free_page_reporting(&params, &dir.path().join("none")), None);
        std::fs::write(device.join("features"), "0110000000000000\n").unwrap();
        assert_eq!(free_page_reporting(&params, &balloons), None);
        std::fs::write(device.join("features"), "0110010000000000\n").unwrap();
        assert_eq!(
            free_page_reporting(&params, &balloons).as_deref(),
            Some("order 9")
        );
        std::fs::write(params.join("min_free_ms"), "0\n").unwrap();
        assert_eq!(
            free_page_reporting(&params, &balloons).as_deref(),
            Some("order 9, after 0 ms")
        );
    }

    #[test]
    fn the_load_average_is_read() {
        let load = load_average().expect("/proc/loadavg");
        assert!(load.iter().all(|l| *l >= 0.0));
    }
}

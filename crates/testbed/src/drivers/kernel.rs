//! Whether the running kernel has a filesystem, asked before anything is made: a filesystem
//! the kernel lacks would otherwise fail only at mount, after the image and mkfs.

use std::path::Path;
use std::time::Duration;

use super::Driver;
use fsbench_measure::error::FsbenchError;
use fsbench_measure::tools;

/// How long `modprobe` may take to load a module.
const MODPROBE_LIMIT: Duration = Duration::from_secs(10);

/// Refuses `driver` when the kernel has no such filesystem: not in `/proc/filesystems`, and
/// still not there after `modprobe fs-NAME` (the alias mount's own autoload asks for).
pub(super) fn require(driver: &Driver) -> Result<(), FsbenchError> {
    let name = if driver.fuse_daemon.is_some() {
        "fuse"
    } else {
        driver.fs.name()
    };
    if listed_now(name) {
        return Ok(());
    }
    let tried = match tools::find("modprobe") {
        None => "modprobe is not installed (Debian package `kmod`)".to_string(),
        Some(modprobe) => {
            let alias = format!("fs-{name}");
            match tools::run_within(&modprobe, std::slice::from_ref(&alias), MODPROBE_LIMIT) {
                Ok(run) if run.success && listed_now(name) => return Ok(()),
                Ok(run) => format!(
                    "`modprobe {alias}`: {}",
                    run.output
                        .lines()
                        .map(str::trim)
                        .find(|l| !l.is_empty())
                        .unwrap_or("loaded nothing")
                ),
                Err(e) => e.to_string(),
            }
        }
    };
    Err(lacks(driver, &tried))
}

/// The refusal for `driver`, with what loading its module answered.
fn lacks(driver: &Driver, tried: &str) -> FsbenchError {
    FsbenchError::KernelLacks {
        fs: driver
            .fuse_daemon
            .map_or(driver.fs.name(), |_| "fuse")
            .to_string(),
        tried: tried.to_string(),
        option: driver.kernel_option.to_string(),
        package: driver.package.to_string(),
    }
}

fn listed_now(name: &str) -> bool {
    std::fs::read_to_string(Path::new("/proc/filesystems")).is_ok_and(|text| listed(&text, name))
}

/// Whether `/proc/filesystems` text lists `name` (lines are `nodev\tNAME` or `\tNAME`).
fn listed(proc_filesystems: &str, name: &str) -> bool {
    proc_filesystems
        .lines()
        .any(|line| line.split_whitespace().last() == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::FsTypeExt;
    use fsbench_model::filesystem::FsType;

    #[test]
    fn proc_filesystems_lines_are_matched_by_whole_name() {
        let text = "nodev\tsysfs\nnodev\ttmpfs\n\text4\n\txfs\nnodev\tfuse\n\tfuseblk\n";
        assert!(listed(text, "ext4"));
        assert!(listed(text, "tmpfs"));
        assert!(listed(text, "fuse"));
        assert!(!listed(text, "nilfs2"));
        assert!(!listed(text, "ext"));
        assert!(!listed(text, "nodev"));
    }

    #[test]
    fn refusal_names_module_kernel_option_and_package() {
        let msg = lacks(
            FsType::Nilfs2.driver(),
            "`modprobe fs-nilfs2`: modprobe: FATAL: Module fs-nilfs2 not found",
        )
        .to_string();
        for want in [
            "no `nilfs2` filesystem",
            "Module fs-nilfs2 not found",
            "CONFIG_NILFS2_FS",
            "`nilfs-tools`",
        ] {
            assert!(msg.contains(want), "{want} missing from: {msg}");
        }
    }

    #[test]
    fn filesystems_the_kernel_lists_pass() {
        let text = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
        for d in super::super::DRIVERS {
            if listed(&text, d.fs.name()) {
                assert!(require(d).is_ok(), "{}", d.fs);
            }
        }
    }
}

//! Undoing a recording after a kill (`fsbench clean`) or on any exit of the suite: the
//! filesystems mounted from its loop devices, the loop devices on its files, its daemon,
//! its FUSE mount, in that order (each holds the next).

use std::path::Path;

use super::recorder::{RecorderRecord, fuse_dir};
use crate::testbed::{detach, mounts};

/// Undoes what `records` name below `scratch`; what it did and what it left (with why) go
/// to `done` and `left`. A record naming anything but `<scratch>/crash<N>` is refused.
pub fn undo(
    scratch_dir: &Path,
    records: &[RecorderRecord],
    done: &mut Vec<String>,
    left: &mut Vec<String>,
) {
    for record in records {
        if !is_recording_dir(scratch_dir, &record.dir) {
            left.push(format!(
                "{} is not a recording fsbench made; left alone",
                record.dir.display()
            ));
            continue;
        }
        undo_one(scratch_dir, record, done, left);
    }
}

/// `<scratch>/crash<N>`.
fn is_recording_dir(scratch_dir: &Path, dir: &Path) -> bool {
    dir.parent() == Some(scratch_dir)
        && dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("crash"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn undo_one(
    scratch_dir: &Path,
    record: &RecorderRecord,
    done: &mut Vec<String>,
    left: &mut Vec<String>,
) {
    let ours: Vec<_> = detach::loop_devices()
        .into_iter()
        .filter(|(_, backing)| backing.starts_with(&record.dir))
        .collect();
    let rdev = |p: &Path| {
        rustix::fs::stat(p)
            .ok()
            .map(|st| (rustix::fs::major(st.st_rdev), rustix::fs::minor(st.st_rdev)))
    };
    let our_devices: Vec<_> = ours.iter().filter_map(|(d, _)| rdev(d)).collect();
    for target in mounts::mounts_below(scratch_dir) {
        let from_ours = mounts::mount_at(&target)
            .and_then(|m| rdev(Path::new(&m.source)))
            .is_some_and(|dev| our_devices.contains(&dev));
        if from_ours {
            step(detach::unmount(&target), "unmounted", &target, done, left);
        }
    }
    for (device, backing) in &ours {
        let what = format!("{} ({})", device.display(), backing.display());
        step(
            detach::detach_loop(device),
            "detached",
            Path::new(&what),
            done,
            left,
        );
    }
    if let (Some(pid), Some(ticks)) = (record.daemon_pid, record.daemon_start_ticks)
        && fsbench_measure::sysinfo::process_start_ticks(pid) == Some(ticks)
    {
        // SAFETY: kill(2) with a pid this state file recorded and its start time confirmed.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        let start = std::time::Instant::now();
        while fsbench_measure::sysinfo::process_start_ticks(pid) == Some(ticks)
            && start.elapsed() < std::time::Duration::from_secs(5)
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        done.push(format!("stopped crash recorder (pid {pid})"));
    }
    let fuse = fuse_dir(&record.dir);
    if mounts::mount_at(&fuse).is_some_and(|m| m.fstype.starts_with("fuse")) {
        step(detach::unmount(&fuse), "unmounted", &fuse, done, left);
    }
}

fn step(
    result: anyhow::Result<()>,
    verb: &str,
    what: &Path,
    done: &mut Vec<String>,
    left: &mut Vec<String>,
) {
    match result {
        Ok(()) => done.push(format!("{verb} {}", what.display())),
        Err(e) => left.push(format!("{e:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_crash_directories_of_the_scratch_are_recordings() {
        let scratch = Path::new("/b/fsbench.1");
        assert!(is_recording_dir(scratch, Path::new("/b/fsbench.1/crash2")));
        for not in ["/b/fsbench.1/crash", "/b/fsbench.1/run2", "/b/crash2", "/"] {
            assert!(!is_recording_dir(scratch, Path::new(not)), "{not}");
        }
    }
}

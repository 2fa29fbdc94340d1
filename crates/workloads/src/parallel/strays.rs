//! Worker processes that outlived the fsbench that forked them, for `fsbench clean`. None
//! should: each asks the kernel for SIGKILL when its parent dies. A worker is known by what it
//! set itself, its name `fsbw.<pid of its fsbench>`, and must be of the same user, started no
//! earlier than that fsbench, and no longer its child.

use std::time::{Duration, Instant};

use super::fork::NAME_PREFIX;

/// How long a killed worker may take to be gone.
const KILL_PATIENCE: Duration = Duration::from_secs(2);

/// What `/proc/PID/stat` says of a process.
struct Stat {
    comm: String,
    /// Z for a process that ended, waiting to be reaped.
    state: String,
    ppid: u32,
    /// Start time in clock ticks since boot.
    start_ticks: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name sits in parentheses and may hold anything; the fields after it are plain.
    let (open, close) = (text.find('(')?, text.rfind(')')?);
    let fields: Vec<&str> = text.get(close + 2..)?.split_whitespace().collect();
    Some(Stat {
        comm: text.get(open + 1..close)?.to_string(),
        state: fields.first()?.to_string(),
        ppid: fields.get(1)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

/// Kills the worker processes that fsbench pid `owner`, started at `owner_start_ticks`,
/// left running: one line each on what was done, or why it could not be.
pub fn stop(owner: u32, owner_start_ticks: u64) -> Vec<Result<String, String>> {
    use std::os::unix::fs::MetadataExt;
    let name = format!("{NAME_PREFIX}{owner}");
    let me = rustix::process::geteuid().as_raw();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let strays = entries.flatten().filter_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let st = stat(pid)?;
        let ours = e.metadata().is_ok_and(|m| m.uid() == me);
        let running = st.state != "Z";
        let stray = st.start_ticks >= owner_start_ticks && st.ppid != owner;
        (st.comm == name && ours && running && stray).then_some((pid, st.start_ticks))
    });
    strays.map(|(pid, ticks)| kill(pid, ticks, owner)).collect()
}

/// Kills worker `pid` (started at `ticks`) and waits for it to be gone.
fn kill(pid: u32, ticks: u64, owner: u32) -> Result<String, String> {
    let alive = || stat(pid).is_some_and(|st| st.start_ticks == ticks && st.state != "Z");
    if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
    }
    let deadline = Instant::now() + KILL_PATIENCE;
    while alive() {
        if Instant::now() >= deadline {
            return Err(format!(
                "worker process {pid} of fsbench pid {owner} did not die within {} s of SIGKILL",
                KILL_PATIENCE.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(format!(
        "killed worker process {pid} left by fsbench pid {owner}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_named_as_a_worker_of_a_dead_fsbench_is_killed() {
        // A grandchild named as a worker of a made-up owner, orphaned by its parent's exit,
        // as a worker whose fsbench died would be.
        let owner = 4_000_000u32;
        let name = std::ffi::CString::new(format!("{NAME_PREFIX}{owner}")).unwrap();
        let mut fds = [0; 2];
        // SAFETY: a pipe into `fds`; the children only make plain calls and end with _exit.
        let child = unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            libc::fork()
        };
        if child == 0 {
            unsafe {
                if libc::fork() == 0 {
                    libc::prctl(libc::PR_SET_NAME, name.as_ptr());
                    let pid = libc::getpid().to_ne_bytes();
                    libc::write(fds[1], pid.as_ptr().cast(), pid.len());
                    // No pipe of another test's may stay open here for a minute.
                    libc::close_range(3, u32::MAX, 0);
                    libc::sleep(60);
                }
                libc::_exit(0);
            }
        }
        let mut buf = [0u8; 4];
        // SAFETY: reads into `buf` from the pipe made above, then closes it.
        unsafe {
            libc::close(fds[1]);
            assert_eq!(libc::read(fds[0], buf.as_mut_ptr().cast(), 4), 4);
            libc::close(fds[0]);
        }
        let stray = i32::from_ne_bytes(buf) as u32;
        // SAFETY: our child, which exits at once.
        unsafe { libc::waitpid(child, std::ptr::null_mut(), 0) };
        // Another owner's worker is not touched; this one's is killed.
        assert!(stop(owner + 1, 0).is_empty());
        let said = stop(owner, 0);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].as_ref().unwrap().contains(&stray.to_string()));
        // Gone, or ended and waiting for init to reap it.
        assert!(stat(stray).is_none_or(|st| st.state == "Z"));
    }
}

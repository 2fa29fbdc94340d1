//! The job's own thread as fio reports it: its id (fio's `td->pid`) and its resource usage.

use serde::{Deserialize, Serialize};

/// The thread's own resource usage (getrusage of the calling thread).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub(super) struct Usage {
    pub usr_ns: u64,
    pub sys_ns: u64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
}

impl Usage {
    pub(super) fn now() -> Usage {
        // SAFETY: getrusage writes a plain struct; RUSAGE_THREAD is valid on Linux.
        let u = unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_THREAD, &mut u);
            u
        };
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        Usage {
            usr_ns: ns(u.ru_utime),
            sys_ns: ns(u.ru_stime),
            ctx: (u.ru_nvcsw + u.ru_nivcsw) as u64,
            majf: u.ru_majflt as u64,
            minf: u.ru_minflt as u64,
        }
    }
}

/// The calling thread's id (a worker process's only thread has its pid).
pub(super) fn thread_id() -> u32 {
    // SAFETY: gettid has no effect but its answer.
    unsafe { libc::gettid() as u32 }
}

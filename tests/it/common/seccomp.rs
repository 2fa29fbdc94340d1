//! A seccomp filter set in a child before it runs its program: the calls named fail with an
//! errno, as a container runtime's filter makes them fail, or a kernel older than the calls.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// `seccomp`'s return value that lets a call through.
const ALLOW: u32 = 0x7fff_0000;
/// `seccomp`'s return value that fails a call with the errno in its low bits.
const ERRNO: u32 = 0x0005_0000;
/// The first call number Linux 6.1 (Debian 12's kernel) lacks: cachestat, 6.5.
pub const NEWER_THAN_6_1: u32 = 451;

fn op(code: u16, jt: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf: 0, k }
}

/// Makes each of `calls` (this architecture's numbers) fail with `errno` in `cmd`'s process
/// and every process it starts.
pub fn refuse_calls(cmd: &mut Command, calls: &[u32], errno: i32) {
    // ld [nr]; one jeq per call, jumping to the last instruction; allow; fail.
    let mut filter = vec![op(0x20, 0, 0)];
    for (i, &nr) in calls.iter().enumerate() {
        filter.push(op(0x15, (calls.len() - i) as u8, nr));
    }
    filter.extend([op(0x06, 0, ALLOW), op(0x06, 0, ERRNO | errno as u32)]);
    install(cmd, filter);
}

/// Makes every call numbered `first` or more fail with ENOSYS, as on a kernel whose table
/// ends before `first` (e.g. [`NEWER_THAN_6_1`]).
pub fn refuse_calls_from(cmd: &mut Command, first: u32) {
    // ld [nr]; jge first, to the last instruction; allow; fail.
    let filter = vec![
        op(0x20, 0, 0),
        op(0x35, 1, first),
        op(0x06, 0, ALLOW),
        op(0x06, 0, ERRNO | libc::ENOSYS as u32),
    ];
    install(cmd, filter);
}

fn install(cmd: &mut Command, filter: Vec<libc::sock_filter>) {
    let set = move || {
        let prog = libc::sock_fprog {
            len: filter.len() as u16,
            filter: filter.as_ptr().cast_mut(),
        };
        // SAFETY: two prctl calls, async-signal-safe, in the child before exec; the
        // program outlives them.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: the closure allocates nothing and makes only async-signal-safe calls.
    unsafe { cmd.pre_exec(set) };
}

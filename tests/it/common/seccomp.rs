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

/// Whether the filters' call numbers are this machine's (x86-64's); where not, `test` says
/// SKIPPED.
pub fn knows_this_arch(test: &str) -> bool {
    let knows = cfg!(target_arch = "x86_64");
    if !knows {
        super::skip(&format!(
            "{test}: the seccomp filter knows x86_64's syscall numbers only"
        ));
    }
    knows
}

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

/// `fsbench run ARGS` (JSON out) as on Linux 6.1, every later call failing with ENOSYS: it
/// must succeed; its document.
pub fn run_on_6_1(state: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut cmd = super::json_run(state);
    cmd.args(args);
    refuse_calls_from(&mut cmd, NEWER_THAN_6_1);
    let out = super::run(&mut cmd);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        super::text(&out.stderr)
    );
    super::json(&out)
}

/// `trace` replayed once into a fresh directory as on Linux 6.1, with every call coming out
/// as captured (none refused as outside, none otherwise, the tree as the program left it):
/// the replay phase.
pub fn replayed_on_6_1(trace: &std::path::Path) -> serde_json::Value {
    let (state, dir) = (super::tempdir(), super::tempdir());
    let replay = format!("replay:trace={}", trace.display());
    let dir = dir.path().to_str().unwrap();
    let doc = run_on_6_1(state.path(), &["--runs", "1", "--dir", dir, "-w", &replay]);
    let phase = doc["runs"][0]["phases"][0].clone();
    let notes = phase["notes"].as_array().unwrap();
    for wrong in [
        "outside the run's directory",
        "came out otherwise",
        "tree differs",
    ] {
        assert!(
            !notes.iter().any(|n| n.as_str().unwrap().contains(wrong)),
            "{wrong}: {notes:?}"
        );
    }
    phase
}

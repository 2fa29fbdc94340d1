//! Traces written by hand for the replay's tests — valid ones with chosen calls, hostile
//! ones (a line of gigabytes that compresses to kilobytes) — and what the tests look at:
//! fsbench run within the memory bound, and everything about the files outside a run.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::*;

/// A trace's text: its initial state, then calls (tab-separated fields as documented, from
/// KIND on), each with its thread and start.
pub struct TraceText {
    text: String,
    calls: usize,
}

impl TraceText {
    /// A version-1 trace with `entries` as its initial state (`d\tPATH`, `f\tPATH\tSIZE`...).
    pub fn new(entries: &[&str]) -> TraceText {
        TraceText::of_version(1, entries)
    }

    pub fn of_version(version: u32, entries: &[&str]) -> TraceText {
        TraceText::with_header(
            format!("fsbench-trace {version}\nroot\t/nowhere\n"),
            entries,
        )
    }

    /// A version-3 trace of a program that took `own_us` on its own (as bpf records it).
    pub fn of_program(own_us: u64, entries: &[&str]) -> TraceText {
        let program = format!("program\t{own_us}\t{own_us}\t0\t0\t22\t0\tbpf");
        TraceText::with_header(
            format!("fsbench-trace 3\nroot\t/nowhere\n{program}\n"),
            entries,
        )
    }

    fn with_header(mut text: String, entries: &[&str]) -> TraceText {
        for e in entries {
            text.push_str(e);
            text.push('\n');
        }
        text.push_str("calls\n");
        TraceText { text, calls: 0 }
    }

    /// One call of thread `tid` that starts at `start_us` and lasts 1 µs.
    pub fn call(&mut self, tid: u32, start_us: u64, call: &str) -> &mut TraceText {
        self.text
            .push_str(&format!("{tid}\t{start_us}\t1\t{call}\n"));
        self.calls += 1;
        self
    }

    /// Thread `tid` is of process `pid` (version 3 on; a thread without is its own process).
    pub fn task(&mut self, tid: u32, pid: u32) -> &mut TraceText {
        self.text.push_str(&format!("task\t{tid}\t{pid}\n"));
        self
    }

    /// The trace, compressed as `fsbench capture` writes it, into `path`.
    pub fn write(&self, path: &Path) {
        let text = format!("{}end\t{}\t0\n", self.text, self.calls);
        let file = std::fs::File::create(path).unwrap();
        let mut z = zstd::Encoder::new(file, 3).unwrap();
        z.write_all(text.as_bytes()).unwrap();
        z.finish().unwrap();
    }
}

/// A trace written by hand: `entries` then `calls`, each call `TID:` before it for its
/// thread (1 by default), starting at its index in µs.
pub fn hand_trace(path: &Path, version: u32, entries: &[&str], calls: &[&str]) {
    let mut t = TraceText::of_version(version, entries);
    for (i, c) in calls.iter().enumerate() {
        let (tid, c) = c.split_once(':').unwrap_or(("1", c));
        t.call(tid.parse().unwrap(), i as u64, c);
    }
    t.write(path);
}

/// A zstd stream of `head` then `repeats` × 128 KiB of `byte`, in RLE blocks of 4 bytes
/// each: a 2 GiB line costs 64 KiB of file.
pub fn rle_trace(path: &Path, head: &str, byte: u8, repeats: u32) {
    const BLOCK: u32 = 128 << 10;
    let mut out = zstd::encode_all(head.as_bytes(), 3).unwrap();
    // A frame: magic, a header with no content size and a 128 KiB window, then blocks.
    out.extend_from_slice(&[0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3]);
    for i in 0..repeats {
        let last = u32::from(i + 1 == repeats);
        // Block header: last-block bit, type 1 (RLE), the number of repeats.
        let header = last | (1 << 1) | (BLOCK << 3);
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.push(byte);
    }
    std::fs::write(path, out).unwrap();
}

/// The memory a replay stays under, whatever the trace (see the replay's documentation).
pub const MEMORY: u64 = 256 << 20;

/// Runs `cmd` within the bound: its address space limited to [`MEMORY`], and its peak
/// resident memory asserted under it. glibc reserves 64 MiB of address space for each
/// thread's malloc arena, which it barely touches: two arenas, so that the limit measures
/// memory, not reservations.
pub fn bounded(cmd: &mut Command) -> Output {
    let (out, peak) = within_bound(cmd);
    assert!(peak < MEMORY, "{peak} bytes resident at the peak");
    out
}

/// Runs `cmd` as [`bounded`] does: its output and its peak resident bytes.
///
/// The peak is the program's own (`VmHWM` of its memory, read while it runs), not the
/// child's `ru_maxrss`: a child forked from this test process starts with the test
/// process's resident size, which the kernel keeps in `ru_maxrss` across the exec (seen:
/// 125 MiB reported for a 30 MiB fsbench while other tests held large buffers).
pub fn within_bound(cmd: &mut Command) -> (Output, u64) {
    with_peak(limited(cmd).env("MALLOC_ARENA_MAX", "2"))
}

/// Runs `cmd` (stdout and stderr drained, within the tests' time limit): its output and its
/// own peak resident bytes, as [`within_bound`] reads them.
pub fn with_peak(cmd: &mut Command) -> (Output, u64) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let watcher = {
        let peak = peak.clone();
        // Reads until the process's memory is gone (exited: a zombie has no VmHWM).
        std::thread::spawn(move || {
            while let Some(kib) = std::fs::read_to_string(&status).ok().and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            }) {
                peak.fetch_max(kib * 1024, std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    let (out, _) = wait_drained_with_usage(child, limit());
    watcher.join().unwrap();
    (out, peak.load(std::sync::atomic::Ordering::Relaxed))
}

/// `cmd` limited to [`MEMORY`] of address space.
pub fn limited(cmd: &mut Command) -> &mut Command {
    // SAFETY: setrlimit is async-signal-safe and touches no memory of this process.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: MEMORY,
                rlim_max: MEMORY,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// Asserts fsbench ended by itself with exit `code`: no signal, no abort, no panic.
pub fn ended(out: &Output, code: i32) -> String {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    for sign in ["panicked", "memory allocation", "RUST_BACKTRACE"] {
        assert!(!err.contains(sign), "{err}");
    }
    err
}

/// What a change to a file, directory or symlink would show.
#[derive(Debug, PartialEq, Eq)]
pub struct Seen {
    mode: u32,
    owner: (u32, u32),
    size: u64,
    links: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    content: Vec<u8>,
    xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// Everything below `root`, by path, never following a symlink.
pub fn seen(root: &Path) -> BTreeMap<String, Seen> {
    let mut all = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let m = std::fs::symlink_metadata(&path).unwrap();
        let content = if m.is_file() {
            std::fs::read(&path).unwrap()
        } else if m.is_symlink() {
            std::fs::read_link(&path)
                .unwrap()
                .into_os_string()
                .into_encoded_bytes()
        } else {
            for e in std::fs::read_dir(&path).unwrap() {
                stack.push(e.unwrap().path());
            }
            Vec::new()
        };
        let mut xattrs = BTreeMap::new();
        let mut names = vec![0u8; 4096];
        let n = rustix::fs::llistxattr(&path, &mut names[..]).unwrap_or(0);
        for name in names[..n].split(|&b| b == 0).filter(|n| !n.is_empty()) {
            let mut value = vec![0u8; 4096];
            let v = rustix::fs::lgetxattr(&path, name, &mut value[..]).unwrap();
            xattrs.insert(name.to_vec(), value[..v].to_vec());
        }
        let seen = Seen {
            mode: m.mode(),
            owner: (m.uid(), m.gid()),
            size: m.size(),
            links: m.nlink(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            content,
            xattrs,
        };
        all.insert(path.display().to_string(), seen);
    }
    all
}

//! Traces written by hand for the replay's tests: valid ones with chosen calls, and hostile
//! ones (a line of gigabytes that compresses to kilobytes).

use std::io::Write;
use std::path::Path;

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
        let mut text = format!("fsbench-trace {version}\nroot\t/nowhere\n");
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

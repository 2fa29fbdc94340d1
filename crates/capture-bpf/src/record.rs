//! The records file the loader writes: each ring-buffer record, its length first, as the
//! BPF program laid it out (`struct record` of `capture.bpf.c`, then its strings).

use std::io::Read;

use super::syscalls;
use fsbench_model::syscall::SyscallRecord;

/// `struct record`'s size, and where its fields are.
const HEADER: usize = 128;
const FORK_NR: u32 = u32::MAX;
/// `record.flags`.
const REC_DATA: u32 = 1;
const REC_PATH1_UNREAD: u32 = 2;
const REC_PATH2_UNREAD: u32 = 4;
const REC_DATA_UNREAD: u32 = 8;
const REC_PATH1: u32 = 16;
const REC_PATH2: u32 = 32;
const REC_ENTER: u32 = 64;
const REC_VALUE: u32 = 128;
/// The longest attribute value the BPF program reads (`VALUE_MAX`).
const VALUE_MAX: usize = 16 << 10;

/// A record longer than any the BPF program makes is a damaged file.
const RECORD_MAX: usize = HEADER + 2 * 4096 + VALUE_MAX;

/// What the records file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<'a> {
    Syscall(SyscallRecord<'a>),
    /// Task `parent` forked task `child` with the clone flags `flags` (before the child ran).
    Fork {
        at_ns: u64,
        parent: u32,
        child: u32,
        flags: u64,
    },
    /// Task `tid` is closing descriptor `fd`: said at close's entry, before another
    /// thread's open can be given the same number.
    Closing {
        tid: u32,
        fd: i32,
    },
    /// A call number fsbench does not know (a damaged file or another build's).
    Unknown(u32),
}

/// Reads the records one at a time into a buffer it reuses.
pub struct Records<R> {
    input: R,
    buf: Vec<u8>,
    names: Vec<Option<&'static str>>,
}

impl<R: Read> Records<R> {
    pub(crate) fn new(input: R) -> Records<R> {
        let mut names = vec![None; 512];
        for call in syscalls::table() {
            names[call.nr as usize] = syscalls::name_of(call.nr as u32);
        }
        Records {
            input,
            buf: Vec::with_capacity(RECORD_MAX),
            names,
        }
    }

    /// The next record; `None` at the end of the file.
    pub fn next_event(&mut self) -> std::io::Result<Option<Event<'_>>> {
        let mut len = [0u8; 4];
        match self.input.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let len = u32::from_le_bytes(len) as usize;
        if !(HEADER..=RECORD_MAX).contains(&len) {
            return Err(damaged(&format!("a record of {len} bytes")));
        }
        self.buf.resize(len, 0);
        self.input.read_exact(&mut self.buf)?;
        parse(&self.buf, &self.names).map(Some)
    }
}

fn damaged(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("the bpf tracer's records are damaged: {what}"),
    )
}

fn parse<'a>(b: &'a [u8], names: &[Option<&'static str>]) -> std::io::Result<Event<'a>> {
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    let u16_at = |at: usize| u16::from_le_bytes([b[at], b[at + 1]]) as usize;
    let (start_ns, end_ns, tid, pid, nr) =
        (u64_at(0), u64_at(8), u32_at(16), u32_at(20), u32_at(24));
    let ret = u64_at(32) as i64;
    let args: [u64; 6] = std::array::from_fn(|i| u64_at(40 + 8 * i));
    if nr == FORK_NR {
        return Ok(Event::Fork {
            at_ns: start_ns,
            parent: tid,
            child: ret as u32,
            flags: args[0],
        });
    }
    let Some(name) = names.get(nr as usize).copied().flatten() else {
        return Ok(Event::Unknown(nr));
    };
    let flags = u32_at(112);
    if flags & REC_ENTER != 0 {
        return Ok(Event::Closing {
            tid,
            fd: args[0] as i32,
        });
    }
    let (len1, len2, len3) = (u16_at(28), u16_at(30), u16_at(118));
    let end = HEADER + len1 + len2;
    if end + len3 > b.len() {
        return Err(damaged("strings past the record's end"));
    }
    let path1 = &b[HEADER..HEADER + len1];
    let path2 = &b[HEADER + len1..end];
    let path = |read: u32, unread: u32, arg: u8, s: &'a [u8]| {
        if flags & read != 0 {
            Some((arg as usize, Some(s)))
        } else if flags & unread != 0 {
            Some((arg as usize, None))
        } else {
            None
        }
    };
    Ok(Event::Syscall(SyscallRecord {
        start_ns,
        end_ns,
        tid,
        pid,
        name,
        args,
        ret,
        paths: [
            path(REC_PATH1, REC_PATH1_UNREAD, b[116], path1),
            path(REC_PATH2, REC_PATH2_UNREAD, b[117], path2),
        ],
        data: (flags & REC_DATA != 0).then(|| std::array::from_fn(|i| u64_at(88 + 8 * i))),
        data_unread: flags & REC_DATA_UNREAD != 0,
        value: (flags & REC_VALUE != 0).then(|| &b[end..end + len3]),
        cost_ns: u64_at(120),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record as the BPF program lays it out.
    fn record(nr: u32, ret: i64, flags: u32, paths: (&[u8], &[u8])) -> Vec<u8> {
        let mut b = vec![0u8; HEADER];
        b[0..8].copy_from_slice(&1000u64.to_le_bytes());
        b[8..16].copy_from_slice(&3000u64.to_le_bytes());
        b[16..20].copy_from_slice(&7u32.to_le_bytes());
        b[20..24].copy_from_slice(&5u32.to_le_bytes());
        b[24..28].copy_from_slice(&nr.to_le_bytes());
        b[28..30].copy_from_slice(&(paths.0.len() as u16).to_le_bytes());
        b[30..32].copy_from_slice(&(paths.1.len() as u16).to_le_bytes());
        b[32..40].copy_from_slice(&ret.to_le_bytes());
        b[40..48].copy_from_slice(&(-100i64).to_le_bytes());
        b[112..116].copy_from_slice(&flags.to_le_bytes());
        b[116] = 1;
        b[117] = 3;
        b.extend_from_slice(paths.0);
        b.extend_from_slice(paths.1);
        let mut framed = (b.len() as u32).to_le_bytes().to_vec();
        framed.extend_from_slice(&b);
        framed
    }

    #[test]
    fn records_are_read_with_their_strings_and_what_could_not_be_read() {
        if syscalls::table().is_empty() {
            return;
        }
        let nr = |name: &str| {
            let c = syscalls::table().iter().find(|c| c.name == name).unwrap();
            c.nr as u32
        };
        let mut file = record(
            nr("SYS_renameat2"),
            0,
            REC_PATH1 | REC_PATH2,
            (b"a b\n", b"\xffc"),
        );
        file.extend(record(nr("SYS_openat"), -2, REC_PATH1_UNREAD, (b"", b"")));
        file.extend(record(FORK_NR, 9, 0, (b"", b"")));
        let mut records = Records::new(std::io::Cursor::new(file));
        let Some(Event::Syscall(r)) = records.next_event().unwrap() else {
            panic!("not a call")
        };
        assert_eq!((r.name, r.tid, r.pid, r.ret), ("renameat2", 7, 5, 0));
        assert_eq!(r.args[0] as i64, -100);
        assert_eq!(
            r.paths,
            [
                Some((1, Some(&b"a b\n"[..]))),
                Some((3, Some(&b"\xffc"[..])))
            ]
        );
        let Some(Event::Syscall(r)) = records.next_event().unwrap() else {
            panic!("not a call")
        };
        assert_eq!((r.name, r.ret, r.paths[0]), ("openat", -2, Some((1, None))));
        assert_eq!(r.paths[1], None);
        assert!(matches!(
            records.next_event().unwrap(),
            Some(Event::Fork {
                parent: 7,
                child: 9,
                ..
            })
        ));
        assert!(records.next_event().unwrap().is_none());
    }

    /// A setxattr's value follows its strings; one said past the record's end is damage.
    #[test]
    fn a_value_is_read_after_the_strings() {
        if syscalls::table().is_empty() {
            return;
        }
        let nr = (syscalls::table().iter())
            .find(|c| c.name == "SYS_setxattr")
            .unwrap()
            .nr as u32;
        let name = b"system.posix_acl_access";
        let mut file = record(nr, 0, REC_PATH1 | REC_PATH2 | REC_VALUE, (b"f", name));
        file[4 + 118..4 + 120].copy_from_slice(&3u16.to_le_bytes());
        file.extend_from_slice(&[2, 0, 7]);
        let len = (file.len() - 4) as u32;
        file[..4].copy_from_slice(&len.to_le_bytes());
        let mut records = Records::new(std::io::Cursor::new(file.clone()));
        let Some(Event::Syscall(r)) = records.next_event().unwrap() else {
            panic!("not a call")
        };
        assert_eq!((r.name, r.value), ("setxattr", Some(&[2u8, 0, 7][..])));
        file[4 + 118..4 + 120].copy_from_slice(&4u16.to_le_bytes());
        let mut records = Records::new(std::io::Cursor::new(file));
        assert!(records.next_event().is_err());
    }

    #[test]
    fn a_cut_or_oversized_record_is_an_error() {
        let over = RECORD_MAX + 1;
        let mut file = (over as u32).to_le_bytes().to_vec();
        file.extend(vec![0u8; over]);
        let mut records = Records::new(std::io::Cursor::new(file));
        assert!(records.next_event().is_err());
        let mut file = record(0, 0, 0, (b"", b""));
        file.truncate(50);
        let mut records = Records::new(std::io::Cursor::new(file));
        assert!(records.next_event().is_err());
    }
}

//! A streaming tar reader: ustar and GNU headers, GNU long names (`L`, `K`) and PAX `path` /
//! `linkpath` records. It reuses its buffers for every member, so reading allocates nothing per
//! entry (the `tar` crate zeroed a buffer per member, which showed in profiles next to
//! `tar -xf`); the `tar` crate still writes archives.

use std::io::{self, Read};

use super::{Entry, EntryKind};
use fsbench_measure::units::shown;

const BLOCK: usize = 512;

/// Reads members one after another from a tar stream.
pub struct TarReader<R: Read> {
    inner: R,
    header: [u8; BLOCK],
    name: Vec<u8>,
    link: Vec<u8>,
    /// Long name / link from a GNU or PAX extension member, for the next member
    /// (buffers reused; the flags say whether they are set).
    long_name: Vec<u8>,
    long_link: Vec<u8>,
    has_long_name: bool,
    has_long_link: bool,
    /// Data of the current member not yet read, and the padding after it.
    remaining: u64,
    padding: u64,
    /// Bytes of the archive consumed so far, for saying where it ended or went wrong.
    offset: u64,
    /// A PAX header announced a GNU sparse member (formats 0.x and 1.0) for the next one.
    pax_sparse: bool,
}

/// A member's data: the stream, limited to the member's size; the stream ending early is an
/// error that names the member and where the archive ended, not a short read.
struct MemberData<'r, R: Read> {
    inner: &'r mut R,
    left: u64,
    name: &'r [u8],
    offset: &'r mut u64,
}

impl<R: Read> Read for MemberData<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "archive ends inside member {} at byte {}",
                    shown(self.name),
                    self.offset
                ),
            ));
        }
        self.left -= n as u64;
        *self.offset += n as u64;
        Ok(n)
    }
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// A NUL-terminated header field.
/// What a member is, by its type flag (`pax_sparse`: a PAX header said it is sparse).
fn entry_kind(typeflag: u8, pax_sparse: bool, name: &[u8]) -> EntryKind {
    let kind = match typeflag {
        _ if pax_sparse => EntryKind::Other("GNU sparse file (PAX format), not supported"),
        b'0' | 0 | b'7' => EntryKind::File,
        b'1' => EntryKind::HardLink,
        b'2' => EntryKind::Symlink,
        b'5' | b'D' => EntryKind::Dir,
        b'6' => EntryKind::Fifo,
        b'3' => EntryKind::Other("character device, not extracted"),
        b'4' => EntryKind::Other("block device, not extracted"),
        b'S' => EntryKind::Other("GNU sparse file (old GNU format), not supported"),
        b'M' => EntryKind::Other("multi-volume continuation, not supported"),
        _ => EntryKind::Other("unknown member type"),
    };
    // Old tars mark directories with a trailing slash on a regular file.
    match kind {
        EntryKind::File if name.ends_with(b"/") => EntryKind::Dir,
        kind => kind,
    }
}

fn field(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len())]
}

/// An octal number field, or GNU's base-256 for large values (a negative one, or one beyond
/// 64 bits, is an error: no size or checksum is negative).
fn number(bytes: &[u8]) -> io::Result<u64> {
    if bytes[0] & 0x80 != 0 {
        if bytes[0] & 0x40 != 0 {
            return Err(bad("negative base-256 number in a tar header"));
        }
        let mut digits = std::iter::once(bytes[0] & 0x3f).chain(bytes[1..].iter().copied());
        return digits.try_fold(0u64, |n, b| {
            n.checked_mul(256)
                .map(|n| n | u64::from(b))
                .ok_or_else(|| bad("base-256 number in a tar header beyond 64 bits"))
        });
    }
    let text = field(bytes);
    let digits: Vec<u8> = text.iter().copied().filter(|b| *b != b' ').collect();
    if digits.is_empty() {
        return Ok(0);
    }
    u64::from_str_radix(
        std::str::from_utf8(&digits).map_err(|_| bad("bad number"))?,
        8,
    )
    .map_err(|_| {
        bad(format!(
            "bad octal number {:?}",
            String::from_utf8_lossy(text)
        ))
    })
}

impl<R: Read> TarReader<R> {
    pub fn new(inner: R) -> TarReader<R> {
        TarReader {
            inner,
            header: [0; BLOCK],
            name: Vec::with_capacity(256),
            link: Vec::with_capacity(256),
            long_name: Vec::new(),
            long_link: Vec::new(),
            has_long_name: false,
            has_long_link: false,
            remaining: 0,
            padding: 0,
            offset: 0,
            pax_sparse: false,
        }
    }

    /// Reads exactly `buf`, or says which member the archive ended inside and where.
    fn read_exact_in(&mut self, buf: &mut [u8], inside: &str) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.inner.read(&mut buf[done..]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "archive ends inside {inside} at byte {}",
                            self.offset + done as u64
                        ),
                    ));
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.offset += done as u64;
        Ok(())
    }

    /// Skips `n` bytes of the current member (`self.name`).
    fn skip(&mut self, mut n: u64) -> io::Result<()> {
        let mut sink = [0u8; 4096];
        while n > 0 {
            let k = (n as usize).min(sink.len());
            let inside = format!("member {}", shown(&self.name));
            self.read_exact_in(&mut sink[..k], &inside)?;
            n -= k as u64;
        }
        Ok(())
    }

    /// Reads the rest of the current member's data into `into` (extension members).
    fn read_data(&mut self, into: &mut Vec<u8>) -> io::Result<()> {
        if self.remaining > 1 << 20 {
            return Err(bad("tar extension header larger than 1 MiB"));
        }
        into.resize(self.remaining as usize, 0);
        self.read_exact_in(into, "an extension header")?;
        self.remaining = 0;
        Ok(())
    }

    /// Reads the next header block; false at the end of the stream (between members).
    fn read_header(&mut self) -> io::Result<bool> {
        let mut done = 0;
        while done < BLOCK {
            match self.inner.read(&mut self.header[done..]) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        match done {
            0 if self.offset == 0 => Err(bad("the archive is empty: not a tar archive")),
            // GNU tar also accepts an archive that lacks its two zero blocks.
            0 => Ok(false),
            BLOCK => {
                self.offset += BLOCK as u64;
                Ok(true)
            }
            n if self.offset == 0 => Err(bad(format!(
                "does not look like a tar archive: {n} bytes, less than one header"
            ))),
            n => Err(bad(format!(
                "archive ends inside a header at byte {}",
                self.offset + n as u64
            ))),
        }
    }

    /// Advances to the next member and calls `visit` with it and a reader of its data;
    /// returns false at the end of the archive.
    pub fn next(
        &mut self,
        visit: &mut dyn FnMut(&Entry<'_>, &mut dyn Read) -> io::Result<()>,
    ) -> io::Result<bool> {
        loop {
            // Whatever the previous member left unread, and its padding (no overflow: the
            // size check in `member_size` bounds both).
            let leftover = self.remaining + self.padding;
            self.remaining = 0;
            self.padding = 0;
            self.skip(leftover)?;
            if !self.read_header()? || self.header.iter().all(|&b| b == 0) {
                return Ok(false);
            }
            self.check_sum()?;
            let size = self.member_size()?;
            let typeflag = self.header[156];
            if self.read_extension(typeflag)? {
                continue;
            }
            // Old GNU sparse members may be followed by extension blocks of their sparse map,
            // which the size field does not count.
            if typeflag == b'S' && self.header[482] != 0 {
                let mut block = [0u8; BLOCK];
                loop {
                    self.read_exact_in(&mut block, "a sparse map")?;
                    if block[504] == 0 {
                        break;
                    }
                }
            }
            self.take_names();
            let pax_sparse = std::mem::take(&mut self.pax_sparse);
            let kind = entry_kind(typeflag, pax_sparse, &self.name);
            let data_size = if kind == EntryKind::File { size } else { 0 };
            let entry = Entry {
                path: &self.name,
                kind,
                size: data_size,
                link: &self.link,
            };
            let mut data = MemberData {
                inner: &mut self.inner,
                left: data_size,
                name: &self.name,
                offset: &mut self.offset,
            };
            visit(&entry, &mut data)?;
            let unread = data.left;
            self.remaining = unread + (size - data_size);
            return Ok(true);
        }
    }

    /// The header's checksum against the one it stores (an unreadable one is as wrong).
    fn check_sum(&self) -> io::Result<()> {
        let stored = number(&self.header[148..156]).ok();
        let sum: u64 = (self.header.iter().enumerate())
            .map(|(i, &b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    b as u64
                }
            })
            .sum();
        if stored == Some(sum) {
            return Ok(());
        }
        Err(bad(if self.offset == BLOCK as u64 {
            "does not look like a tar archive (its first header's checksum is wrong)".to_string()
        } else {
            format!(
                "damaged tar header at byte {} (checksum mismatch)",
                self.offset - BLOCK as u64
            )
        }))
    }

    /// The member's size, its data and padding then left to read.
    fn member_size(&mut self) -> io::Result<u64> {
        let size = number(&self.header[124..136])?;
        // A size that wraps when rounded up to whole blocks would make the next data block
        // read as a header (a member smuggled past the one that named it); GNU tar stops with
        // an error there too. With this check, `remaining + padding` never exceeds
        // `size + padding`.
        let padded = size.checked_next_multiple_of(BLOCK as u64).ok_or_else(|| {
            bad(format!(
                "tar header at byte {} gives a member size of {size} bytes, more than any archive holds",
                self.offset - BLOCK as u64
            ))
        })?;
        self.remaining = size;
        self.padding = padded - size;
        Ok(size)
    }

    /// A header that describes the next member rather than being one (GNU long names and
    /// links, PAX records, global headers and volume labels): read; true if it was one.
    fn read_extension(&mut self, typeflag: u8) -> io::Result<bool> {
        match typeflag {
            b'L' | b'K' => {
                let long = typeflag == b'L';
                let mut data = std::mem::take(if long {
                    &mut self.long_name
                } else {
                    &mut self.long_link
                });
                self.read_data(&mut data)?;
                data.truncate(field(&data).len());
                if long {
                    (self.long_name, self.has_long_name) = (data, true);
                } else {
                    (self.long_link, self.has_long_link) = (data, true);
                }
            }
            b'x' => {
                // PAX records are rare; they may allocate.
                let mut data = Vec::new();
                self.read_data(&mut data)?;
                self.pax(&data)?;
            }
            b'g' | b'V' => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The member's name and link target: a long one read before it, or the header's (a
    /// ustar name is split into a prefix and a name).
    fn take_names(&mut self) {
        self.name.clear();
        if std::mem::take(&mut self.has_long_name) {
            self.name.extend_from_slice(&self.long_name);
        } else {
            let ustar = &self.header[257..263] == b"ustar\0";
            let prefix = field(&self.header[345..500]);
            if ustar && !prefix.is_empty() {
                self.name.extend_from_slice(prefix);
                self.name.push(b'/');
            }
            self.name.extend_from_slice(field(&self.header[0..100]));
        }
        self.link.clear();
        if std::mem::take(&mut self.has_long_link) {
            self.link.extend_from_slice(&self.long_link);
        } else {
            self.link.extend_from_slice(field(&self.header[157..257]));
        }
    }

    /// PAX extended header records: `<length> <key>=<value>\n`.
    fn pax(&mut self, data: &[u8]) -> io::Result<()> {
        let mut rest = data;
        while !rest.is_empty() {
            let space = rest
                .iter()
                .position(|&b| b == b' ')
                .ok_or_else(|| bad("bad PAX record"))?;
            let len: usize = std::str::from_utf8(&rest[..space])
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad("bad PAX record length"))?;
            // A record holds at least its length, a space and its closing newline.
            if len < space + 2 || len > rest.len() || rest[len - 1] != b'\n' {
                return Err(bad("bad PAX record length"));
            }
            let record = &rest[space + 1..len - 1];
            if let Some(eq) = record.iter().position(|&b| b == b'=') {
                let (key, value) = (&record[..eq], &record[eq + 1..]);
                if key.starts_with(b"GNU.sparse.") {
                    self.pax_sparse = true;
                }
                let (buf, flag) = match key {
                    b"path" => (&mut self.long_name, &mut self.has_long_name),
                    b"linkpath" => (&mut self.long_link, &mut self.has_long_link),
                    _ => {
                        rest = &rest[len..];
                        continue;
                    }
                };
                buf.clear();
                buf.extend_from_slice(value);
                *flag = true;
            }
            rest = &rest[len..];
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(bytes: &[u8]) -> Vec<(String, EntryKind, Vec<u8>, String)> {
        let mut r = TarReader::new(bytes);
        let mut out = Vec::new();
        while r
            .next(&mut |e, data| {
                let mut content = Vec::new();
                data.read_to_end(&mut content)?;
                out.push((
                    String::from_utf8_lossy(e.path).into_owned(),
                    e.kind,
                    content,
                    String::from_utf8_lossy(e.link).into_owned(),
                ));
                Ok(())
            })
            .unwrap()
        {}
        out
    }

    #[test]
    fn reads_what_the_tar_crate_writes() {
        let long = format!("{}/file", "d".repeat(150));
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_size(5);
        h.set_mode(0o644);
        b.append_data(&mut h, "a.txt", &b"hello"[..]).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(3);
        b.append_data(&mut h, &long, &b"abc"[..]).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Link);
        h.set_size(0);
        b.append_link(&mut h, "hard", &long).unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_size(0);
        b.append_data(&mut h, "dir/", io::empty()).unwrap();
        let entries = read_all(&b.into_inner().unwrap());
        assert_eq!(entries.len(), 4);
        assert_eq!(
            entries[0],
            (
                "a.txt".into(),
                EntryKind::File,
                b"hello".to_vec(),
                "".into()
            )
        );
        assert_eq!(entries[1].0, long);
        assert_eq!(entries[1].2, b"abc");
        assert_eq!(
            (entries[2].1, entries[2].3.as_str()),
            (EntryKind::HardLink, long.as_str())
        );
        assert_eq!(
            (entries[3].0.as_str(), entries[3].1),
            ("dir/", EntryKind::Dir)
        );
    }

    #[test]
    fn pax_paths_and_damaged_headers() {
        let mut r = TarReader::new(&[][..]);
        r.pax(b"29 path=some/long/pax/path.x\n").unwrap();
        assert!(r.has_long_name);
        assert_eq!(r.long_name, b"some/long/pax/path.x");
        assert!(r.pax(b"99 path=x\n").is_err());
        let mut junk = vec![7u8; 1024];
        junk[0] = b'x';
        assert!(TarReader::new(&junk[..]).next(&mut |_, _| Ok(())).is_err());
        assert_eq!(number(b"0000644\0").unwrap(), 0o644);
        assert_eq!(
            number(&[0x80, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]).unwrap(),
            1 << 32
        );
    }
}

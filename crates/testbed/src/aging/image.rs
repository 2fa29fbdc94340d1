//! Template images: a prepared filesystem's image, kept once per configuration, copied for
//! every run — a reflink (FICLONE) where the filesystem holding the images can share blocks,
//! else a sparse copy of its data ranges (SEEK_DATA / SEEK_HOLE) — and its checksum.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::Path;

use anyhow::Context;
use rustix::fs::SeekFrom;
use rustix::io::Errno;

/// Copies `from` to the new file `to`: a reflink where possible, else a sparse copy.
/// Returns how (`reflink` or `sparse copy`).
pub fn copy(from: &Path, to: &Path) -> anyhow::Result<&'static str> {
    let src = File::open(from).with_context(|| format!("cannot open {}", from.display()))?;
    let dst = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .with_context(|| format!("cannot create {}", to.display()))?;
    if rustix::fs::ioctl_ficlone(&dst, &src).is_ok() {
        return Ok("reflink");
    }
    let len = src.metadata()?.len();
    dst.set_len(len)
        .with_context(|| format!("cannot size {}", to.display()))?;
    for_each_data_range(&src, len, |start, end| {
        let mut at = start;
        while at < end {
            let (mut off_in, mut off_out) = (at, at);
            let n = rustix::fs::copy_file_range(
                &src,
                Some(&mut off_in),
                &dst,
                Some(&mut off_out),
                (end - at).min(1 << 30) as usize,
            )?;
            if n == 0 {
                return Err(Errno::IO);
            }
            at += n as u64;
        }
        Ok(())
    })
    .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    Ok("sparse copy")
}

/// Calls `f(start, end)` for each range of `file` that holds data (holes are skipped).
fn for_each_data_range(
    file: &File,
    len: u64,
    mut f: impl FnMut(u64, u64) -> Result<(), Errno>,
) -> Result<(), Errno> {
    let mut at = 0;
    while at < len {
        let start = match rustix::fs::seek(file.as_fd(), SeekFrom::Data(at)) {
            Ok(s) => s,
            Err(Errno::NXIO) => break, // only a hole is left
            Err(e) => return Err(e),
        };
        let end = rustix::fs::seek(file.as_fd(), SeekFrom::Hole(start))?.min(len);
        f(start, end)?;
        at = end;
    }
    Ok(())
}

/// A 64-bit checksum of an image's contents: every non-zero 8 bytes and their offset, its
/// holes skipped. Zeros count for nothing, so a range of written zeros and a hole (a loop
/// device's discard punches them) give the same checksum, as they read the same. Two images
/// with the same checksum start their runs from the same filesystem.
pub fn checksum(path: &Path) -> anyhow::Result<String> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let len = file.metadata()?.len();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ len;
    let mut buf = vec![0u8; 1 << 20];
    for_each_data_range(&file, len, |start, end| {
        let mut at = start;
        while at < end {
            let want = (end - at).min(buf.len() as u64) as usize;
            let n = rustix::io::pread(&file, &mut buf[..want], at)?;
            if n == 0 {
                return Err(Errno::IO);
            }
            // Only non-zero words and where they are: the file's contents, whatever data
            // ranges the filesystem reports (they split and merge as writeback allocates).
            for (i, chunk) in buf[..n].chunks(8).enumerate() {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                let word = u64::from_le_bytes(word);
                if word != 0 {
                    hash = mix(mix(hash, at + 8 * i as u64), word);
                }
            }
            at += n as u64;
        }
        Ok(())
    })
    .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(format!("{hash:016x}"))
}

fn mix(hash: u64, word: u64) -> u64 {
    (hash ^ word)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .rotate_left(29)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, Write};

    #[test]
    fn a_copy_keeps_contents_and_holes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let mut f = File::create(&a).unwrap();
        f.set_len(64 << 20).unwrap();
        f.seek(std::io::SeekFrom::Start(8 << 20)).unwrap();
        f.write_all(&[7u8; 70_000]).unwrap();
        f.seek(std::io::SeekFrom::Start(40 << 20)).unwrap();
        f.write_all(b"end of the data").unwrap();
        drop(f);
        let how = copy(&a, &b).unwrap();
        assert!(["reflink", "sparse copy"].contains(&how));
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert_eq!(checksum(&a).unwrap(), checksum(&b).unwrap());
        // One byte changed: another checksum.
        let mut f = std::fs::OpenOptions::new().write(true).open(&b).unwrap();
        f.seek(std::io::SeekFrom::Start(8 << 20)).unwrap();
        f.write_all(&[8u8]).unwrap();
        assert_ne!(checksum(&a).unwrap(), checksum(&b).unwrap());
        // A copy never overwrites.
        assert!(copy(&a, &b).is_err());
        // Written zeros and a hole read the same, and have one checksum.
        let c = dir.path().join("c");
        std::fs::copy(&a, &c).unwrap();
        let mut f = std::fs::OpenOptions::new().write(true).open(&c).unwrap();
        f.seek(std::io::SeekFrom::Start(20 << 20)).unwrap();
        f.write_all(&vec![0u8; 1 << 20]).unwrap();
        drop(f);
        assert_eq!(checksum(&a).unwrap(), checksum(&c).unwrap());
    }
}

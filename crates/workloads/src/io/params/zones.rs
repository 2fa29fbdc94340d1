//! fio's strided zones (`zonemode=strided`, `zonesize`, `zonerange`, `zoneskip`): a job
//! moves `zonesize` bytes within a zone of `zonerange` (default `zonesize`) bytes,
//! sequentially or at random offsets in it, then goes on to the next zone, `zonerange +
//! zoneskip` further, and back to the start past the file's end (fio's
//! `setup_strided_zone_mode`).

use serde::{Deserialize, Serialize};

use crate::options::Parsed;
use fsbench_measure::error::invalid;

/// The zones of a job that has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Strided {
    /// Bytes moved in a zone before the next.
    pub size: u64,
    /// A zone's length.
    pub range: u64,
    /// Bytes skipped between zones.
    pub skip: u64,
}

/// The job's zones, read as fio 3.33 reads them (its default mode is `none`, which
/// refuses a `zonesize`); fio turns them off for a job that opens several files at once.
pub(super) fn strided(p: &Parsed, nrfiles: u32, random: bool) -> anyhow::Result<Option<Strided>> {
    // A random pattern draws uniformly within each zone; a skewed one is drawn over the
    // whole file, and a partly sequential one follows the I/O before.
    let uniform = p.text("random-distribution") == Some("random")
        && p.small("percentage-random") == Some(100);
    let size = p.num("zonesize").unwrap_or(0);
    let no = |why: &str| Err(invalid(format!("io: {why}")));
    match (p.text("zonemode"), size) {
        (Some("zbd"), _) => {
            return no("`zonemode=zbd` is for zoned block devices, which fsbench does not run on");
        }
        (None | Some("none"), 1..) => {
            return no("fio: --zonemode=none and --zonesize are not compatible.");
        }
        (Some("strided"), 0) => {
            return no("fio: --zonesize must be specified when using --zonemode=strided.");
        }
        (None | Some("none"), _) => return Ok(None),
        _ => {}
    }
    // fio: "Strided zone mode only really works with 1 file".
    if nrfiles > 1 && p.small("openfiles") != Some(1) {
        return Ok(None);
    }
    if random && !uniform {
        return no(
            "`zonemode=strided` with `random_distribution` or `percentage_random` is not implemented (fsbench draws uniformly within each zone)",
        );
    }
    Ok(Some(Strided {
        size,
        range: p.num("zonerange").filter(|r| *r > 0).unwrap_or(size),
        skip: p.num("zoneskip").unwrap_or(0),
    }))
}

#[cfg(test)]
mod tests {
    use crate::io::IoParams;

    #[test]
    fn zones_are_read_as_fio_reads_them() {
        let p = IoParams::parse("rw=read,zonemode=strided,zonesize=64k,zoneskip=1m").unwrap();
        let z = p.zones.unwrap();
        assert_eq!((z.size, z.range, z.skip), (65536, 65536, 1 << 20));
        let p = IoParams::parse("rw=read,zonemode=strided,zonesize=4k,zonerange=64k").unwrap();
        assert_eq!(p.zones.unwrap().range, 65536);
        assert_eq!(
            IoParams::parse("rw=read,zonemode=strided,zonesize=4k,nrfiles=2")
                .unwrap()
                .zones,
            None
        );
        for (bad, says) in [
            ("rw=read,zonemode=strided", "--zonesize must be specified"),
            ("rw=read,zonemode=none,zonesize=4k", "not compatible"),
            ("rw=read,zonesize=4k", "not compatible"),
            (
                "rw=randread,zonemode=strided,zonesize=4k,random-distribution=zipf:1.2",
                "draws uniformly",
            ),
            ("rw=read,zonemode=zbd,zonesize=4k", "zoned block devices"),
        ] {
            let err = IoParams::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}

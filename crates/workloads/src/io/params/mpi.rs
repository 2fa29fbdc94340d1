//! Under MPI with a shared directory, each rank's share of the files every rank's jobs use.

use super::IoParams;

/// Rank `rank`'s share of files every rank's jobs use: its region of each file right after
/// rank `rank - 1`'s, as IOR lays out a shared file (segment by segment, rank by rank).
pub(super) fn shared_file_share(p: &IoParams, rank: usize) -> IoParams {
    let region = p.filesize - p.offset;
    let offset = p.offset + rank as u64 * region;
    IoParams {
        offset,
        filesize: offset + region,
        beside: p
            .beside
            .iter()
            .map(|b| shared_file_share(b, rank))
            .collect(),
        ..p.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_sharing_a_file_write_regions_of_their_own_one_after_another() {
        let p = IoParams::parse("rw=write,bs=1m,size=256m,offset=4k").unwrap();
        let regions: Vec<(u64, u64)> = (0..3)
            .map(|r| shared_file_share(&p, r))
            .map(|s| (s.offset, s.filesize))
            .collect();
        let (k, m) = (4096, 256 << 20);
        assert_eq!(
            regions,
            [(k, k + m), (k + m, k + 2 * m), (k + 2 * m, k + 3 * m)]
        );
    }
}

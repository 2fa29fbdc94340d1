//! The space a job's files take on the filesystem under test.

use super::IoParams;
use crate::SpaceNeed;

/// The space job `p` needs: the files of its jobs and of the groups that run again before
/// it, a file named by `filename` (in its `directory`) once, at its largest.
pub(super) fn needed(p: &IoParams) -> Option<SpaceNeed> {
    let mut need = SpaceNeed::exactly(0, 8);
    let mut named: std::collections::HashMap<(Option<&str>, &str), u64> = Default::default();
    let groups = p.earlier_groups.iter().chain(std::iter::once(p));
    for job in groups.flat_map(IoParams::jobs).filter(|j| !j.raw_device) {
        let files = u64::from(job.nrfiles).checked_mul(u64::from(job.numjobs))?;
        // A fill job takes whatever is free; one that goes on past a full disk, has no
        // files, or takes the size of files an earlier group made, needs none.
        let each =
            if job.fill_device || job.fills_up() || job.engine.diskless() || job.size_of_files {
                0
            } else {
                job.filesize
            };
        for (f, name) in job.filename.iter().enumerate() {
            // A pmemblk pool takes the size its name gives; the job's I/O is inside it.
            let size = job.pools.get(f).map_or(each, |&(_, gross)| gross);
            let largest = named.entry((job.directory.as_deref(), name)).or_default();
            *largest = (*largest).max(size);
        }
        if job.filename.is_empty() {
            need.bytes = need
                .bytes
                .checked_add(each.checked_mul(files)?.checked_mul(21)? / 20)?;
            need.inodes = need.inodes.checked_add(files)?;
        }
    }
    for each in named.into_values() {
        need.bytes = need.bytes.checked_add(each.checked_mul(21)? / 20)?;
        need.inodes = need.inodes.checked_add(1)?;
    }
    need.ideal_bytes = need.bytes;
    Some(need)
}

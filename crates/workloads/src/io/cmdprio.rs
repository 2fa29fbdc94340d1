//! fio's per-I/O priorities (engines/cmdprio.c) as the libaio and io_uring engines give
//! them: for each I/O, the shares of its direction and block size; one draw in 0..100 picks
//! a priority where it falls under their sum, else the I/O goes with the job's own.

use super::job::Job;
use super::params::{CmdPrio, IoParams, PrioShares};
use super::pattern::{Next, Rng};

/// One job thread's choice of priorities: its shares, and a sequence of its own.
pub(crate) struct Chooser {
    split: [PrioShares; 2],
    rng: Rng,
}

impl Chooser {
    /// The chooser of `job` on the calling thread, whose statistics are then kept per
    /// priority too (fio's `clat_prio`); `None` without `cmdprio_*`.
    pub(crate) fn for_job(job: &mut Job<'_>) -> Option<Chooser> {
        let chooser = Chooser::of(job.params)?;
        job.out.stats.by_priority();
        Some(chooser)
    }

    fn of(params: &IoParams) -> Option<Chooser> {
        let CmdPrio { split } = params.placement.cmdprio.clone()?;
        // A sequence of each thread's own (the draws decide no offset, only priorities).
        // SAFETY: gettid has no effect but its answer.
        let tid = unsafe { libc::gettid() } as u64;
        let seed = params.randseed ^ (tid << 20) ^ 0x636d_6470;
        Some(Chooser {
            split,
            rng: Rng::new(seed),
        })
    }

    /// The priority `io` gets of its own; `None`: the job's.
    #[inline]
    pub(crate) fn pick(&mut self, io: &Next) -> Option<u16> {
        let len = u64::from(io.len);
        let (_, shares) = self.split[usize::from(!io.read)]
            .iter()
            .find(|(bs, _)| *bs == 0 || *bs == len)?;
        let total: u32 = shares.iter().map(|s| s.0).sum();
        if total == 0 {
            return None;
        }
        let draw = self.rng.below(100) as u32;
        let mut upto = 0;
        for (share, prio) in shares {
            upto += share;
            if draw < upto {
                return Some(*prio);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_of_the_ios_gets_its_priority_and_other_sizes_none() {
        let params =
            IoParams::parse("ioengine=libaio,rw=randrw,cmdprio-bssplit=4k/30/1/1:4k/20/3/0")
                .unwrap();
        let mut chooser = Chooser::of(&params).unwrap();
        let io = |len, read| Next {
            file: 0,
            offset: 0,
            len,
            read,
            prio: 0,
        };
        let mut counts = [0u32; 3];
        for _ in 0..10_000 {
            match chooser.pick(&io(4096, true)) {
                Some(0x2001) => counts[0] += 1,
                Some(0x6000) => counts[1] += 1,
                None => counts[2] += 1,
                other => panic!("{other:?}"),
            }
        }
        // 30%, 20% and the rest, within 3 points of 10,000 draws.
        assert!((2700..3300).contains(&counts[0]), "{counts:?}");
        assert!((1700..2300).contains(&counts[1]), "{counts:?}");
        assert_eq!(chooser.pick(&io(8192, true)), None);
        assert!((0..100).any(|_| chooser.pick(&io(4096, false)).is_some()));
    }
}

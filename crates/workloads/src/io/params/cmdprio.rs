//! fio's per-I/O priorities of its libaio and io_uring engines (engines/cmdprio.c):
//! `cmdprio_percentage` of the I/Os at `cmdprio_class`/`cmdprio`, or `cmdprio_bssplit`'s
//! shares per block size, each with its own class and level or those two. Every option is
//! `READS[,WRITES]`, one value for both directions.

use super::Engine;
use serde::{Deserialize, Serialize};

use crate::options::Parsed;
use fsbench_measure::error::invalid;

/// fio's I/O priority value: the class in bits 13 to 15, the level below; no class is the
/// best-effort class (2), as fio's `ioprio_value`.
pub(crate) fn ioprio_value(class: u32, level: u32) -> u16 {
    let class = if class == 0 { 2 } else { class };
    ((class << 13) | level) as u16
}

/// Per direction (reads, writes): for a block size (0: every size), the shares in percent
/// of its I/Os that get a priority of their own, and which (fio's cmdprio.c: one draw in
/// 0..100 per I/O, the shares taken in turn).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CmdPrio {
    pub split: [PrioShares; 2],
}

/// One direction's shares: per block size (0: every size), each share in percent of its
/// I/Os and the priority it gives.
pub type PrioShares = Vec<(u64, Vec<(u32, u16)>)>;

const KEYS: [&str; 4] = [
    "cmdprio-percentage",
    "cmdprio-class",
    "cmdprio",
    "cmdprio-bssplit",
];

/// The job's per-I/O priorities; `None` where none is asked for.
pub(super) fn cmdprio(p: &Parsed, engine: Engine) -> anyhow::Result<Option<CmdPrio>> {
    let Some(given) = KEYS.iter().find(|k| p.explicit(k)) else {
        return Ok(None);
    };
    if !matches!(engine, Engine::Libaio | Engine::IoUring) {
        return Err(invalid(format!(
            "io: `{given}` is an option of fio's libaio and io_uring engines, which give each I/O its priority; ioengine={} has none (fio: \"Bad option\", the job dropped)",
            engine.name()
        )));
    }
    let percentage = per_direction(p, "cmdprio-percentage", 100)?;
    // fio's default class is real-time where none is given.
    let class = per_direction(p, "cmdprio-class", 3)?.map(|c| if c == 0 { 1 } else { c });
    let level = per_direction(p, "cmdprio", 7)?;
    let implicit = [0, 1].map(|d| ioprio_value(class[d], level[d]));
    let split = match p.text("cmdprio-bssplit").filter(|s| !s.trim().is_empty()) {
        Some(_) if percentage.iter().any(|&pc| pc > 0) => {
            return Err(invalid(
                "io: `cmdprio-percentage` and `cmdprio-bssplit` options are mutually exclusive (fio's words)",
            ));
        }
        Some(text) => bssplit(text, implicit)?,
        None => [0, 1].map(|d| match percentage[d] {
            0 => Vec::new(),
            pc => vec![(0, vec![(pc, implicit[d])])],
        }),
    };
    Ok(Some(CmdPrio { split }))
}

/// `READS[,WRITES]` of numbers up to `max` (one value: both; not given: 0).
fn per_direction(p: &Parsed, key: &str, max: u32) -> anyhow::Result<[u32; 2]> {
    let Some(text) = p.text(key) else {
        return Ok([0, 0]);
    };
    let bad = || {
        invalid(format!(
            "io: `{key}={text}` is READS[,WRITES], from 0 to {max}"
        ))
    };
    let mut parts = text.split(',').map(|v| {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| *n <= max)
            .ok_or_else(bad)
    });
    let reads = parts.next().ok_or_else(bad)??;
    let writes = parts.next().transpose()?.unwrap_or(reads);
    Ok([reads, writes])
}

/// fio's `cmdprio_bssplit=BS/PCT[/CLASS/LEVEL]:...[,WRITES]`: per direction, per block size
/// (in order), its shares and their priorities (`implicit`: those without their own).
fn bssplit(text: &str, implicit: [u16; 2]) -> anyhow::Result<[PrioShares; 2]> {
    let (reads, writes) = text.split_once(',').unwrap_or((text, text));
    // fio reads a third part (trims) and has no use for it.
    let writes = writes.split(',').next().unwrap_or(writes);
    Ok([
        bssplit_direction(text, reads, implicit[0])?,
        bssplit_direction(text, writes, implicit[1])?,
    ])
}

fn bssplit_direction(text: &str, part: &str, implicit: u16) -> anyhow::Result<PrioShares> {
    let bad = |why: &str| invalid(format!("io: `cmdprio-bssplit={text}`: {why}"));
    let mut entries: Vec<(u64, u32, u16)> = Vec::new();
    for entry in part.split(':').filter(|e| !e.is_empty()) {
        let fields: Vec<&str> = entry.split('/').collect();
        let bs = fsbench_measure::units::parse_size(fields[0])
            .map_err(|_| bad("fio: split conversion failed"))?;
        let number = |i: usize| -> anyhow::Result<u32> {
            fields.get(i).map_or(Ok(0), |f| {
                f.parse()
                    .map_err(|_| bad("fio: invalid cmdprio_bssplit format"))
            })
        };
        let perc = number(1)?.min(100);
        let prio = match fields.len() {
            1 | 2 => implicit,
            4 => ioprio_value(number(2)?.min(3), number(3)?.min(7)),
            _ => return Err(bad("fio: invalid cmdprio_bssplit format")),
        };
        // fio skips the entries of no share.
        if perc > 0 {
            entries.push((bs, perc, prio));
        }
    }
    entries.sort_by_key(|e| e.0);
    let mut out: PrioShares = Vec::new();
    for (bs, perc, prio) in entries {
        match out.last_mut() {
            Some((last, shares)) if *last == bs => shares.push((perc, prio)),
            _ => out.push((bs, vec![(perc, prio)])),
        }
    }
    if let Some((bs, _)) = (out.iter()).find(|(_, s)| s.iter().map(|x| x.0).sum::<u32>() > 100) {
        return Err(bad(&format!(
            "fio: cmdprio_bssplit total percentage for bs: {bs} exceeds 100"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::IoParams;

    #[test]
    fn bssplit_groups_shares_by_size_with_their_own_priorities_or_the_implicit_one() {
        let rt0 = ioprio_value(1, 0);
        let split = bssplit("64k/25/1/1:64k/75/3/2:1024k/0,1024k/10", [rt0, rt0]).unwrap();
        // 1024k/0 is no share (fio drops it); the writes' 1 MiB share takes the implicit one.
        assert_eq!(
            split[0],
            vec![(
                65536,
                vec![(25, ioprio_value(1, 1)), (75, ioprio_value(3, 2))]
            )]
        );
        assert_eq!(split[1], vec![(1 << 20, vec![(10, rt0)])]);
        // One part: both directions.
        assert_eq!(
            bssplit("4k/50", [rt0, 7]).unwrap()[1],
            vec![(4096, vec![(50, 7)])]
        );
        let err = bssplit("4k/60/1/1:4k/50", [rt0, rt0])
            .unwrap_err()
            .to_string();
        assert!(err.contains("exceeds 100"), "{err}");
        assert!(bssplit("4k/1/2", [rt0, rt0]).is_err());
    }

    #[test]
    fn percentage_and_class_default_as_fio_s_and_other_engines_are_refused() {
        let p = IoParams::parse("ioengine=libaio,cmdprio-percentage=20").unwrap();
        let split = p.placement.cmdprio.unwrap().split;
        // fio's default class is real-time, level 0: 0x2000.
        assert_eq!(split[0], vec![(0, vec![(20, 0x2000)])]);
        assert_eq!(split[0], split[1]);
        let p = IoParams::parse("ioengine=io_uring,cmdprio-percentage=5,cmdprio-class=3,cmdprio=7");
        assert_eq!(
            p.unwrap().placement.cmdprio.unwrap().split[1],
            vec![(0, vec![(5, 0x6007)])]
        );
        let err = IoParams::parse("ioengine=psync,cmdprio-percentage=20").unwrap_err();
        assert!(err.to_string().contains("libaio and io_uring"), "{err}");
        let both = IoParams::parse("ioengine=libaio,cmdprio-percentage=20,cmdprio-bssplit=4k/10");
        assert!(both.unwrap_err().to_string().contains("mutually exclusive"));
        assert!(IoParams::parse("ioengine=libaio,cmdprio-percentage=101").is_err());
    }
}

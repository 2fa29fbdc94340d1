//! fio's engines for PMDK's libraries: pmemblk's pool names, and what each engine refuses
//! before anything runs, with fio's reason.

use super::{Engine, IoParams};
use crate::io::pmem::library;
use fsbench_measure::error::invalid;
use fsbench_model::workload::WorkerMode;

/// The smallest pool libpmemblk makes on x86-64 (`PMEMBLK_MIN_POOL`: 16 MiB + 8 KiB).
const MIN_POOL: u64 = (16 << 20) + (8 << 10);

/// The paths of a job's files, and each one's pool block size and size in bytes.
type PoolNames = (Vec<String>, Vec<(u64, u64)>);

/// pmemblk's `filename=PATH,BSIZE,FSIZEMiB` (each of `:`-separated names): the paths, and
/// each pool's block size and size in bytes (0, 0 where a name gives none), read as fio's
/// engine reads them (the last two comma-separated numbers). fio takes a name whose
/// numbers it cannot read whole as a path, and fails to make that pool: refused here.
pub(super) fn pool_names(engine: Engine, names: Vec<String>) -> anyhow::Result<PoolNames> {
    if engine != Engine::Pmemblk {
        return Ok((names, Vec::new()));
    }
    let number = |text: &str| {
        (text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<u64>().ok())
            .flatten()
            .filter(|n| *n > 0)
    };
    let mut pools = Vec::with_capacity(names.len());
    let mut paths = Vec::with_capacity(names.len());
    for name in names {
        let Some((rest, fsize)) = name.rsplit_once(',') else {
            paths.push(name);
            pools.push((0, 0));
            continue;
        };
        let sizes = (rest.rsplit_once(',')).and_then(|(path, bsize)| {
            let gross = number(fsize)?.checked_mul(1 << 20)?;
            Some((path, number(bsize)?, gross))
        });
        let Some((path, bsize, gross)) = sizes.filter(|(path, _, _)| !path.is_empty()) else {
            return Err(invalid(format!(
                "io: `filename={name}`: fio's pmemblk engine takes PATH,BSIZE,FSIZEMiB (the pool's block size in bytes and its size in MiB, whole numbers above 0), or PATH alone for a pool made before"
            )));
        };
        paths.push(path.to_string());
        pools.push((bsize, gross));
    }
    Ok((paths, pools))
}

impl IoParams {
    /// What PMDK's engines refuse before anything runs: their library missing, pmemblk
    /// without threads or without the sizes to make its pools, I/Os a pool cannot take;
    /// dev-dax, which needs a device-DAX character device.
    pub(super) fn validate_pmem(&self) -> anyhow::Result<()> {
        let engine = self.engine.name();
        let no = |msg: &str| Err(invalid(format!("io: `ioengine={engine}`: {msg}")));
        let loaded = match self.engine {
            Engine::Pmemblk => library::blk().map(|_| ()),
            Engine::Libpmem => library::pmem().map(|_| ()),
            Engine::DevDax => {
                return no(
                    "fio's engine maps a device-DAX character device (/dev/daxN.M: persistent memory made one by `ndctl create-namespace --mode=devdax`), which is no filesystem's file: fsbench runs jobs on a filesystem or on the block device it was given, and does not implement it",
                );
            }
            _ => return Ok(()),
        };
        if let Err(why) = loaded {
            return no(&why);
        }
        if self.create_on_open || self.unlink_each_loop || self.pre_read {
            return no(
                "`create_on_open`, `unlink_each_loop` and `pre_read` with it are not implemented",
            );
        }
        match self.engine {
            Engine::Pmemblk => self.validate_pmemblk(),
            // fio's init: the mapping is synced by pages.
            _ if self.fsync > 0 || self.fdatasync > 0 => match self.min_bs() % 4096 {
                0 => Ok(()),
                _ => no(
                    "fio: libpmem: mmap options dictate a minimum block size of 4096 bytes (with `fsync` or `fdatasync`)",
                ),
            },
            _ => Ok(()),
        }
    }

    fn validate_pmemblk(&self) -> anyhow::Result<()> {
        let no = |msg: String| Err(invalid(format!("io: `ioengine=pmemblk`: {msg}")));
        if self.workers != WorkerMode::Threads {
            return no(
                "fio: \"pmemblk: must set thread=1 for pmemblk engine\" (a pool is open in one process at a time, shared by the job's threads)"
                    .into(),
            );
        }
        if self.filename.is_empty() {
            return no("fio's engine makes a pool only from `filename=PATH,BSIZE,FSIZEMiB`".into());
        }
        for (name, &(bsize, gross)) in self.filename.iter().zip(&self.pools) {
            if bsize == 0 && !self.existing_files {
                return no(format!(
                    "`filename={name}` gives no block size and pool size (PATH,BSIZE,FSIZEMiB), and no group before it made the pool: fio fails to open it"
                ));
            }
            if bsize > 0 && gross < MIN_POOL {
                return no(format!(
                    "`filename={name},{bsize},{}`: libpmemblk's smallest pool is 16 MiB + 8 KiB (PMEMBLK_MIN_POOL)",
                    gross >> 20
                ));
            }
            let sizes = self.block_sizes().map(|bs| ("bs", bs));
            let misfit = (sizes.chain([("offset", self.offset)]))
                .find(|(_, n)| bsize > 0 && !n.is_multiple_of(bsize));
            if let Some((key, n)) = misfit {
                return no(format!(
                    "`{key}={n}` is not a multiple of the pool's block size ({bsize}): fio's engine fails each such I/O with EINVAL"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> anyhow::Result<PoolNames> {
        pool_names(Engine::Pmemblk, text.split(':').map(String::from).collect())
    }

    #[test]
    fn pool_names_give_their_sizes_as_fio_reads_them() {
        let (paths, pools) = names("pmem0/fio-test,4096,1024:b,512,17").unwrap();
        assert_eq!(paths, ["pmem0/fio-test", "b"]);
        assert_eq!(pools, [(4096, 1024 << 20), (512, 17 << 20)]);
        // A name alone is a pool made before; another engine's names stay as they are.
        assert_eq!(names("pool").unwrap(), (vec!["pool".into()], vec![(0, 0)]));
        let other = pool_names(Engine::Psync, vec!["a,1,2".into()]).unwrap();
        assert_eq!(other, (vec!["a,1,2".into()], vec![]));
    }

    #[test]
    fn pool_names_fio_cannot_make_a_pool_of_are_refused() {
        for bad in [
            "pool,4k,64",
            "pool,4096,0",
            "pool,0,64",
            "pool,64",
            ",4096,64",
            "a,b",
        ] {
            let err = names(bad).unwrap_err().to_string();
            assert!(
                err.contains(&format!("`filename={bad}`")) && err.contains("PATH,BSIZE,FSIZEMiB"),
                "{bad}: {err}"
            );
        }
    }
}

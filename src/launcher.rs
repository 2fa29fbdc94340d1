//! What an MPI launcher (mpirun, mpiexec, srun) tells the processes it starts. Compiled in
//! every build: a binary without MPI must see that it was started as one of several ranks and
//! refuse, rather than run N uncoordinated copies into one database.

/// The variables launchers set, and what they hold.
const SIZE_VARS: &[&str] = &[
    // Open MPI's mpirun.
    "OMPI_COMM_WORLD_SIZE",
    // MPICH/Hydra, Intel MPI, PMI-1/2 launchers.
    "PMI_SIZE",
    "MPI_LOCALNRANKS",
    // PMIx launchers (Open MPI 5, prrte).
    "PMIX_SIZE",
];
/// A rank variable: a rank above 0 means there are several.
const RANK_VARS: &[&str] = &["PMIX_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK"];

/// The launcher variable that says this process is one of several ranks, and the count it
/// gives (a rank variable gives a lower bound: rank + 1). `None` when started alone.
pub(crate) fn several_ranks(env: impl Fn(&str) -> Option<String>) -> Option<(String, u64)> {
    let number = |var: &str| env(var)?.trim().parse::<u64>().ok();
    let sizes = SIZE_VARS.iter().map(|v| (v.to_string(), number(v)));
    // SLURM_NTASKS is set for a whole allocation (sbatch); only a step (srun) starts ranks.
    let slurm = (env("SLURM_STEP_ID").is_some() || env("SLURM_STEPID").is_some())
        .then(|| ("SLURM_NTASKS".to_string(), number("SLURM_NTASKS")));
    let ranks = RANK_VARS
        .iter()
        .map(|v| (v.to_string(), number(v).map(|r| r + 1)));
    sizes
        .chain(slurm)
        .chain(ranks)
        .find_map(|(var, n)| n.filter(|n| *n > 1).map(|n| (var, n)))
}

/// [`several_ranks`] of this process's environment.
pub(crate) fn launched_ranks() -> Option<(String, u64)> {
    several_ranks(|v| std::env::var(v).ok())
}

/// Whether a launcher started this process (as one rank or several): under the `mpi` feature,
/// `run` then coordinates with the other ranks.
#[cfg(feature = "mpi")]
pub(crate) fn launched() -> bool {
    SIZE_VARS
        .iter()
        .chain(RANK_VARS)
        .any(|v| std::env::var_os(v).is_some())
}

/// Refuses a start as one of several ranks that would not coordinate: any command of a binary
/// built without MPI, and every command but `run` (`mpi_run`) of one built with it.
pub(crate) fn refuse_uncoordinated(mpi_run: bool) -> anyhow::Result<()> {
    let Some((var, n)) = launched_ranks() else {
        return Ok(());
    };
    if cfg!(feature = "mpi") && mpi_run {
        return Ok(());
    }
    let why = if cfg!(feature = "mpi") {
        "only `fsbench run` coordinates its ranks".to_string()
    } else {
        "this fsbench was built without MPI (`cargo build --release --features mpi` builds it \
         with)"
            .to_string()
    };
    Err(fsbench_measure::error::invalid(format!(
        "started as one of {n} MPI ranks ({var}), but {why}: the ranks would run uncoordinated \
         copies into one database; run it without the launcher"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn launchers_with_several_ranks_are_seen() {
        assert_eq!(several_ranks(env(&[])), None);
        assert_eq!(several_ranks(env(&[("OMPI_COMM_WORLD_SIZE", "1")])), None);
        assert_eq!(
            several_ranks(env(&[("OMPI_COMM_WORLD_SIZE", "4")])),
            Some(("OMPI_COMM_WORLD_SIZE".into(), 4))
        );
        assert_eq!(
            several_ranks(env(&[("PMI_SIZE", "2")])).map(|s| s.1),
            Some(2)
        );
        // An sbatch allocation is not a launch; an srun step is.
        assert_eq!(several_ranks(env(&[("SLURM_NTASKS", "8")])), None);
        assert_eq!(
            several_ranks(env(&[("SLURM_NTASKS", "8"), ("SLURM_STEP_ID", "0")])).map(|s| s.1),
            Some(8)
        );
        assert_eq!(
            several_ranks(env(&[("PMIX_RANK", "3")])),
            Some(("PMIX_RANK".into(), 4))
        );
        assert_eq!(several_ranks(env(&[("PMIX_RANK", "0")])), None);
    }
}

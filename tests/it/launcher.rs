//! A process started by an MPI launcher as one of several ranks: without MPI built in, fsbench
//! refuses to start instead of running uncoordinated copies into one database; with it, only
//! `run` coordinates, so the other commands refuse.

use crate::common::*;

#[test]
fn several_ranks_without_coordination_are_refused() {
    let state = tempdir();
    for (var, value) in [
        ("OMPI_COMM_WORLD_SIZE", "4"),
        ("PMI_SIZE", "2"),
        ("PMIX_RANK", "3"),
    ] {
        let mut cmd = fsbench(state.path());
        // `run` is refused without MPI; with it, `list` is (only `run` coordinates ranks).
        let args: &[&str] = if cfg!(feature = "mpi") {
            &["list"]
        } else {
            &["run", "--dir", "."]
        };
        let out = run(cmd.env(var, value).args(args));
        assert_eq!(out.status.code(), Some(2), "{var}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("MPI ranks") && stderr.contains(var),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}

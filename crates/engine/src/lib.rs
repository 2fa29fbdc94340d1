//! The engine: the plan of rounds, each run's lifecycle on a fresh filesystem, the one phase
//! loop, observers, the harness ceiling and MPI ranks.

#[cfg(feature = "mpi")]
pub mod mpi;
pub mod runner;

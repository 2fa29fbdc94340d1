//! The engine: the plan of rounds, each run's lifecycle on a fresh filesystem, the one phase
//! loop, observers, the harness ceiling and MPI ranks.

use fsbench_model::{results, suite};
use fsbench_stats as stats;
#[cfg(feature = "mpi")]
use fsbench_testbed::rmtree;
use fsbench_testbed::{
    aging, define, drivers, error, measure, phase_progress, shape, sysinfo, testbed,
};
use fsbench_workloads as workload;

#[cfg(feature = "mpi")]
pub mod mpi;
pub mod runner;

//! What fsbench measures and on what: the records (suites, configurations, results), the
//! workloads behind one registry, the filesystems' drivers, the testbed and aging.

pub use fsbench_measure::{
    calls, diag, error, extents, measure, phase_progress, rmtree, shape, sysinfo, tools, units,
};

pub mod aging;
pub mod config;
pub mod drivers;
pub mod results;
pub mod suite;
pub mod testbed;
pub mod workload;

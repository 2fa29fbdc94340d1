//! What fsbench measures and on what: the workloads behind one registry, the filesystems'
//! drivers, the testbed and aging, and what the user asks for read and checked ([`define`]).
//! The records they fill are the model's.

pub use fsbench_measure::{
    calls, diag, error, extents, measure, phase_progress, rmtree, shape, sysinfo, tools, units,
};

pub mod aging;
pub mod define;
pub mod drivers;
pub mod testbed;
pub mod workload;

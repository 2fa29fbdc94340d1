//! fsbench: a Linux filesystem benchmark that does the seed articles' methodology right.
//!
//! This crate is the command line over the workspace's crates, from the ground up:
//! `fsbench-model` (the records) → `fsbench-measure` (errors, tools, the measuring) →
//! `fsbench-workloads` (the registry, one folder each) → `fsbench-testbed` (drivers,
//! targets, aging, suite files) and `fsbench-stats` → `fsbench-store`, `fsbench-engine`
//! (rounds, runs, the phase loop, MPI) and `fsbench-report` → this crate's [`cli`]. A crate
//! cannot name one above it, so the direction is the compiler's to keep.
//!
//! The lower crates' modules are re-exported under their old names for the integration tests.

#[cfg(feature = "mpi")]
use fsbench_engine::mpi;
use fsbench_engine::runner;
pub use fsbench_model as model;
pub use fsbench_model::{config, results, suite};
use fsbench_report as report;
pub use fsbench_stats as stats;
pub use fsbench_store as store;
pub use fsbench_testbed::{
    aging, crash, define, diag, drivers, error, extents, measure, phase_progress, sysinfo, testbed,
    tools, units,
};
pub use fsbench_workloads as workload;

mod cli;
mod launcher;

pub use cli::main;

//! fsbench: a Linux filesystem benchmark that does the seed articles' methodology right.
//!
//! Architecture, in the order data flows:
//! [`cli`] → [`suite`] (what to run) → [`runner`] (runs × configurations on fresh filesystems
//! from [`testbed`] and [`drivers`]) → [`workload`] (one module per benchmark) → [`measure`] →
//! [`results`] and [`stats`] → [`report`].
//!
//! Modules are `pub(crate)` unless the integration tests use them, so rustc flags anything
//! nothing uses; the public ones are the parts the tests drive directly.

pub mod aging;
pub(crate) mod cli;
pub mod drivers;
pub(crate) mod error;
pub mod extents;
pub(crate) mod launcher;
pub mod measure;
#[cfg(feature = "mpi")]
pub(crate) mod mpi;
pub(crate) mod progress;
pub(crate) mod report;
pub mod results;
pub(crate) mod rmtree;
pub(crate) mod runner;
pub(crate) mod shape;
pub mod stats;
pub mod store;
pub mod suite;
pub mod sysinfo;
pub mod testbed;
pub mod tools;
pub(crate) mod units;
pub mod workload;

pub use cli::main;

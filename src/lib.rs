//! fsbench: a Linux filesystem benchmark that does the seed articles' methodology right.
//!
//! Architecture, in the order data flows:
//! [`cli`] → [`suite`] (what to run) → [`runner`] (runs × configurations on fresh filesystems
//! from [`testbed`] and [`drivers`]) → [`workload`] (one module per benchmark) → [`measure`] →
//! [`results`] and [`stats`] → [`report`].

pub mod cli;
pub mod drivers;
pub mod error;
pub mod extents;
pub mod measure;
pub mod progress;
pub mod report;
pub mod results;
pub mod rmtree;
pub mod runner;
pub mod shape;
pub mod stats;
pub mod store;
pub mod suite;
pub mod sysinfo;
pub mod testbed;
pub mod tools;
pub mod units;
pub mod workload;

//! The ground floor: errors, units, the system record, external tools, and the measuring
//! itself (the phase recorder, latency histograms, timelines, progress) that every layer
//! above uses and that uses nothing of fsbench.

pub mod calls;
pub mod diag;
pub mod error;
pub mod extents;
pub mod measure;
pub mod phase_progress;
pub mod rmtree;
pub mod shape;
pub mod sysinfo;
pub mod tools;
pub mod units;

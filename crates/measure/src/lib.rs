//! Errors, units as users write them, the system as the kernel reports it, external tools,
//! and the measuring itself (the phase recorder, latency histograms, timelines, progress)
//! that every layer above uses; below it only the records (`fsbench-model`).

pub mod calls;
pub mod diag;
pub mod error;
pub mod extents;
pub mod fio;
pub mod measure;
pub mod phase_progress;
pub mod rmtree;
pub mod shape;
pub mod sysinfo;
pub mod tools;
pub mod units;

//! fsbench: a Linux filesystem benchmark that does the seed articles' methodology right.
//!
//! This crate is the command line over the workspace's crates, from the ground up:
//! `fsbench-model` (the records) → `fsbench-measure` (errors, tools, the measuring) →
//! `fsbench-workloads` (the registry, one folder each) → `fsbench-testbed` (drivers,
//! targets, aging, suite files) and `fsbench-stats` → `fsbench-store`, `fsbench-engine`
//! (rounds, runs, the phase loop, MPI) and `fsbench-report` → this crate's [`cli`]. A crate
//! cannot name one above it, so the direction is the compiler's to keep.

mod cli;
mod launcher;

pub use cli::main;

//! The integration tests, one binary (each file a module): `cargo test --test it` runs them,
//! `cargo test --test it MODULE::` one file's. Tests that change something the whole machine
//! shares (the zfs-fuse daemon, the backing disk's scheduler, a load, MPI) hold
//! `common::machine_wide()`.

// A test binary has no crate boundary: its helpers are `pub` for its modules.
#![allow(unreachable_pub)]

mod common;

mod aging;
mod aging_resume;
mod archive;
mod auto_runs;
mod background;
mod baseline;
mod capture;
mod capture_xattr;
mod clean;
mod cli;
mod closed_stdout;
mod command;
mod confine;
mod crash;
mod data;
mod examples;
mod fdtree;
mod ffsb_stops;
mod ffsb_workers;
mod filebench;
mod filesystems;
mod fio_control;
mod fio_cpuio;
mod fio_data;
mod fio_engines;
mod fio_exec;
mod fio_fidelity;
mod fio_files;
mod fio_groups;
mod fio_jobs;
mod fio_latency;
mod fio_more_engines;
mod fio_openfiles;
mod fio_opts;
mod fio_out;
mod fio_place;
mod fio_pmem;
mod fio_verify;
mod first_hour;
mod fuzz;
mod fuzz_traces;
mod generate;
mod harness;
mod hostile_archives;
mod input_refusals;
mod interrupts;
mod io;
mod iozone;
mod killed_runs;
mod launcher;
mod lifecycle;
mod limits;
mod loop_direct_io;
mod mpi;
mod mpi_signals;
mod newer_calls;
mod notes;
mod option_devices;
mod output;
mod queue_owner;
mod reading;
mod recorded_phases;
mod replay;
mod replay_bounds;
mod replay_workers;
mod report;
mod sched;
mod shape;
mod stack;
mod stats_scipy;
mod store;
mod tar_reader;
mod traces;
mod user_driver_rules;
pub(crate) mod verdicts;
mod wcache;
pub(crate) mod workers;
mod workload_specs;
mod xattr;

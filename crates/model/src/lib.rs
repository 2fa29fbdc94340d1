//! The ground floor: the records fsbench stores and reads back (the suite, its
//! configurations and workload specs, results, measurements, the system, the testbed and
//! its stack, filesystems, aging, what fio job files said), as plain serde data with no I/O
//! and no dependency on anything else of fsbench. Behaviour over them lives in the crates above.

pub mod aging;
pub mod config;
pub mod filesystem;
pub mod fio;
pub mod measurement;
pub mod results;
pub mod suite;
pub mod syscall;
pub mod system;
pub mod testbed;
pub mod units;
pub mod workload;

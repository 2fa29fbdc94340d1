//! What fsbench measures on: the filesystems' drivers, the testbed (targets, devices, loops,
//! mounts, a run's fresh filesystem), aging, and what the user asks for read and checked
//! ([`define`]). The workloads are below it, the records they fill the model's.

pub mod aging;
pub mod crash;
pub mod define;
pub mod drivers;
pub mod testbed;

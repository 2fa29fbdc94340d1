//! What the user asks for, read and checked: suite files, `--fs` values, and the whole suite
//! before anything is made. The records themselves are the model's.

mod check;
mod fs_option;
mod suite_file;

pub use check::validate;
pub use fs_option::{Load, load, parse_crash, parse_fs, parse_fs_with};
pub use suite_file::{default_workloads, parse_suite, read_suite};

#[cfg(test)]
mod tests;

//! Typed errors raised inside fsbench; the CLI maps each kind to an exit code.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a full disk's error says to do, until the runner, which knows the target, says better.
pub const SPACE_REMEDY: &str = "use a larger target or a smaller workload";

/// Errors a user can act on. Everything else travels as `anyhow::Error` with context.
#[derive(Debug, thiserror::Error)]
pub enum FsbenchError {
    /// The command line or suite file asks for something invalid.
    #[error("{0}")]
    InvalidInput(String),
    /// A tool fsbench needs is not installed.
    #[error("{tool} not found: install the Debian package `{package}`")]
    ToolMissing { tool: String, package: String },
    /// The running kernel has no such filesystem, even after trying to load its module.
    #[error(
        "the kernel has no `{fs}` filesystem (not in /proc/filesystems; {tried}): boot a kernel with {option} or install its module; its tools are in the Debian package `{package}`"
    )]
    KernelLacks {
        fs: String,
        tried: String,
        option: String,
        package: String,
    },
    /// The operation needs root (mkfs, mount, losetup, drop_caches).
    #[error("{0} needs root privileges; run as root or use --dir")]
    NotRoot(String),
    /// A safety check refused a device or image.
    #[error("refusing {}: {reason}", path.display())]
    Refused { path: PathBuf, reason: String },
    /// The filesystem under test ran out of space or inodes.
    #[error(
        "filesystem full ({errno}) after {ops} operation{} in phase `{phase}`: {remedy}",
        if *.ops == 1 { "" } else { "s" }
    )]
    DiskFull {
        phase: String,
        ops: u64,
        errno: String,
        /// What to do, for the kind of target; the runner, which knows it, sets it.
        remedy: &'static str,
    },
    /// A phase or lifecycle step failed in a way the user must look at.
    #[error("{0}")]
    Failed(String),
    /// The run lost what it ran on (its FUSE daemon died): that run failed, and the suite
    /// goes on with the next.
    #[error("{0}")]
    RunLost(String),
    /// The user pressed Ctrl-C or sent SIGTERM.
    #[error("interrupted")]
    Interrupted,
}

impl FsbenchError {
    /// The process exit code for this error (sysexits-like, stable for scripts).
    pub fn exit_code(&self) -> u8 {
        match self {
            FsbenchError::InvalidInput(_) => 2,
            FsbenchError::Refused { .. } => 3,
            FsbenchError::ToolMissing { .. }
            | FsbenchError::KernelLacks { .. }
            | FsbenchError::NotRoot(_) => 4,
            FsbenchError::DiskFull { .. } => 5,
            FsbenchError::Failed(_) | FsbenchError::RunLost(_) => 1,
            FsbenchError::Interrupted => 130,
        }
    }
}

/// The process exit code for `e`: its first [`FsbenchError`]'s, else 1.
pub fn exit_code_of(e: &anyhow::Error) -> u8 {
    e.chain()
        .find_map(|c| c.downcast_ref::<FsbenchError>())
        .map_or(1, FsbenchError::exit_code)
}

/// An error as it crosses to another process (a worker process's pipe, an exchange between
/// MPI ranks): its kind, which gives the exit code, and its text; a full disk keeps its
/// fields, so that the runner, which knows the target, can say what to do about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WireError {
    DiskFull {
        phase: String,
        ops: u64,
        errno: String,
    },
    InvalidInput(String),
    Interrupted,
    Failed(String),
}

impl WireError {
    /// `e`'s first [`FsbenchError`]'s kind, with `e`'s whole text (its context too).
    pub fn of(e: &anyhow::Error) -> WireError {
        match e.chain().find_map(|c| c.downcast_ref::<FsbenchError>()) {
            Some(FsbenchError::DiskFull {
                phase, ops, errno, ..
            }) => WireError::DiskFull {
                phase: phase.clone(),
                ops: *ops,
                errno: errno.clone(),
            },
            Some(FsbenchError::InvalidInput(_)) => WireError::InvalidInput(format!("{e:#}")),
            Some(FsbenchError::Interrupted) => WireError::Interrupted,
            _ => WireError::Failed(format!("{e:#}")),
        }
    }
}

impl From<FsbenchError> for WireError {
    fn from(e: FsbenchError) -> WireError {
        WireError::of(&e.into())
    }
}

impl From<WireError> for FsbenchError {
    fn from(e: WireError) -> FsbenchError {
        match e {
            // The runner, which knows the target, says what to do about it.
            WireError::DiskFull { phase, ops, errno } => FsbenchError::DiskFull {
                phase,
                ops,
                errno,
                remedy: SPACE_REMEDY,
            },
            WireError::InvalidInput(text) => FsbenchError::InvalidInput(text),
            WireError::Interrupted => FsbenchError::Interrupted,
            WireError::Failed(text) => FsbenchError::Failed(text),
        }
    }
}

/// Shorthand for an `InvalidInput` error wrapped in `anyhow`.
pub fn invalid(msg: impl Into<String>) -> anyhow::Error {
    FsbenchError::InvalidInput(msg.into()).into()
}

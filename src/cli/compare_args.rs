//! The arguments of `compare` and `report` (shared by the views that compare configurations).

use std::path::PathBuf;

use fsbench_stats::compare;

#[derive(Debug, clap::Args)]
pub(super) struct CompareArgs {
    /// Configurations: ID (all of a suite's) or ID:CONFIG, from one suite or several
    #[arg(required = true)]
    pub(super) columns: Vec<String>,
    /// The column the others are compared with: ID:CONFIG, or a configuration's label
    /// (`xfs`) that one compared suite has [default: the first]
    #[arg(long, value_name = "[ID:]CONFIG")]
    pub(super) baseline: Option<String>,
    /// Noise threshold: a verdict needs a difference of at least this percentage; "≈ same"
    /// means the difference is bounded within it
    #[arg(long, default_value_t = compare::DEFAULT_NOISE_PERCENT, value_name = "PERCENT")]
    pub(super) noise: f64,
    /// A table and the one-line answers, or JSON
    #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
    pub(super) output_format: CompareFormat,
    /// Every figure in the table (times, throughput, CPU, sync, the workloads' own), not
    /// only the phases' verdicts
    #[arg(long)]
    pub(super) details: bool,
    #[command(flatten)]
    pub(super) database: super::Database,
}

/// What `compare` writes: a comparison, which no suite report renders.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(super) enum CompareFormat {
    /// Tables for a person
    Table,
    /// One versioned JSON document
    Json,
}

#[derive(Debug, clap::Args)]
pub(super) struct ReportArgs {
    /// Suites (ID) or single configurations (ID:CONFIG); the first is the baseline
    #[arg(required = true)]
    pub(super) columns: Vec<String>,
    /// Output file (`-`: stdout)
    #[arg(short = 'o', long, default_value = "report.html")]
    pub(super) output: PathBuf,
    /// Noise threshold: a verdict needs a difference of at least this percentage; "≈ same"
    /// means the difference is bounded within it
    #[arg(long, default_value_t = compare::DEFAULT_NOISE_PERCENT, value_name = "PERCENT")]
    pub(super) noise: f64,
    #[command(flatten)]
    pub(super) database: super::Database,
}

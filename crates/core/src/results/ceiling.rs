//! The harness ceiling's record: each phase's rate on tmpfs, the share of it a phase reached,
//! and the threshold above which a phase is harness-bound. Measuring it is the runner's.

use serde::{Deserialize, Serialize};

use crate::measure::Figure;
use crate::results::PhaseRecord;
use crate::sysinfo::SystemInfo;

/// Above this share of the ceiling a phase is harness-bound.
pub const HARNESS_BOUND_PERCENT: f64 = 80.0;
/// The figure that says it: a phase's (or a matrix cell's) rate as a share of the ceiling.
pub const HARNESS_PERCENT: &str = "harness %";

/// One phase's rate on tmpfs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PhaseCeiling {
    pub phase: String,
    /// Units per second.
    pub rate: f64,
    /// A matrix phase's cells (IOzone's): each cell's throughput on tmpfs, for a harness %
    /// per cell where the phase has no one rate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<Figure>,
}

/// The figure of a matrix cell that its harness % compares.
pub const CELL_FIGURE: &str = "throughput";

/// A workload's ceiling on one machine, kernel and fsbench version.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Ceiling {
    pub workload: String,
    pub fsbench_version: String,
    pub cpu_model: String,
    pub kernel_release: String,
    pub measured_at: String,
    /// The threads it ran on, the workload's; 0 in caches older than the count (measured
    /// when threads shared one descriptor table), which are measured again.
    #[serde(default)]
    pub threads: u32,
    pub phases: Vec<PhaseCeiling>,
}

impl Ceiling {
    /// A matrix phase's `harness %` per cell: each cell's throughput as a percentage of the
    /// same cell's on tmpfs (cells the ceiling lacks, skipped there for space, get none).
    pub fn cell_percents(&self, phase: &PhaseRecord) -> Vec<Figure> {
        let Some(ceiling) = self.phases.iter().find(|c| c.phase == phase.name) else {
            return Vec::new();
        };
        (phase.figures.iter())
            .filter(|f| f.name == CELL_FIGURE && !f.dims.is_empty())
            .filter_map(|f| {
                let top = ceiling.cells.iter().find(|c| c.dims == f.dims)?.value;
                (top > 0.0).then(|| {
                    Figure::new(HARNESS_PERCENT, "%", false, 100.0 * f.value / top).at(&f.dims)
                })
            })
            .collect()
    }

    /// The phase's rate as a percentage of its ceiling, when both are known.
    pub fn percent_of(&self, phase: &PhaseRecord) -> Option<f64> {
        // A matrix phase (iozone) gets no ceiling, so the search below finds none for it.
        if phase.unsupported.is_some() || phase.idle.is_some() {
            return None;
        }
        let ceiling = self.phases.iter().find(|c| c.phase == phase.name)?.rate;
        let rate = phase.measurement.ops_per_sec();
        (ceiling > 0.0 && rate.is_finite()).then(|| 100.0 * rate / ceiling)
    }

    pub fn matches(&self, workload: &str, system: &SystemInfo) -> bool {
        self.workload == workload
            && self.fsbench_version == system.fsbench_version
            && self.cpu_model == system.cpu_model
            && self.kernel_release == system.kernel_release
    }
}

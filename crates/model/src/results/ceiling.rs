//! The harness ceiling's record: each phase's rate on tmpfs, the share of it a phase reached,
//! and the threshold above which a phase is harness-bound. Measuring it is the runner's.

use serde::{Deserialize, Serialize};

use crate::measurement::Figure;
use crate::results::PhaseRecord;
use crate::results::summary::Summary;

/// Above this share of the ceiling a phase is harness-bound.
pub const HARNESS_BOUND_PERCENT: f64 = 80.0;

/// A harness % summary says harness-bound: over [`HARNESS_BOUND_PERCENT`] on average, and no
/// run past its round's ceiling (a ceiling a phase outran bounds nothing).
pub fn harness_bound(percent: &Summary) -> bool {
    percent.mean > HARNESS_BOUND_PERCENT && !outran(percent)
}

/// Some run was faster than the ceiling measured in its round: the ceiling is not comparable.
pub fn outran(percent: &Summary) -> bool {
    percent.max > 100.0
}
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

/// A workload's ceiling in one round of a suite, on its machine, kernel and fsbench version.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Ceiling {
    pub workload: String,
    /// The round it was measured in, right before that round's runs; 0 in suites from before
    /// ceilings were measured per round (one ceiling then serves every run).
    #[serde(default)]
    pub round: u32,
    pub fsbench_version: String,
    pub cpu_model: String,
    pub kernel_release: String,
    pub measured_at: String,
    /// The threads it ran on, the workload's; 0 in suites older than the count.
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
}

/// The ceiling that serves run `run` of `workload`: its own round's, else a suite's only one.
pub fn for_run<'a>(ceilings: &'a [Ceiling], workload: &str, run: u32) -> Option<&'a Ceiling> {
    let of = |round| (ceilings.iter()).find(|c| c.workload == workload && c.round == round);
    of(run).or_else(|| of(0))
}

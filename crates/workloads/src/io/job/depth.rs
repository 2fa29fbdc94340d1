//! A job's depth limit under fio's latency target: the search's steps at each completion,
//! the queueing engines' room, the quiesce before the next window and the restart of the
//! job's figures for its final run ([`crate::io::latency`]).

use std::time::Instant;

use super::{Job, Span};
use crate::io::latency::{DepthSearch, Step};
use crate::io::params::IoParams;
use crate::io::pattern::Next;
use fsbench_measure::error::FsbenchError;

/// The search of a job with a latency target, in its timed part (its ramp runs at depth
/// 1, where fio's search starts).
pub(super) fn search_of(params: &IoParams, span: Span) -> Option<DepthSearch> {
    let target = params.latency_target.filter(|_| span.measured)?;
    Some(DepthSearch::new(target, params.iodepth))
}

impl Job<'_> {
    /// Whether a queueing engine with `in_use` I/Os queued or in flight may queue another:
    /// under the search's depth limit (fio's `queue_full`), at depth 1 in the ramp.
    #[inline]
    pub(crate) fn has_room(&self, in_use: usize) -> bool {
        match (&self.search, self.params.latency_target) {
            (Some(search), _) => in_use < search.depth() as usize,
            (None, Some(_)) => in_use < 1,
            (None, None) => true,
        }
    }

    /// Whether the search ended the job (its final window ran).
    #[inline]
    pub(super) fn search_done(&self) -> bool {
        self.search.as_ref().is_some_and(DepthSearch::done)
    }

    /// Whether the I/Os in flight must complete before the next is queued (the depth
    /// changed).
    #[inline]
    pub(super) fn search_quiesces(&self) -> bool {
        self.search.as_ref().is_some_and(DepthSearch::quiescing)
    }

    /// The search's step at a completed I/O (`lat_ns` from its preparation, at `done`): a
    /// miss of a 100% target at depth 1 fails the job as fio's (`lat_fatal`).
    #[inline]
    pub(super) fn search_step(
        &mut self,
        io: Next,
        lat_ns: u64,
        done: Instant,
    ) -> Result<(), FsbenchError> {
        let Some(search) = &mut self.search else {
            return Ok(());
        };
        if search.completed(lat_ns, done) != Step::Fails {
            return Ok(());
        }
        let target = self.params.latency_target.map_or(0, |t| t.target_ns);
        Err(FsbenchError::Failed(format!(
            "io: latency of {lat_ns} nsec exceeds specified max ({target} nsec): {} {} {} {} (fio's latency_target at depth 1 with latency_percentile=100 fails the job: ETIMEDOUT)",
            self.names[io.file],
            if io.read { "read" } else { "write" },
            io.offset,
            io.len
        )))
    }

    /// With nothing in flight after the depth changed: the next window starts, and when the
    /// search found its depth the job's figures are dropped and its time starts again (fio
    /// starts its epoch again, so `runtime` counts from here too).
    pub(super) fn settle_depth(&mut self) {
        let restarts = (self.search.as_mut())
            .filter(|s| s.quiescing())
            .is_some_and(DepthSearch::settled);
        if restarts {
            self.out.restart();
            // The final window and the job's time start together, after the figures were
            // dropped (which takes its time): its runtime is then never under a window.
            let now = Instant::now();
            self.start = now;
            if let Some(search) = &mut self.search {
                search.window_from(now);
            }
        }
    }
}

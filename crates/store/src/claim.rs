//! Who runs a suite: the process that began it or claimed it for `--resume`, named by pid,
//! start time and boot ID, so that a dead claimer's claim is free.

use rusqlite::{OptionalExtension, params};

use super::{Store, recovery, status_name};
use fsbench_measure::error::invalid;
use fsbench_model::results::SuiteStatus;

impl Store {
    /// Claims suite `id` for `--resume` by this process, atomically: of two processes resuming
    /// it at once, one gets it and the other is refused. A suite still run by a live process
    /// (its first `run` or another resume) is refused too; a dead claimer's claim is free.
    pub fn claim_suite(&mut self, id: i64) -> anyhow::Result<()> {
        let path = self.path.display().to_string();
        recovery::write_patiently(&mut self.conn, |tx| {
            let claim = tx
                .query_row(
                    "SELECT status, pid, pid_start, boot_id FROM suites WHERE id = ?1",
                    [id],
                    |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, i64>(2)?,
                            r.get::<_, Option<String>>(3)?,
                        ))
                    },
                )
                .optional()?;
            let Some((status, pid, pid_start, boot)) = claim else {
                return Err(invalid(format!("no suite {id} in {path}")));
            };
            if status == status_name(&SuiteStatus::Completed) {
                return Err(invalid(format!(
                    "suite {id} is complete; nothing to resume"
                )));
            }
            if status == "running" && claimer_alive(pid, pid_start, boot.as_deref()) {
                return Err(invalid(format!(
                    "suite {id} is still running in another process (pid {pid}); wait for it to end, or stop it and resume then"
                )));
            }
            let me = std::process::id();
            tx.execute(
            "UPDATE suites SET status = 'running', error = NULL, finished_at = NULL, pid = ?2, pid_start = ?3, boot_id = ?4
             WHERE id = ?1",
            params![
                id,
                me,
                fsbench_measure::sysinfo::process_start_ticks(me).unwrap_or(0) as i64,
                boot_id()
            ],
        )?;
            Ok(())
        })
    }
}

/// This boot's identity; a pid and start time name a process only within one boot.
pub(super) fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_string())
}

/// Whether the process that claimed a suite still runs. Claims recorded before the boot ID
/// was (`None`) are judged by pid and start time alone.
pub(super) fn claimer_alive(pid: i64, start: i64, boot: Option<&str>) -> bool {
    boot.is_none_or(|b| boot_id().as_deref() == Some(b))
        && fsbench_measure::sysinfo::process_start_ticks(pid as u32)
            .is_some_and(|t| t as i64 == start)
}

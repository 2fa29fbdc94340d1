//! Reading suites back: a suite with its configurations, runs and phases, and the list.

use super::*;
use fsbench_model::workload::WorkloadSpec;

/// How this fsbench labels a kept workload (`tree:quick`), or says it cannot read it: the
/// store keeps workloads as specs, and only the workloads' code knows their labels.
pub type LabelOf = fn(&WorkloadSpec) -> String;

impl Store {
    /// The suite as it was run and stored: its records, without summaries or warnings
    /// (what the records say is the statistics' to work out). `label_of` finds the runs that
    /// were stored before their workload's key was.
    // One piece: the suite row's columns, read and converted in the SELECT's order.
    pub fn load(&self, id: i64, label_of: LabelOf) -> anyhow::Result<SuiteResult> {
        let row = self
            .conn
            .query_row(
                "SELECT definition, system, target, skipped, started_at, finished_at, status, error, pid, pid_start,
                        boot_id, testbed, ceilings, workloads
                 FROM suites WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, Option<String>>(5)?,
                        r.get::<_, String>(6)?,
                        r.get::<_, Option<String>>(7)?,
                        r.get::<_, i64>(8)?,
                        r.get::<_, i64>(9)?,
                        r.get::<_, Option<String>>(10)?,
                        r.get::<_, Option<String>>(11)?,
                        r.get::<_, Option<String>>(12)?,
                        r.get::<_, Option<String>>(13)?,
                    ))
                },
            )
            .optional()?
            .ok_or_else(|| invalid(format!("no suite {id} in {}", self.path.display())))?;
        let (
            definition,
            system,
            target,
            skipped,
            started_at,
            finished_at,
            status,
            error,
            pid,
            pid_start,
            boot,
            testbed,
            ceilings,
            workloads,
        ) = row;
        let suite: Suite = from_json(&definition, "suite definition")?;
        let status = match status.as_str() {
            "running" if claimer_alive(pid, pid_start, boot.as_deref()) => SuiteStatus::Running,
            "running" => SuiteStatus::Incomplete,
            other => parse_status(other)?,
        };
        let configurations = self.load_configurations(id)?;
        let runs = self.load_runs(id, &suite, &configurations, label_of)?;
        Ok(SuiteResult {
            schema_version: SCHEMA_VERSION,
            id: Some(id),
            started_at,
            finished_at: finished_at.unwrap_or_default(),
            status,
            error,
            suite,
            system: from_json::<SystemInfo>(&system, "system description")?,
            target: from_json::<TargetInfo>(&target, "target description")?,
            configurations,
            skipped: from_json::<Vec<Skipped>>(&skipped, "skipped list")?,
            runs,
            summaries: Vec::new(),
            warnings: Vec::new(),
            testbed: testbed
                .map(|text| from_json(&text, "storage stack"))
                .transpose()?,
            ceilings: ceilings
                .map(|text| from_json(&text, "harness ceilings"))
                .transpose()?
                .unwrap_or_default(),
            workload_records: workloads
                .map(|text| from_json(&text, "workload records"))
                .transpose()?
                .unwrap_or_default(),
        })
    }

    pub(super) fn load_configurations(&self, id: i64) -> anyhow::Result<Vec<ConfigInfo>> {
        let mut stmt = self.conn.prepare(
            "SELECT definition, mkfs_version, fsck_version, mkfs_command, mount_options, crash
             FROM configurations WHERE suite_id = ?1 ORDER BY position",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
            ))
        })?;
        rows.map(|row| {
            let (definition, mkfs_version, fsck_version, mkfs_command, mount_options, crash) = row?;
            Ok(ConfigInfo {
                config: from_json::<FsConfig>(&definition, "configuration")?,
                mkfs_version,
                fsck_version,
                mkfs_command,
                mount_options,
                crash: match crash {
                    Some(c) => from_json(&c, "crash check")?,
                    None => Vec::new(),
                },
            })
        })
        .collect()
    }

    pub(super) fn load_runs(
        &self,
        id: i64,
        suite: &Suite,
        configurations: &[ConfigInfo],
        label_of: LabelOf,
    ) -> anyhow::Result<Vec<RunRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, round, position, config, workload, started_at, status, error, source,
                    mkfs_secs, mount_options, unmount_secs, fsck_clean, fsck_secs, fsck_output, incomplete,
                    config_key, workload_key, loop_device, testbed, preparation, probe_after
             FROM runs WHERE suite_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([id], |r| {
            let fsck = match (r.get::<_, Option<bool>>(12)?, r.get::<_, Option<f64>>(13)?) {
                (Some(clean), Some(secs)) => Some(FsckOutcome {
                    clean,
                    secs,
                    output: r.get(14)?,
                }),
                _ => None,
            };
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(6)?,
                (r.get::<_, Option<u32>>(16)?, r.get::<_, Option<u32>>(17)?),
                (
                    r.get::<_, Option<String>>(18)?,
                    r.get::<_, Option<String>>(19)?,
                    r.get::<_, Option<String>>(20)?,
                    r.get::<_, Option<String>>(21)?,
                ),
                RunRecord {
                    run: r.get(1)?,
                    position: r.get(2)?,
                    config_key: ConfigKey(0),
                    workload_key: WorkloadKey(0),
                    config: r.get(3)?,
                    workload: r.get(4)?,
                    started_at: r.get(5)?,
                    status: RunStatus::Ok,
                    error: r.get(7)?,
                    source: r.get(8)?,
                    mkfs_secs: r.get(9)?,
                    mount_options: r.get(10)?,
                    phases: Vec::new(),
                    unmount_secs: r.get(11)?,
                    fsck,
                    incomplete: r.get(15)?,
                    loop_device: None,
                    testbed: None,
                    preparation: None,
                    probe_after: None,
                    output: Vec::new(),
                },
            ))
        })?;
        let mut runs = Vec::new();
        // Runs written before keys were stored are found by their labels (once per suite).
        let labels: Vec<String> = suite.workloads.iter().map(label_of).collect();
        for row in rows {
            let (run_id, status, keys, json, mut run) = row?;
            run.status = parse_status(&status)?;
            read_json_columns(&mut run, json)?;
            (run.config_key, run.workload_key) = keys_of(&run, keys, configurations, &labels);
            run.phases = self.load_phases(run_id)?;
            run.output = self.load_output(run_id)?;
            runs.push(run);
        }
        Ok(runs)
    }

    fn load_output(&self, run_id: i64) -> anyhow::Result<Vec<KeptOutput>> {
        let mut stmt = self.conn.prepare(
            "SELECT step, stdout, stderr FROM run_output WHERE run_id = ?1 ORDER BY idx",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            Ok(KeptOutput {
                step: r.get(0)?,
                stdout: r.get(1)?,
                stderr: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub(super) fn load_phases(&self, run_id: i64) -> anyhow::Result<Vec<PhaseRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT idx, name, elapsed_ns, ops, bytes, cpu_user_ns, cpu_system_ns, caches_dropped, sync_after_ns,
                    refused, failures, figures, notes, unsupported, shape, idle, jobs
             FROM phases WHERE run_id = ?1 ORDER BY idx",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                PhaseRecord {
                    name: r.get(1)?,
                    measurement: PhaseMeasurement {
                        elapsed_ns: r.get::<_, i64>(2)? as u64,
                        ops: r.get::<_, i64>(3)? as u64,
                        bytes: r.get::<_, i64>(4)? as u64,
                        cpu_user_ns: r.get::<_, i64>(5)? as u64,
                        cpu_system_ns: r.get::<_, i64>(6)? as u64,
                        latency: Default::default(),
                        errors: Default::default(),
                        refused: r.get::<_, i64>(9)? as u64,
                        failures: Vec::new(),
                        latency_timeline: Default::default(),
                        jobs: Vec::new(),
                        logs: Default::default(),
                    },
                    caches_dropped: r.get(7)?,
                    sync_after_ns: r.get::<_, Option<i64>>(8)?.map(|v| v as u64),
                    progress: Vec::new(),
                    rank_progress: Vec::new(),
                    figures: Vec::new(),
                    notes: Vec::new(),
                    unsupported: r.get(13)?,
                    idle: r.get(15)?,
                    shape: Default::default(),
                },
                r.get::<_, String>(10)?,
                r.get::<_, String>(11)?,
                r.get::<_, String>(12)?,
                r.get::<_, Option<String>>(14)?,
                r.get::<_, Option<String>>(16)?,
            ))
        })?;
        let mut phases = Vec::new();
        for row in rows {
            let (idx, mut phase, failures, figures, notes, shape, jobs) = row?;
            if let Some(shape) = shape {
                phase.shape = from_json(&shape, "phase shape")?;
            }
            if let Some(jobs) = jobs {
                phase.measurement.jobs = from_json(&jobs, "phase's fio jobs")?;
            }
            phase.measurement.failures = from_json(&failures, "failure list")?;
            phase.figures = from_json(&figures, "phase figures")?;
            phase.notes = from_json(&notes, "phase notes")?;
            self.load_phase_details(run_id, idx, &mut phase)?;
            phases.push(phase);
        }
        Ok(phases)
    }

    /// Phase `idx` of run `run_id`: its errors, latencies and progress series.
    fn load_phase_details(
        &self,
        run_id: i64,
        idx: i64,
        phase: &mut PhaseRecord,
    ) -> anyhow::Result<()> {
        let m = &mut phase.measurement;
        let mut errors = self.conn.prepare_cached(
            "SELECT errno, count FROM phase_errors WHERE run_id = ?1 AND idx = ?2",
        )?;
        for e in errors.query_map(params![run_id, idx], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })? {
            let (errno, count) = e?;
            m.errors.insert(errno, count as u64);
        }
        let mut latency = self.conn.prepare_cached(
            "SELECT op, count, mean_ns, min_ns, p50_ns, p90_ns, p99_ns, p999_ns, max_ns, histogram
                 FROM latency WHERE run_id = ?1 AND idx = ?2",
        )?;
        for l in latency.query_map(params![run_id, idx], |r| {
            Ok((
                r.get::<_, String>(0)?,
                LatencySummary {
                    count: r.get::<_, i64>(1)? as u64,
                    mean_ns: r.get(2)?,
                    min_ns: r.get::<_, i64>(3)? as u64,
                    p50_ns: r.get::<_, i64>(4)? as u64,
                    p90_ns: r.get::<_, i64>(5)? as u64,
                    p99_ns: r.get::<_, i64>(6)? as u64,
                    p999_ns: r.get::<_, i64>(7)? as u64,
                    max_ns: r.get::<_, i64>(8)? as u64,
                    histogram: r.get(9)?,
                },
            ))
        })? {
            let (op, summary) = l?;
            m.latency.insert(op, summary);
        }
        let series: Option<(String, Option<String>, String)> = self
            .conn
            .query_row(
                "SELECT series, latency, ranks FROM progress WHERE run_id = ?1 AND idx = ?2",
                params![run_id, idx],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        if let Some((series, latency, ranks)) = series {
            phase.progress = from_json(&series, "progress series")?;
            if let Some(latency) = latency {
                phase.measurement.latency_timeline = from_json(&latency, "latency timeline")?;
            }
            phase.rank_progress = from_json(&ranks, "ranks' progress series")?;
        }
        Ok(())
    }

    /// The most recent suites, newest first, their workloads labelled by `label_of`.
    pub fn list(&self, limit: usize, label_of: LabelOf) -> anyhow::Result<Vec<SuiteListing>> {
        let mut stmt = self.conn.prepare(
            "SELECT s.id, s.started_at, s.status, s.definition, s.pid, s.pid_start, s.boot_id,
                    (SELECT group_concat(c.label, char(31) ORDER BY c.position)
                     FROM configurations c WHERE c.suite_id = s.id),
                    (SELECT COUNT(*) FROM runs r WHERE r.suite_id = s.id AND r.status IN ('ok', 'fsck-failed'))
             FROM suites s ORDER BY s.id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit as i64], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, i64>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, Option<String>>(7)?,
                r.get::<_, i64>(8)? as usize,
            ))
        })?;
        rows.map(|row| {
            let (
                id,
                started_at,
                status,
                definition,
                pid,
                pid_start,
                boot,
                configurations,
                runs_done,
            ) = row?;
            // A suite this fsbench cannot read (one written by a newer version) is listed as
            // such, and the others still are; so is a workload it does not know.
            let suite: Option<Suite> = from_json(&definition, "suite definition").ok();
            // Labels joined by the unit separator, which no label contains.
            let configurations: Vec<String> = configurations
                .iter()
                .flat_map(|labels| labels.split('\u{1f}'))
                .map(String::from)
                .collect();
            let status = match status.as_str() {
                "running" if !claimer_alive(pid, pid_start, boot.as_deref()) => {
                    "incomplete".to_string()
                }
                s => s.to_string(),
            };
            let Some(suite) = suite else {
                return Ok(SuiteListing {
                    id,
                    started_at,
                    status,
                    runs_planned: runs_done,
                    name: "?".into(),
                    configurations,
                    workloads: vec!["(not readable by this version of fsbench)".into()],
                    runs_done,
                });
            };
            let workloads: Vec<String> = suite.workloads.iter().map(label_of).collect();
            Ok(SuiteListing {
                id,
                started_at,
                status,
                runs_planned: configurations.len() * suite.workloads.len() * suite.runs as usize,
                name: suite.display_name(&workloads, &configurations),
                configurations,
                workloads,
                runs_done,
            })
        })
        .collect()
    }
}

/// A run's JSON columns: its loop device, storage stack, preparation, free-space probe.
type RunJson = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn read_json_columns(run: &mut RunRecord, json: RunJson) -> anyhow::Result<()> {
    let (loop_device, testbed, preparation, probe_after) = json;
    run.loop_device = (loop_device.map(|text| from_json(&text, "loop device"))).transpose()?;
    run.testbed = (testbed.map(|text| from_json(&text, "run's storage stack"))).transpose()?;
    run.preparation =
        (preparation.map(|text| from_json(&text, "run's preparation"))).transpose()?;
    run.probe_after =
        (probe_after.map(|text| from_json(&text, "run's free-space probe"))).transpose()?;
    Ok(())
}

/// A run's configuration and workload keys: as stored, or for a run written before keys
/// were, found by its labels. One its suite does not have (a damaged row) points nowhere:
/// the run is kept and shown, but counted in no summary, as before keys.
fn keys_of(
    run: &RunRecord,
    (config_key, workload_key): (Option<u32>, Option<u32>),
    configurations: &[ConfigInfo],
    workload_labels: &[String],
) -> (ConfigKey, WorkloadKey) {
    let config_key = config_key.or_else(|| {
        let place = (configurations.iter()).position(|c| c.config.label == run.config);
        place.map(|p| p as u32)
    });
    let workload_key = workload_key.or_else(|| {
        let place = workload_labels.iter().position(|w| *w == run.workload);
        place.map(|p| p as u32)
    });
    (
        ConfigKey(config_key.unwrap_or(u32::MAX)),
        WorkloadKey(workload_key.unwrap_or(u32::MAX)),
    )
}

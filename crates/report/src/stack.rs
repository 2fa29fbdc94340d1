//! The storage stack in words, for `show`, the tables and the HTML report, and the warning
//! `compare` gives when compared configurations ran on different stacks.

use fsbench_model::results::SuiteResult;
use fsbench_model::testbed::{BlockQueue, LoadAverage, SuiteTestbed};
use fsbench_stats::compare::Column;

fn load_text(load: Option<LoadAverage>) -> String {
    load.map_or("unknown".to_string(), |[a, b, c]| {
        format!("{a:.2} {b:.2} {c:.2}")
    })
}

fn queue_text(q: &BlockQueue) -> String {
    let mut parts = Vec::new();
    if let Some(m) = &q.model {
        parts.push(m.clone());
    }
    match q.rotational {
        Some(true) => parts.push("rotational".into()),
        Some(false) => parts.push("non-rotational".into()),
        None => {}
    }
    let settings = [
        ("scheduler", q.scheduler.clone()),
        ("nr_requests", q.nr_requests.map(|v| v.to_string())),
        ("read_ahead_kb", q.read_ahead_kb.map(|v| v.to_string())),
        ("write cache", q.write_cache.clone()),
        (
            "logical/physical block",
            q.logical_block_size
                .zip(q.physical_block_size)
                .map(|(l, p)| format!("{l}/{p}")),
        ),
    ];
    parts.extend(
        settings
            .into_iter()
            .filter_map(|(name, v)| Some(format!("{name} {}", v?))),
    );
    if parts.is_empty() {
        q.name.clone()
    } else {
        format!("{} ({})", q.name, parts.join(", "))
    }
}

/// The stack, a line per layer: identity, backing chain, writeback tunables, load.
pub fn describe(t: &SuiteTestbed) -> Vec<String> {
    let s = &t.stack;
    let mut lines = vec![format!(
        "stack {}: Linux {}, virtual machine {}, container {}, CPU governor {}, transparent huge pages {}",
        t.stack_hash,
        s.kernel_release,
        s.virtual_machine,
        s.container.as_deref().unwrap_or("unknown"),
        s.cpu_governor.as_deref().unwrap_or("none (no cpufreq)"),
        s.transparent_hugepages.as_deref().unwrap_or("unknown")
    )];
    if let Some(b) = &s.backing {
        let fs = match (&b.fstype, &b.mount_source) {
            (Some(fs), Some(src)) => format!(
                " on {fs} ({src}, {})",
                b.mount_options.as_deref().unwrap_or("")
            ),
            _ => String::new(),
        };
        let devices: Vec<String> = b.devices.iter().map(queue_text).collect();
        lines.push(format!(
            "backing: {}{fs} → {}",
            b.path.display(),
            if devices.is_empty() {
                "no block device".to_string()
            } else {
                devices.join(" → ")
            }
        ));
    }
    let vm = &s.vm;
    let value = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
    lines.push(format!(
        "vm: dirty_ratio {}, dirty_background_ratio {}, dirty_bytes {}, dirty_background_bytes {}, dirty_expire_centisecs {}, dirty_writeback_centisecs {}, swappiness {}",
        value(vm.dirty_ratio),
        value(vm.dirty_background_ratio),
        value(vm.dirty_bytes),
        value(vm.dirty_background_bytes),
        value(vm.dirty_expire_centisecs),
        value(vm.dirty_writeback_centisecs),
        value(vm.swappiness)
    ));
    if let Some(reporting) = &s.free_page_reporting {
        lines.push(format!(
            "free page reporting: {reporting} (freed memory goes back to the host; tmpfs and page-cache runs depend on what ran before them)"
        ));
    }
    if let Some(b) = &t.baseline {
        lines.push(fsbench_model::testbed::raw::describe(b));
    }
    lines.push(format!(
        "load average: {} at start, {} at end",
        load_text(t.load_start),
        load_text(t.load_end)
    ));
    lines
}

/// The harness ceilings of the suite's workloads, a line per workload with each phase's rate
/// (the median of the rounds' ceilings, where each round measured its own).
pub(crate) fn ceiling_lines(r: &SuiteResult) -> Vec<String> {
    let mut workloads: Vec<&str> = Vec::new();
    for c in &r.ceilings {
        if !workloads.contains(&c.workload.as_str()) {
            workloads.push(&c.workload);
        }
    }
    workloads
        .into_iter()
        .map(|workload| {
            let rounds: Vec<_> = (r.ceilings.iter())
                .filter(|c| c.workload == workload)
                .collect();
            let c = rounds[0];
            let phases = r
                .workload_record(&c.workload)
                .map_or(&[][..], |w| &w.phases);
            // A phase with nothing to do (an empty file set) has no rate to show.
            let rates: Vec<String> = c
                .phases
                .iter()
                .filter(|p| p.rate > 0.0)
                .map(|p| {
                    // A matrix has no one rate: its cells are its ceiling.
                    if !p.cells.is_empty() {
                        return format!("{} {} cells (throughput each)", p.phase, p.cells.len());
                    }
                    let unit = phases
                        .iter()
                        .find(|i| i.name == p.phase)
                        .map_or("units", |i| &i.unit);
                    let all: Vec<f64> = (rounds.iter())
                        .flat_map(|c| c.phases.iter().filter(|o| o.phase == p.phase))
                        .map(|o| o.rate)
                        .collect();
                    let median = fsbench_stats::summarize(&all).map_or(p.rate, |s| s.median);
                    format!("{} {} {unit}/s", p.phase, super::figure(median))
                })
                .collect();
            let threads = match c.threads {
                0 | 1 => String::new(),
                n => format!(" at {n} workers"),
            };
            let when = match rounds.len() {
                1 if c.round == 0 => format!("measured {}", c.measured_at),
                1 => "measured before its round".to_string(),
                n => format!("median of {n} rounds, each measured before its round"),
            };
            format!(
                "{}{threads}: {} ({when}, fsbench {})",
                c.workload,
                rates.join(", "),
                c.fsbench_version
            )
        })
        .collect()
}

/// One warning per compared suite whose stack differs from the first column's suite's,
/// naming every difference (a kernel, a dirty_ratio, a scheduler): the suite varied the
/// filesystems' configurations, nothing below them.
pub fn compare_warnings(suites: &[SuiteResult], columns: &[Column]) -> Vec<String> {
    let find = |id: i64| suites.iter().find(|s| s.id.unwrap_or(0) == id);
    let Some(base) = columns.first().and_then(|c| find(c.suite_id)) else {
        return Vec::new();
    };
    let mut ids: Vec<i64> = columns.iter().map(|c| c.suite_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut warnings = Vec::new();
    let base_id = base.id.unwrap_or(0);
    for other in ids
        .iter()
        .filter(|id| **id != base_id)
        .filter_map(|id| find(*id))
    {
        let other_id = other.id.unwrap_or(0);
        match (&base.testbed, &other.testbed) {
            (Some(a), Some(b)) => {
                let diff = a.stack.differences(&b.stack);
                if !diff.is_empty() {
                    warnings.push(format!(
                        "suites #{base_id} and #{other_id} ran on different storage stacks ({} vs {}): {}",
                        a.stack_hash,
                        b.stack_hash,
                        diff.join("; ")
                    ));
                }
            }
            (None, None) => {}
            _ => warnings.push(format!(
                "suite #{} has no recorded storage stack (recorded by an older fsbench): suites #{base_id} and #{other_id} may differ below the filesystem",
                if base.testbed.is_none() { base_id } else { other_id }
            )),
        }
    }
    warnings
}

//! What a replay's notes say: the calls that came out otherwise than in the capture, what
//! was refused, every call not made as the program made it, counted by reason (those the
//! capture did not record, those the replay made otherwise); whether the tree it left is
//! the program's is [`super::compare`]'s.

use std::collections::BTreeMap;

use super::engine::{Adapted, Replayed, workers_of};
use super::load::Loaded;
use super::trace::Kind;
use fsbench_measure::measure::errno_name;
use fsbench_measure::units::shown;
use fsbench_model::units::group_thousands;
use fsbench_model::workload::WorkerMode;

/// The longest example of a call not recorded, as shown.
const EXAMPLE_MAX: usize = 100;

/// The workers' records, added up.
#[derive(Default)]
pub(super) struct Tally {
    /// (kind, errno here or 0, errno in the capture or 0) → calls.
    pub mismatches: BTreeMap<(Kind, i32, i32), u64>,
    pub samples: Vec<String>,
    pub refused: u64,
    pub adapted: [u64; Adapted::ALL.len()],
    pub mapped: Vec<Vec<u8>>,
}

impl Tally {
    pub(super) fn add(&mut self, r: Replayed) {
        for (key, n) in r.mismatches {
            *self.mismatches.entry(key).or_default() += n;
        }
        self.samples.extend(r.samples);
        self.refused += r.refused;
        for (all, n) in self.adapted.iter_mut().zip(r.adapted) {
            *all += n;
        }
        for p in r.mapped {
            if !self.mapped.contains(&p) {
                self.mapped.push(p);
            }
        }
    }
}

/// The notes of one replay of `loaded`.
pub(super) fn notes(tally: &Tally, refused_entries: u64, loaded: &Loaded) -> Vec<String> {
    let mut notes = Vec::new();
    let mismatched: u64 = tally.mismatches.values().sum();
    if mismatched > 0 {
        let side = |e: i32| {
            if e == 0 {
                "ok".to_string()
            } else {
                errno_name(e)
            }
        };
        let kinds: Vec<String> = (tally.mismatches.iter())
            .map(|((kind, here, there), n)| {
                format!("{} {}→{} ×{n}", kind.name(), side(*there), side(*here))
            })
            .collect();
        notes.push(format!(
            "{} of the replay's calls came out otherwise than in the capture (kind \
             capture→here): {}",
            group_thousands(mismatched),
            kinds.join(", ")
        ));
    }
    let refused = tally.refused + refused_entries;
    if refused > 0 {
        notes.push(format!(
            "{} paths of the trace lead outside the run's directory: refused, nothing made \
             there",
            group_thousands(refused)
        ));
    }
    for s in tally.samples.iter().take(10) {
        notes.push(format!("replay: {s}"));
    }
    for (reason, n, example) in &loaded.skipped {
        let mut example = shown(example);
        if example.len() > EXAMPLE_MAX {
            let cut = (0..=EXAMPLE_MAX)
                .rev()
                .find(|&i| example.is_char_boundary(i));
            example.truncate(cut.unwrap_or(0));
            example.push('…');
        }
        notes.push(format!(
            "not replayed: {} calls {reason}, not recorded by the capture (as {example})",
            group_thousands(*n)
        ));
    }
    if loaded.skipped.is_empty() && loaded.dropped > 0 {
        notes.push(format!(
            "not replayed: {} calls the capture did not record (outside the root, pipes...)",
            group_thousands(loaded.dropped)
        ));
    }
    for how in Adapted::ALL {
        let n = tally.adapted[how as usize];
        if n > 0 {
            notes.push(adapted(how, n, &tally.mapped));
        }
    }
    notes
}

/// The note on calls made otherwise than the program made them.
fn adapted(how: Adapted, n: u64, mapped: &[Vec<u8>]) -> String {
    let n = group_thousands(n);
    match how {
        Adapted::Reopened => format!(
            "replayed otherwise: {n} descriptors the traced thread did not open itself \
             (inherited or another thread's) were opened by their path first"
        ),
        Adapted::Ownership => {
            format!("replayed otherwise: {n} chown calls made with -1, -1 (ownership kept)")
        }
        Adapted::TimesNow => format!(
            "replayed otherwise: {n} utimensat calls set the current time, not the recorded one"
        ),
        Adapted::NoDirect => {
            format!("replayed otherwise: {n} opens without O_DIRECT (the buffer is not aligned)")
        }
        Adapted::Mapped => {
            let files: Vec<String> = mapped.iter().map(|p| shown(p)).collect();
            format!(
                "replayed otherwise: {n} mmap calls map the same range and fault each of its \
                 pages within the file in once (which pages the program touched is not \
                 recorded): {}",
                files.join(", ")
            )
        }
    }
}

/// `n` of `one` (`1 thread`, `3 threads`, `2 processes`), thousands grouped.
pub(super) fn counted(n: u64, one: &str) -> String {
    let many = match one.ends_with('s') {
        true => "es",
        false => "s",
    };
    format!(
        "{} {one}{}",
        group_thousands(n),
        if n == 1 { "" } else { many }
    )
}

/// The note on what replayed the traced processes and threads in `mode` (none for a trace
/// without calls).
pub(super) fn workers(loaded: &Loaded, mode: WorkerMode) -> Option<String> {
    if loaded.threads.is_empty() {
        return None;
    }
    let (workers, threads) = workers_of(loaded, mode);
    let traced = counted(loaded.threads.len() as u64, "traced thread");
    let on = counted(threads as u64, "thread");
    let recorded = loaded.version >= super::trace::PROCESSES_SINCE;
    let processes = counted(loaded.processes.len() as u64, "traced process");
    Some(match (mode, recorded) {
        (WorkerMode::Threads, true) => {
            format!("replayed {processes} ({traced}) as {on} of fsbench's process")
        }
        (WorkerMode::Threads, false) => format!("replayed {traced} as {on} of fsbench's process"),
        (WorkerMode::Processes, false) => format!(
            "trace format version {} records no processes: its {traced} replayed as threads \
             of one process (fsbench's own), on {on}",
            loaded.version
        ),
        (WorkerMode::Processes, true) if workers == 1 => {
            format!("replayed {processes} ({traced}) in fsbench's own process, on {on}")
        }
        (WorkerMode::Processes, true) => format!(
            "replayed {processes} ({traced}) as {} running {on} in all",
            counted(workers as u64, "worker process")
        ),
    })
}

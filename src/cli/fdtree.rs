//! `fsbench fdtree`: fdtree.bash's flags and report, on fsbench's measured workload.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use rustix::fs::{Mode, OFlags};

use fsbench_engine::runner::phases::{PhaseSettings, run_phase};
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::Progress;
use fsbench_model::results::PhaseRecord;
use fsbench_report::fdtree as report;
use fsbench_workloads::WorkloadParams;
use fsbench_workloads::tree::{self, Tree, TreeParams};

/// fdtree.bash's options. Unset numbers take fdtree's defaults (-l 4 -d 10 -f 10 -s 10), except
/// with -R, where they are read from the tree that -C left.
#[derive(Debug, Args)]
pub(super) struct FdtreeArgs {
    /// Levels below the root directory [default: 4]
    #[arg(short = 'l')]
    pub levels: Option<u32>,
    /// Subdirectories per directory [default: 10]
    #[arg(short = 'd')]
    pub dirs: Option<u32>,
    /// Files per directory [default: 10]
    #[arg(short = 'f')]
    pub files: Option<u32>,
    /// File size in 4 KiB blocks [default: 10]
    #[arg(short = 's')]
    pub size: Option<u32>,
    /// Starting directory; the tree is LEVEL0.<host>.<pid> inside it
    #[arg(short = 'o', default_value = ".")]
    pub dir: PathBuf,
    /// Create the tree only (leave it for a later -R)
    #[arg(short = 'C')]
    pub create_only: bool,
    /// Remove the tree only: the one LEVEL0.* tree in the starting directory
    #[arg(short = 'R')]
    pub remove_only: bool,
    /// Debugging: latency percentiles and errors of each phase on stderr
    #[arg(short = 'D')]
    pub debug: bool,
}

impl FdtreeArgs {
    fn given(&self) -> bool {
        self.levels.is_some() || self.dirs.is_some() || self.files.is_some() || self.size.is_some()
    }

    fn params(&self) -> TreeParams {
        TreeParams::new(
            self.dirs.unwrap_or(10),
            self.files.unwrap_or(10),
            self.size.unwrap_or(10),
            self.levels.unwrap_or(4),
        )
    }
}

/// Reads a tree's parameters back from its root: children `L<l>D<n>` and files `L<l>F<n>`
/// give levels, directories and files per level; the size of `L<l>F1` gives the blocks.
fn infer_params(root: &Path) -> anyhow::Result<TreeParams> {
    let (mut levels, mut dirs, mut files) = (None, 0, 0);
    for entry in
        std::fs::read_dir(root).with_context(|| format!("cannot read {}", root.display()))?
    {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix('L') else {
            continue;
        };
        let Some(split) = rest.find(['D', 'F']) else {
            continue;
        };
        let (Ok(level), Ok(n)) = (
            rest[..split].parse::<u32>(),
            rest[split + 1..].parse::<u32>(),
        ) else {
            continue;
        };
        levels = Some(level);
        if rest.as_bytes()[split] == b'D' {
            dirs = dirs.max(n);
        } else {
            files = files.max(n);
        }
    }
    let levels =
        levels.ok_or_else(|| invalid(format!("-R: {} holds no fdtree entries", root.display())))?;
    let first_file = root.join(format!("L{levels}F1"));
    let bytes = first_file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok(TreeParams::new(
        dirs.max(1),
        files,
        bytes.div_ceil(tree::BLOCK as u64) as u32,
        levels,
    ))
}

/// The single `LEVEL0.*` directory a previous `-C` left in `dir`.
fn existing_tree(dir: &Path) -> anyhow::Result<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("LEVEL0."))
        .collect();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(invalid(format!(
            "-R: no LEVEL0.* tree in {}; create one with -C first",
            dir.display()
        ))),
        _ => Err(invalid(format!(
            "-R: several trees in {} ({}); remove all but one",
            dir.display(),
            found.join(", ")
        ))),
    }
}

pub(super) fn run(args: &FdtreeArgs, progress: Arc<Progress>) -> anyhow::Result<()> {
    let (create, remove, base, params) = what_to_run(args)?;
    let shown = args.dir.join(&base);
    let dir = rustix::fs::open(
        &args.dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", args.dir.display()))?;
    super::write_stdout(&report::header(&params, &shown.display().to_string()))?;
    let mut workload = Tree::new(params, base);
    let settings = PhaseSettings {
        settle: false,
        progress,
    };
    let mut console = super::console::Console::new(!args.debug);
    let left_at = || {
        format!(
            "{}; remove it with `fsbench fdtree -R -o {}`",
            shown.display(),
            args.dir.display()
        )
    };
    // fdtree's phases: the workload runs them by index, in this order.
    let phases = (tree::Phase::FDTREE.into_iter().enumerate()).filter(|(_, p)| match p {
        tree::Phase::DirCreate | tree::Phase::FileCreate => create,
        _ => remove,
    });
    let start = Instant::now();
    let mut failed_calls = 0;
    for (index, phase) in phases {
        super::write_stdout(&format!("{}\n", report::date()))?;
        let tin = start.elapsed().as_secs_f64();
        let record = run_phase(
            &mut workload,
            index,
            &dir,
            &settings,
            "fdtree",
            &mut console,
        )
        .inspect_err(|_| {
            super::console::say(&format!(
                "fsbench: the partial tree is left at {}",
                left_at()
            ));
        })
        .map_err(FsbenchError::from)?;
        failed_calls += print_phase(args, phase, tin, &record)?;
    }
    if create && !remove {
        super::console::say(&format!("fsbench: tree left at {}", left_at()));
    }
    if failed_calls > 0 {
        return Err(FsbenchError::Failed(format!(
            "{failed_calls} system calls failed; the tree does not match -d/-f/-l/-s or was changed"
        ))
        .into());
    }
    Ok(())
}

/// Which of fdtree's halves run (neither or both of -C and -R means both), the tree's root
/// name (a new one, or the one -C left) and its parameters (given, or read from that tree).
fn what_to_run(args: &FdtreeArgs) -> anyhow::Result<(bool, bool, String, TreeParams)> {
    match args.dir.metadata() {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(invalid(format!(
                "-o {}: not a directory",
                args.dir.display()
            )));
        }
        Err(e) => return Err(invalid(format!("-o {}: {e}", args.dir.display()))),
    }
    let (create, remove) = if args.create_only == args.remove_only {
        (true, true)
    } else {
        (args.create_only, args.remove_only)
    };
    let base = if create {
        tree::default_base_name()
    } else {
        existing_tree(&args.dir)?
    };
    let params = if !create && !args.given() {
        infer_params(&args.dir.join(&base))?
    } else {
        args.params()
    };
    params.validate()?;
    Ok((create, remove, base, params))
}

/// A phase's block as fdtree prints it (IN at `tin` seconds), its latencies with `-v`, and
/// its failed calls, counted (returned) and said.
fn print_phase(
    args: &FdtreeArgs,
    phase: tree::Phase,
    tin: f64,
    record: &PhaseRecord,
) -> anyhow::Result<u64> {
    // fdtree's TOTAL is OUT - IN; here both come from the phase's own clock.
    let tout = tin + record.measurement.elapsed_secs();
    super::write_stdout(&format!(
        "{}\n{}",
        report::date(),
        report::phase_block(phase, tin, tout, &record.measurement)
    ))?;
    if args.debug {
        for (op, l) in &record.measurement.latency {
            super::console::say(&format!(
                "  {op:9} calls {:>9}  p50 {:>9.1} µs  p99 {:>9.1} µs  max {:>10.1} µs",
                l.count,
                l.p50_ns as f64 / 1e3,
                l.p99_ns as f64 / 1e3,
                l.max_ns as f64 / 1e3
            ));
        }
    }
    let mut failed_calls = 0;
    for (errno, n) in &record.measurement.errors {
        super::console::say(&format!(
            "fsbench: {}: {n} failed calls ({errno})",
            phase.info().name
        ));
        failed_calls += n;
    }
    Ok(failed_calls)
}

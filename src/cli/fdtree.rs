//! `fsbench fdtree`: fdtree.bash's flags and report, on fsbench's measured workload.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use rustix::fs::{Mode, OFlags};

use crate::error::invalid;
use crate::measure::Progress;
use crate::report::fdtree as report;
use crate::runner::phases::{PhaseSettings, run_phase};
use crate::workload::Workload;
use crate::workload::tree::{self, Tree, TreeParams};

/// fdtree.bash's options, with its defaults.
#[derive(Debug, Args)]
pub struct FdtreeArgs {
    /// Levels below the root directory
    #[arg(short = 'l', default_value_t = 4)]
    pub levels: u32,
    /// Subdirectories per directory
    #[arg(short = 'd', default_value_t = 10)]
    pub dirs: u32,
    /// Files per directory
    #[arg(short = 'f', default_value_t = 10)]
    pub files: u32,
    /// File size in 4 KiB blocks
    #[arg(short = 's', default_value_t = 10)]
    pub size: u32,
    /// Starting directory; the tree is LEVEL0.<host>.<pid> inside it
    #[arg(short = 'o', default_value = ".")]
    pub dir: PathBuf,
    /// Create the tree only (leave it for a later -R)
    #[arg(short = 'C')]
    pub create_only: bool,
    /// Remove the tree only (the one LEVEL0.* tree in the starting directory)
    #[arg(short = 'R')]
    pub remove_only: bool,
    /// Debugging: latency percentiles and errors of each phase on stderr
    #[arg(short = 'D')]
    pub debug: bool,
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

pub fn run(args: &FdtreeArgs, progress: Arc<Progress>) -> anyhow::Result<()> {
    let params = TreeParams::new(args.dirs, args.files, args.size, args.levels);
    params.validate()?;
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
    // fdtree: neither or both of -C and -R means both.
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
    let dir = rustix::fs::open(
        &args.dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", args.dir.display()))?;
    let shown = args.dir.join(&base);
    print!("{}", report::header(&params, &shown.display().to_string()));
    let mut workload = Tree::new(params, base);
    let settings = PhaseSettings {
        settle: false,
        show_progress: !args.debug,
        progress,
    };
    let phases: Vec<usize> = (0..workload.phases().len())
        .filter(|&p| {
            if p <= tree::FILE_CREATE {
                create
            } else {
                remove
            }
        })
        .collect();
    let start = Instant::now();
    for index in phases {
        println!("{}", report::date());
        let tin = start.elapsed().as_secs_f64();
        let record = run_phase(&mut workload, index, &dir, &settings, "fdtree").inspect_err(|_| {
            eprintln!("fsbench: the partial tree is left at {}; remove it with `fsbench fdtree -R -o {}`", shown.display(), args.dir.display());
        })?;
        let tout = start.elapsed().as_secs_f64();
        println!("{}", report::date());
        print!(
            "{}",
            report::phase_block(index, tin, tout, &record.measurement)
        );
        if args.debug {
            for (op, l) in &record.measurement.latency {
                eprintln!(
                    "  {op:9} calls {:>9}  p50 {:>9.1} µs  p99 {:>9.1} µs  max {:>10.1} µs",
                    l.count,
                    l.p50_ns as f64 / 1e3,
                    l.p99_ns as f64 / 1e3,
                    l.max_ns as f64 / 1e3
                );
            }
            for (errno, n) in &record.measurement.errors {
                eprintln!("  errors: {errno} ×{n}");
            }
        }
    }
    if create && !remove {
        eprintln!(
            "fsbench: tree left at {}; remove it with `fsbench fdtree -R -o {}`",
            shown.display(),
            args.dir.display()
        );
    }
    Ok(())
}

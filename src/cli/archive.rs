//! `fsbench archive`: write a generated BackupPC-shaped archive as a tar file, or extract (and
//! remove) an archive with fsbench's extractor, outside a suite.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Subcommand;
use rustix::fs::{Mode, OFlags};

use fsbench_engine::runner::phases::{PhaseSettings, run_phase};
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::measure::Progress;
use fsbench_workloads::WorkloadParams;
use fsbench_workloads::archive::{Archive, ArchiveParams, Source};

#[derive(Debug, Subcommand)]
pub(super) enum ArchiveCommand {
    /// Write a generated archive as a tar file (gzip or zstd when the name ends .gz/.tgz/.zst)
    Generate {
        /// A preset (tiny, small, seed-1pct, seed-10pct) and/or KEY=N settings, as for
        /// `--workload archive:...`
        #[arg(default_value = "tiny")]
        shape: String,
        /// The tar file to write (`.gz` or `.zst` compresses it)
        #[arg(short = 'o', long)]
        output: PathBuf,
    },
    /// Extract an archive into a directory (as `tar -xf FILE -C DIR`) and print the figures
    Extract {
        /// A tar file (plain, gzip, zstd, xz, bzip2 or lzop), or `generated:SHAPE` for a generated archive
        archive: String,
        /// Directory to extract into
        #[arg(short = 'C', long)]
        dir: PathBuf,
        /// Then remove everything extracted (as `rm -rf`), measured too; DIR must be empty
        #[arg(long)]
        remove: bool,
    },
}

pub(super) fn run(command: &ArchiveCommand, progress: Arc<Progress>) -> anyhow::Result<()> {
    match command {
        ArchiveCommand::Generate { shape, output } => generate(shape, output),
        ArchiveCommand::Extract {
            archive,
            dir,
            remove,
        } => extract(archive, dir, *remove, progress),
    }
}

/// `archive generate`: the shape's archive as a tar file (gzip or zstd by its name).
fn generate(shape: &str, output: &Path) -> anyhow::Result<()> {
    let params = ArchiveParams::parse(shape)?;
    params.validate()?;
    let Source::Generated { shape, .. } = &params.source else {
        return Err(invalid(
            "generate makes archives; `file=` names an existing one",
        ));
    };
    let file = std::fs::File::create(output)
        .with_context(|| format!("cannot create {}", output.display()))?;
    let out = std::io::BufWriter::with_capacity(1 << 20, file);
    let name = output.to_string_lossy();
    let written = if name.ends_with(".gz") || name.ends_with(".tgz") {
        let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
        shape.write_tar(&mut gz)?;
        gz.finish()?.flush()
    } else if name.ends_with(".zst") {
        let mut zst = zstd::stream::write::Encoder::new(out, 3)?;
        shape.write_tar(&mut zst)?;
        zst.finish()?.flush()
    } else {
        shape.write_tar(out)
    };
    written.with_context(|| format!("cannot write {}", output.display()))?;
    let (entries, bytes, _) = shape.totals();
    super::console::say(&format!(
        "fsbench: wrote {} ({entries} entries, {} bytes of file data)",
        output.display(),
        bytes
    ));
    Ok(())
}

/// `archive extract`: the archive (a file, or `generated:SHAPE`) extracted into `dir`, then
/// removed with `remove` (which asks for an empty directory).
fn extract(archive: &str, dir: &Path, remove: bool, progress: Arc<Progress>) -> anyhow::Result<()> {
    let params = match archive.strip_prefix("generated:") {
        Some(shape) => ArchiveParams::parse(shape)?,
        None => ArchiveParams::from_file(Path::new(archive))?,
    };
    params.validate()?;
    match dir.metadata() {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(invalid(format!("-C {}: not a directory", dir.display()))),
        Err(e) => return Err(invalid(format!("-C {}: {e}", dir.display()))),
    }
    // The remove phase removes everything in the directory, as `rm -rf DIR/*` would:
    // only in an empty one is that exactly what the extraction made.
    if remove
        && let Some(first) = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read {}", dir.display()))?
            .next()
    {
        return Err(invalid(format!(
            "-C {} is not empty (it holds {:?}, among others): --remove removes everything in the directory, so it needs an empty one",
            dir.display(),
            first?.file_name()
        )));
    }
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", dir.display()))?;
    let mut workload = Archive::extracting_into(params, None);
    let settings = PhaseSettings {
        settle: false,
        progress,
    };
    let mut console = super::console::Console::new(true);
    let phases = if remove { 2 } else { 1 };
    let mut records = Vec::new();
    for index in 0..phases {
        let record = run_phase(
            &mut workload,
            index,
            &fd,
            &settings,
            "archive",
            &mut console,
        )
        .map_err(FsbenchError::from)?;
        let m = &record.measurement;
        super::console::say(&format!(
            "fsbench: {}: {} entries in {:.3} s: {:.1} entries/s, {:.1} MiB/s{}",
            record.name,
            m.ops,
            m.elapsed_secs(),
            m.ops_per_sec(),
            m.bytes as f64 / 1048576.0 / m.elapsed_secs(),
            m.failure_summary()
                .map(|f| format!("; INCOMPLETE TREE: {f}"))
                .unwrap_or_default()
        ));
        for f in &m.failures {
            super::console::say(&format!("fsbench:   {f}"));
        }
        records.push(record);
    }
    super::write_stdout(&(serde_json::to_string_pretty(&records)? + "\n"))?;
    Ok(())
}

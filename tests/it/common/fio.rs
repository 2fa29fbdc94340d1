//! Running `fsbench fio` on a job file, as the fio tests do.

use std::path::Path;
use std::process::Output;

use super::{fsbench, run};

/// `fsbench fio` on `job` (written into `state` as `job.fio`) in `dir`, one run; its
/// output with fsbench's own document (`--export-json`) as its stdout, since `fsbench fio`
/// prints fio's.
pub fn fio_job_json(state: &Path, dir: &Path, job: &str) -> Output {
    fio_job_json_with(state, dir, job, &[])
}

/// [`fio_job_json`] with the environment variables `env` set for fsbench.
pub fn fio_job_json_with(state: &Path, dir: &Path, job: &str, env: &[(&str, &str)]) -> Output {
    let jobfile = state.join("job.fio");
    let exported = state.join("job.json");
    std::fs::write(&jobfile, job).unwrap();
    let _ = std::fs::remove_file(&exported);
    let mut out = run(fsbench(state)
        .envs(env.iter().copied())
        .args(["fio", "-q", "--runs", "1", "--export-json"])
        .arg(&exported)
        .arg("--dir")
        .arg(dir)
        .arg(&jobfile));
    out.stdout = std::fs::read(&exported).unwrap_or_default();
    out
}

/// `fsbench fio JOBFILE` in `dir`, one run, fio's output in `format` on its stdout.
pub fn fio_output(state: &Path, dir: &Path, jobfile: &Path, format: &str) -> std::process::Output {
    run(fsbench(state)
        .args([
            "fio",
            "-q",
            "--runs",
            "1",
            "--output-format",
            format,
            "--dir",
        ])
        .arg(dir)
        .arg(jobfile))
}

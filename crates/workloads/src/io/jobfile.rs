//! fio job files (`fsbench fio JOBFILE`): `[global]` and job sections, `key=value` or a bare
//! `key`, `;` and `#` comments, `include FILE`, `${VAR}` from the environment, fio's size
//! suffixes; each job becomes one io workload. An option fsbench does not implement is
//! refused with its file and line, never ignored.

use std::path::Path;

use super::IoParams;
use super::table::KIND;
use crate::WorkloadParams;
use fsbench_measure::error::invalid;

/// Options that shape how fio runs or reports jobs, not what a job does: accepted, since
/// fsbench does the same (threads, one report per job).
const ACCEPTED: &[&str] = &[
    "name",
    "description",
    "thread",
    "group_reporting",
    "new_group",
];

/// fio's keys that fsbench decides itself, refused with the reason.
const REFUSED: &[(&str, &str)] = &[
    (
        "filename",
        "fsbench gives every job files of its own in the run's fresh directory (--dir or --fs)",
    ),
    (
        "directory",
        "fsbench gives every job files of its own in the run's fresh directory (--dir or --fs)",
    ),
    ("filename_format", "fsbench names the files io.JOB.FILE"),
];

/// Include files nested deeper than this are refused (an include cycle).
const MAX_DEPTH: usize = 8;

/// One `key=value` of a section.
struct Line {
    key: String,
    value: String,
}

struct Section {
    name: String,
    at: String,
    options: Vec<Line>,
}

/// The jobs of a fio job file, in order, as io workloads.
pub fn read(path: &Path) -> anyhow::Result<Vec<IoParams>> {
    let mut sections = Vec::new();
    read_into(path, 0, &mut sections)?;
    let mut global: Vec<&Line> = Vec::new();
    let mut jobs = Vec::new();
    for s in &sections {
        if s.name == "global" {
            global.extend(&s.options);
            continue;
        }
        jobs.push(job(s, &global, jobs.is_empty())?);
    }
    if jobs.is_empty() {
        return Err(invalid(format!("{}: no job section", path.display())));
    }
    Ok(jobs)
}

/// One job: the global options then its own (a key given in both: its own wins, as in fio).
fn job(s: &Section, global: &[&Line], first: bool) -> anyhow::Result<IoParams> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut stonewall = false;
    for line in global.iter().copied().chain(&s.options) {
        let key = line.key.as_str();
        if matches!(key, "stonewall" | "wait_for_previous") {
            stonewall = line.value.is_empty() || line.value == "1";
            continue;
        }
        if ACCEPTED.contains(&key) {
            continue;
        }
        pairs.retain(|(k, _)| k.replace('-', "_") != key.replace('-', "_"));
        pairs.push((key.to_string(), line.value.clone()));
    }
    if !first && !stonewall {
        return Err(invalid(format!(
            "{}: job `{}` runs beside the one before it in fio (no `stonewall`): fsbench runs one job at a time; add `stonewall`, or give parallel copies as `numjobs`",
            s.at, s.name
        )));
    }
    let mut params = KIND
        .parse_pairs(&pairs)
        .and_then(|p| super::params::build(&p))
        .map_err(|e| invalid(format!("{}: job `{}`: {e}", s.at, s.name)))?;
    params.preset = None;
    params.job = Some(s.name.clone());
    params
        .validate()
        .map_err(|e| invalid(format!("{}: job `{}`: {e}", s.at, s.name)))?;
    Ok(params)
}

/// `${VAR}` replaced by the environment's value; an unset one is an error.
fn substitute(text: &str, at: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find('}')
            .ok_or_else(|| invalid(format!("{at}: `${{` without its `}}`")))?;
        let name = &rest[start + 2..start + end];
        let value = std::env::var(name)
            .map_err(|_| invalid(format!("{at}: ${{{name}}} is not set in the environment")))?;
        out.push_str(&value);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn read_into(path: &Path, depth: usize, sections: &mut Vec<Section>) -> anyhow::Result<()> {
    if depth > MAX_DEPTH {
        return Err(invalid(format!(
            "{}: includes nested more than {MAX_DEPTH} deep (a cycle?)",
            path.display()
        )));
    }
    let text = fsbench_measure::calls::read_text_file(path, "fio job file")?;
    for (i, raw) in text.lines().enumerate() {
        let at = format!("{}:{}", path.display(), i + 1);
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        let line = substitute(line, &at)?;
        if let Some(name) = line.strip_prefix('[') {
            let name = name
                .strip_suffix(']')
                .ok_or_else(|| invalid(format!("{at}: a section is `[name]`")))?;
            sections.push(Section {
                name: name.trim().to_string(),
                at,
                options: Vec::new(),
            });
            continue;
        }
        if let Some(file) = line.strip_prefix("include ") {
            let file = Path::new(file.trim());
            let file = match path.parent() {
                Some(dir) if file.is_relative() => dir.join(file),
                _ => file.to_path_buf(),
            };
            read_into(&file, depth + 1, sections)?;
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((&line, ""));
        let (key, value) = (key.trim().to_string(), value.trim().to_string());
        let known = KIND.has_option(&key)
            || ACCEPTED.contains(&key.as_str())
            || matches!(key.as_str(), "stonewall" | "wait_for_previous");
        if let Some((_, why)) = REFUSED.iter().find(|(k, _)| *k == key) {
            return Err(invalid(format!("{at}: `{key}` is not used: {why}")));
        }
        if !known || key == "preset" {
            return Err(invalid(format!(
                "{at}: fio option `{key}` is not implemented by fsbench's io workload (`fsbench run --help` lists what is)"
            )));
        }
        let Some(section) = sections.last_mut() else {
            return Err(invalid(format!("{at}: `{key}` before any `[section]`")));
        };
        section.options.push(Line { key, value });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn globals_includes_environment_and_stonewalls_make_jobs() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "common.fio",
            "; shared\n[global]\nioengine=io_uring\niodepth=16\n",
        );
        // The environment is read, not written: other tests' threads run beside this one.
        let search = std::env::var("PATH").unwrap();
        assert_eq!(substitute("a${PATH}b", "x").unwrap(), format!("a{search}b"));
        let path = write(
            dir.path(),
            "job.fio",
            "include common.fio\n[global]\nsize=64M\nbs=4K\n\n[read]\nrw=randread\ndirect=1\n# a comment\n[write]\nstonewall\nrw=write\nbs=128k\nend_fsync=1\nthread\n",
        );
        let jobs = read(&path).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].job.as_deref(), Some("read"));
        assert_eq!(
            (jobs[0].iodepth, jobs[0].size, jobs[0].direct),
            (16, 64 << 20, true)
        );
        assert_eq!(
            (jobs[1].rw, jobs[1].bssplit[0].0, jobs[1].end_fsync),
            (super::super::Rw::Write, 128 << 10, true)
        );
        assert!(jobs[1].name().starts_with("write"));
    }

    #[test]
    fn what_fsbench_does_not_do_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        for (text, needle) in [
            (
                "[a]\nsize=1m\nverify=md5\n",
                "job.fio:3: fio option `verify` is not implemented",
            ),
            (
                "[a]\nsize=1m\nfilename=/dev/sda\n",
                "job.fio:3: `filename` is not used",
            ),
            (
                "[a]\nsize=1m\n[b]\nsize=1m\n",
                "job.fio:3: job `b` runs beside",
            ),
            (
                "[a]\nsize=${IO_TEST_UNSET}\n",
                "job.fio:2: ${IO_TEST_UNSET} is not set",
            ),
            (
                "[a]\nsize=1m\nrw=trim\n",
                "job.fio:1: job `a`: io: `rw` is one of",
            ),
            ("size=1m\n", "before any `[section]`"),
        ] {
            let path = write(dir.path(), "job.fio", text);
            let err = format!("{:#}", read(&path).unwrap_err());
            assert!(err.contains(needle), "{text:?}: {err}");
        }
        let path = write(dir.path(), "loop.fio", "include loop.fio\n");
        assert!(format!("{:#}", read(&path).unwrap_err()).contains("a cycle"));
    }
}

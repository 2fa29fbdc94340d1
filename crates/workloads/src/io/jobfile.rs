//! fio job files (`fsbench fio JOBFILE`, `-` for stdin): `[global]` and job sections,
//! `key=value` or a bare `key`, whole-line and inline `;` and `#` comments, `include FILE`,
//! `${VAR}` from the environment, fio's keywords and arithmetic, fio's size suffixes and
//! other spellings; each job becomes one io workload. An option fsbench does not implement
//! is refused with its file and line, never ignored.

use std::path::Path;

use super::table::KIND;
use super::{Engine, IoParams};
use crate::WorkloadParams;
use fsbench_measure::error::invalid;

mod cap;
mod fixups;
mod groups;
mod spelling;
mod target;
mod units;
mod values;
mod written;
pub use cap::Cap;
#[cfg(test)]
pub(crate) use groups::read_text;
pub use target::Targets;

/// Options that shape how fio measures or reports jobs, not what a job does: accepted,
/// since fsbench reports each job and measures every latency anyway (fio's `gtod_reduce`
/// and `disable_*` only spare fio the clock reads; the `*_percentiles` and
/// `percentile_list` choose what fio prints, and fsbench prints its own percentiles).
/// `verify_async` hands fio's checks to threads of their own, and `experimental_verify`
/// has fio replay its offsets instead of logging the blocks written: what is checked is the
/// same, and fsbench checks on the job's own thread from its record of the blocks written.
/// `error_dump` has fio print each error `continue_on_error` goes past; fsbench counts them
/// (fio's `total_err`, `first_error`) and prints none, as its workloads never print.
/// `flow_watermark` is deprecated in fio 3.33, which takes it and does nothing with it.
/// `create_serialize` chooses whether fio's threads lay out their files one after another
/// before the jobs start or each its own as it starts; fsbench lays out every job's files
/// before the timed phase either way.
const ACCEPTED: &[&str] = &[
    "name",
    "new_group",
    "gtod_reduce",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "verify_async",
    "experimental_verify",
    "error_dump",
    "flow_watermark",
    "create_serialize",
];

/// fio's defaults where the io workload's own differ (its `rw=randread` and registered
/// buffers and files suit a command line, not a job file read as fio reads it).
const FIO_DEFAULTS: &[(&str, &str)] = &[
    ("rw", "read"),
    ("fixedbufs", "0"),
    ("registerfiles", "0"),
    ("scramble_buffers", "1"),
];

/// Include files nested deeper than this are refused (an include cycle).
const MAX_DEPTH: usize = 8;

/// One `key=value` of a section, with where it was written (`FILE:LINE`).
struct Line {
    key: String,
    value: String,
    at: String,
}

struct Section {
    name: String,
    at: String,
    options: Vec<Line>,
}

/// The jobs of a fio job file (`-`: standard input), in order, as io workloads (scaled by
/// `cap`): jobs that fio runs at the same time (no `stonewall` between them) are one
/// workload, the later ones `beside` the first. Absolute file names inside the directory
/// fsbench was given are taken relative to it, and the block device it was given as is.
pub fn read(path: &Path, cap: &Cap, targets: &Targets) -> anyhow::Result<Vec<IoParams>> {
    let mut sections = Vec::new();
    let keywords = values::Keywords::of_this_machine();
    read_into(path, 0, &keywords, &mut sections)?;
    let mut global: Vec<&Line> = Vec::new();
    let mut jobs: Vec<IoParams> = Vec::new();
    let (exitall, exit_running) = exit_all(&sections)?;
    // fio's group ids and thread numbers, over the whole file.
    let (mut groupid, mut next_thread) = (0, 1);
    // A job of the jobs running now has `exit_what=all`: when it ends, fio stops every job
    // and starts none after it. It ends before its jobs do, so fio never starts the jobs
    // after the next stonewall; they are read (and refused as fio would), kept for fio's
    // outputs (which list them), and not run.
    let (mut ends_all, mut never_started) = (false, false);
    for s in &sections {
        if s.name == "global" {
            global.extend(&s.options);
            continue;
        }
        let (mut params, stonewall, new_group) = job(s, &global, (targets, cap), &jobs)?;
        never_started |= ends_all && stonewall;
        ends_all |= exitall && exit_what(s, &global) == Some("all");
        if !jobs.is_empty() && (stonewall || new_group) {
            groupid += 1;
            if exitall && !stonewall && !exit_running {
                return Err(invalid(format!(
                    "{}: job `{}`: `exitall` stops the finished job's reporting group alone, and this `new_group` runs beside it: not implemented (give `exit_what=stonewall`, or `stonewall`)",
                    s.at, s.name
                )));
            }
        }
        params.exitall = exitall;
        let fio = params.fio.get_or_insert_default();
        (fio.groupid, fio.first_thread) = (groupid, next_thread);
        next_thread += params.numjobs;
        cap.apply(&mut params);
        params
            .validate()
            .map_err(|e| invalid(format!("{}: job `{}` under the cap: {e}", s.at, s.name)))?;
        if never_started {
            if let Some(last) = jobs.last_mut() {
                last.never_started.push(params);
            }
            continue;
        }
        groups::verify_only(s, &global, &mut params, before(&jobs, stonewall))?;
        match jobs.last_mut() {
            Some(before) if !stonewall => before.beside.push(params),
            _ => jobs.push(params),
        }
    }
    if jobs.is_empty() {
        return Err(invalid(format!("{}: no job section", path.display())));
    }
    jobs.iter().try_for_each(steady_by_group)?;
    jobs.iter_mut().for_each(dedupe_over_group);
    groups::link(&mut jobs);
    Ok(jobs)
}

/// fio checks a group reporting as one for steady state as one: its jobs must ask the same.
fn steady_by_group(together: &IoParams) -> anyhow::Result<()> {
    let group = |p: &IoParams| {
        p.fio
            .as_ref()
            .filter(|f| f.group_reporting)
            .map(|f| f.groupid)
    };
    for (a, b) in together.jobs().zip(together.jobs().skip(1)) {
        if group(a).is_some() && group(a) == group(b) && a.steady != b.steady {
            return Err(invalid(format!(
                "job `{}`: steadystate options must be consistent within reporting groups (fio rejects the job)",
                b.job.as_deref().unwrap_or("?")
            )));
        }
    }
    Ok(())
}

/// fio's `dedupe_global` spreads a job's working set over the threads running with it:
/// those of `group`, numbered from its first.
fn dedupe_over_group(group: &mut IoParams) {
    let first = group.fio.as_ref().map_or(0, |f| f.first_thread);
    let threads: u32 = group.jobs().map(|j| j.numjobs).sum();
    let global = std::iter::once(&mut group.contents)
        .chain(group.beside.iter_mut().map(|j| &mut j.contents))
        .filter_map(|c| c.dedupe_threads.as_mut());
    for spread in global {
        *spread = (first, threads);
    }
}

/// fio's `exitall` (in any section, it holds for every job: fio's option sets it for the
/// whole run) and whether a job's `exit_what=stonewall` (or `all`) stops every job running,
/// not only its reporting group (fio's default, `group`).
fn exit_all(sections: &[Section]) -> anyhow::Result<(bool, bool)> {
    let (mut exitall, mut running) = (false, false);
    for line in sections.iter().flat_map(|s| &s.options) {
        match (line.key.replace('-', "_").as_str(), line.value.as_str()) {
            ("exitall", v) => exitall |= spelling::flag(v),
            ("exit_what", "group") => {}
            ("exit_what", "stonewall" | "all") => running = true,
            ("exit_what", v) => {
                return Err(invalid(format!(
                    "{}: `exit_what={v}`: fio takes `group`, `stonewall` or `all`",
                    line.at
                )));
            }
            _ => {}
        }
    }
    Ok((exitall, running))
}

/// Option `k` set to `v` by the line at `at`, over what the lines before said; but fio adds
/// each `filename` line's files to those the job has (its globals' too: a job of its own
/// `filename` under a global one uses both).
fn set<'a>(pairs: &mut Vec<(String, String, &'a str)>, k: String, v: String, at: &'a str) {
    let before = pairs.iter().position(|(have, _, _)| *have == k);
    let before = before.map(|i| pairs.remove(i).1);
    let v = match before {
        Some(files) if k == "filename" => format!("{files}:{v}"),
        _ => v,
    };
    pairs.push((k, v, at));
}

/// The groups that ran before a job's: all so far, or all but the one it runs beside.
fn before(jobs: &[IoParams], stonewall: bool) -> &[IoParams] {
    match jobs.len() {
        n if n > 0 && !stonewall => &jobs[..n - 1],
        _ => jobs,
    }
}

/// Job `s`'s `exit_what` (its own, else its globals').
fn exit_what<'s>(s: &'s Section, global: &[&'s Line]) -> Option<&'s str> {
    (global.iter().copied().chain(&s.options))
        .rfind(|l| l.key.replace('-', "_") == "exit_what")
        .map(|l| l.value.as_str())
}

/// fio's `wait_for=NAME`: whether the job starts a group of its own (the jobs running
/// now are NAME's copies alone: a stonewall), or runs beside them (NAME ended before them).
/// Waiting for one of several jobs that run together is refused.
fn waits(line: &Line, jobs: &[IoParams]) -> anyhow::Result<bool> {
    let name = line.value.as_str();
    let named = |p: &IoParams| p.job.as_deref() == Some(name);
    let Some(group) = jobs.iter().position(|g| g.jobs().any(named)) else {
        return Err(invalid(format!(
            "{}: `wait_for={name}`: no job `{name}` before this one",
            line.at
        )));
    };
    if group + 1 < jobs.len() {
        return Ok(false);
    }
    if jobs[group].jobs().all(named) {
        return Ok(true);
    }
    Err(invalid(format!(
        "{}: `wait_for={name}`: waiting for one of the jobs that run together is not implemented (give `stonewall` to wait for all of them)",
        line.at
    )))
}

/// One job: the global options then its own (a key given in both: its own wins, as in
/// fio, but for `filename`, whose files add up), whether it waits for the jobs before it (`stonewall`, or `wait_for` a job of the
/// groups so far, `jobs`), and whether it starts a reporting group of its own
/// (`new_group`).
fn job(
    s: &Section,
    global: &[&Line],
    (targets, cap): (&Targets, &Cap),
    jobs: &[IoParams],
) -> anyhow::Result<(IoParams, bool, bool)> {
    // The io workload's options, each with the line that gave it; first fio's defaults
    // where the io workload's differ.
    let mut pairs: Vec<(String, String, &str)> = FIO_DEFAULTS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string(), s.at.as_str()))
        .collect();
    let (mut stonewall, mut new_group) = (false, false);
    let (mut wait_for, mut raw) = (None, None);
    let kb_base = kb_base_of(s, global)?;
    let mut fio = as_written(s, global);
    for line in global.iter().copied().chain(&s.options) {
        let key = line.key.replace('-', "_");
        if matches!(key.as_str(), "stonewall" | "wait_for_previous") {
            stonewall = spelling::flag(&line.value);
            continue;
        }
        if key == "wait_for" {
            wait_for = Some(line);
            continue;
        }
        if key == "new_group" {
            new_group = spelling::flag(&line.value);
            continue;
        }
        if read_elsewhere(&key, line)? {
            continue;
        }
        if written::apply(&mut fio, &key, &line.value, &s.name)
            .map_err(|why| invalid(format!("{}: {why}", line.at)))?
        {
            continue;
        }
        if ACCEPTED.contains(&key.as_str()) {
            continue;
        }
        if let Some(device) = target::kernel_device(&key, &line.value) {
            raw = Some(device);
            continue;
        }
        if let Some(device) = targets.raw_device(&key, &line.value) {
            raw = Some(device.map_err(|why| invalid(format!("{}: {why}", line.at)))?);
            continue;
        }
        let translated = target::within(&key, &line.value, targets.dir)
            .and_then(|value| spelling::translate(&key, &value))
            .map_err(|why| invalid(format!("{}: {why}", line.at)))?;
        for (k, v) in translated {
            let v = units::as_fio_reads(&k, &v, kb_base);
            // Each value alone first, so that a bad one names its own line.
            KIND.parse_pairs(&[(k.clone(), v.clone())])
                .map_err(|e| invalid(format!("{}: {e}", line.at)))?;
            set(&mut pairs, k, v, &line.at);
        }
    }
    let stonewall = match wait_for {
        Some(line) => waits(line, jobs)?,
        None => stonewall,
    };
    let earlier = before(jobs, stonewall);
    let sizeless = sized(s, raw, cap, &mut pairs)?;
    fixups::untimed_without_runtime(s, &mut pairs, &mut fio);
    let params = params_of(
        s,
        &pairs,
        (fio, raw),
        (earlier, sizeless, cap.size.is_some()),
    )?;
    if params.existing_files {
        groups::no_sizes_of_existing_files(s, global, &pairs)?;
    }
    Ok((params, stonewall, new_group))
}

/// The job's options and its globals as the job file wrote them (fio's JSON output names
/// them so).
fn as_written(s: &Section, global: &[&Line]) -> fsbench_model::fio::FioJob {
    let listed = |lines: &mut dyn Iterator<Item = &Line>| {
        written::listed(lines.map(|l| (l.key.as_str(), l.value.as_str())))
    };
    fsbench_model::fio::FioJob {
        options: listed(&mut s.options.iter()),
        global: listed(&mut global.iter().copied()),
        ..Default::default()
    }
}

/// Whether `key` is read elsewhere than among the job's own options: over the whole file
/// (`exit_all`: fsbench stops every job on an error), where the job runs (`verify_only`), or
/// before the sizes (`kb_base`, and `unit_base`, whose value is checked here).
fn read_elsewhere(key: &str, line: &Line) -> anyhow::Result<bool> {
    match key {
        "exitall" | "exit_what" | "exitall_on_error" | "verify_only" | "kb_base" => Ok(true),
        "unit_base" => {
            units::unit_base(&line.value).map_err(|why| invalid(format!("{}: {why}", line.at)))?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// fio reads `kb_base` before the sizes, wherever it is written in the job or its globals.
fn kb_base_of(s: &Section, global: &[&Line]) -> anyhow::Result<u64> {
    let base_line = (global.iter().copied().chain(&s.options))
        .rev()
        .find(|l| l.key.replace('-', "_") == "kb_base");
    units::kb_base(base_line.map(|l| l.value.as_str())).map_err(|why| {
        invalid(format!(
            "{}: {why}",
            base_line.map_or("", |l| l.at.as_str())
        ))
    })
}

/// Job `s`'s size: given, or on a raw device the device's (as fio), else whether it has
/// none (`true`): it is then its existing files' (at most the cap's), where a group before
/// it made them ([`params_of`]), as fio takes an existing file's size; a size is put in its
/// place, the cap's or one without bound.
fn sized<'s>(
    s: &'s Section,
    raw: Option<&Path>,
    cap: &Cap,
    pairs: &mut Vec<(String, String, &'s str)>,
) -> anyhow::Result<bool> {
    if let (Some(_), Some((_, _, at))) = (raw, pairs.iter().find(|(k, _, _)| k == "offset_percent"))
    {
        return Err(invalid(format!(
            "{at}: `offset=N%` on a block device is not implemented (give the offset in bytes)"
        )));
    }
    let gives_size = |k: &str| matches!(k, "size" | "filesize" | "size_percent");
    // fio's `fill_device` writes until the filesystem is full.
    let fills = |k: &str, v: &str| k == "fill_device" && spelling::flag(v);
    if let (Some(device), false) = (raw, pairs.iter().any(|(k, _, _)| gives_size(k))) {
        let size = target::device_size(device).map_err(|e| invalid(format!("{}: {e}", s.at)))?;
        pairs.push(("size".into(), size.to_string(), &s.at));
    }
    // fio asks a cpuio or exec job (no files) no size: a nominal one, unused.
    let burns = |k: &str, v: &str| k == "ioengine" && matches!(v, "cpuio" | "exec");
    if pairs.iter().any(|(k, v, _)| burns(k, v)) && !pairs.iter().any(|(k, _, _)| gives_size(k)) {
        pairs.push(("size".into(), "256m".into(), &s.at));
    }
    if pairs.iter().any(|(k, v, _)| gives_size(k) || fills(k, v)) {
        return Ok(false);
    }
    let size = cap.size.unwrap_or(super::params::UNBOUNDED);
    pairs.push(("size".into(), size.to_string(), &s.at));
    Ok(true)
}

/// Job `s`'s parameters from its options (each with the line that gave it): an error of the
/// options together names the line of the last option it names.
fn params_of(
    s: &Section,
    pairs: &[(String, String, &str)],
    (fio, raw): (fsbench_model::fio::FioJob, Option<&Path>),
    (earlier, sizeless, capped): (&[IoParams], bool, bool),
) -> anyhow::Result<IoParams> {
    let at_of = |e: &anyhow::Error| {
        let text = e.to_string();
        (pairs.iter().rev())
            .find(|(k, _, _)| {
                text.contains(&format!("`{k}"))
                    || text.contains(&format!("`{}", k.replace('_', "-")))
            })
            .map_or(s.at.as_str(), |(_, _, at)| at)
            .to_string()
    };
    let plain: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v, _)| (k.clone(), v.clone()))
        .collect();
    let mut params = KIND
        .parse_pairs(&plain)
        .and_then(|p| super::params::build(&p))
        .map_err(|e| invalid(format!("{}: job `{}`: {e}", at_of(&e), s.name)))?;
    params.preset = None;
    params.job = Some(s.name.clone());
    params.fio = Some(Box::new(fio));
    if let Some(device) = raw {
        params.filename = vec![device.display().to_string()];
        params.raw_device = true;
    }
    params.existing_files = groups::uses_earlier_files(&params, earlier);
    params.size_of_files = sizeless && params.existing_files;
    params.engine_at = (pairs.iter().rev())
        .find(|(k, _, _)| k == "ioengine")
        .map(|(_, _, at)| at.to_string());
    // fio's pmemblk engine takes its pools' size, as the layout finds it.
    let pooled = params.engine == super::Engine::Pmemblk;
    if let (true, false, Some(fio)) = (pooled, params.direct, params.fio.as_mut()) {
        fio.notes.push(format!(
            "{}: job `{}`: fio: pmemblk: direct == 0, but pmemblk is always direct",
            s.at, s.name
        ));
    }
    if sizeless && !params.existing_files && !capped && !pooled {
        return Err(invalid(format!(
            "{}: job `{}` has no `size` (nor `filesize`), and no group before it made its files: fio needs one, and so does fsbench",
            s.at, s.name
        )));
    }
    params
        .validate()
        .map_err(|e| invalid(format!("{}: job `{}`: {e}", at_of(&e), s.name)))?;
    Ok(params)
}

/// The text of a job file, or of standard input for `-` (as fio reads it).
fn text_of(path: &Path) -> anyhow::Result<String> {
    if path != Path::new("-") {
        return fsbench_measure::calls::read_text_file(path, "fio job file");
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text).map_err(|e| {
        invalid(format!(
            "cannot read the fio job file from standard input: {e}"
        ))
    })?;
    Ok(text)
}

/// Whether a (trimmed, non-comment) line has a job file's shape: `[name]`, `include FILE`, or
/// an option whose name is fio's kind of word.
fn is_job_line(line: &str) -> bool {
    if line.starts_with('[') {
        return line.ends_with(']');
    }
    if line.starts_with("include ") {
        return true;
    }
    let key = line.split_once('=').map_or(line, |(key, _)| key).trim();
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn read_into(
    path: &Path,
    depth: usize,
    keywords: &values::Keywords,
    sections: &mut Vec<Section>,
) -> anyhow::Result<()> {
    if depth > MAX_DEPTH {
        return Err(invalid(format!(
            "{}: includes nested more than {MAX_DEPTH} deep (a cycle?)",
            path.display()
        )));
    }
    let text = text_of(path)?;
    for (i, raw) in text.lines().enumerate() {
        let at = format!("{}:{}", path.display(), i + 1);
        let line = values::strip_comment(raw);
        if line.is_empty() {
            continue;
        }
        // An included file may be anything (`include /etc/shadow`): errors quote only what
        // has a job file's shape.
        if !is_job_line(line) {
            return Err(invalid(format!(
                "{at}: not a job file's line (`[section]`, `key=value`, `key` or `include \
                 FILE`); not quoted"
            )));
        }
        let line = values::substitute(line, &at)?;
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
            read_into(&file, depth + 1, keywords, sections)?;
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((&line, ""));
        let key = key.trim().to_string();
        let value = keywords.expand(value.trim(), &at)?;
        check_known(&key, &at)?;
        if let Some(why) = (key == "ioengine")
            .then(|| Engine::unavailable(&value))
            .flatten()
        {
            return Err(invalid(format!("{at}: `ioengine={value}`: {why}")));
        }
        let Some(section) = sections.last_mut() else {
            return Err(invalid(format!("{at}: `{key}` before any `[section]`")));
        };
        section.options.push(Line { key, value, at });
    }
    Ok(())
}

/// Refuses a key fsbench does not implement, naming its line.
fn check_known(key: &str, at: &str) -> anyhow::Result<()> {
    let normal = key.replace('-', "_");
    let known = KIND.has_option(&normal)
        || ACCEPTED.contains(&normal.as_str())
        || matches!(
            normal.as_str(),
            "stonewall"
                | "wait_for_previous"
                | "wait_for"
                | "kb_base"
                | "unit_base"
                | "exitall"
                | "exit_what"
                | "exitall_on_error"
                | "verify_only"
        )
        || written::KEYS.contains(&normal.as_str())
        || spelling::ALIASES.contains(&normal.as_str());
    if !known || normal == "preset" {
        return Err(invalid(format!(
            "{at}: fio option `{key}` is not implemented by fsbench's io workload (`fsbench run --help` lists what is)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;

//! FFSB profile files: `key=value` (or `key value`) lines, global keys first, then
//! `[filesystem]...[end]` and `[threadgroup]...[end]` sections (FFSB 5's numbered
//! `[filesystem0]...[end0]` alike), `[stats]...[end]` inside a thread group, `#` comments, sizes with k/m/g. Every key FFSB 6 knows is recognized; the
//! few fsbench cannot honour are refused by name, and unknown keys or bad values are errors
//! naming the line.

use super::{FfsbParams, FileSet, Op, ThreadGroup};
use crate::WorkloadParams;
use fsbench_measure::error::invalid;
use fsbench_measure::units::parse_size;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Global,
    Filesystem,
    ThreadGroup,
    /// The thread group inside `[filesystem]`: FFSB's aging group (`agefs=1`).
    AgingGroup,
    Stats,
}

/// Parses a profile's text; `name` (its file name) is used in messages and the label.
pub fn parse(text: &str, name: &str) -> anyhow::Result<FfsbParams> {
    let mut p = FfsbParams {
        preset: None,
        profile: Some(name.to_string()),
        time: None,
        directio: false,
        alignio: false,
        fileset: FileSet::default(),
        groups: Vec::new(),
        notes: Vec::new(),
    };
    let mut section = Section::Global;
    let mut filesystems = 0u32;
    let mut declared: [Option<(u32, usize)>; 2] = [None, None];
    // agefs (and its line), desired_util, and the aging thread group.
    let (mut agefs, mut desired_util, mut aging_group) = (None, 0.0, None::<ThreadGroup>);
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let err = |msg: String| invalid(format!("{name}, line {line_no}: {msg}"));
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            // FFSB 6 finds a section by its name and ignores a number after it: FFSB 5's
            // `[filesystem0]…[end0]` and FFSB 6's `[filesystem]…[end]` are alike.
            let inner = inner.trim();
            let numbered = |name: &str| {
                inner
                    .strip_prefix(name)
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
            };
            let kind = ["filesystem", "threadgroup", "stats", "end"]
                .into_iter()
                .find(|name| numbered(name))
                .ok_or_else(|| err(format!("unknown section [{inner}]")))?;
            section = match (section, kind) {
                (Section::Global, "filesystem") => {
                    if filesystems > 0 {
                        return Err(err(
                            "fsbench runs one filesystem per run (the target); a second [filesystem] section is not supported".into(),
                        ));
                    }
                    filesystems += 1;
                    Section::Filesystem
                }
                (Section::Global, "threadgroup") => {
                    p.groups.push(ThreadGroup::default());
                    Section::ThreadGroup
                }
                (Section::Filesystem, "threadgroup") => {
                    if aging_group.replace(ThreadGroup::default()).is_some() {
                        return Err(err("a second aging thread group in [filesystem]".into()));
                    }
                    Section::AgingGroup
                }
                (Section::ThreadGroup, "stats") => Section::Stats,
                (Section::Stats, "end") => Section::ThreadGroup,
                (Section::AgingGroup, "end") => Section::Filesystem,
                (Section::Filesystem | Section::ThreadGroup, "end") => Section::Global,
                (_, _) => return Err(err(format!("unexpected section [{inner}] here"))),
            };
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => line
                .split_once(char::is_whitespace)
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| err(format!("`{line}` is not `key=value`")))?,
        };
        let size = || parse_size(value).map_err(|e| err(format!("{key}: {e}")));
        let number = || {
            value
                .parse::<u32>()
                .map_err(|_| err(format!("{key}: `{value}` is not a whole number")))
        };
        let boolean = || match value {
            "0" | "false" | "no" => Ok(false),
            "1" | "true" | "yes" => Ok(true),
            _ => Err(err(format!("{key}: `{value}` is not 0 or 1"))),
        };
        let unsupported = |why: &str| err(format!("`{key}` is not supported: {why}"));
        match section {
            Section::Global => match key {
                "num_filesystems" => declared[0] = Some((number()?, line_no)),
                "num_threadgroups" => declared[1] = Some((number()?, line_no)),
                "verbose" => {
                    boolean()?;
                }
                "time" => p.time = Some(number()?),
                "directio" => p.directio = boolean()?,
                "alignio" => p.alignio = boolean()?,
                "bufferio" => {
                    if boolean()? {
                        // FFSB 6.0-RC1 sets a flag for it that no I/O path reads
                        // (fs_get_libcio is never called): its I/O stays the same calls.
                        p.notes.push(format!(
                            "{name}, line {line_no}: bufferio=1 is read as FFSB 6.0-RC1 honours it: it prints \"bufferedio = on\" but makes the same unbuffered system calls, and so does fsbench"
                        ));
                    }
                }
                "callout" => {
                    return Err(unsupported("fsbench does not run commands from a profile"));
                }
                _ => return Err(err(format!("unknown global key `{key}`"))),
            },
            Section::Filesystem => {
                let fs = &mut p.fileset;
                match key {
                    "location" => fs.location = Some(value.to_string()),
                    "num_files" => fs.num_files = number()?,
                    "num_dirs" => fs.num_dirs = number()?,
                    "reuse" => {
                        boolean()?;
                    }
                    "min_filesize" => fs.min_filesize = size()?,
                    "max_filesize" => fs.max_filesize = size()?,
                    "create_blocksize" => fs.create_blocksize = size()?,
                    "size_weight" => {
                        let mut parts = value.split_whitespace();
                        let (Some(s), Some(w), None) = (parts.next(), parts.next(), parts.next())
                        else {
                            return Err(err("size_weight is `SIZE WEIGHT`".into()));
                        };
                        let s = parse_size(s).map_err(|e| err(e.to_string()))?;
                        let w = w
                            .parse::<u32>()
                            .map_err(|_| err(format!("size_weight: `{w}` is not a weight")))?;
                        fs.size_weights.push((s, w));
                    }
                    "agefs" => agefs = Some((boolean()?, line_no)),
                    "desired_util" => {
                        desired_util = value
                            .parse::<f64>()
                            .ok()
                            .filter(|u| (0.0..=0.95).contains(u))
                            .ok_or_else(|| {
                                err(format!(
                                    "desired_util: `{value}` is not a fraction from 0 to 0.95"
                                ))
                            })?;
                    }
                    // The size of the ten files FFSB starts aging with; the churn's own sizes
                    // are the file set's, so it changes nothing here.
                    "age_blocksize" => {
                        size()?;
                    }
                    "init_util" | "init_size" => {
                        return Err(unsupported(
                            "fsbench fills with `fill = [...]` / --fill (percent used) instead",
                        ));
                    }
                    "clone" => return Err(unsupported("there is one filesystem per run")),
                    _ => return Err(err(format!("unknown filesystem key `{key}`"))),
                }
            }
            Section::AgingGroup | Section::ThreadGroup => {
                let tg = match section {
                    Section::AgingGroup => aging_group.as_mut().expect("inside the aging group"),
                    _ => p.groups.last_mut().expect("inside a thread group"),
                };
                if let Some(op) = key.strip_suffix("_weight").and_then(Op::from_name) {
                    tg.set_weight(op, number()?);
                    continue;
                }
                match key {
                    "num_threads" => tg.num_threads = number()?,
                    "bindfs" => {}
                    "read_random" => tg.read_random = boolean()?,
                    "read_skip" => tg.read_skip = number()? != 0,
                    "read_size" => tg.read_size = size()?,
                    "read_blocksize" => tg.read_blocksize = size()?,
                    "read_skipsize" => tg.read_skipsize = size()?,
                    "write_random" => tg.write_random = boolean()?,
                    "write_size" => tg.write_size = size()?,
                    "write_blocksize" => tg.write_blocksize = size()?,
                    "fsync_file" => {
                        return Err(unsupported(
                            "FFSB deprecated it; use the *_fsync_weight operations",
                        ));
                    }
                    "op_delay" => tg.op_delay_ms = number()?,
                    // fsbench's addition: a fixed amount of work instead of (or besides) `time`.
                    "num_ops" => tg.ops_per_thread = Some(u64::from(number()?)),
                    _ => return Err(err(format!("unknown thread group key `{key}`"))),
                }
            }
            // fsbench always keeps full latency histograms; the keys are checked, not used.
            Section::Stats => match key {
                "enable_stats" | "enable_range" => {
                    boolean()?;
                }
                "ignore" | "msec_range" => {}
                _ => return Err(err(format!("unknown stats key `{key}`"))),
            },
        }
    }
    if section != Section::Global {
        return Err(invalid(format!(
            "{name}: the last section is not closed with [end]"
        )));
    }
    for (what, declared, actual) in [
        ("num_filesystems", declared[0], filesystems.max(1)),
        ("num_threadgroups", declared[1], p.groups.len() as u32),
    ] {
        let Some((n, line)) = declared else {
            continue;
        };
        if n != actual {
            return Err(invalid(format!(
                "{name}, line {line}: {what}={n}, but the profile has {actual}"
            )));
        }
        p.notes.push(format!(
            "{name}, line {line}: `{what}` is an FFSB 5 key that FFSB 6 rejects; read for FFSB 5 profiles (it matches the sections)"
        ));
    }
    match (agefs, aging_group) {
        (Some((true, line)), None) => {
            return Err(invalid(format!(
                "{name}, line {line}: agefs=1 needs the aging thread group inside [filesystem] (FFSB: \"No age threadgroup in profile\")"
            )));
        }
        (Some((true, line)), Some(_)) if desired_util <= 0.0 => {
            return Err(invalid(format!(
                "{name}, line {line}: agefs=1 needs desired_util (the fraction used to age to)"
            )));
        }
        (Some((true, _)), Some(group)) => {
            p.fileset.aging = Some(super::aging::FfsbAging::new(desired_util, &group));
        }
        (_, Some(_)) => p.notes.push(format!(
            "{name}: the thread group inside [filesystem] is FFSB's aging group; with agefs=0 FFSB does not run it, nor does fsbench"
        )),
        (_, None) => {}
    }
    p.validate().map_err(|e| invalid(format!("{name}: {e}")))?;
    Ok(p)
}

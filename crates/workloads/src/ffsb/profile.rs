//! FFSB profile files: `key=value` (or `key value`) lines, global keys first, then
//! `[filesystem]...[end]` and `[threadgroup]...[end]` sections (FFSB 5's numbered
//! `[filesystem0]...[end0]` alike), `[stats]...[end]` inside a thread group, `#` comments, sizes with k/m/g. Every key FFSB 6 knows is recognized; the
//! few fsbench cannot honour are refused by name, and unknown keys or bad values are errors
//! naming the line.

use super::{FfsbParams, FileSet, Op, ThreadGroup};
use crate::WorkloadParams;
use fsbench_measure::error::invalid;
use fsbench_measure::units::parse_size;
use fsbench_model::workload::WorkerMode;

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
    let mut reader = Reader::new(name);
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            Some(inner) => reader.enter(inner.trim(), line_no)?,
            None => reader.key_value(&Line::parse(name, line_no, line)?)?,
        }
    }
    reader.finish()
}

/// A profile being read: the parameters so far, the section the reader is in, and what
/// is checked at the end.
struct Reader<'a> {
    name: &'a str,
    p: FfsbParams,
    section: Section,
    filesystems: u32,
    /// FFSB 5's `num_filesystems` and `num_threadgroups`, with their lines.
    declared: [Option<(u32, usize)>; 2],
    /// `agefs` (and its line), `desired_util`, and the aging thread group.
    agefs: Option<(bool, usize)>,
    desired_util: f64,
    aging_group: Option<ThreadGroup>,
}

/// One `key=value` (or `key value`) line, read as the types its keys take.
struct Line<'a> {
    name: &'a str,
    no: usize,
    key: &'a str,
    value: &'a str,
}

impl<'a> Line<'a> {
    fn parse(name: &'a str, no: usize, line: &'a str) -> anyhow::Result<Line<'a>> {
        let split = line
            .split_once('=')
            .or_else(|| line.split_once(char::is_whitespace));
        let Some((key, value)) = split else {
            return Err(invalid(format!(
                "{name}, line {no}: `{line}` is not `key=value`"
            )));
        };
        Ok(Line {
            name,
            no,
            key: key.trim(),
            value: value.trim(),
        })
    }

    fn err(&self, msg: String) -> anyhow::Error {
        invalid(format!("{}, line {}: {msg}", self.name, self.no))
    }

    fn size(&self) -> anyhow::Result<u64> {
        parse_size(self.value).map_err(|e| self.err(format!("{}: {e}", self.key)))
    }

    fn number(&self) -> anyhow::Result<u32> {
        (self.value.parse::<u32>()).map_err(|_| {
            self.err(format!(
                "{}: `{}` is not a whole number",
                self.key, self.value
            ))
        })
    }

    fn boolean(&self) -> anyhow::Result<bool> {
        match self.value {
            "0" | "false" | "no" => Ok(false),
            "1" | "true" | "yes" => Ok(true),
            _ => Err(self.err(format!("{}: `{}` is not 0 or 1", self.key, self.value))),
        }
    }

    fn unsupported(&self, why: &str) -> anyhow::Error {
        self.err(format!("`{}` is not supported: {why}", self.key))
    }

    fn unknown(&self, section: &str) -> anyhow::Error {
        self.err(format!("unknown {section} key `{}`", self.key))
    }
}

impl<'a> Reader<'a> {
    fn new(name: &'a str) -> Reader<'a> {
        Reader {
            name,
            p: FfsbParams {
                preset: None,
                profile: Some(name.to_string()),
                time: None,
                directio: false,
                alignio: false,
                fileset: FileSet::default(),
                groups: Vec::new(),
                notes: Vec::new(),
                workers: WorkerMode::default(),
            },
            section: Section::Global,
            filesystems: 0,
            declared: [None, None],
            agefs: None,
            desired_util: 0.0,
            aging_group: None,
        }
    }

    /// A section's header, `[inner]`: the section it opens or closes.
    fn enter(&mut self, inner: &str, line_no: usize) -> anyhow::Result<()> {
        let err = |msg: String| invalid(format!("{}, line {line_no}: {msg}", self.name));
        // FFSB 6 finds a section by its name and ignores a number after it: FFSB 5's
        // `[filesystem0]…[end0]` and FFSB 6's `[filesystem]…[end]` are alike.
        let numbered = |name: &str| {
            (inner.strip_prefix(name)).is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
        };
        let kind = ["filesystem", "threadgroup", "stats", "end"]
            .into_iter()
            .find(|name| numbered(name))
            .ok_or_else(|| err(format!("unknown section [{inner}]")))?;
        self.section = match (self.section, kind) {
            (Section::Global, "filesystem") => {
                if self.filesystems > 0 {
                    return Err(err(
                        "fsbench runs one filesystem per run (the target); a second [filesystem] section is not supported".into(),
                    ));
                }
                self.filesystems += 1;
                Section::Filesystem
            }
            (Section::Global, "threadgroup") => {
                self.p.groups.push(ThreadGroup::default());
                Section::ThreadGroup
            }
            (Section::Filesystem, "threadgroup") => {
                if self.aging_group.replace(ThreadGroup::default()).is_some() {
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
        Ok(())
    }

    fn key_value(&mut self, line: &Line<'_>) -> anyhow::Result<()> {
        match self.section {
            Section::Global => self.global(line),
            Section::Filesystem => self.filesystem(line),
            Section::AgingGroup | Section::ThreadGroup => {
                let group = match self.section {
                    Section::AgingGroup => self.aging_group.as_mut().expect("in the aging group"),
                    _ => self.p.groups.last_mut().expect("inside a thread group"),
                };
                thread_group(group, line)
            }
            // fsbench always keeps full latency histograms; the keys are checked, not used.
            Section::Stats => match line.key {
                "enable_stats" | "enable_range" => line.boolean().map(drop),
                "ignore" | "msec_range" => Ok(()),
                _ => Err(line.unknown("stats")),
            },
        }
    }

    fn global(&mut self, line: &Line<'_>) -> anyhow::Result<()> {
        let p = &mut self.p;
        match line.key {
            "num_filesystems" => self.declared[0] = Some((line.number()?, line.no)),
            "num_threadgroups" => self.declared[1] = Some((line.number()?, line.no)),
            "verbose" => {
                line.boolean()?;
            }
            "time" => p.time = Some(line.number()?),
            "directio" => p.directio = line.boolean()?,
            "alignio" => p.alignio = line.boolean()?,
            "bufferio" => {
                if line.boolean()? {
                    // FFSB 6.0-RC1 sets a flag for it that no I/O path reads
                    // (fs_get_libcio is never called): its I/O stays the same calls.
                    p.notes.push(format!(
                        "{}, line {}: bufferio=1 is read as FFSB 6.0-RC1 honours it: it prints \"bufferedio = on\" but makes the same unbuffered system calls, and so does fsbench",
                        self.name, line.no
                    ));
                }
            }
            "callout" => {
                return Err(line.unsupported("fsbench does not run commands from a profile"));
            }
            _ => return Err(line.unknown("global")),
        }
        Ok(())
    }

    fn filesystem(&mut self, line: &Line<'_>) -> anyhow::Result<()> {
        let fs = &mut self.p.fileset;
        match line.key {
            "location" => fs.location = Some(line.value.to_string()),
            "num_files" => fs.num_files = line.number()?,
            "num_dirs" => fs.num_dirs = line.number()?,
            "reuse" => {
                line.boolean()?;
            }
            "min_filesize" => fs.min_filesize = line.size()?,
            "max_filesize" => fs.max_filesize = line.size()?,
            "create_blocksize" => fs.create_blocksize = line.size()?,
            "size_weight" => {
                let mut parts = line.value.split_whitespace();
                let (Some(s), Some(w), None) = (parts.next(), parts.next(), parts.next()) else {
                    return Err(line.err("size_weight is `SIZE WEIGHT`".into()));
                };
                let s = parse_size(s).map_err(|e| line.err(e.to_string()))?;
                let w = (w.parse::<u32>())
                    .map_err(|_| line.err(format!("size_weight: `{w}` is not a weight")))?;
                fs.size_weights.push((s, w));
            }
            "agefs" => self.agefs = Some((line.boolean()?, line.no)),
            "desired_util" => {
                self.desired_util = (line.value.parse::<f64>().ok())
                    .filter(|u| (0.0..=0.95).contains(u))
                    .ok_or_else(|| {
                        line.err(format!(
                            "desired_util: `{}` is not a fraction from 0 to 0.95",
                            line.value
                        ))
                    })?;
            }
            // The size of the ten files FFSB starts aging with; the churn's own sizes are the
            // file set's, so it changes nothing here.
            "age_blocksize" => {
                line.size()?;
            }
            "init_util" | "init_size" => {
                return Err(line.unsupported(
                    "fsbench fills with `fill = [...]` / --fill (percent used) instead",
                ));
            }
            "clone" => return Err(line.unsupported("there is one filesystem per run")),
            _ => return Err(line.unknown("filesystem")),
        }
        Ok(())
    }

    /// After the last line: every section closed, FFSB 5's counts matching the sections,
    /// the aging group where `agefs=1` asks for it, and the parameters valid.
    fn finish(mut self) -> anyhow::Result<FfsbParams> {
        let name = self.name;
        if self.section != Section::Global {
            return Err(invalid(format!(
                "{name}: the last section is not closed with [end]"
            )));
        }
        for (what, declared, actual) in [
            ("num_filesystems", self.declared[0], self.filesystems.max(1)),
            (
                "num_threadgroups",
                self.declared[1],
                self.p.groups.len() as u32,
            ),
        ] {
            let Some((n, line)) = declared else {
                continue;
            };
            if n != actual {
                return Err(invalid(format!(
                    "{name}, line {line}: {what}={n}, but the profile has {actual}"
                )));
            }
            self.p.notes.push(format!(
                "{name}, line {line}: `{what}` is an FFSB 5 key that FFSB 6 rejects; read for FFSB 5 profiles (it matches the sections)"
            ));
        }
        match (self.agefs, self.aging_group) {
            (Some((true, line)), None) => {
                return Err(invalid(format!(
                    "{name}, line {line}: agefs=1 needs the aging thread group inside [filesystem] (FFSB: \"No age threadgroup in profile\")"
                )));
            }
            (Some((true, line)), Some(_)) if self.desired_util <= 0.0 => {
                return Err(invalid(format!(
                    "{name}, line {line}: agefs=1 needs desired_util (the fraction used to age to)"
                )));
            }
            (Some((true, _)), Some(group)) => {
                let aging = super::aging::FfsbAging::new(self.desired_util, &group);
                self.p.fileset.aging = Some(aging);
            }
            (_, Some(_)) => self.p.notes.push(format!(
                "{name}: the thread group inside [filesystem] is FFSB's aging group; with agefs=0 FFSB does not run it, nor does fsbench"
            )),
            (_, None) => {}
        }
        let p = self.p;
        p.validate().map_err(|e| invalid(format!("{name}: {e}")))?;
        Ok(p)
    }
}

/// A key of a thread group (or of the aging group inside `[filesystem]`).
fn thread_group(tg: &mut ThreadGroup, line: &Line<'_>) -> anyhow::Result<()> {
    if let Some(op) = line.key.strip_suffix("_weight").and_then(Op::from_name) {
        tg.set_weight(op, line.number()?);
        return Ok(());
    }
    match line.key {
        "num_threads" => tg.num_threads = line.number()?,
        "bindfs" => {}
        "read_random" => tg.read_random = line.boolean()?,
        "read_skip" => tg.read_skip = line.number()? != 0,
        "read_size" => tg.read_size = line.size()?,
        "read_blocksize" => tg.read_blocksize = line.size()?,
        "read_skipsize" => tg.read_skipsize = line.size()?,
        "write_random" => tg.write_random = line.boolean()?,
        "write_size" => tg.write_size = line.size()?,
        "write_blocksize" => tg.write_blocksize = line.size()?,
        "fsync_file" => {
            return Err(line.unsupported("FFSB deprecated it; use the *_fsync_weight operations"));
        }
        "op_delay" => tg.op_delay_ms = line.number()?,
        // fsbench's addition: a fixed amount of work instead of (or besides) `time`.
        "num_ops" => tg.ops_per_thread = Some(u64::from(line.number()?)),
        _ => return Err(line.unknown("thread group")),
    }
    Ok(())
}

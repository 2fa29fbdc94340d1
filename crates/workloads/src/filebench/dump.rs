//! A model written as a filebench workload file, for filebench itself or `fsbench filebench`:
//! the file sets under `$dir`, drawn sizes as `cvar` variables, the processes with their
//! threads and flowops, and `run`.

use std::fmt::Write;

use super::model::{Mode, Model, Num};

/// A number as an attribute value; a drawn one becomes a `cvar` variable set in `vars`.
fn value(n: &Num, var: &str, vars: &mut String) -> String {
    match *n {
        Num::Fixed(v) => v.to_string(),
        Num::Gamma { mean, gamma } => {
            let _ = writeln!(
                vars,
                "set ${var}=cvar(type=cvar-gamma,parameters=mean:{mean};gamma:{gamma})"
            );
            format!("${var}")
        }
        Num::Uniform { lower, upper } => {
            let _ = writeln!(
                vars,
                "set ${var}=cvar(type=cvar-uniform,parameters=lower:{lower};upper:{upper})"
            );
            format!("${var}")
        }
    }
}

/// Variable names from flowop and set names (`-` is not allowed in them).
fn var_name(parts: &[&str]) -> String {
    parts
        .join("_")
        .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
}

/// The model as a workload file, in the order filebench reads one (one function: the file's
/// lines in order read best together).
pub(super) fn dump(m: &Model, name: &str) -> String {
    let mut vars = String::from("set $dir=/tmp\n");
    let mut body = String::new();
    if m.eventrate > 0 {
        let _ = writeln!(body, "eventgen rate={}", m.eventrate);
    }
    match m.mode {
        Mode::Timeout => {}
        Mode::Firstdone => body.push_str("set mode quit firstdone\n"),
        Mode::Alldone => body.push_str("set mode quit alldone\n"),
    }
    for s in &m.filesets {
        let size = value(&s.size, &var_name(&[&s.name, "size"]), &mut vars);
        if s.single {
            let _ = write!(body, "define file name={},path=$dir,size={size}", s.name);
        } else {
            let _ = write!(
                body,
                "define fileset name={},path=$dir,size={size},entries={},dirwidth={}",
                s.name, s.entries, s.dirwidth
            );
            if s.leafdirs > 0 {
                let _ = write!(body, ",leafdirs={}", s.leafdirs);
            }
            if s.dirgamma != 1500 {
                let _ = write!(body, ",dirgamma={}", s.dirgamma);
            }
        }
        let _ = write!(body, ",prealloc={}", s.prealloc);
        for (flag, on) in [
            ("readonly", s.readonly),
            ("writeonly", s.writeonly),
            ("paralloc", s.paralloc),
        ] {
            if on {
                let _ = write!(body, ",{flag}");
            }
        }
        body.push('\n');
    }
    for p in &m.processes {
        let _ = write!(
            body,
            "\ndefine process name={},instances={}",
            p.name, p.instances
        );
        if p.nice != 0 {
            let _ = write!(body, ",nice={}", p.nice);
        }
        body.push_str("\n{\n");
        for t in &p.threads {
            let _ = writeln!(
                body,
                "  thread name={},memsize={},instances={}\n  {{",
                t.name, t.memsize, t.instances
            );
            for f in &t.flowops {
                let _ = write!(body, "    flowop {} name={}", f.op.name(), f.name);
                if let Some(set) = f.fileset {
                    let _ = write!(body, ",filesetname={}", m.filesets[set].name);
                }
                let mut num = |key: &str, n: &Option<Num>, body: &mut String| {
                    if let Some(n) = n {
                        let v = value(n, &var_name(&[&f.name, key]), &mut vars);
                        let _ = write!(body, ",{key}={v}");
                    }
                };
                num("iosize", &f.iosize, &mut body);
                num("value", &f.value, &mut body);
                num("indexed", &f.index, &mut body);
                for (key, v) in [
                    ("fd", u64::from(f.fd)),
                    ("srcfd", u64::from(f.srcfd)),
                    ("workingset", f.workingset),
                    ("highwater", f.highwater),
                ] {
                    if v != 0 {
                        let _ = write!(body, ",{key}={v}");
                    }
                }
                if f.iters != 1 {
                    let _ = write!(body, ",iters={}", f.iters);
                }
                if let Some(t) = &f.target {
                    let _ = write!(body, ",target={t}");
                }
                let flags = [
                    ("random", f.random),
                    ("dsync", f.dsync),
                    ("directio", f.directio),
                    ("opennext", f.opennext),
                    ("blocking", f.blocking),
                    ("noreadahead", f.noreadahead),
                ];
                for (flag, on) in flags {
                    if on {
                        let _ = write!(body, ",{flag}");
                    }
                }
                body.push('\n');
            }
            body.push_str("  }\n");
        }
        body.push_str("}\n");
    }
    let _ = writeln!(body, "\nrun {}", m.runtime);
    format!("# {name}, written by fsbench (its own description of the workload)\n{vars}\n{body}")
}

#[cfg(test)]
mod tests {
    use super::super::params::FilebenchParams;
    use super::super::parse::parse;
    use super::super::personalities::BUILT_IN;
    use super::super::today::TODAY;

    #[test]
    fn every_personality_reads_back_as_itself() {
        for (name, _) in BUILT_IN.iter().chain(TODAY) {
            let p = FilebenchParams::built_in(name).unwrap();
            let text = p.dump();
            let read =
                parse(&text, "dump.f", None).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            assert_eq!(read.model, p.model, "{name}:\n{text}");
        }
    }
}

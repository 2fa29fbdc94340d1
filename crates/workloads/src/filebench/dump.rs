//! A model written as a filebench workload file, for filebench itself or `fsbench filebench`:
//! the file sets under `$dir`, drawn sizes as `cvar` variables, the processes with their
//! threads and flowops, and `run`.

use std::fmt::Write;

use super::model::{Flowop, Mode, Model, Num, Op};

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
    // Composite flowops, defined before the processes that use them.
    let mut defs = String::new();
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
            write_flowops(m, &t.flowops, "    ", &mut vars, &mut defs, &mut body);
            body.push_str("  }\n");
        }
        body.push_str("}\n");
    }
    let _ = writeln!(body, "\nrun {}", m.runtime);
    format!(
        "# {name}, written by fsbench (its own description of the workload)\n{vars}\n{defs}{body}"
    )
}

/// The flowops of `list` at `indent`, a composite's as a use of its own definition, which is
/// written into `defs` (its inner ones first).
fn write_flowops(
    m: &Model,
    list: &[Flowop],
    indent: &str,
    vars: &mut String,
    defs: &mut String,
    out: &mut String,
) {
    let mut i = 0;
    while i < list.len() {
        let f = &list[i];
        let body = &list[i + 1..i + 1 + f.body as usize];
        if f.op == Op::Composite {
            let mut def = format!("define flowop name=fsbench_{}\n{{\n", f.name);
            write_flowops(m, body, "  ", vars, defs, &mut def);
            defs.push_str(&def);
            defs.push_str("}\n\n");
            let _ = write!(out, "{indent}flowop fsbench_{} name={}", f.name, f.name);
        } else {
            let _ = write!(out, "{indent}flowop {} name={}", f.op.name(), f.name);
            flowop_attrs(m, f, vars, out);
        }
        if f.iters != 1 {
            let _ = write!(out, ",iters={}", f.iters);
        }
        out.push('\n');
        i += 1 + body.len();
    }
}

/// A flowop's attributes, after its name (`iters` is the caller's).
fn flowop_attrs(m: &Model, f: &Flowop, vars: &mut String, out: &mut String) {
    if let Some(set) = f.fileset {
        let _ = write!(out, ",filesetname={}", m.filesets[set].name);
    }
    for (key, n) in [
        ("iosize", &f.iosize),
        ("value", &f.value),
        ("indexed", &f.index),
    ] {
        if let Some(n) = n {
            let v = value(n, &var_name(&[&f.name, key]), vars);
            let _ = write!(out, ",{key}={v}");
        }
    }
    let numbers = [
        ("fd", u64::from(f.fd)),
        ("srcfd", u64::from(f.srcfd)),
        ("workingset", f.workingset),
        ("highwater", f.highwater),
    ];
    for (key, v) in numbers {
        if v != 0 {
            let _ = write!(out, ",{key}={v}");
        }
    }
    if let Some(t) = &f.target {
        let _ = write!(out, ",target={t}");
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
            let _ = write!(out, ",{flag}");
        }
    }
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

    #[test]
    fn composite_flowops_read_back_as_themselves() {
        let text = "define fileset name=s,path=/tmp,size=1k,entries=10,dirwidth=5,prealloc\n\
                    define flowop name=rw, $set\n{\n flowop openfile name=o,filesetname=$set,fd=1\n\
                    flowop readwholefile name=r,fd=1\n flowop closefile name=c,fd=1\n}\n\
                    define flowop name=work, $n\n{\n flowop rw name=inner,iters=$n,$set=s\n\
                    flowop statfile name=st,filesetname=s\n}\n\
                    define process name=p\n{\n thread name=t\n {\n flowop work name=w,iters=2,$n=3\n }\n}\nrun 5\n";
        let model = parse(text, "c.f", None).unwrap().model;
        let flowops = &model.processes[0].threads[0].flowops;
        let shape: Vec<(&str, u32, u64)> = (flowops.iter())
            .map(|f| (f.name.as_str(), f.body, f.iters))
            .collect();
        assert_eq!(
            shape,
            vec![
                ("w", 5, 2),
                ("inner", 3, 3),
                ("o", 0, 1),
                ("r", 0, 1),
                ("c", 0, 1),
                ("st", 0, 1)
            ]
        );
        let again = parse(&super::dump(&model, "c"), "c2.f", None)
            .unwrap()
            .model;
        assert_eq!(again, model);
    }
}

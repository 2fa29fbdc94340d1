//! The `define` commands: file sets and files, processes of threads of flowops.

use super::super::model::{Fileset, Flowop, Num, Op, Process, Thread};
use super::super::wml::Tok;
use super::{Attr, Parser, Val};

impl Parser<'_> {
    pub(super) fn define(&mut self, line: u32) -> anyhow::Result<()> {
        let (what, l) = self.word()?;
        match what.as_str() {
            "fileset" | "filesets" => self.fileset(false),
            "file" => self.fileset(true),
            "process" | "processes" => self.process(),
            "flowop" => self.composite(l),
            "randvar" => Err(self.err(l, "randvar is not supported: write the distribution as a cvar (cvar-gamma or cvar-uniform)")),
            _ => Err(self.err(line, format!("unknown `define {what}`"))),
        }
    }

    fn fileset(&mut self, single: bool) -> anyhow::Result<()> {
        let line = self.line();
        let mut set = Fileset {
            name: String::new(),
            single,
            entries: u64::from(single),
            leafdirs: 0,
            size: Num::Fixed(0),
            dirwidth: if single { 10 } else { 0 },
            dirgamma: if single { 0 } else { 1500 },
            prealloc: 0,
            readonly: false,
            writeonly: false,
            paralloc: false,
        };
        let what = if single { "file" } else { "fileset" };
        for a in self.attrs()? {
            match (a.key.as_str(), single) {
                ("name", _) => set.name = self.text(&a)?,
                ("path", _) => {
                    self.notes.push(format!(
                        "{}, line {}: `path` is not used: the file sets are made in the run's fresh filesystem",
                        self.name, a.line
                    ));
                }
                ("size" | "filesize", _) => set.size = self.num(&a)?,
                ("prealloc", _) => {
                    set.prealloc = match self.value(&a)? {
                        Val::Bool(b) => 100 * u8::from(b),
                        Val::Int(n) if n <= 100 => n as u8,
                        _ => {
                            return Err(
                                self.err(a.line, "`prealloc` is a percentage or true/false")
                            );
                        }
                    }
                }
                ("paralloc", _) => set.paralloc = self.boolean(&a)?,
                // Every run starts on a fresh filesystem: there is nothing to reuse.
                ("reuse" | "trusttree", _) => {
                    self.boolean(&a)?;
                }
                ("readonly", _) => set.readonly = self.boolean(&a)?,
                ("writeonly", _) => set.writeonly = self.boolean(&a)?,
                ("entries", false) => set.entries = self.int(&a)?,
                ("dirwidth", false) => set.dirwidth = self.int(&a)?,
                ("dirgamma", false) => {
                    set.dirgamma = u32::try_from(self.int(&a)?)
                        .map_err(|_| self.err(a.line, "dirgamma is too large"))?
                }
                ("leafdirs", false) => set.leafdirs = self.int(&a)?,
                ("dirdepthrv", false) => {
                    return Err(self.err(a.line, "fileset attribute `dirdepthrv` is not supported"));
                }
                _ => return Err(self.unknown(&a, what)),
            }
        }
        if set.name.is_empty() {
            return Err(self.err(line, format!("a {what} needs a name")));
        }
        if !single && set.dirwidth == 0 {
            return Err(self.err(line, format!("fileset {} needs dirwidth", set.name)));
        }
        if self.model.filesets.iter().any(|s| s.name == set.name) {
            return Err(self.err(line, format!("{what} {} is defined twice", set.name)));
        }
        self.model.filesets.push(set);
        Ok(())
    }

    fn process(&mut self) -> anyhow::Result<()> {
        let line = self.line();
        let mut p = Process {
            name: String::new(),
            instances: 1,
            nice: 0,
            threads: Vec::new(),
        };
        for a in self.attrs()? {
            match a.key.as_str() {
                "name" => p.name = self.text(&a)?,
                "instances" => p.instances = self.count(&a)?,
                "nice" => {
                    p.nice = i32::try_from(self.int(&a)?)
                        .ok()
                        .filter(|n| *n <= 19)
                        .ok_or_else(|| self.err(a.line, "nice is 0 to 19"))?
                }
                _ => return Err(self.unknown(&a, "process")),
            }
        }
        self.expect(Tok::Open)?;
        let pi = self.model.processes.len();
        while self.peek() != Some(&Tok::Close) {
            let (w, l) = self.word()?;
            if w != "thread" {
                return Err(self.err(
                    l,
                    format!("expected `thread` in process {}, found `{w}`", p.name),
                ));
            }
            let t = self.thread(pi, p.threads.len())?;
            p.threads.push(t);
        }
        self.expect(Tok::Close)?;
        if p.threads.is_empty() {
            return Err(self.err(line, format!("process {} has no thread", p.name)));
        }
        self.model.processes.push(p);
        Ok(())
    }

    fn count(&self, a: &Attr) -> anyhow::Result<u32> {
        u32::try_from(self.int(a)?)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| self.err(a.line, format!("`{}` must be at least 1", a.key)))
    }

    fn thread(&mut self, pi: usize, ti: usize) -> anyhow::Result<Thread> {
        let mut t = Thread {
            name: String::new(),
            instances: 1,
            memsize: 0,
            flowops: Vec::new(),
        };
        for a in self.attrs()? {
            match a.key.as_str() {
                "name" => t.name = self.text(&a)?,
                "instances" => t.instances = self.count(&a)?,
                "memsize" => t.memsize = self.int(&a)?,
                // Shared memory for the thread's buffer: nothing to measure.
                "useism" => {
                    self.boolean(&a)?;
                }
                "ioprio" => {
                    return Err(self.err(a.line, "thread attribute `ioprio` is not supported"));
                }
                _ => return Err(self.unknown(&a, "thread")),
            }
        }
        self.expect(Tok::Open)?;
        while self.peek() != Some(&Tok::Close) {
            let (w, l) = self.word()?;
            if w != "flowop" {
                return Err(self.err(
                    l,
                    format!("expected `flowop` in thread {}, found `{w}`", t.name),
                ));
            }
            self.flowop(pi, ti, &mut t.flowops)?;
        }
        self.expect(Tok::Close)?;
        Ok(t)
    }

    /// `define flowop name=NAME[, $PARAM...] { flowops }`: kept as tokens, expanded where a
    /// thread uses it with its parameters' values.
    fn composite(&mut self, line: u32) -> anyhow::Result<()> {
        let (mut name, mut params) = (String::new(), Vec::new());
        for a in self.attrs()? {
            match a.key.as_str() {
                "name" => name = self.text(&a)?,
                k if k.starts_with('$') => params.push(k[1..].to_string()),
                _ => return Err(self.unknown(&a, "define flowop")),
            }
        }
        if name.is_empty() || Op::named(&name).is_some() {
            return Err(self.err(line, "a composite flowop needs a name of its own"));
        }
        self.expect(Tok::Open)?;
        let start = self.pos;
        let mut depth = 1;
        while depth > 0 {
            match self.next().map(|t| t.tok) {
                Some(Tok::Open) => depth += 1,
                Some(Tok::Close) => depth -= 1,
                Some(_) => {}
                None => {
                    return Err(self.err(line, format!("composite flowop {name} is not closed")));
                }
            }
        }
        let body = self.toks[start..self.pos - 1].to_vec();
        self.composites.insert(name, (params, body));
        Ok(())
    }

    /// A use of composite `kind`: the composite flowop, then its body's flowops (with its
    /// parameters set to the values given), into `out`.
    fn expand(
        &mut self,
        kind: &str,
        line: u32,
        pi: usize,
        ti: usize,
        out: &mut Vec<Flowop>,
    ) -> anyhow::Result<()> {
        if self.expanding.iter().any(|k| k == kind) || self.expanding.len() >= 16 {
            return Err(self.err(line, format!("composite flowop {kind} uses itself")));
        }
        let (params, body) = self.composites[kind].clone();
        let mut f = Flowop::new(Op::Composite, "");
        let mut bound = Vec::new();
        for a in self.attrs()? {
            match a.key.as_str() {
                "name" => f.name = self.text(&a)?,
                "iters" => f.iters = u64::from(self.count(&a)?),
                k if k
                    .strip_prefix('$')
                    .is_some_and(|p| params.iter().any(|q| q == p)) =>
                {
                    bound.push((k[1..].to_string(), self.value(&a)?));
                }
                _ => return Err(self.unknown(&a, &format!("flowop {kind}"))),
            }
        }
        if f.name.is_empty() {
            return Err(self.err(line, format!("flowop {kind} needs a name")));
        }
        let at = out.len();
        out.push(f);
        let saved: Vec<(String, Option<Val>)> = (bound.into_iter())
            .map(|(k, v)| (k.clone(), self.vars.insert(k, v)))
            .collect();
        let outer = (
            std::mem::replace(&mut self.toks, body),
            std::mem::replace(&mut self.pos, 0),
        );
        self.expanding.push(kind.to_string());
        let expanded = (|| {
            while self.pos < self.toks.len() {
                let (w, l) = self.word()?;
                if w != "flowop" {
                    return Err(self.err(
                        l,
                        format!("expected `flowop` in composite {kind}, found `{w}`"),
                    ));
                }
                self.flowop(pi, ti, out)?;
            }
            Ok(())
        })();
        self.expanding.pop();
        (self.toks, self.pos) = outer;
        for (k, old) in saved {
            match old {
                Some(v) => self.vars.insert(k, v),
                None => self.vars.remove(&k),
            };
        }
        expanded?;
        out[at].body =
            u32::try_from(out.len() - at - 1).map_err(|_| self.err(line, "too many flowops"))?;
        Ok(())
    }

    /// A `flowop TYPE attrs` into `out` (a composite's with its body).
    fn flowop(&mut self, pi: usize, ti: usize, out: &mut Vec<Flowop>) -> anyhow::Result<()> {
        let (kind, line) = self.word()?;
        if self.composites.contains_key(&kind) {
            return self.expand(&kind, line, pi, ti, out);
        }
        let fi = out.len();
        let op = Op::named(&kind)
            .filter(|o| *o != Op::Composite)
            .ok_or_else(|| match kind.as_str() {
                "print" | "testrandvar" => {
                    self.err(line, format!("flowop {kind} is not supported"))
                }
                _ => self.err(line, format!("unknown flowop {kind}")),
            })?;
        let mut f = Flowop::new(op, "");
        for a in self.attrs()? {
            match a.key.as_str() {
                "name" => f.name = self.text(&a)?,
                "filename" | "filesetname" => self.refs.push((pi, ti, fi, self.text(&a)?, a.line)),
                "fd" => f.fd = self.slot(&a)?,
                "srcfd" => f.srcfd = self.slot(&a)?,
                "iosize" => f.iosize = Some(self.num(&a)?),
                "iters" => f.iters = u64::from(self.count(&a)?),
                "random" => f.random = self.boolean(&a)?,
                "dsync" => f.dsync = self.boolean(&a)?,
                "directio" => f.directio = self.boolean(&a)?,
                "opennext" => f.opennext = self.boolean(&a)?,
                "workingset" => f.workingset = self.int(&a)?,
                "value" => f.value = Some(self.num(&a)?),
                "target" => f.target = Some(self.text(&a)?),
                "blocking" => f.blocking = self.boolean(&a)?,
                "highwater" => f.highwater = self.int(&a)?,
                "noreadahead" => f.noreadahead = self.boolean(&a)?,
                "indexed" => f.index = Some(self.num(&a)?),
                _ => return Err(self.unknown(&a, &format!("flowop {kind}"))),
            }
        }
        if f.name.is_empty() {
            return Err(self.err(line, format!("flowop {kind} needs a name")));
        }
        out.push(f);
        Ok(())
    }

    /// A descriptor slot: filebench's threads have 128.
    fn slot(&self, a: &Attr) -> anyhow::Result<u32> {
        match self.int(a)? {
            n @ 0..=127 => Ok(n as u32),
            n => Err(self.err(
                a.line,
                format!("`{}={n}`: a thread has descriptor slots 0 to 127", a.key),
            )),
        }
    }

    pub(super) fn resolve_filesets(&mut self) -> anyhow::Result<()> {
        for (pi, ti, fi, name, line) in std::mem::take(&mut self.refs) {
            let index = (self.model.filesets.iter())
                .position(|s| s.name == name)
                .ok_or_else(|| self.err(line, format!("no fileset or file is called `{name}`")))?;
            self.model.processes[pi].threads[ti].flowops[fi].fileset = Some(index);
        }
        Ok(())
    }
}

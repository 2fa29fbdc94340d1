//! Reads a filebench workload file into a [`Model`]: `set`, `define fileset|file|process`,
//! `eventgen`, `run` and `psrun`, the flowops filebench's shipped files use. What fsbench does
//! not run is refused naming the construct and its line; what does not matter on a fresh
//! filesystem (`path`, `reuse`) is noted.

use std::collections::HashMap;

use super::model::{Mode, Model, Num};
use super::wml::{Tok, Token, tokens};

mod define;
use fsbench_measure::error::invalid;

/// filebench's run length when `run` gives none.
pub(super) const DEFAULT_RUNTIME: u64 = 60;

/// A variable's value.
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Int(u64),
    Bool(bool),
    Str(String),
    Random(Num),
}

/// One `key` or `key=value` of an attribute list.
#[derive(Debug, Clone)]
struct Attr {
    key: String,
    value: Option<Tok>,
    line: u32,
}

/// What reading a file gave: the model and what a reader must know about it.
pub(super) struct Read {
    pub model: Model,
    pub notes: Vec<String>,
}

struct Parser<'a> {
    name: &'a str,
    toks: Vec<Token>,
    pos: usize,
    vars: HashMap<String, Val>,
    model: Model,
    notes: Vec<String>,
    /// Flowops' file set names, resolved once every set is defined: (process, thread,
    /// flowop, name, line).
    refs: Vec<(usize, usize, usize, String, u32)>,
    /// Composite flowops (`define flowop`): their parameters and the tokens of their body.
    composites: HashMap<String, (Vec<String>, Vec<Token>)>,
    /// Composites being expanded (one that uses itself is refused).
    expanding: Vec<String>,
    ran: bool,
}

/// Reads `text` (the file called `name`); `runtime` replaces the file's `run` seconds, or
/// supplies them where the file has no `run` line.
pub(super) fn parse(text: &str, name: &str, runtime: Option<u64>) -> anyhow::Result<Read> {
    let mut p = Parser {
        name,
        toks: tokens(text, name)?,
        pos: 0,
        vars: HashMap::new(),
        model: Model {
            filesets: Vec::new(),
            processes: Vec::new(),
            runtime: 0,
            mode: Mode::Timeout,
            eventrate: 0,
        },
        notes: Vec::new(),
        refs: Vec::new(),
        composites: HashMap::new(),
        expanding: Vec::new(),
        ran: false,
    };
    while p.pos < p.toks.len() && !p.ran {
        p.command()?;
    }
    if let Some(t) = p.toks.get(p.pos) {
        p.notes.push(format!(
            "{name}, line {}: what follows `run` is not read, as filebench ends at `run`",
            t.line
        ));
    }
    p.resolve_filesets()?;
    match (p.ran, runtime) {
        (_, Some(secs)) => p.model.runtime = secs,
        (true, None) => {}
        (false, None) => {
            return Err(invalid(format!(
                "{name} has no `run` line: filebench would define its workload and stop; add `run SECONDS` to the file or give --runtime SECONDS"
            )));
        }
    }
    if p.model.mode == Mode::Timeout && p.model.runtime == 0 {
        p.model.runtime = DEFAULT_RUNTIME;
    }
    if p.model.processes.is_empty() {
        return Err(invalid(format!(
            "{name} defines no process: there is nothing to run"
        )));
    }
    Ok(Read {
        model: p.model,
        notes: p.notes,
    })
}

impl Parser<'_> {
    fn err(&self, line: u32, msg: impl std::fmt::Display) -> anyhow::Error {
        invalid(format!("{}, line {line}: {msg}", self.name))
    }

    fn line(&self) -> u32 {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map_or(1, |t| t.line)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn expect(&mut self, want: Tok) -> anyhow::Result<()> {
        let line = self.line();
        match self.next() {
            Some(t) if t.tok == want => Ok(()),
            Some(t) => Err(self.err(t.line, format!("expected `{want}`, found `{}`", t.tok))),
            None => Err(self.err(
                line,
                format!("expected `{want}` before the end of the file"),
            )),
        }
    }

    fn word(&mut self) -> anyhow::Result<(String, u32)> {
        let line = self.line();
        match self.next() {
            Some(Token {
                tok: Tok::Word(w),
                line,
            }) => Ok((w, line)),
            Some(t) => Err(self.err(t.line, format!("expected a word, found `{}`", t.tok))),
            None => Err(self.err(line, "unexpected end of the file")),
        }
    }

    fn command(&mut self) -> anyhow::Result<()> {
        let (word, line) = self.word()?;
        match word.as_str() {
            "set" => self.set(line),
            "define" => self.define(line),
            "run" => {
                self.model.runtime = match self.peek() {
                    Some(Tok::Int(_) | Tok::Var(_)) => {
                        let t = self.next().expect("peeked");
                        self.int_of(&t.tok, t.line, "run")?
                    }
                    _ => 0,
                };
                self.ran = true;
                Ok(())
            }
            "psrun" => self.psrun(line),
            "eventgen" => {
                for a in self.attrs()? {
                    match a.key.as_str() {
                        "rate" => self.model.eventrate = self.int(&a)?,
                        _ => return Err(self.unknown(&a, "eventgen")),
                    }
                }
                Ok(())
            }
            "echo" => {
                while matches!(self.peek(), Some(Tok::Quoted(_) | Tok::Var(_))) {
                    self.next();
                }
                Ok(())
            }
            "debug" | "version" => {
                if matches!(self.peek(), Some(Tok::Int(_))) {
                    self.next();
                }
                Ok(())
            }
            "enable" => match self.word()? {
                (w, _) if w == "lathist" => Ok(()),
                (w, l) => Err(self.err(
                    l,
                    format!("`enable {w}` is not supported: fsbench runs on one machine"),
                )),
            },
            "create" => {
                // Every run's file sets are made before it anyway.
                self.word()?;
                Ok(())
            }
            "quit" => {
                self.pos = self.toks.len();
                Ok(())
            }
            "system" | "sleep" | "list" | "domultisync" => Err(self.err(
                line,
                format!(
                    "`{word}` is not supported: fsbench runs the workload, not commands around it"
                ),
            )),
            _ => Err(self.err(line, format!("unknown command `{word}`"))),
        }
    }

    fn psrun(&mut self, line: u32) -> anyhow::Result<()> {
        let mut numbers = Vec::new();
        while let Some(Tok::Int(_) | Tok::Negative(_)) = self.peek() {
            numbers.push(self.next().expect("peeked").tok);
        }
        let runtime = match numbers.as_slice() {
            [] | [_] => 0,
            [_, Tok::Int(n)] => *n,
            _ => return Err(self.err(line, "psrun takes [PERIOD] [SECONDS]")),
        };
        self.notes.push(format!(
            "{}, line {line}: psrun runs as run; its periodic summaries are fsbench's latency timeline",
            self.name
        ));
        self.model.runtime = runtime;
        self.ran = true;
        Ok(())
    }

    fn set(&mut self, line: u32) -> anyhow::Result<()> {
        let t = self
            .next()
            .ok_or_else(|| self.err(line, "`set` needs a variable"))?;
        let var = match t.tok {
            Tok::Var(v) => v,
            Tok::Word(w) if w == "mode" => return self.set_mode(line),
            other => return Err(self.err(t.line, format!("`set {other}`: expected $NAME or mode"))),
        };
        self.expect(Tok::Assign)?;
        let t = self
            .next()
            .ok_or_else(|| self.err(line, format!("`set ${var}` needs a value")))?;
        let value = match t.tok {
            Tok::Int(n) => Val::Int(n),
            Tok::Bool(b) => Val::Bool(b),
            Tok::Word(w) if w == "cvar" => Val::Random(self.cvar(t.line)?),
            Tok::Word(w) if w == "randvar" => {
                return Err(self.err(t.line, "randvar is not supported: write the distribution as a cvar (cvar-gamma or cvar-uniform)"));
            }
            Tok::Word(w) | Tok::Quoted(w) => Val::Str(w),
            Tok::Var(v) => self.var(&v, t.line)?,
            other => return Err(self.err(t.line, format!("`{other}` is not a value"))),
        };
        self.vars.insert(var, value);
        Ok(())
    }

    fn set_mode(&mut self, line: u32) -> anyhow::Result<()> {
        let (w, _) = self.word()?;
        if w == "nousestats" {
            return Ok(());
        }
        if w != "quit" {
            return Err(self.err(line, format!("unknown mode `{w}`")));
        }
        let (how, l) = self.word()?;
        self.model.mode = match how.as_str() {
            "timeout" => Mode::Timeout,
            "firstdone" => Mode::Firstdone,
            "alldone" => Mode::Alldone,
            _ => return Err(self.err(l, format!("unknown mode `quit {how}`"))),
        };
        Ok(())
    }

    /// `cvar(type=cvar-gamma,parameters=mean:M;gamma:G)` or `cvar-uniform` with lower/upper.
    fn cvar(&mut self, line: u32) -> anyhow::Result<Num> {
        self.expect(Tok::LParen)?;
        let attrs = self.attrs()?;
        self.expect(Tok::RParen)?;
        let (mut kind, mut params) = (None, String::new());
        for a in &attrs {
            match a.key.as_str() {
                "type" => kind = Some(self.text(a)?),
                "parameters" => params = self.text(a)?,
                "min" | "max" | "round" => {
                    return Err(self.err(a.line, format!("cvar's `{}` is not supported", a.key)));
                }
                _ => return Err(self.unknown(a, "cvar")),
            }
        }
        let mut values = HashMap::new();
        for pair in params.split(';').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once(':').ok_or_else(|| {
                self.err(line, format!("cvar parameter `{pair}` is not key:value"))
            })?;
            let v: f64 = v
                .parse()
                .map_err(|_| self.err(line, format!("cvar parameter `{pair}`: not a number")))?;
            values.insert(k.to_string(), v);
        }
        let get = |k: &str| {
            values
                .get(k)
                .copied()
                .ok_or_else(|| self.err(line, format!("cvar needs the parameter `{k}`")))
        };
        match kind.as_deref() {
            Some("cvar-gamma") => {
                let (mean, gamma) = (get("mean")?, get("gamma")?);
                if !(mean > 0.0 && gamma > 0.0) {
                    return Err(self.err(line, "cvar-gamma needs mean and gamma above 0"));
                }
                Ok(Num::Gamma { mean, gamma })
            }
            Some("cvar-uniform") => {
                let (lower, upper) = (get("lower")?, get("upper")?);
                if !(0.0 <= lower && lower < upper) {
                    return Err(self.err(line, "cvar-uniform needs 0 <= lower < upper"));
                }
                Ok(Num::Uniform { lower, upper })
            }
            Some(other) => Err(self.err(
                line,
                format!("cvar type `{other}` is not supported (cvar-gamma and cvar-uniform are)"),
            )),
            None => Err(self.err(line, "cvar needs a type")),
        }
    }

    /// `key[=value]` items separated by commas.
    fn attrs(&mut self) -> anyhow::Result<Vec<Attr>> {
        let mut out = Vec::new();
        loop {
            let t = match self.next() {
                Some(t) => t,
                None => return Err(self.err(self.line(), "an attribute list ends too early")),
            };
            let key = match t.tok {
                Tok::Word(w) => w,
                // A composite flowop's parameter, or a value given to one.
                Tok::Var(v) => format!("${v}"),
                other => {
                    return Err(self.err(t.line, format!("expected an attribute, found `{other}`")));
                }
            };
            let value = if self.peek() == Some(&Tok::Assign) {
                self.next();
                Some(
                    self.next()
                        .ok_or_else(|| self.err(t.line, format!("`{key}=` needs a value")))?
                        .tok,
                )
            } else {
                None
            };
            out.push(Attr {
                key,
                value,
                line: t.line,
            });
            if self.peek() != Some(&Tok::Comma) {
                return Ok(out);
            }
            self.next();
        }
    }

    fn var(&self, name: &str, line: u32) -> anyhow::Result<Val> {
        self.vars
            .get(name)
            .cloned()
            .ok_or_else(|| self.err(line, format!("`${name}` is not set")))
    }

    fn value(&self, a: &Attr) -> anyhow::Result<Val> {
        match &a.value {
            None => Ok(Val::Bool(true)),
            Some(Tok::Int(n)) => Ok(Val::Int(*n)),
            Some(Tok::Bool(b)) => Ok(Val::Bool(*b)),
            Some(Tok::Word(w) | Tok::Quoted(w)) => Ok(Val::Str(w.clone())),
            Some(Tok::Var(v)) => self.var(v, a.line),
            Some(other) => Err(self.err(a.line, format!("`{}={other}`: not a value", a.key))),
        }
    }

    fn num(&self, a: &Attr) -> anyhow::Result<Num> {
        match self.value(a)? {
            Val::Int(n) => Ok(Num::Fixed(n)),
            Val::Random(n) => Ok(n),
            Val::Bool(b) => Ok(Num::Fixed(u64::from(b))),
            Val::Str(s) => Err(self.err(a.line, format!("`{}={s}`: not a number", a.key))),
        }
    }

    fn int(&self, a: &Attr) -> anyhow::Result<u64> {
        match self.num(a)? {
            Num::Fixed(n) => Ok(n),
            _ => Err(self.err(
                a.line,
                format!("`{}` takes a fixed number here, not a cvar", a.key),
            )),
        }
    }

    fn int_of(&self, tok: &Tok, line: u32, what: &str) -> anyhow::Result<u64> {
        let a = Attr {
            key: what.into(),
            value: Some(tok.clone()),
            line,
        };
        self.int(&a)
    }

    fn boolean(&self, a: &Attr) -> anyhow::Result<bool> {
        match self.value(a)? {
            Val::Bool(b) => Ok(b),
            Val::Int(n) => Ok(n != 0),
            _ => Err(self.err(a.line, format!("`{}` is true or false", a.key))),
        }
    }

    fn text(&self, a: &Attr) -> anyhow::Result<String> {
        match self.value(a)? {
            Val::Str(s) => Ok(s),
            Val::Int(n) => Ok(n.to_string()),
            _ => Err(self.err(a.line, format!("`{}` needs a name", a.key))),
        }
    }

    fn unknown(&self, a: &Attr, what: &str) -> anyhow::Error {
        self.err(a.line, format!("unknown {what} attribute `{}`", a.key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_may_span_lines_and_psrun_takes_its_seconds() {
        let text = "set $n=4\ndefine fileset name=d,path=/tmp,size=10m,entries=$n,dirwidth=1024,prealloc\n\
                    define process name=p,instances=2\n{\n  thread name=t,memsize=1m,useism\n  {\n\
                    flowop read name=r,filesetname=d,\n        iosize=2k,random,opennext\n  }\n}\npsrun -10 30\n";
        let read = parse(text, "t.f", None).unwrap();
        let f = &read.model.processes[0].threads[0].flowops[0];
        assert!(f.random && f.opennext && f.fileset == Some(0));
        assert_eq!(f.iosize, Some(Num::Fixed(2048)));
        assert_eq!(
            (read.model.runtime, read.model.filesets[0].prealloc),
            (30, 100)
        );
        assert_eq!(read.model.processes[0].instances, 2);
    }

    #[test]
    fn any_text_is_read_or_refused_never_a_panic() {
        let words = [
            "define", "fileset", "process", "thread", "flowop", "set", "run", "psrun", "name=x",
            "$v", "=", ",", "{", "}", "(", ")", "cvar", "1k", "-3", "\"s\"", "\n", "read",
            "entries=", "iters=0",
        ];
        let mut rng = crate::io::Rng::new(9);
        for _ in 0..3000 {
            let n = rng.below(30) as usize;
            let text: Vec<&str> = (0..n)
                .map(|_| words[rng.below(words.len() as u64) as usize])
                .collect();
            let _ = parse(&text.join(" "), "fuzz.f", Some(1));
        }
    }
}

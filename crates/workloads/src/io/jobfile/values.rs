//! What fio does to a job file's text before it reads an option: inline `;` and `#`
//! comments cut, `${VAR}` from the environment, the keywords `$pagesize`, `$mb_memory` and
//! `$ncpus`, and integer arithmetic over them (fio hands such values to `bc`).

use fsbench_measure::error::invalid;

/// The line without its comment: fio cuts at the first `;` or `#`, wherever it is.
pub(super) fn strip_comment(line: &str) -> &str {
    let end = line.find([';', '#']).unwrap_or(line.len());
    line[..end].trim()
}

/// `${VAR}` replaced by the environment's value; an unset one is an error naming it.
pub(super) fn substitute(text: &str, at: &str) -> anyhow::Result<String> {
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

/// The machine's values of fio's keywords.
pub(super) struct Keywords {
    pub pagesize: u64,
    pub mb_memory: u64,
    pub ncpus: u64,
}

impl Keywords {
    pub(super) fn of_this_machine() -> Keywords {
        let mb_memory = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .map_or(0, |kib| kib / 1024);
        Keywords {
            // SAFETY: sysconf reads a constant of the system.
            pagesize: u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096),
            mb_memory,
            ncpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
        }
    }

    /// `value` with the keywords replaced; with arithmetic in it (or in parentheses, as
    /// fio takes expressions anywhere), the integer result.
    pub(super) fn expand(&self, value: &str, at: &str) -> anyhow::Result<String> {
        let has_keyword = value.contains('$');
        let text = value
            .replace("$pagesize", &self.pagesize.to_string())
            .replace("$mb_memory", &self.mb_memory.to_string())
            .replace("$ncpus", &self.ncpus.to_string());
        // `filename_format`'s own, which name each file when it is made (in any case).
        let format_vars = ["$jobname", "$jobnum", "$filenum", "$clientuid"];
        if format_vars
            .iter()
            .fold(text.to_ascii_lowercase(), |t, v| t.replace(v, ""))
            .contains('$')
        {
            return Err(invalid(format!(
                "{at}: `{value}`: fio's keywords are $pagesize, $mb_memory and $ncpus (and filename_format's $jobname, $jobnum, $filenum, $clientuid)"
            )));
        }
        if text.contains('$') {
            return Ok(text);
        }
        let bracketed = text.starts_with('(') && text.ends_with(')');
        let math = text.contains(['+', '*', '/']) || text[1.min(text.len())..].contains('-');
        if !(bracketed || (has_keyword && math)) {
            return Ok(text);
        }
        evaluate(&text)
            .map(|v| v.to_string())
            .map_err(|why| invalid(format!("{at}: `{value}`: {why}")))
    }
}

/// Integer arithmetic: `+ - * / % ^`, parentheses, numbers with fio's size suffixes.
fn evaluate(text: &str) -> Result<i128, String> {
    let tokens: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    let mut p = Parser { tokens, at: 0 };
    let v = p.sum()?;
    if p.at != p.tokens.len() {
        return Err(format!("unexpected `{}`", p.tokens[p.at]));
    }
    Ok(v)
}

struct Parser {
    tokens: Vec<char>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.tokens.get(self.at).copied()
    }

    fn sum(&mut self) -> Result<i128, String> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.at += 1;
            let r = self.product()?;
            v = if op == '+' { v + r } else { v - r };
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<i128, String> {
        let mut v = self.power()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.at += 1;
            let r = self.power()?;
            v = match op {
                '*' => v.checked_mul(r).ok_or("overflow")?,
                _ if r == 0 => return Err("division by zero".into()),
                '/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    fn power(&mut self) -> Result<i128, String> {
        let base = self.atom()?;
        if self.peek() == Some('^') {
            self.at += 1;
            let exp = self.power()?;
            let exp = u32::try_from(exp).map_err(|_| "negative exponent")?;
            return base.checked_pow(exp).ok_or_else(|| "overflow".into());
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<i128, String> {
        match self.peek() {
            Some('(') => {
                self.at += 1;
                let v = self.sum()?;
                if self.peek() != Some(')') {
                    return Err("`(` without its `)`".into());
                }
                self.at += 1;
                Ok(v)
            }
            Some('-') => {
                self.at += 1;
                Ok(-self.atom()?)
            }
            _ => {
                let start = self.at;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
                    self.at += 1;
                }
                let word: String = self.tokens[start..self.at].iter().collect();
                fsbench_model::units::parse_size(&word)
                    .map(i128::from)
                    .map_err(|_| format!("`{word}` is not a number"))
            }
        }
    }
}

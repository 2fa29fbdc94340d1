//! The tokens of filebench's Workload Model Language, as its lexer makes them: words, numbers
//! with a `k`, `m` or `g` suffix, `$variables`, quoted strings and `{ } ( ) = ,`; `#` starts a
//! comment, and line ends are spaces.

use fsbench_measure::error::invalid;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    /// A keyword, a name or a string value (`/tmp`, `cvar-gamma`, `mean:16384;gamma:1.5`).
    Word(String),
    Int(u64),
    Negative(i64),
    Bool(bool),
    /// A variable, without its `$` and braces.
    Var(String),
    Quoted(String),
    Open,
    Close,
    LParen,
    RParen,
    Assign,
    Comma,
}

impl std::fmt::Display for Tok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tok::Word(w) => f.write_str(w),
            Tok::Int(n) => write!(f, "{n}"),
            Tok::Negative(n) => write!(f, "{n}"),
            Tok::Bool(b) => write!(f, "{b}"),
            Tok::Var(v) => write!(f, "${v}"),
            Tok::Quoted(q) => write!(f, "\"{q}\""),
            Tok::Open => f.write_str("{"),
            Tok::Close => f.write_str("}"),
            Tok::LParen => f.write_str("("),
            Tok::RParen => f.write_str(")"),
            Tok::Assign => f.write_str("="),
            Tok::Comma => f.write_str(","),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) line: u32,
}

fn word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '/' || c == '-'
}

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "/._:;-".contains(c)
}

/// The tokens of `text`; `name` (the file's) is used in messages.
pub(super) fn tokens(text: &str, name: &str) -> anyhow::Result<Vec<Token>> {
    let mut out = Vec::new();
    let mut line = 1u32;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let err = |msg: String| invalid(format!("{name}, line {line}: {msg}"));
        let tok = match c {
            '\n' => {
                line += 1;
                continue;
            }
            c if c.is_whitespace() => continue,
            '#' => {
                while chars.next_if(|c| *c != '\n').is_some() {}
                continue;
            }
            '{' => Tok::Open,
            '}' => Tok::Close,
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '=' => Tok::Assign,
            ',' => Tok::Comma,
            '"' => {
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\n') | None => {
                            return Err(err("a quoted string is not closed".into()));
                        }
                        Some(c) => s.push(c),
                    }
                }
                Tok::Quoted(s)
            }
            '$' => {
                let mut s = String::new();
                while let Some(c) =
                    chars.next_if(|c| c.is_ascii_alphanumeric() || "_{}()".contains(*c))
                {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        s.push(c);
                    }
                }
                if s.is_empty() {
                    return Err(err("`$` without a variable name".into()));
                }
                Tok::Var(s)
            }
            '-' if chars.peek().is_some_and(char::is_ascii_digit) => {
                let n = number(&mut chars, '0').map_err(err)?;
                Tok::Negative(-(i64::try_from(n).map_err(|_| err("number too large".into()))?))
            }
            c if c.is_ascii_digit() => Tok::Int(number(&mut chars, c).map_err(err)?),
            c if word_start(c) => {
                let mut s = String::from(c);
                while let Some(c) = chars.next_if(|c| word_char(*c)) {
                    s.push(c);
                }
                match s.as_str() {
                    "true" => Tok::Bool(true),
                    "false" => Tok::Bool(false),
                    _ => Tok::Word(s),
                }
            }
            c => return Err(err(format!("unexpected character `{c}`"))),
        };
        out.push(Token { tok, line });
    }
    Ok(out)
}

/// Digits after `first` (a digit, or `0` after a minus sign), then an optional `k`, `m` or
/// `g` (powers of 1024).
fn number(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    first: char,
) -> Result<u64, String> {
    let mut digits = String::from(first);
    while let Some(c) = chars.next_if(char::is_ascii_digit) {
        digits.push(c);
    }
    let mut n: u64 = digits
        .parse()
        .map_err(|_| format!("`{digits}` is too large"))?;
    if let Some(unit) = chars.next_if(|c| matches!(c, 'k' | 'm' | 'g')) {
        let shift = match unit {
            'k' => 10,
            'm' => 20,
            _ => 30,
        };
        n = n
            .checked_mul(1 << shift)
            .ok_or_else(|| format!("`{digits}{unit}` is too large"))?;
    }
    if let Some(c) = chars.peek().filter(|c| word_char(**c)) {
        return Err(format!(
            "`{digits}{c}…` is not a number (sizes take k, m or g)"
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        tokens(text, "t.f")
            .unwrap()
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn words_numbers_and_variables_are_told_apart() {
        assert_eq!(
            toks("set $iosize=1m # comment\nrun ${runtime}"),
            vec![
                Tok::Word("set".into()),
                Tok::Var("iosize".into()),
                Tok::Assign,
                Tok::Int(1 << 20),
                Tok::Word("run".into()),
                Tok::Var("runtime".into()),
            ]
        );
        assert_eq!(
            toks("parameters=mean:16384;gamma:1.5,reuse=false,psrun -10"),
            vec![
                Tok::Word("parameters".into()),
                Tok::Assign,
                Tok::Word("mean:16384;gamma:1.5".into()),
                Tok::Comma,
                Tok::Word("reuse".into()),
                Tok::Assign,
                Tok::Bool(false),
                Tok::Comma,
                Tok::Word("psrun".into()),
                Tok::Negative(-10),
            ]
        );
    }

    #[test]
    fn lines_are_counted_and_bad_input_named() {
        let t = tokens("a\n\nb", "t.f").unwrap();
        assert_eq!((t[0].line, t[1].line), (1, 3));
        let e = tokens("x\ny=10q", "t.f").unwrap_err().to_string();
        assert!(e.contains("t.f, line 2") && e.contains("10q"), "{e}");
        let e = tokens("echo \"open", "t.f").unwrap_err().to_string();
        assert!(e.contains("not closed"), "{e}");
    }
}

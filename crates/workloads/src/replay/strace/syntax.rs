//! strace's output syntax, read as bytes by a scanner that knows every token strace prints:
//! quoted strings with C escapes (`\"`, `\n`, `\377`, `\x2f`), descriptors with their
//! decoded path (`3</a b\76c>`, `</dev/null<char 1:3>>`, `<…>(deleted)`), structures,
//! arrays, comments, `key=value` arguments and the result. A name holds any bytes: strace
//! escapes the quote, the backslash and `<>` in it, so no byte of a name ends a token.

/// One argument as strace printed it.
#[derive(Debug, PartialEq)]
pub(super) enum Arg {
    Str(Vec<u8>),
    /// A number and, for a descriptor, what strace decoded.
    Num(i64, Option<Decoded>),
    /// A number behind a pointer, `[5]`, or one the call changed, `[5] => [9]`: the first.
    Offset(i64),
    /// A structure's numeric fields (`{flags=0x241, mode=0640, resolve=0xc}`), or one
    /// `key=value` argument (clone's `flags=0x3d0f00`).
    Fields(Vec<(Vec<u8>, i64)>),
    Other,
}

/// A descriptor's decoded path; `deleted` when strace marked it `(deleted)`.
#[derive(Debug, PartialEq, Clone)]
pub(super) struct Decoded {
    pub path: Vec<u8>,
    pub deleted: bool,
}

impl Arg {
    /// Field `name` of a structure; strace leaves out fields that are 0.
    pub(super) fn field(&self, name: &str) -> Option<i64> {
        match self {
            Arg::Fields(fields) => Some(
                fields
                    .iter()
                    .find(|(k, _)| k == name.as_bytes())
                    .map_or(0, |(_, v)| *v),
            ),
            _ => None,
        }
    }

    /// The path of a descriptor argument that is a file (not a pipe, socket or device).
    pub(super) fn path(&self) -> Option<&[u8]> {
        match self {
            Arg::Num(_, Some(d)) => Some(&d.path),
            _ => None,
        }
    }
}

/// Argument `i` of `args` as a number, if it is one.
pub(super) fn num(args: &[Arg], i: usize) -> Option<i64> {
    match args.get(i) {
        Some(Arg::Num(n, _)) => Some(*n),
        _ => None,
    }
}

/// What one line of strace's output is.
#[derive(Debug, PartialEq)]
pub(super) enum Line<'l> {
    /// `NAME(ARGS) = RESULT`, or the first half `NAME(ARGS <unfinished ...>` (`body` is
    /// then the text to join with the resumed half).
    Call {
        name: &'l [u8],
        body: &'l [u8],
    },
    Unfinished {
        body: &'l [u8],
    },
    /// `<... NAME resumed>REST`.
    Resumed {
        name: &'l [u8],
        rest: &'l [u8],
    },
    /// `+++ exited ... +++`, `--- SIG... ---` and other notices.
    Notice,
}

const UNFINISHED: &[u8] = b" <unfinished ...>";

/// Splits a line into its thread, its time and what it is; `None` for a line that is not
/// strace's.
pub(super) fn split_line(line: &[u8]) -> Option<(u32, u64, Line<'_>)> {
    let mut s = Scanner::new(line);
    s.spaces();
    let tid = std::str::from_utf8(s.word()).ok()?.parse().ok()?;
    s.spaces();
    let time = micros(s.word())?;
    s.spaces();
    let rest = &line[s.at..];
    let what = if let Some(body) = rest.strip_suffix(UNFINISHED) {
        Line::Unfinished { body }
    } else if let Some(resumed) = rest.strip_prefix(b"<... ") {
        let end = find(resumed, b" resumed>")?;
        Line::Resumed {
            name: &resumed[..end],
            rest: &resumed[end + b" resumed>".len()..],
        }
    } else if rest.starts_with(b"+++") || rest.starts_with(b"---") {
        Line::Notice
    } else {
        let open = rest.iter().position(|&c| c == b'(')?;
        let name = &rest[..open];
        if name.is_empty() || !name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            return None;
        }
        Line::Call { name, body: rest }
    };
    Some((tid, time, what))
}

/// The result of a call: its value (and a descriptor's decoded path), its errno (when it
/// failed; -1 for a name fsbench does not know) and its duration in microseconds.
#[derive(Debug, PartialEq)]
pub(super) struct Outcome {
    pub value: i64,
    pub decoded: Option<Decoded>,
    pub errno: i32,
    pub dur_us: u64,
}

/// Parses `NAME(ARGS) = RESULT <DUR>` into the arguments and the outcome.
pub(super) fn parse_call(text: &[u8]) -> Option<(Vec<Arg>, Outcome)> {
    let mut s = Scanner::new(text);
    s.at = text.iter().position(|&c| c == b'(')? + 1;
    let mut args = Vec::new();
    s.spaces();
    if s.peek() == Some(b')') {
        s.at += 1;
    } else {
        loop {
            args.push(s.arg()?);
            s.spaces();
            match s.next()? {
                b',' => s.spaces(),
                b')' => break,
                _ => return None,
            }
        }
    }
    s.spaces();
    if s.next()? != b'=' {
        return None;
    }
    s.spaces();
    let (value, decoded) = if s.peek() == Some(b'?') {
        s.at += 1;
        (0, None)
    } else {
        let n = parse_number(s.word_until(b" <"))?;
        (n, s.decoration()?)
    };
    // What follows: ` ENOENT (text)` or ` (flags)`, then ` <0.000010>` at the very end.
    let tail = &text[s.at..];
    let dur_at = tail.iter().rposition(|&c| c == b'<')?;
    let dur = tail[dur_at + 1..].strip_suffix(b">")?;
    let mut more = Scanner::new(&tail[..dur_at]);
    more.spaces();
    let errno = if value < 0 {
        errno_named(more.word())
    } else {
        0
    };
    Some((
        args,
        Outcome {
            value,
            decoded,
            errno,
            dur_us: micros(dur)?,
        },
    ))
}

/// A cursor over one line.
struct Scanner<'l> {
    s: &'l [u8],
    at: usize,
}

impl<'l> Scanner<'l> {
    fn new(s: &'l [u8]) -> Scanner<'l> {
        Scanner { s, at: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.at += 1;
        }
    }

    /// Up to the next space.
    fn word(&mut self) -> &'l [u8] {
        let start = self.at;
        while self.peek().is_some_and(|c| c != b' ') {
            self.at += 1;
        }
        &self.s[start..self.at]
    }

    /// A bare token (a number, a name, `NULL`): up to a byte of `stops` or of `,)<>]}`.
    fn word_until(&mut self, stops: &[u8]) -> &'l [u8] {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| !stops.contains(&c) && !b",)<>]}=".contains(&c))
        {
            self.at += 1;
        }
        &self.s[start..self.at]
    }

    /// One argument, up to (not including) the `,` or `)` after it.
    fn arg(&mut self) -> Option<Arg> {
        let arg = match self.peek()? {
            b'"' => {
                let s = self.string()?;
                // `"abc"...`: strace cut the string.
                if self.s[self.at..].starts_with(b"...") {
                    self.at += 3;
                }
                Arg::Str(s)
            }
            b'[' => {
                let inner = &self.balanced()?[1..];
                let first = inner.split(|&c| c == b']').next().unwrap_or_default();
                let arg = parse_number(first).map_or(Arg::Other, Arg::Offset);
                self.spaces();
                // `[5] => [9]`: what the call made of it.
                if self.s[self.at..].starts_with(b"=> ") {
                    self.at += 3;
                    self.balanced()?;
                }
                arg
            }
            b'{' => {
                let inner = self.balanced()?;
                Arg::Fields(fields(&inner[1..inner.len().saturating_sub(1)]))
            }
            b'/' if self.s[self.at..].starts_with(b"/*") => {
                let end = find(&self.s[self.at..], b"*/")?;
                self.at += end + 2;
                Arg::Other
            }
            _ => {
                let word = self.word_until(b" ");
                if self.peek() == Some(b'=') && !self.s[self.at..].starts_with(b"=>") {
                    // `key=value`: the value may be any argument.
                    self.at += 1;
                    let value = self.arg()?;
                    return Some(match value {
                        Arg::Num(n, _) | Arg::Offset(n) => Arg::Fields(vec![(word.to_vec(), n)]),
                        _ => Arg::Other,
                    });
                }
                match parse_number(word) {
                    Some(n) => Arg::Num(n, self.decoration()?),
                    None if word == b"NULL" => Arg::Num(0, None),
                    None => Arg::Other,
                }
            }
        };
        // Whatever strace adds after an argument (`0x7ffd /* 5 vars */`), up to its end.
        self.skip_to_end()?;
        Some(arg)
    }

    /// After a number, `<PATH>` and `(deleted)`: the decoded path, `None` for a pipe,
    /// socket, device or anything else that is no path.
    fn decoration(&mut self) -> Option<Option<Decoded>> {
        if self.peek() != Some(b'<') {
            return Some(None);
        }
        let inner = self.balanced()?;
        let deleted = self.s[self.at..].starts_with(b"(deleted)");
        if deleted {
            self.at += b"(deleted)".len();
        }
        let inner = &inner[1..inner.len() - 1];
        // `-yy` decorates devices after their path: `/dev/null<char 1:3>`.
        if inner.first() != Some(&b'/') || inner.last() == Some(&b'>') {
            return Some(None);
        }
        Some(Some(Decoded {
            path: unescape(inner)?,
            deleted,
        }))
    }

    /// A quoted string, its escapes decoded.
    fn string(&mut self) -> Option<Vec<u8>> {
        self.at += 1;
        let start = self.at;
        loop {
            match self.next()? {
                b'\\' => {
                    self.next()?;
                }
                b'"' => return unescape(&self.s[start..self.at - 1]),
                _ => {}
            }
        }
    }

    /// A bracketed token from its opening byte to the one closing it. In a decoration
    /// (`<…>`) only escapes and nested decorations count (a name may hold any other byte);
    /// in `(…)`, `[…]` and `{…}`, strings, decorations and nested brackets are skipped
    /// whole, and `=>` is an arrow.
    fn balanced(&mut self) -> Option<&'l [u8]> {
        let start = self.at;
        let close = match self.next()? {
            b'<' => {
                let mut depth = 1usize;
                loop {
                    match self.next()? {
                        b'\\' => {
                            self.next()?;
                        }
                        b'<' => depth += 1,
                        b'>' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(&self.s[start..self.at]);
                            }
                        }
                        _ => {}
                    }
                }
            }
            b'(' => b')',
            b'[' => b']',
            b'{' => b'}',
            _ => return None,
        };
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'<' | b'(' | b'[' | b'{' => {
                    self.balanced()?;
                }
                b'=' if self.s[self.at..].starts_with(b"=>") => self.at += 2,
                c => {
                    self.at += 1;
                    if c == close {
                        return Some(&self.s[start..self.at]);
                    }
                }
            }
        }
    }

    /// Skips to the `,` or `)` that ends the current argument.
    fn skip_to_end(&mut self) -> Option<()> {
        loop {
            match self.peek()? {
                b',' | b')' => return Some(()),
                b'"' => {
                    self.string()?;
                }
                b'=' if self.s[self.at..].starts_with(b"=>") => self.at += 2,
                b'(' | b'[' | b'{' | b'<' => {
                    self.balanced()?;
                }
                _ => self.at += 1,
            }
        }
    }
}

/// The numeric fields of a structure's text (`flags=0x241, mode=0640`); others are left out.
fn fields(text: &[u8]) -> Vec<(Vec<u8>, i64)> {
    let mut s = Scanner::new(text);
    let mut out = Vec::new();
    while s.peek().is_some() {
        s.spaces();
        let key = s.word_until(b" ");
        if s.peek() == Some(b'=') {
            s.at += 1;
            let value = s.word_until(b" ");
            if let Some(n) = parse_number(value) {
                out.push((key.to_vec(), n));
            }
        }
        // To the next field, past any nested value.
        if s.skip_to_end().is_none() {
            break;
        }
        s.at += 1;
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The bytes of strace's C escapes: `\n \t \r \v \f \\ \" \xHH \OOO`.
fn unescape(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] != b'\\' {
            out.push(text[i]);
            i += 1;
            continue;
        }
        let c = *text.get(i + 1)?;
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'x' => {
                let hex = std::str::from_utf8(text.get(i..i + 2)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                for _ in 0..2 {
                    match text.get(i) {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(u8::try_from(v).ok()?);
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// Decimal, `0x` hex or `0` octal (modes), with a sign; `0x1200000|17` takes its first part.
fn parse_number(text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?;
    let text = text.split('|').next()?.trim();
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let value = if let Some(hex) = digits.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()? as i64
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    Some(if neg { value.wrapping_neg() } else { value })
}

/// `SECONDS.FRACTION` in microseconds, exactly (no float rounding).
pub(super) fn micros(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?;
    let (secs, frac) = text.split_once('.').unwrap_or((text, ""));
    let mut us: u64 = secs.parse::<u64>().ok()?.checked_mul(1_000_000)?;
    let mut scale = 100_000;
    for d in frac.bytes().take(6) {
        us += u64::from(d.checked_sub(b'0').filter(|d| *d < 10)?) * scale;
        scale /= 10;
    }
    Some(us)
}

/// The number of errno `name`; -1 for a name fsbench does not know (still a failure).
fn errno_named(name: &[u8]) -> i32 {
    let name = String::from_utf8_lossy(name);
    (1..200)
        .find(|&e| fsbench_measure::measure::errno_name(e) == name)
        .unwrap_or(-1)
}

//! strace's output syntax: arguments, quoted strings with C escapes, numbers, results.

/// One argument as strace printed it.
#[derive(Debug, PartialEq)]
pub(super) enum Arg {
    Str(Vec<u8>),
    /// A number and, for a descriptor, the path strace decoded.
    Num(i64, Option<Vec<u8>>),
    /// A number behind a pointer, `[5]`, or one the call changed, `[5] => [9]`: the first.
    Offset(i64),
    /// A structure's numeric fields: openat2's `{flags=0x241, mode=0640, resolve=0xc}`.
    Fields(Vec<(String, i64)>),
    Other,
}

impl Arg {
    /// Field `name` of a structure; strace leaves out fields that are 0.
    pub(super) fn field(&self, name: &str) -> Option<i64> {
        match self {
            Arg::Fields(fields) => Some(
                fields
                    .iter()
                    .find(|(k, _)| k == name)
                    .map_or(0, |(_, v)| *v),
            ),
            _ => None,
        }
    }
}

/// Splits `ARGS) = RESULT` into the arguments and the text after `) = `.
pub(super) fn split_args(text: &str) -> Option<(Vec<Arg>, &str)> {
    let bytes = text.as_bytes();
    let (mut depth, mut start, mut i) = (0i32, 0, 0);
    let mut args = Vec::new();
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'{' | b'[' | b'<' => depth += 1,
            // `[5] => [9]`: an arrow, not a descriptor's path closing.
            b'>' if i > 0 && bytes[i - 1] == b'=' => {}
            b'}' | b']' | b'>' => depth -= 1,
            b')' if depth == 0 => {
                let last = text[start..i].trim();
                if !last.is_empty() {
                    args.push(parse_arg(last));
                }
                let result = text[i + 1..].trim_start().strip_prefix("= ")?;
                return Some((args, result));
            }
            b')' => depth -= 1,
            b',' if depth == 0 => {
                args.push(parse_arg(text[start..i].trim()));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn parse_arg(text: &str) -> Arg {
    if text.starts_with('"') {
        return unquote(text.as_bytes()).map_or(Arg::Other, |(s, _)| Arg::Str(s));
    }
    if text == "NULL" {
        return Arg::Num(0, None);
    }
    if let Some(inner) = text.strip_prefix('[') {
        let before = inner.split_once(']').and_then(|(n, _)| parse_number(n));
        return before.map_or(Arg::Other, Arg::Offset);
    }
    if let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        let fields = inner.split(", ").map(|field| {
            let (key, value) = field.split_once('=')?;
            Some((key.trim().to_string(), parse_number(value)?))
        });
        return fields
            .collect::<Option<_>>()
            .map_or(Arg::Other, Arg::Fields);
    }
    let (number, decor) = match text.find('<') {
        Some(i) if text.ends_with('>') => (&text[..i], decode_path(&text[i + 1..text.len() - 1])),
        _ => (text, None),
    };
    parse_number(number).map_or(Arg::Other, |n| Arg::Num(n, decor))
}

/// A decoded descriptor: a path (`/a/b`), or `None` for a pipe, socket or device.
fn decode_path(text: &str) -> Option<Vec<u8>> {
    if !text.starts_with('/') {
        return None;
    }
    // Devices carry `<char 1:3>` after their path: not files of the root's anyway.
    if text.ends_with('>') {
        return None;
    }
    let mut quoted = Vec::with_capacity(text.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(text.as_bytes());
    quoted.push(b'"');
    unquote(&quoted).map(|(p, _)| p)
}

/// A C-style quoted string (strace's escapes); the bytes and the length consumed.
fn unquote(text: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < text.len() {
        match text[i] {
            b'"' => return Some((out, i + 1)),
            b'\\' => {
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
                        out.push(v as u8);
                    }
                    other => out.push(other),
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

/// Decimal, `0x` hex or `0` octal (modes), with a sign; `0x1200000|17` takes its first part.
fn parse_number(text: &str) -> Option<i64> {
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
    Some(if neg { -value } else { value })
}

/// `RET[<path>] [ERRNO (text)] <DUR>`: the value, the errno, microseconds.
pub(super) fn parse_result(text: &str) -> Option<(i64, i32, u64)> {
    let dur_at = text.rfind(" <")?;
    let dur = micros(text[dur_at + 2..].strip_suffix('>')?)?;
    let body = &text[..dur_at];
    let (value, rest) = body.split_once(' ').unwrap_or((body, ""));
    let Arg::Num(ret, _) = parse_arg(value) else {
        return None;
    };
    let errno = if ret < 0 {
        errno_named(rest.split(' ').next().unwrap_or(""))
    } else {
        0
    };
    Some((ret, errno, dur))
}

/// `SECONDS.FRACTION` in microseconds, exactly (no float rounding).
pub(super) fn micros(text: &str) -> Option<u64> {
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
fn errno_named(name: &str) -> i32 {
    (1..200)
        .find(|&e| fsbench_measure::measure::errno_name(e) == name)
        .unwrap_or(-1)
}

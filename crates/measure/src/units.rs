//! Byte sizes as users write them (`8G`, `512MiB`, `4096`) and as fsbench prints them, and
//! `NAME=VALUE` items.

use crate::error::invalid;

/// `item`'s name and value when it is written `NAME=VALUE` with neither empty.
pub fn name_value(item: &str) -> Option<(&str, &str)> {
    item.split_once('=')
        .filter(|(name, value)| !name.is_empty() && !value.is_empty())
}

/// Parses a size with an optional binary suffix: k, m, g, t, p (also KiB, MB, ...; all powers of 1024).
pub fn parse_size(text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    if digits.is_empty() {
        return Err(invalid(format!(
            "invalid size `{text}`: expected a number with an optional suffix k, m, g, t or p"
        )));
    }
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        other => {
            return Err(invalid(format!(
                "invalid size `{text}`: unknown suffix `{other}` (use k, m, g, t or p)"
            )));
        }
    };
    let value: u64 = digits
        .parse()
        .map_err(|_| invalid(format!("invalid size `{text}`: number too large")))?;
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| invalid(format!("invalid size `{text}`: larger than 16 EiB")))
}

/// The longest member path shown in an error message; longer ones are shortened.
const SHOWN_PATH: usize = 160;

/// A path for a message (a tar member, a failed file): lossy UTF-8, shortened in the middle when very long.
pub fn shown(path: &[u8]) -> String {
    let text = String::from_utf8_lossy(path);
    if text.chars().count() <= SHOWN_PATH {
        return text.into_owned();
    }
    let head: String = text.chars().take(SHOWN_PATH / 2).collect();
    let tail: Vec<char> = text.chars().rev().take(SHOWN_PATH / 4).collect();
    let tail: String = tail.into_iter().rev().collect();
    format!("{head}…{tail} ({} bytes)", path.len())
}

/// Formats bytes with a binary unit, e.g. `1.5 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A size as IOzone-style shorthand when it is a whole number of units: `4K`, `1M`, `2G`.
pub fn compact_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Formats an integer with thousands separators, as the seed articles print counts.
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_value_wants_both_sides() {
        assert_eq!(name_value("recordsize=16k"), Some(("recordsize", "16k")));
        assert_eq!(name_value("a=b=c"), Some(("a", "b=c")));
        for item in ["recordsize", "=16k", "recordsize=", "="] {
            assert_eq!(name_value(item), None, "{item}");
        }
    }

    #[test]
    fn parses_binary_suffixes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("8G").unwrap(), 8 << 30);
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("1k").unwrap(), 1024);
    }

    #[test]
    fn rejects_garbage_and_overflow() {
        assert!(parse_size("").is_err());
        assert!(parse_size("G").is_err());
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("-5G").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn formats_for_people() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
        assert_eq!(group_thousands(1_347_360), "1,347,360");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(compact_size(4096), "4K");
        assert_eq!(compact_size(3 << 30), "3G");
        assert_eq!(compact_size(1000), "1000");
    }
}

/// Serde helper: an optional byte size written as `"8G"` or as a number of bytes.
pub mod opt_size {
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Size {
        Bytes(u64),
        Text(String),
    }

    pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(b) => s.serialize_u64(*b),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        match Option::<Size>::deserialize(d)? {
            None => Ok(None),
            Some(Size::Bytes(b)) => Ok(Some(b)),
            Some(Size::Text(t)) => crate::units::parse_size(&t)
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}
